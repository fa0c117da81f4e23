#include "frontends/structural_tag.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>

#include "grammar/ir_builder.h"
#include "frontends/json_schema.h"
#include "frontends/cohere_xml.h"
#include "frontends/excluded_strings.h"
#include "frontends/gemma_args.h"
#include "frontends/minimax_m3_xml.h"
#include "frontends/schema_cache.h"
#include "frontends/regex.h"
#include "frontends/regex_dfa.h"
#include "frontends/xml_parameters.h"
#include "grammar/repetition.h"
#include "grammar/tag_dispatch.h"
#include "support/json.h"
#include "support/utf8.h"
#include "xgr2/errors.h"

namespace xgr2 {
namespace {

std::string At(const std::string& path, const std::string& key) { return path + "/" + JsonPointerToken(key); }
std::string At(const std::string& path, size_t index) { return path + "/" + std::to_string(index); }

// What a format sees of its surroundings: the end strings of the nearest enclosing
// `tag`, which free text inside it may not contain, and its end token, which free tokens
// inside it may not be (so the tag can end; as XGrammar).
struct Context {
  std::vector<std::string> ends;
  std::vector<CodepointRange> end_tokens;
};

// A parsed `tag`: its begin (a string, or a token when begin_token >= 0) and what
// follows it (content, then one of the ends) as one expression.
struct TagParts {
  std::string begin;
  int32_t begin_token = -1;
  int32_t rest = -1;
  std::string path;
};

class Converter {
 public:
  // `tok` (may be null) resolves tokens given by their text.
  Converter(GrammarIR* g, const TokenizerInfo* tok) : b_(g), tok_(tok) {}

  int32_t Format(const JsonValue& v, const std::string& path, const Context& ctx) {
    if (!v.IsObject()) Fail("a format must be an object with a \"type\"", path);
    const JsonValue* type = v.Find("type");
    if (type && !type->IsString()) Fail("\"type\" must be a string", At(path, "type"));
    const std::string t = type ? type->text : InferredType(v);
    if (t.empty()) Fail("a format needs a \"type\" (none can be told from its fields)", path);
    if (t == "const_string") {
      Fields(v, path, {"value"});
      return b_.Bytes(String(v, "value", path));
    }
    if (t == "json_schema" || t == "qwen_xml_parameter") return JsonSchema(v, path, t == "qwen_xml_parameter");
    if (t == "grammar") return Ebnf(v, path);
    if (t == "regex") return Regex(v, path);
    if (t == "any_text") {
      Fields(v, path, {"excludes", "max_chars", "max_tokens"});
      if (const JsonValue* m = v.Find("max_tokens"); m && m->kind != JsonValue::Kind::kNull) {
        Int(v, "max_tokens", path);  // a malformed one is reported as such first
        Fail("\"max_tokens\" of any_text is not supported: a byte-level grammar does not see where tokens"
             " end (\"max_chars\" bounds the text; \"any_tokens\" counts tokens)", At(path, "max_tokens"));
      }
      std::vector<std::string> excludes = Excludes(v, path, ctx);
      if (const JsonValue* m = v.Find("max_chars"); m && m->kind != JsonValue::Kind::kNull) {
        int64_t n = Int(v, "max_chars", path);
        if (n < 0 || n > GrammarLimits::kMaxRepeat) {
          Fail("\"max_chars\" must be null or a count >= 0", At(path, "max_chars"));
        }
        return BoundedText(excludes, n, At(path, "max_chars"));
      }
      return Dispatch({}, {}, std::move(excludes), true, path);
    }
    if (t == "sequence" || t == "or") {
      Fields(v, path, {"elements"});
      const JsonValue& elements = Array(v, "elements", path);
      if (elements.items.empty()) Fail("\"elements\" must not be empty", At(path, "elements"));
      std::vector<int32_t> parts;
      for (size_t i = 0; i < elements.items.size(); ++i) {
        parts.push_back(Format(elements.items[i], At(At(path, "elements"), i), ctx));
      }
      return t == "sequence" ? b_.Seq(parts) : b_.Choice(parts);
    }
    if (t == "optional" || t == "plus" || t == "star") {
      Fields(v, path, {"content"});
      int32_t content = Format(Field(v, "content", path), At(path, "content"), ctx);
      return t == "optional" ? b_.Optional(content) : t == "plus" ? b_.Plus(content) : b_.Star(content);
    }
    if (t == "repeat") return Repeat(v, path, ctx);
    if (t == "tag") {
      TagParts tag = Tag(v, path);
      return b_.Seq({Begin(tag), tag.rest});
    }
    if (t == "triggered_tags") return TriggeredTags(v, path, ctx);
    if (t == "tags_with_separator") return TagsWithSeparator(v, path);
    if (t == "dispatch") return DispatchFormat(v, path, ctx);
    if (t == "token") return b_.Token({Id(TokenField(v, path))});
    if (t == "exclude_token") {
      Fields(v, path, {"exclude_tokens"});
      return b_.Token(NotFree(TokenList(v, "exclude_tokens", path), ctx), true);
    }
    if (t == "any_tokens") {
      Fields(v, path, {"exclude_tokens", "max_tokens"});
      int32_t max = -1;
      if (const JsonValue* m = v.Find("max_tokens"); m && m->kind != JsonValue::Kind::kNull) {
        int64_t n = Int(v, "max_tokens", path);
        if (n < 0 || n > GrammarLimits::kMaxRepeat) Fail("\"max_tokens\" must be null or a count >= 0", At(path, "max_tokens"));
        max = static_cast<int32_t>(n);
      }
      return b_.Repeat(b_.Token(NotFree(TokenList(v, "exclude_tokens", path), ctx), true), 0, max);
    }
    if (t == "token_triggered_tags") return TokenTriggeredTags(v, path, ctx);
    if (t == "token_dispatch") return TokenDispatch(v, path, ctx);
    Fail("unknown format type \"" + t +
             "\" (expected const_string, json_schema, grammar, regex, any_text, sequence, or, optional, plus, "
             "star, repeat, tag, triggered_tags, tags_with_separator, dispatch, token, exclude_token, any_tokens, "
             "token_triggered_tags or token_dispatch)",
         At(path, "type"));
  }

