#include "frontends/xml_parameters.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "frontends/json_formats.h"
#include "frontends/raw_string.h"
#include "frontends/regex.h"
#include "frontends/regex_dfa.h"
#include "frontends/schema_refs.h"
#include "frontends/schema_value_writer.h"
#include "grammar/tag_dispatch.h"
#include "support/stack.h"
#include "xgr2/errors.h"

namespace xgr2 {
namespace {

struct XmlStyle {
  const char* name;
  const char* key_prefix;  // then the name
  const char* key_suffix;  // deepseek_xml: `" string="` then true|false then `">`
  const char* value_prefix;
  const char* value_suffix;
};

constexpr XmlStyle kStyles[] = {
    {"qwen_xml", "<parameter=", ">", "", "</parameter>"},
    {"minimax_xml", "<parameter name=\"", "\">", "", "</parameter>"},
    {"deepseek_xml", "<\xEF\xBD\x9C" "DSML\xEF\xBD\x9C" "parameter name=\"", "", "",
     "</\xEF\xBD\x9C" "DSML\xEF\xBD\x9C" "parameter>"},
    // deepseek_v4_1_xml: DeepSeek V4.1's spaced tag name; its flag says how the value is
    // written (true: raw text, false: JSON), so it is pinned per value (Leaf).
    {"deepseek_v4_1_xml", "<\xEF\xBD\x9C" "DSML\xEF\xBD\x9C" " parameter name=\"", "", "",
     "</\xEF\xBD\x9C" "DSML\xEF\xBD\x9C" " parameter>"},
    {"glm_xml", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"},
    // kimi_k3_xml: `" type="` then the value's type name then `"<|sep|>` (TypedValue).
    {"kimi_k3_xml", "<|open|>argument key=\"", "", "", "<|close|>argument<|sep|>"},
};

bool IsKimiK3(const XmlStyle& s) { return std::string(s.name) == "kimi_k3_xml"; }
bool IsDeepSeekV41(const XmlStyle& s) { return std::string(s.name) == "deepseek_v4_1_xml"; }

// The type name Kimi-K3 writes for a JSON value (its parser reads "string" as raw text
// and any other name as JSON): integers and other numbers are both "number".
std::string KimiTypeOfValue(const JsonValue& v) {
  switch (v.kind) {
    case JsonValue::Kind::kString: return "string";
    case JsonValue::Kind::kBool: return "boolean";
    case JsonValue::Kind::kNull: return "null";
    case JsonValue::Kind::kObject: return "object";
    case JsonValue::Kind::kArray: return "array";
    default: return "number";
  }
}

const XmlStyle* FindStyle(const std::string& name) {
  for (const XmlStyle& s : kStyles) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

std::string At(const std::string& path, const std::string& key) { return path + "/" + JsonPointerToken(key); }

class XmlWriter {
 public:
  XmlWriter(IrBuilder* b, const XmlStyle& style, int max_ws,
            const std::function<int32_t(const JsonValue&, const std::string&)>& json_value,
            const ExcludedStrings* excludes)
      : b_(b), style_(style), json_value_(json_value), raw_(b, style.value_suffix, style.name), excludes_(excludes) {
    raw_.SetExcludes(excludes);
    ws_ = b_->RuleRef("xml_ws", b_->Repeat(b_->Class({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}}), 0,
                                           max_ws));
  }

  int32_t Object(const JsonValue& schema, const std::string& path, bool any_order) {
    if (!root_) root_ = &schema;  // the definitions' holder, also when the root is a $ref
    if (schema.IsBool() && schema.boolean) {  // any arguments: as {"type": "object"}
      JsonValue object;
      object.kind = JsonValue::Kind::kObject;
      return Object(object, path, any_order);
    }
    if (!schema.IsObject()) Fail("needs an object schema", path);
    if (const JsonValue* ref = schema.Find("$ref")) {
      // A root that names its object schema among its definitions (pydantic writes them).
      const JsonValue& target = Resolved(schema);
      bool only_ref = std::all_of(schema.members.begin(), schema.members.end(), [](const auto& m) {
        return m.first == "$ref" || m.first == "$defs" || m.first == "definitions" || m.first == "$schema" ||
               m.first == "$id" || IsAnnotation(m.first);
      });
      if (&target == &schema || !only_ref || ++root_refs_ > kMaxRootRefs) {
        Fail("supports a root \"$ref\" only to the root's \"$defs\" or \"definitions\", with annotations beside it",
             At(path, "$ref"));
      }
      return Object(target, path + "/" + JsonPointerToken("$ref") + "<" + ref->text + ">", any_order);
    }
    static const char* kAllowed[] = {"type", "properties", "required", "additionalProperties", "title",
                                     "description", "$defs", "definitions", "$schema", "$id", "$comment",
                                     "examples", "default", "minProperties", "maxProperties",
                                     "unevaluatedProperties", "patternProperties"};
    for (const auto& [key, value] : schema.members) {
      if (std::none_of(std::begin(kAllowed), std::end(kAllowed), [&](const char* k) { return key == k; })) {
        Fail("supports object schemas with properties, required and additionalProperties; \"" + key +
                 "\" is not supported",
             At(path, key));
      }
    }
    if (const JsonValue* type = schema.Find("type"); type && !(type->IsString() && type->text == "object")) {
      Fail("needs \"type\": \"object\"", At(path, "type"));
    }
    std::vector<std::string> required;
    if (const JsonValue* r = schema.Find("required")) {
      if (!r->IsArray()) Fail("\"required\" must be an array of names", At(path, "required"));
      for (const JsonValue& name : r->items) required.push_back(name.text);
    }
    std::vector<int32_t> parts = {ws_};
    std::vector<int32_t> kinds;  // any_order: each parameter's form, the extra one's last
    std::vector<std::string> declared;
    if (const JsonValue* props = schema.Find("properties")) {
      if (!props->IsObject()) Fail("\"properties\" must be an object", At(path, "properties"));
      for (const auto& [name, sub] : props->members) {
        declared.push_back(name);
        int32_t key = b_->Bytes(IsKimiK3(style_) ? XmlAttributeText(name) : name);
        int32_t one = b_->Seq({Parameter(key, sub, At(At(path, "properties"), name)), ws_});
        bool needed = std::find(required.begin(), required.end(), name) != required.end();
        parts.push_back(needed ? one : b_->Optional(one));
        kinds.push_back(one);
      }
    }
    for (const std::string& name : required) {
      if (std::find(declared.begin(), declared.end(), name) == declared.end()) {
        Fail("the required property \"" + name + "\" is not declared in \"properties\"", At(path, "required"));
      }
    }
    // Other names only where the schema allows them explicitly (strict, as JSON), or
    // where it declares no properties ({"type": "object"}: any names, as JSON).
    // With no other applicator here, unevaluatedProperties means what additionalProperties does.
    const JsonValue* extra = schema.Find("additionalProperties");
    if (!extra) extra = schema.Find("unevaluatedProperties");
    if (!extra && !schema.Find("properties")) {
      static const JsonValue kAnyValue = [] {
        JsonValue any;
        any.kind = JsonValue::Kind::kObject;
        return any;
      }();
      extra = &kAnyValue;
    }
    // patternProperties: the names each pattern matches (searched, as JSON Schema does)
    // that a tag can hold, other than declared names, with that pattern's schema.
    std::optional<CharDfa> matched;  // names some pattern matches
    if (const JsonValue* patterns = schema.Find("patternProperties")) {
      if (!patterns->IsObject()) Fail("\"patternProperties\" must be an object", At(path, "patternProperties"));
      static const CharDfa tag_safe = CharDfa::FromPattern("^[^<>\"&\t\n\r ]+$", false);
      std::vector<CharDfa> seen;
      for (const auto& [pattern, sub] : patterns->members) {
        const std::string where = At(At(path, "patternProperties"), pattern);
        std::optional<CharDfa> names;
        try {
          names = CharDfa::FromPattern(pattern, true);
        } catch (const std::runtime_error& e) {  // RegexError, DfaLimitError
          Fail(std::string("got a pattern it cannot use: ") + e.what(), where);
        }
        for (const std::string& name : declared) {
          if (names->Accepts(name) && !(sub.IsBool() && sub.boolean) && !(sub.IsObject() && OnlyAnnotations(sub))) {
            Fail("cannot check a declared property (\"" + name + "\") that a patternProperties pattern also"
                 " constrains", where);
          }
        }
        matched = matched ? matched->Complement().Intersect(names->Complement()).Complement() : *names;
        CharDfa usable = names->Intersect(tag_safe);
        if (!declared.empty()) usable = usable.Minus(CharDfa::Words(declared));
        for (const CharDfa& other : seen) {
          if (!usable.Intersect(other).IsEmpty()) {
            Fail("cannot check a name that two patternProperties patterns match (it takes both schemas)", where);
          }
        }
        if (usable.IsEmpty()) continue;
        seen.push_back(usable);
        int32_t name = EmitDfa(b_, usable, [&](const std::vector<CodepointRange>& c) { return b_->Class(c); },
                               "xml_pattern_name");
        kinds.push_back(b_->Seq({Parameter(name, sub, where), ws_}));
        parts.push_back(b_->Star(kinds.back()));
      }
    }
    if (extra && !(extra->IsBool() && !extra->boolean)) {
      // An identifier other than the declared names (theirs take their own schemas) and
      // the names patterns match (theirs too).
      CharDfa identifiers = CharDfa::FromPattern("^[a-zA-Z_][a-zA-Z0-9_]*$", false);
      CharDfa others = declared.empty() ? identifiers : identifiers.Minus(CharDfa::Words(declared));
      if (matched) others = others.Minus(*matched);
      if (excludes_) others = others.Intersect(excludes_->RawText());
      int32_t name = EmitDfa(b_, others, [&](const std::vector<CodepointRange>& c) { return b_->Class(c); },
                             "xml_name");
      JsonValue any;
      any.kind = JsonValue::Kind::kObject;
      kinds.push_back(b_->Seq({Parameter(name, extra->IsBool() ? any : *extra, At(path, "additionalProperties")), ws_}));
      parts.push_back(b_->Star(kinds.back()));
    }
    // minProperties / maxProperties: exact where the count needs no counting (the
    // required ones are at least the minimum; the maximum is 0 or at least every
    // parameter), or in any order (a bounded repetition).
    std::set<std::string> needed(required.begin(), required.end());
    auto count = [&](const char* key) -> int32_t {
      const JsonValue* v = schema.Find(key);
      if (!v) return -1;
      bool ok = v->IsNumber() && !v->text.empty() && v->text.size() <= 9 &&
                std::all_of(v->text.begin(), v->text.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!ok) Fail(std::string("needs \"") + key + "\" to be a non-negative integer", At(path, key));
      return static_cast<int32_t>(std::stol(v->text));
    };
    const int32_t min_count = count("minProperties"), max_count = count("maxProperties");
    const bool unbounded = (extra && !(extra->IsBool() && !extra->boolean)) || matched.has_value();
    if (max_count >= 0 && static_cast<int32_t>(needed.size()) > max_count) {
      Fail("got more required properties than maxProperties", At(path, "maxProperties"));
    }
    if (max_count == 0) kinds.clear();
    // No parameter at all: nothing between the tags, not even whitespace (a model must
    // not idle there), as XGrammar's XML styles.
    if (kinds.empty()) {
      if (min_count > 0) Fail("got minProperties above the properties the schema allows", At(path, "minProperties"));
      return b_->Bytes("");
    }
    if (any_order) {
      // Distinct required names: each needs an entry, in any order, repeats allowed.
      int32_t lo = std::max(static_cast<int32_t>(needed.size()), min_count);
      return b_->Seq({ws_, b_->Repeat(b_->Choice(kinds), lo, max_count)});
    }
    if (min_count > static_cast<int32_t>(needed.size())) {
      Fail("cannot check minProperties above the number of required properties in declared order"
           " (any_order can)", At(path, "minProperties"));
    }
    if (max_count > 0 && (unbounded || max_count < static_cast<int32_t>(declared.size()))) {
      Fail("cannot check maxProperties below the number of possible properties in declared order"
           " (any_order can)", At(path, "maxProperties"));
    }
    return b_->Seq(parts);
  }

 private:
  [[noreturn]] void Fail(const std::string& msg, const std::string& path) {
    throw StructuralTagError(std::string("the style \"") + style_.name + "\" " + msg, path);
  }

  int32_t Parameter(int32_t name, const JsonValue& schema, const std::string& path) {
    if (IsKimiK3(style_)) {
      return b_->Seq({b_->Bytes(style_.key_prefix), name, TypedValue(schema, path), b_->Bytes(style_.value_suffix)});
    }
    std::vector<int32_t> parts = {b_->Bytes(style_.key_prefix), name};
    if (IsDeepSeekV41(style_)) {  // the flag comes with the value (Leaf)
      parts.push_back(Value(schema, path));
      parts.push_back(b_->Bytes(style_.value_suffix));
      return b_->Seq(parts);
    }
    if (std::string(style_.name) == "deepseek_xml") {  // either flag, whatever the value's type
      parts.push_back(b_->Seq({b_->Bytes("\" string=\""), b_->Choice({b_->Bytes("true"), b_->Bytes("false")}),
                               b_->Bytes("\">")}));
    } else {
      parts.push_back(b_->Bytes(style_.key_suffix));
    }
    if (*style_.value_prefix) parts.push_back(b_->Seq({ws_, b_->Bytes(style_.value_prefix)}));
    parts.push_back(Value(schema, path));
    parts.push_back(b_->Bytes(style_.value_suffix));
    return b_->Seq(parts);
  }

  // Kimi-K3: `" type="T"<|sep|>` then the value, T the type the value is written as. A
  // schema of one type pins T; a bare anyOf or a type list pairs each branch with its
  // own; otherwise (a free-form value, a oneOf) any type name, as XGrammar writes it.
  int32_t TypedValue(const JsonValue& schema, const std::string& path) {
    auto typed = [&](const std::string& type, int32_t value) {
      return b_->Seq({b_->Bytes("\" type=\"" + type + "\"<|sep|>"), value});
    };
    const JsonValue& s = Resolved(schema);
    if (std::optional<std::string> type = KimiType(s)) return typed(*type, Value(schema, path));
    if (s.IsObject() && IsBareAnyOf(s)) {
      const JsonValue& branches = *s.Find("anyOf");
      std::vector<int32_t> alts;
      for (size_t i = 0; i < branches.items.size(); ++i) {
        alts.push_back(TypedValue(branches.items[i], At(path, "anyOf") + "/" + std::to_string(i)));
      }
      return b_->Choice(alts);
    }
    if (const JsonValue* t = s.IsObject() ? s.Find("type") : nullptr; t && t->IsArray() && RawCheckable(s)) {
      std::vector<int32_t> alts;
      for (const JsonValue& one_type : t->items) alts.push_back(TypedValue(WithType(s, one_type), path));
      return b_->Choice(alts);
    }
    std::vector<int32_t> names;
    for (const char* n : {"string", "number", "integer", "boolean", "object", "array", "null"}) names.push_back(b_->Bytes(n));
    return b_->Seq({b_->Bytes("\" type=\""), b_->Choice(names), b_->Bytes("\"<|sep|>"), Value(schema, path)});
  }

  // The one type name every value of `s` is written with, if there is one.
  static std::optional<std::string> KimiType(const JsonValue& s) {
    if (!s.IsObject()) return std::nullopt;
    if (const JsonValue* c = s.Find("const")) return KimiTypeOfValue(*c);
    if (const JsonValue* e = s.Find("enum"); e && e->IsArray() && !e->items.empty()) {
      std::string first = KimiTypeOfValue(e->items[0]);
      for (const JsonValue& v : e->items) {
        if (KimiTypeOfValue(v) != first) return std::nullopt;
      }
      return first;
    }
    if (IsBareAnyOf(s) || s.Find("oneOf") || s.Find("allOf")) return std::nullopt;
    const JsonValue* t = s.Find("type");
    if (t && t->IsArray() && t->items.size() == 1) t = &t->items[0];
    if (!t || !t->IsString()) return std::nullopt;
    return t->text == "integer" ? "number" : t->text;
  }

  // A local `#/$defs/NAME` or `#/definitions/NAME` reference's target (for its type
  // name; the value itself is written from `s`, refs and all); `s` otherwise.
  const JsonValue& Resolved(const JsonValue& s) const {
    const JsonValue* ref = s.IsObject() ? s.Find("$ref") : nullptr;
    if (!ref || !ref->IsString() || !root_) return s;
    for (const char* defs : {"$defs", "definitions"}) {
      std::string prefix = std::string("#/") + defs + "/";
      if (ref->text.rfind(prefix, 0) != 0) continue;
      const JsonValue* all = root_->Find(defs);
      const JsonValue* target = all ? all->Find(ref->text.substr(prefix.size())) : nullptr;
      if (target) return *target;
    }
    return s;
  }

  // `s` with `type` replaced by one of its types (the same keywords, one type).
  static JsonValue WithType(const JsonValue& s, const JsonValue& type) {
    JsonValue one = s;
    for (auto& [key, value] : one.members) {
      if (key == "type") value = type;
    }
    return one;
  }

  // A string's raw text; another value as JSON between whitespace. As XGrammar's XML
  // styles read a parameter: each branch of a bare anyOf and each type of a type list is
  // a value of its own (a string one raw; one that raw text cannot check exactly, as
  // JSON), and an unconstrained value is raw text. A oneOf stays JSON: raw branches
  // could overlap where the JSON ones do not.
  int32_t Value(const JsonValue& schema, const std::string& path, bool in_union = false) {
    // Nested values and $ref chains recurse here: bounded, as the JSON front end bounds
    // its subschemas, so that no schema can exhaust the stack.
    if (++depth_ > kMaxDepth) Fail("got values nested more than 1000 deep (a long chain of $refs?)", path);
    if (StackNearlyFull()) Fail(StackMessage("values", depth_), path);
    struct Leave {
      int& depth;
      ~Leave() { --depth; }
    } leave{depth_};
    if (schema.IsObject()) {
      // A bare local $ref, or an allOf of one schema, is written as its target is (a
      // string one raw), as XGrammar reads them; a recursive definition met again
      // inside itself is JSON.
      if (const JsonValue* ref = schema.Find("$ref"); ref && ref->IsString() && IsBare(schema, "$ref")) {
        const JsonValue& target = Resolved(schema);
        if (&target != &schema &&
            std::find(expanding_.begin(), expanding_.end(), ref->text) == expanding_.end()) {
          expanding_.push_back(ref->text);
          int32_t value = Value(target, path + "/" + JsonPointerToken("$ref") + "<" + ref->text + ">", in_union);
          expanding_.pop_back();
          return value;
        }
      }
      if (const JsonValue* all = schema.Find("allOf");
          all && all->IsArray() && all->items.size() == 1 && IsBare(schema, "allOf")) {
        return Value(all->items[0], At(path, "allOf") + "/0", in_union);
      }
      if (const JsonValue* c = schema.Find("const")) return Leaf(c->IsString(), Literal(*c));
      if (const JsonValue* e = schema.Find("enum"); e && e->IsArray() && !e->items.empty()) {
        std::vector<int32_t> alts;
        for (const JsonValue& v : e->items) alts.push_back(Leaf(v.IsString(), Literal(v)));
        return b_->Choice(alts);
      }
      if (IsBareAnyOf(schema)) {
        const JsonValue& branches = *schema.Find("anyOf");
        std::vector<int32_t> alts;
        for (size_t i = 0; i < branches.items.size(); ++i) {
          alts.push_back(Value(branches.items[i], At(path, "anyOf") + "/" + std::to_string(i), true));
        }
        return b_->Choice(alts);
      }
      const JsonValue* type = schema.Find("type");
      if (type && type->IsString() && type->text == "string") {
        // A property's own string: raw, or an error naming what raw text cannot check.
        return !in_union || RawCheckable(schema) ? Leaf(true, RawString(schema, path)) : Leaf(false, Json(schema, path));
      }
      if (type && type->IsArray() && !type->items.empty() && RawCheckable(schema)) {
        std::vector<int32_t> alts;
        for (const JsonValue& t : type->items) alts.push_back(Value(WithType(schema, t), path, true));
        return b_->Choice(alts);
      }
      if (OnlyAnnotations(schema)) return FreeValue(schema, path);
    }
    if (schema.IsBool() && !schema.boolean) Fail("cannot write a property whose schema is false", path);
    if (schema.IsBool()) return FreeValue(schema, path);
    return Leaf(false, Json(schema, path));
  }

  // A value written as `value` (raw text or JSON): deepseek_v4_1_xml's flag before it.
  int32_t Leaf(bool raw, int32_t value) {
    if (!IsDeepSeekV41(style_)) return value;
    return b_->Seq({b_->Bytes(raw ? "\" string=\"true\">" : "\" string=\"false\">"), value});
  }

  // An unconstrained value: raw text (deepseek_v4_1_xml: or, flagged so, any JSON).
  int32_t FreeValue(const JsonValue& schema, const std::string& path) {
    if (!IsDeepSeekV41(style_)) return AnyText();
    return b_->Choice({Leaf(true, AnyText()), Leaf(false, Json(schema, path))});
  }

  static bool IsAnnotation(const std::string& key) {
    static const char* kAnnotations[] = {"title", "description", "default", "examples", "$comment"};
    return std::any_of(std::begin(kAnnotations), std::end(kAnnotations), [&](const char* k) { return key == k; });
  }
  static bool OnlyAnnotations(const JsonValue& schema) {
    return std::all_of(schema.members.begin(), schema.members.end(), [](const auto& m) { return IsAnnotation(m.first); });
  }
  // `keyword` as the schema's only keyword besides annotations.
  static bool IsBare(const JsonValue& schema, const char* keyword) {
    return std::all_of(schema.members.begin(), schema.members.end(),
                       [&](const auto& m) { return m.first == keyword || IsAnnotation(m.first); });
  }
  static bool IsBareAnyOf(const JsonValue& schema) {
    const JsonValue* any = schema.Find("anyOf");
    return any && any->IsArray() && !any->items.empty() && IsBare(schema, "anyOf");
  }
  // Keywords that constrain a string in ways raw text is not checked for.
  static bool IsUncheckedStringKeyword(const std::string& key) {
    static const char* kUnchecked[] = {"not", "allOf", "anyOf", "oneOf", "if", "then", "else", "$ref",
                                       "$dynamicRef", "dependentSchemas", "const", "enum"};
    return std::any_of(std::begin(kUnchecked), std::end(kUnchecked), [&](const char* k) { return key == k; });
  }
  // Whether RawString checks a string schema exactly: no keyword raw text is not checked
  // for, and at most one of pattern, the lengths or a known format (an unknown format is
  // an annotation, as in JSON). Keywords of other types and unknown ones do not matter
  // to a string.
  static bool RawCheckable(const JsonValue& schema) {
    int checks = 0;
    bool lengths = false;
    for (const auto& [key, value] : schema.members) {
      if (IsUncheckedStringKeyword(key)) return false;
      if (key == "minLength" || key == "maxLength") {
        checks += !lengths, lengths = true;
      } else if (key == "pattern" || (key == "format" && value.IsString() && JsonFormatEbnf(value.text))) {
        ++checks;
      }
    }
    return checks <= 1;
  }

  // The value as JSON between whitespace.
  int32_t Json(const JsonValue& schema, const std::string& path) {
    JsonValue with_defs = schema;  // keep the root's definitions reachable for $refs
    if (with_defs.IsObject()) {
      for (const char* key : {"$defs", "definitions", "$schema"}) {
        const JsonValue* defs = root_->Find(key);
        if (defs && !with_defs.Find(key)) with_defs.members.emplace_back(key, *defs);
      }
    }
    return b_->Seq({ws_, json_value_(with_defs, path), ws_});
  }

  // A const or enum value: a string's raw text, anything else its JSON text.
  // A const / enum value: raw text when a string, else JSON; none that holds an exclusion.
  int32_t Literal(const JsonValue& v) {
    std::string text = v.IsString() ? v.text : DumpJson(v);
    return excludes_ && excludes_->Holds(text) ? Nothing(b_) : b_->Bytes(text);
  }

  int32_t RawString(const JsonValue& schema, const std::string& path) { return raw_.Value(schema, path); }
  int32_t AnyText() { return raw_.AnyText(); }

  static constexpr int kMaxDepth = 1000;
  int depth_ = 0;  // Value calls open now
  IrBuilder* b_;
  const XmlStyle& style_;
  const std::function<int32_t(const JsonValue&, const std::string&)>& json_value_;
  const JsonValue* root_ = nullptr;
  static constexpr int kMaxRootRefs = 8;  // a root $ref chain (a cycle fails here)
  int root_refs_ = 0;
  std::vector<std::string> expanding_;  // the $refs a Value is inside (recursive definitions)
  int32_t ws_ = -1;
  RawStringWriter raw_;
  const ExcludedStrings* excludes_;  // nullptr: none
};

}  // namespace

const char* XmlAttributeEntity(uint32_t c) {
  switch (c) {
    case '&': return "&amp;";
    case '"': return "&quot;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    default: return nullptr;
  }
}

std::string XmlAttributeText(const std::string& text) {
  std::string out;
  for (char c : text) {
    const char* entity = XmlAttributeEntity(static_cast<uint8_t>(c));
    out += entity ? entity : std::string(1, c);
  }
  return out;
}

bool IsXmlStyle(const std::string& style) {
  return FindStyle(style) != nullptr || style == "minimax_m3_xml" || style == "cohere_xml" ||
         style == "gemma";  // the last three: own writers
}

int32_t XmlParameters(IrBuilder* b, const JsonValue& schema, const std::string& style, int max_whitespace,
                      bool any_order, const std::string& path,
                      const std::function<int32_t(const JsonValue&, const std::string&)>& json_value,
                      const ExcludedStrings* excludes) {
  const XmlStyle* s = FindStyle(style);
  if (!s) throw StructuralTagError("unknown style \"" + style + "\"", path);
  JsonValue read = SchemaAsDeclared(schema, path);
  return XmlWriter(b, *s, max_whitespace, json_value, excludes).Object(read, path, any_order);
}

}  // namespace xgr2