  // The type of a format written without one, from its fields (as XGrammar reads it:
  // a tag first); "" when none fits.
  static std::string InferredType(const JsonValue& v) {
    auto has = [&](const char* key) { return v.Find(key) != nullptr; };
    if (has("begin") && has("content") && has("end")) return "tag";
    if (has("value")) return "const_string";
    if (has("json_schema")) return "json_schema";
    if (has("elements")) return "sequence";
    if (has("triggers")) return "triggered_tags";
    if (has("trigger_tokens")) return "token_triggered_tags";
    if (has("separator")) return "tags_with_separator";
    if (has("content")) return has("min") || has("max") ? "repeat" : "optional";
    if (const JsonValue* rules = v.Find("rules")) {
      bool by_token = rules->IsArray() && !rules->items.empty() && rules->items[0].IsArray() &&
                      !rules->items[0].items.empty() && !rules->items[0].items[0].IsString();
      return by_token ? "token_dispatch" : "dispatch";
    }
    if (has("token")) return "token";
    if (has("excludes") && v.members.size() == 1) return "any_text";
    return "";
  }

  // The older form: {"structures": [{"begin", "schema", "end"}], "triggers": [...]}, free
  // text with any number of calls.
  int32_t Structures(const JsonValue& v, const std::string& path) {
    Fields(v, path, {"structures", "triggers"});
    const JsonValue& structures = Array(v, "structures", path);
    std::vector<TagParts> tags;
    for (size_t i = 0; i < structures.items.size(); ++i) {
      const JsonValue& s = structures.items[i];
      std::string sp = At(At(path, "structures"), i);
      if (!s.IsObject()) Fail("a structure must be an object with \"begin\", \"schema\" and \"end\"", sp);
      Fields(s, sp, {"begin", "schema", "end"});
      std::string end = String(s, "end", sp);
      const JsonValue& schema = Field(s, "schema", sp);
      JsonValue parsed;  // XGrammar's older API also took the schema as JSON text
      if (schema.IsString()) {
        try {
          parsed = ParseJson(schema.text);
        } catch (const std::invalid_argument& e) {
          Fail(std::string("the schema text is not valid JSON: ") + e.what(), At(sp, "schema"));
        }
      }
      int32_t content = Schema(schema.IsString() ? parsed : schema, At(sp, "schema"));
      tags.push_back({String(s, "begin", sp), -1, b_.Seq({content, b_.Bytes(end)}), sp});
    }
    return Triggered(Strings(v, "triggers", path, true), tags, false, false, {}, path);
  }

 IrBuilder& builder() { return b_; }

 private:
  [[noreturn]] void Fail(const std::string& msg, const std::string& path) { throw StructuralTagError(msg, path); }

  // Rejects fields a format does not have (a misspelt option would otherwise be ignored).
  void Fields(const JsonValue& v, const std::string& path, std::initializer_list<const char*> allowed) {
    for (const auto& [key, value] : v.members) {
      if (key == "type") continue;
      if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; })) {
        std::string list;
        for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
        Fail("unknown field \"" + key + "\" (this format has: " + list + ")", At(path, key));
      }
    }
  }

  const JsonValue& Field(const JsonValue& v, const char* key, const std::string& path) {
    const JsonValue* f = v.Find(key);
    if (!f) Fail(std::string("missing required field \"") + key + "\"", path);
    return *f;
  }

  std::string String(const JsonValue& v, const char* key, const std::string& path) {
    const JsonValue& f = Field(v, key, path);
    if (!f.IsString()) Fail(std::string("\"") + key + "\" must be a string", At(path, key));
    return f.text;
  }

  const JsonValue& Array(const JsonValue& v, const char* key, const std::string& path) {
    const JsonValue& f = Field(v, key, path);
    if (!f.IsArray()) Fail(std::string("\"") + key + "\" must be an array", At(path, key));
    return f;
  }

  bool Bool(const JsonValue& v, const char* key, const std::string& path, bool fallback) {
    const JsonValue* f = v.Find(key);
    if (!f) return fallback;
    if (!f->IsBool()) Fail(std::string("\"") + key + "\" must be true or false", At(path, key));
    return f->boolean;
  }

  int64_t Int(const JsonValue& v, const char* key, const std::string& path) {
    const JsonValue& f = Field(v, key, path);
    const std::string& s = f.text;
    bool ok = f.IsNumber() && !s.empty() && s.size() <= 12 &&
              std::all_of(s.begin() + (s[0] == '-'), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!ok) Fail(std::string("\"") + key + "\" must be an integer", At(path, key));
    return std::stoll(s);
  }

  std::vector<std::string> Strings(const JsonValue& v, const char* key, const std::string& path, bool required) {
    if (!required && !v.Find(key)) return {};
    const JsonValue& f = Array(v, key, path);
    std::vector<std::string> out;
    for (size_t i = 0; i < f.items.size(); ++i) {
      if (!f.items[i].IsString()) Fail("must be a string", At(At(path, key), i));
      out.push_back(f.items[i].text);
    }
    return out;
  }

  // A format's own `excludes` plus the enclosing tag's ends (deduplicated; an empty end
  // is no boundary).
  std::vector<std::string> Excludes(const JsonValue& v, const std::string& path, const Context& ctx) {
    std::vector<std::string> out;
    std::vector<std::string> own = Strings(v, "excludes", path, false);
    for (size_t i = 0; i < own.size(); ++i) {
      if (own[i].empty()) Fail("an excluded string must not be empty", At(At(path, "excludes"), i));
      if (std::find(out.begin(), out.end(), own[i]) == out.end()) out.push_back(own[i]);
    }
    for (const std::string& s : ctx.ends) {
      if (!s.empty() && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    }
    return out;
  }

  // Text of at most `max_chars` code points containing none of `excludes`: a counted
  // repetition of any character, or with excluded strings an automaton that tracks
  // both (about max_chars x their total length states, at most CharDfa::kMaxStates).
  int32_t BoundedText(const std::vector<std::string>& excludes, int64_t max_chars, const std::string& path) {
    if (excludes.empty()) return b_.Repeat(b_.Class({{0, 0x10FFFF}}), 0, static_cast<int32_t>(max_chars));
    std::string pattern;
    for (const std::string& e : excludes) {
      if (!pattern.empty()) pattern += '|';
      for (size_t i = 0; i < e.size();) {
        int32_t cp = DecodeUtf8(e, &i);  // JSON text: valid UTF-8
        char buf[16];
        std::snprintf(buf, sizeof(buf), "\\u{%X}", static_cast<unsigned>(cp));
        pattern += buf;
      }
    }
    try {
      CharDfa text = CharDfa::LengthBetween(0, max_chars).Minus(CharDfa::FromPattern(pattern, true));
      return EmitDfa(&b_, text, [&](const std::vector<CodepointRange>& c) { return b_.Class(c); }, "bounded_text");
    } catch (const std::runtime_error& e) {  // CharDfa's limits
      Fail(std::string("text of at most max_chars characters without the excluded strings is too large an"
                       " automaton: ") + e.what(), path);
    }
  }

  // A TagDispatch expression; tag i dispatches to targets[i]. Reports a bad set of
  // strings (one that can never complete, duplicates, ...) at `path`.
  int32_t Dispatch(std::vector<std::string> tags, std::vector<int32_t> targets, std::vector<std::string> excludes,
                   bool loop, const std::string& path) {
    TagDispatchSpec spec;
    spec.tags = std::move(tags);
    spec.excludes = std::move(excludes);
    spec.loop_after_dispatch = loop;
    try {
      return AddTagDispatch(b_.ir(), std::move(spec), std::move(targets));
    } catch (const GrammarError& e) {
      Fail(e.what(), path);
    }
  }

  static CodepointRange Id(int32_t id) { return {static_cast<uint32_t>(id), static_cast<uint32_t>(id)}; }

  // The tokens a free token may not be: the excluded ones and the enclosing tag's end token.
  static std::vector<CodepointRange> NotFree(std::vector<CodepointRange> excluded, const Context& ctx) {
    excluded.insert(excluded.end(), ctx.end_tokens.begin(), ctx.end_tokens.end());
    return excluded;
  }

  // A token given by id, or by its text: the lowest id whose text it is (special
  // tokens included), found with the tokenizer.
  int32_t TokenRef(const JsonValue& v, const std::string& path) {
    if (v.IsNumber()) {
      const std::string& s = v.text;
      bool digits = !s.empty() && s.size() <= 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!digits || std::stoll(s) > GrammarLimits::kMaxTokenId) {
        Fail("a token id must be an integer in [0, " + std::to_string(GrammarLimits::kMaxTokenId) + "]", path);
      }
      return static_cast<int32_t>(std::stoll(s));
    }
    if (!v.IsString()) Fail("a token must be an id (integer) or the token's text (string)", path);
    if (v.text.empty()) Fail("a token's text must not be empty", path);
    if (!tok_) {
      Fail("the token \"" + v.text + "\" is given by its text: pass the tokenizer to resolve it, or give its id", path);
    }
    int32_t id = tok_->IdOfText(v.text);
    if (id < 0) Fail("no token of the tokenizer is the text \"" + v.text + "\"", path);
    return id;
  }

  // The "token" field of a token format object ({"type": "token", "token": ...}).
  int32_t TokenField(const JsonValue& v, const std::string& path) {
    if (!v.IsObject()) Fail("a token format must be an object with a \"token\"", path);
    if (const JsonValue* type = v.Find("type"); type && !(type->IsString() && type->text == "token")) {
      Fail("expected a format of type \"token\"", At(path, "type"));
    }
    Fields(v, path, {"token"});
    return TokenRef(Field(v, "token", path), At(path, "token"));
  }

  std::vector<CodepointRange> TokenList(const JsonValue& v, const char* key, const std::string& path) {
    std::vector<CodepointRange> ids;
    if (!v.Find(key)) return ids;
    const JsonValue& list = Array(v, key, path);
    for (size_t i = 0; i < list.items.size(); ++i) ids.push_back(Id(TokenRef(list.items[i], At(At(path, key), i))));
    return ids;
  }

  int32_t Begin(const TagParts& tag) {
    return tag.begin_token >= 0 ? b_.Token({Id(tag.begin_token)}) : b_.Bytes(tag.begin);
  }

  int32_t Schema(const JsonValue& schema, const std::string& schema_path,
                 int max_whitespace = JsonSchemaOptions::kMaxWhitespace, bool any_order = false,
                 const std::vector<std::string>& excludes = {}, bool document_space = true) {
    if (!schema.IsObject() && !schema.IsBool()) Fail("a JSON Schema must be an object or a boolean", schema_path);
    std::string text = DumpJson(schema);
    JsonSchemaOptions options;
    options.max_whitespace = max_whitespace;
    options.any_order = any_order;
    options.excludes = excludes;
    options.document_space = document_space;
    std::string key = OptionsKey(options) + text;
    auto it = schemas_.find(key);  // the same schema twice (tools sharing arguments): one rule
    if (it != schemas_.end()) return b_.Ref(it->second);
    JsonSchemaGrammar g;
    try {
      g = CachedJsonSchemaToGrammar(text, options);
    } catch (const SchemaError& e) {
      Fail("invalid JSON Schema: " + e.message, schema_path + e.pointer);  // no `unsupported` to pass here
    }
    int32_t rule = ImportGrammar(&b_, *g.grammar, "schema" + std::to_string(schemas_.size()) + "_");
    schemas_[key] = rule;
    return b_.Ref(rule);
  }

  // `json_schema` (or the older `qwen_xml_parameter`, the qwen_xml style).
  int32_t JsonSchema(const JsonValue& v, const std::string& path, bool qwen_parameters) {
    Fields(v, path, {"json_schema", "style", "any_order", "max_whitespace_cnt", "excludes"});
    std::string style = qwen_parameters ? "qwen_xml" : "json";
    if (const JsonValue* s = v.Find("style"); s && !qwen_parameters) {
      if (!s->IsString() || (s->text != "json" && !IsXmlStyle(s->text))) {
        Fail("\"style\" must be \"json\", \"qwen_xml\", \"minimax_xml\", \"minimax_m3_xml\", \"deepseek_xml\", "
             "\"deepseek_v4_1_xml\", \"glm_xml\", \"kimi_k3_xml\", \"cohere_xml\" or \"gemma\"",
             At(path, "style"));
      }
      style = s->text;
    }
    bool any_order = Bool(v, "any_order", path, false);
    int max_whitespace = JsonSchemaOptions::kMaxWhitespace;
    if (const JsonValue* m = v.Find("max_whitespace_cnt"); m && m->kind != JsonValue::Kind::kNull) {
      int64_t n = Int(v, "max_whitespace_cnt", path);
      if (n < 0 || n > 1000) Fail("\"max_whitespace_cnt\" must be null or in [0, 1000]", At(path, "max_whitespace_cnt"));
      max_whitespace = static_cast<int>(n);
    }
    const JsonValue& schema = Field(v, "json_schema", path);
    std::string schema_path = At(path, "json_schema");
    std::vector<std::string> excludes = SchemaExcludes(v, style, path);
    if (style == "json") return Schema(schema, schema_path, max_whitespace, any_order, excludes);
    if (style == "gemma") {  // scalars as bare JSON text
      return GemmaArguments(&b_, schema, schema_path, [&](const JsonValue& sub, const std::string& sub_path) {
        return Schema(sub, sub_path, 0, false);
      });
    }
    if (style == "cohere_xml") {  // JSON values inside the style's own bounded whitespace
      return CohereParameters(&b_, schema, max_whitespace, any_order, schema_path,
                              [&](const JsonValue& sub, const std::string& sub_path) {
                                return Schema(sub, sub_path, max_whitespace, any_order, {}, false);
                              });
    }
    if (style == "minimax_m3_xml") {  // scalars as bare JSON text: no whitespace inside an element
      return MinimaxM3Parameters(&b_, schema, max_whitespace, any_order, schema_path,
                                 [&](const JsonValue& sub, const std::string& sub_path) {
                                   return Schema(sub, sub_path, 0, false);
                                 });
    }
    std::optional<ExcludedStrings> excluded;
    if (!excludes.empty()) excluded.emplace(excludes);
    return XmlParameters(
        &b_, schema, style, max_whitespace, any_order, schema_path,
        [&](const JsonValue& sub, const std::string& sub_path) {
          return Schema(sub, sub_path, max_whitespace, any_order, excludes);
        },
        excluded ? &*excluded : nullptr);
  }

  // json_schema's `excludes`: non-empty strings that string values (but those with a
  // pattern or known format) and property names may not hold, as XGrammar reads it. An
  // XML style's value is trimmed by the models' parsers, so an exclusion there may not
  // start or end with whitespace; cohere_xml, minimax_m3_xml and gemma take none.
  std::vector<std::string> SchemaExcludes(const JsonValue& v, const std::string& style, const std::string& path) {
    const JsonValue* list = v.Find("excludes");
    if (!list || list->kind == JsonValue::Kind::kNull) return {};
    std::string where = At(path, "excludes");
    if (!list->IsArray()) Fail("\"excludes\" must be an array of non-empty strings", where);
    std::vector<std::string> out;
    for (size_t i = 0; i < list->items.size(); ++i) {
      const JsonValue& e = list->items[i];
      if (!e.IsString() || e.text.empty()) Fail("\"excludes\" must be an array of non-empty strings", At(where, i));
      if (style != "json") {
        if (style == "cohere_xml" || style == "minimax_m3_xml" || style == "gemma") {
          Fail("the style \"" + style + "\" takes no \"excludes\"", where);
        }
        auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
        if (space(e.text.front()) || space(e.text.back())) {
          Fail("an XML style's \"excludes\" may not start or end with whitespace", At(where, i));
        }
      }
      out.push_back(e.text);
    }
    try {
      ExcludedStrings check(out);  // within the automaton limits
    } catch (const DfaLimitError& e) {
      Fail(std::string("\"excludes\" is too large: ") + e.what(), where);
    }
    return out;
  }

  int32_t Ebnf(const JsonValue& v, const std::string& path) {
    Fields(v, path, {"grammar"});
    std::string text = String(v, "grammar", path);
    GrammarPtr g;
    try {
      g = ParseEbnf(text, "root");
    } catch (const GrammarError& e) {
      Fail(std::string("invalid grammar: ") + e.what(), At(path, "grammar"));
    }
    return b_.Ref(ImportGrammar(&b_, *g, "grammar" + std::to_string(++grammars_) + "_"));
  }

  int32_t Regex(const JsonValue& v, const std::string& path) {
    Fields(v, path, {"pattern"});
    std::string pattern = String(v, "pattern", path);
    try {
      return AppendRegex(&b_, pattern, false);
    } catch (const RegexError& e) {
      Fail("invalid regex (at offset " + std::to_string(e.position) + "): " + e.what(), At(path, "pattern"));
    }
  }

  int32_t Repeat(const JsonValue& v, const std::string& path, const Context& ctx) {
    Fields(v, path, {"min", "max", "content"});
    int64_t min = Int(v, "min", path), max = Int(v, "max", path);
    if (min < 0 || min > GrammarLimits::kMaxRepeat) {
      Fail("\"min\" must be in [0, " + std::to_string(GrammarLimits::kMaxRepeat) + "]", At(path, "min"));
    }
    if (max != -1 && (max < min || max > GrammarLimits::kMaxRepeat)) {
      Fail("\"max\" must be -1 (unbounded) or in [min, " + std::to_string(GrammarLimits::kMaxRepeat) + "]",
           At(path, "max"));
    }
    int32_t content = Format(Field(v, "content", path), At(path, "content"), ctx);
    return b_.Repeat(content, static_cast<int32_t>(min), static_cast<int32_t>(max));
  }

  // A `tag` object (in a list of tags the "type" may be left out).
  TagParts Tag(const JsonValue& v, const std::string& path) {
    if (!v.IsObject()) Fail("a tag must be an object with \"begin\", \"content\" and \"end\"", path);
    if (const JsonValue* type = v.Find("type"); type && !(type->IsString() && type->text == "tag")) {
      Fail("expected a format of type \"tag\"", At(path, "type"));
    }
    Fields(v, path, {"begin", "content", "end"});
    const JsonValue& begin = Field(v, "begin", path);
    TagParts tag;
    tag.path = path;
    if (begin.IsObject()) {
      tag.begin_token = TokenField(begin, At(path, "begin"));
    } else if (begin.IsString()) {
      tag.begin = begin.text;
    } else {
      Fail("\"begin\" must be a string or a token format", At(path, "begin"));
    }
    const JsonValue& end = Field(v, "end", path);
    Context inner;
    int32_t end_token = -1;
    if (end.IsString()) {
      inner.ends = {end.text};
    } else if (end.IsArray()) {
      inner.ends = Strings(v, "end", path, true);
      if (inner.ends.empty()) Fail("\"end\" must hold at least one string", At(path, "end"));
    } else if (end.IsObject()) {
      end_token = TokenField(end, At(path, "end"));  // matched by id: free text needs no exclusion
      inner.end_tokens = {Id(end_token)};
    } else {
      Fail("\"end\" must be a string, an array of strings or a token format", At(path, "end"));
    }
    int32_t content = Format(Field(v, "content", path), At(path, "content"), inner);
    std::vector<int32_t> ends;
    for (const std::string& e : inner.ends) ends.push_back(b_.Bytes(e));
    if (end_token >= 0) ends.push_back(b_.Token({Id(end_token)}));
    tag.rest = b_.Seq({content, b_.Choice(ends)});
    return tag;
  }

  std::vector<TagParts> Tags(const JsonValue& v, const std::string& path) {
    const JsonValue& list = Array(v, "tags", path);
    if (list.items.empty()) Fail("\"tags\" must not be empty", At(path, "tags"));
    std::vector<TagParts> tags;
    for (size_t i = 0; i < list.items.size(); ++i) tags.push_back(Tag(list.items[i], At(At(path, "tags"), i)));
    return tags;
  }

  // Any one of the tags, whole (begin, content, end), as a rule of its own.
  int32_t AnyTag(const std::vector<TagParts>& tags) {
    std::vector<int32_t> alts;
    for (const TagParts& t : tags) alts.push_back(b_.Seq({Begin(t), t.rest}));
    return b_.RuleRef("tag", b_.Choice(alts));
  }

  int32_t TriggeredTags(const JsonValue& v, const std::string& path, const Context& ctx) {
    Fields(v, path, {"triggers", "tags", "at_least_one", "stop_after_first", "excludes"});
    std::vector<std::string> triggers = Strings(v, "triggers", path, true);
    std::vector<TagParts> tags = Tags(v, path);
    return Triggered(triggers, tags, Bool(v, "at_least_one", path, false), Bool(v, "stop_after_first", path, false),
                     Excludes(v, path, ctx), path);
  }

  // Free text; a completed trigger dispatches to the rest of one of the tags that begin
  // with it. at_least_one: a tag comes first, with no free text before it (XGrammar).
  int32_t Triggered(const std::vector<std::string>& triggers, const std::vector<TagParts>& tags, bool at_least_one,
                    bool stop_after_first, std::vector<std::string> excludes, const std::string& path) {
    if (triggers.empty()) Fail("\"triggers\" must not be empty", At(path, "triggers"));
    std::vector<std::vector<int32_t>> rests(triggers.size());
    for (size_t i = 0; i < triggers.size(); ++i) {
      if (triggers[i].empty()) Fail("a trigger must not be empty", At(At(path, "triggers"), i));
    }
    for (const TagParts& t : tags) {
      if (t.begin_token >= 0) {
        Fail("a tag triggered by text needs a text \"begin\" (use token_triggered_tags for tokens)", At(t.path, "begin"));
      }
      int found = -1;
      for (size_t i = 0; i < triggers.size(); ++i) {
        if (t.begin.compare(0, triggers[i].size(), triggers[i]) != 0) continue;
        if (found >= 0) {
          Fail("the tag's begin \"" + t.begin + "\" starts with two triggers, \"" + triggers[found] + "\" and \"" +
                   triggers[i] + "\"",
               At(t.path, "begin"));
        }
        found = static_cast<int>(i);
      }
      if (found < 0) Fail("the tag's begin \"" + t.begin + "\" starts with no trigger", At(t.path, "begin"));
      rests[found].push_back(b_.Seq({b_.Bytes(t.begin.substr(triggers[found].size())), t.rest}));
    }
    for (size_t i = 0; i < triggers.size(); ++i) {
      if (rests[i].empty()) Fail("no tag begins with the trigger \"" + triggers[i] + "\"", At(At(path, "triggers"), i));
    }
    if (at_least_one && stop_after_first) return AnyTag(tags);  // exactly one tag: no dispatch rules
    std::vector<int32_t> targets;
    for (size_t i = 0; i < triggers.size(); ++i) targets.push_back(b_.RuleRef("triggered", b_.Choice(rests[i])));
    int32_t text = Dispatch(triggers, targets, excludes, !stop_after_first, path);
    if (!at_least_one) return text;
    return b_.Seq({AnyTag(tags), text});
  }

  int32_t TagsWithSeparator(const JsonValue& v, const std::string& path) {
    Fields(v, path, {"tags", "separator", "at_least_one", "stop_after_first"});
    int32_t tag = AnyTag(Tags(v, path));
    std::string separator = String(v, "separator", path);
    bool at_least_one = Bool(v, "at_least_one", path, false);
    int32_t some = Bool(v, "stop_after_first", path, false) ? tag
                                                             : b_.Seq({tag, b_.Star(b_.Seq({b_.Bytes(separator), tag}))});
    return at_least_one ? some : b_.Optional(some);
  }

  int32_t DispatchFormat(const JsonValue& v, const std::string& path, const Context& ctx) {
    Fields(v, path, {"rules", "loop", "excludes"});
    const JsonValue& rules = Array(v, "rules", path);
    std::vector<std::string> patterns;
    std::vector<int32_t> targets;
    for (size_t i = 0; i < rules.items.size(); ++i) {
      const JsonValue& r = rules.items[i];
      std::string rp = At(At(path, "rules"), i);
      if (!r.IsArray() || r.items.size() != 2 || !r.items[0].IsString()) {
        Fail("a dispatch rule must be a [pattern string, format] pair", rp);
      }
      patterns.push_back(r.items[0].text);
      targets.push_back(b_.RuleRef("dispatched", Format(r.items[1], At(rp, 1), ctx)));
    }
    return Dispatch(patterns, targets, Excludes(v, path, ctx), Bool(v, "loop", path, true), path);
  }

  // Tokens (any but the triggers and the excluded ones) until a trigger token, which
  // dispatches to the tags that begin with it; at_least_one: a tag comes first.
  int32_t TokenTriggeredTags(const JsonValue& v, const std::string& path, const Context& ctx) {
    Fields(v, path, {"trigger_tokens", "tags", "exclude_tokens", "at_least_one", "stop_after_first"});
    std::vector<CodepointRange> triggers = TokenList(v, "trigger_tokens", path);
    if (triggers.empty()) Fail("\"trigger_tokens\" must not be empty", At(path, "trigger_tokens"));
    std::vector<TagParts> tags = Tags(v, path);
    std::vector<bool> used(triggers.size());
    for (const TagParts& t : tags) {
      if (t.begin_token < 0) Fail("a tag triggered by a token needs a token \"begin\"", At(t.path, "begin"));
      auto it = std::find_if(triggers.begin(), triggers.end(),
                             [&](CodepointRange r) { return r.lo == static_cast<uint32_t>(t.begin_token); });
      if (it == triggers.end()) Fail("the tag's begin token is not one of the trigger tokens", At(t.path, "begin"));
      used[it - triggers.begin()] = true;
    }
    for (size_t i = 0; i < triggers.size(); ++i) {
      if (!used[i]) Fail("no tag begins with this trigger token", At(At(path, "trigger_tokens"), i));
    }
    std::vector<CodepointRange> not_free = NotFree(TokenList(v, "exclude_tokens", path), ctx);
    not_free.insert(not_free.end(), triggers.begin(), triggers.end());
    return Dispatched(b_.Token(not_free, true), AnyTag(tags), Bool(v, "at_least_one", path, false),
                      !Bool(v, "stop_after_first", path, false));
  }

  // [[token, format], ...]: free tokens until a trigger token, then its format.
  int32_t TokenDispatch(const JsonValue& v, const std::string& path, const Context& ctx) {
    Fields(v, path, {"rules", "loop", "exclude_tokens"});
    const JsonValue& rules = Array(v, "rules", path);
    if (rules.items.empty()) Fail("\"rules\" must not be empty", At(path, "rules"));
    std::vector<CodepointRange> not_free = NotFree(TokenList(v, "exclude_tokens", path), ctx);
    std::vector<int32_t> alts;
    for (size_t i = 0; i < rules.items.size(); ++i) {
      const JsonValue& r = rules.items[i];
      std::string rp = At(At(path, "rules"), i);
      if (!r.IsArray() || r.items.size() != 2) Fail("a token_dispatch rule must be a [token, format] pair", rp);
      int32_t trigger = TokenRef(r.items[0], At(rp, 0));
      not_free.push_back(Id(trigger));
      alts.push_back(b_.Seq({b_.Token({Id(trigger)}), b_.RuleRef("dispatched", Format(r.items[1], At(rp, 1), ctx))}));
    }
    return Dispatched(b_.Token(not_free, true), b_.Choice(alts), false, Bool(v, "loop", path, true));
  }

  // Free tokens and dispatched parts: `loop` any number of each, else free tokens then
  // at most one part (`first`: exactly one, first).
  int32_t Dispatched(int32_t free_token, int32_t part, bool first, bool loop) {
    if (loop) {
      int32_t rest = b_.Star(b_.Choice({free_token, part}));
      return first ? b_.Seq({part, rest}) : rest;
    }
    return first ? part : b_.Seq({b_.Star(free_token), b_.Optional(part)});
  }

  IrBuilder b_;
  const TokenizerInfo* tok_;
  std::map<std::string, int32_t> schemas_;  // schema JSON -> its root rule
  int grammars_ = 0;
};

}  // namespace

GrammarPtr StructuralTagToGrammar(const std::string& spec_json, const TokenizerInfo* tokenizer) {
  JsonValue spec;
  try {
    spec = ParseJson(spec_json);
  } catch (const std::invalid_argument& e) {
    throw StructuralTagError(std::string("the structural tag is not valid JSON: ") + e.what(), "");
  }
  if (!spec.IsObject()) throw StructuralTagError("a structural tag must be a JSON object", "");
  auto g = std::make_shared<GrammarIR>();
  Converter c(g.get(), tokenizer);
  g->root = c.builder().NewRule("root");  // first, so it prints first
  int32_t body;
  const JsonValue* type = spec.Find("type");
  // The wrapper's "type" may be left out (no format has a "format" field).
  bool wrapper = type ? type->IsString() && type->text == "structural_tag" : spec.Find("format") != nullptr;
  if (spec.Find("structures") && (wrapper || !type)) {
    body = c.Structures(spec, "");
  } else if (wrapper) {
    for (const auto& [key, value] : spec.members) {
      if (key != "type" && key != "format") {
        throw StructuralTagError("unknown field \"" + key + "\" (a structural tag has: type, format)", At("", key));
      }
    }
    const JsonValue* format = spec.Find("format");
    if (!format) throw StructuralTagError("missing required field \"format\"", "");
    body = c.Format(*format, "/format", Context{});
  } else {
    body = c.Format(spec, "", Context{});
  }
  c.builder().SetBody(g->root, body);
  CompressRepetitions(g.get());
  return g;
}

}  // namespace xgr2
