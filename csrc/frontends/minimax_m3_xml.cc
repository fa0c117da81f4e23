#include "frontends/minimax_m3_xml.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "frontends/regex_dfa.h"
#include "frontends/schema_refs.h"
#include "grammar/tag_dispatch.h"
#include "xgr2/errors.h"

namespace xgr2 {
namespace {

constexpr const char* kMarker = "]<]minimax[>[";  // before every opening and closing tag

JsonValue StringValue(const std::string& text) {
  JsonValue v;
  v.kind = JsonValue::Kind::kString;
  v.text = text;
  return v;
}

JsonValue EmptyObject() {
  JsonValue v;
  v.kind = JsonValue::Kind::kObject;
  return v;
}

std::string At(const std::string& path, const std::string& key) { return path + "/" + JsonPointerToken(key); }

bool IsAnnotation(const std::string& key) {
  static const std::set<std::string> kAnnotations = {"title", "description", "default", "examples", "$comment",
                                                     "$schema", "$id", "$defs", "definitions", "deprecated",
                                                     "readOnly", "writeOnly"};
  return kAnnotations.count(key) > 0;
}

// `keyword` (or nothing, when null) as the schema's only keyword besides annotations.
bool IsBare(const JsonValue& s, const char* keyword) {
  return std::all_of(s.members.begin(), s.members.end(),
                     [&](const auto& m) { return (keyword && m.first == keyword) || IsAnnotation(m.first); });
}

class M3Writer {
 public:
  M3Writer(IrBuilder* b, const JsonValue& root, int max_ws, bool any_order,
           const std::function<int32_t(const JsonValue&, const std::string&)>& scalar)
      : b_(b), root_(root), any_order_(any_order), scalar_(scalar) {
    ws_ = b_->RuleRef("m3_ws", b_->Repeat(b_->Class({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}}), 0,
                                          max_ws));
  }

  // The root: an object's elements.
  int32_t Root(const JsonValue& schema, const std::string& path) {
    const JsonValue& s = Resolved(schema, path);
    if (s.IsBool()) {
      if (!s.boolean) Fail("cannot write arguments whose schema is false", path);
      return Object(EmptyObject(), path);
    }
    if (const JsonValue* t = s.Find("type"); t && !(t->IsString() && t->text == "object")) {
      Fail("needs an object schema at the root", At(path, "type"));
    }
    return Object(s, path);
  }

 private:
  [[noreturn]] void Fail(const std::string& msg, const std::string& path) {
    throw StructuralTagError("the style \"minimax_m3_xml\" " + msg, path);
  }

  // A bare local $ref's target (chains followed), or `s`.
  const JsonValue& Resolved(const JsonValue& s, const std::string& path) {
    const JsonValue* cur = &s;
    for (int hops = 0; cur->IsObject(); ++hops) {
      const JsonValue* ref = cur->Find("$ref");
      if (!ref || !IsBare(*cur, "$ref")) break;
      if (hops > 16) Fail("got a $ref chain that does not end", path);
      cur = &Target(*ref, path);
    }
    return *cur;
  }

  const JsonValue& Target(const JsonValue& ref, const std::string& path) {
    if (ref.IsString() && ref.text == "#") return root_;
    if (ref.IsString()) {
      for (const char* defs : {"$defs", "definitions"}) {
        std::string prefix = std::string("#/") + defs + "/";
        if (ref.text.rfind(prefix, 0) != 0) continue;
        const JsonValue* all = root_.Find(defs);
        const JsonValue* target = all ? all->Find(ref.text.substr(prefix.size())) : nullptr;
        if (target) return *target;
      }
    }
    Fail("supports only local $refs to \"#\", \"#/$defs/NAME\" or \"#/definitions/NAME\"", At(path, "$ref"));
  }

  // One element whose name is known: its tags spell it.
  int32_t Element(const std::string& name, int32_t value, const std::string& path) {
    bool blank = std::all_of(name.begin(), name.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
    if (blank || name[0] == '/' || name.find('>') != std::string::npos) {
      Fail("cannot write the element name \"" + name + "\" (it cannot be blank, start with '/' or hold '>')", path);
    }
    return b_->Seq({b_->Bytes(std::string(kMarker) + "<" + name + ">"), value,
                    b_->Bytes(std::string(kMarker) + "</" + name + ">")});
  }

  // One element named by `names` (a rule of names): the closing tag takes any name, as
  // XGrammar's style does (a grammar cannot repeat an unbounded name).
  int32_t DynamicElement(int32_t names, int32_t value) {
    if (any_name_ < 0) {
      any_name_ = b_->RuleRef("m3_name", b_->Seq({b_->Class({{'/', '/'}, {'>', '>'}}, true),
                                                  b_->Star(b_->Class({{'>', '>'}}, true))}));
    }
    return b_->Seq({b_->Bytes(std::string(kMarker) + "<"), names, b_->Bytes(">"), value,
                    b_->Bytes(std::string(kMarker) + "</"), any_name_, b_->Bytes(">")});
  }

  // The elements `kinds` (each an element), required ones as `parts` built them.
  int32_t Elements(std::vector<int32_t> parts, const std::vector<int32_t>& kinds, size_t needed, int64_t min_count,
                   int64_t max_count, bool unbounded, const std::string& path) {
    if (max_count == 0 || kinds.empty()) {
      if (min_count > 0 || needed > 0) Fail("got minProperties or required beyond what the schema allows", path);
      return b_->Bytes("");
    }
    if (any_order_) {
      int32_t lo = static_cast<int32_t>(std::max<int64_t>(static_cast<int64_t>(needed), min_count));
      return b_->Seq({ws_, b_->Repeat(b_->Choice(kinds), lo, static_cast<int32_t>(max_count))});
    }
    if (min_count > static_cast<int64_t>(needed)) {
      Fail("cannot check minProperties above the required properties in declared order (any_order can)",
           At(path, "minProperties"));
    }
    if (max_count > 0 && (unbounded || max_count < static_cast<int64_t>(kinds.size()))) {
      Fail("cannot check maxProperties below the possible properties in declared order (any_order can)",
           At(path, "maxProperties"));
    }
    parts.insert(parts.begin(), ws_);
    return b_->Seq(parts);
  }

  int64_t Count(const JsonValue& s, const char* key, const std::string& path) {
    const JsonValue* v = s.Find(key);
    if (!v) return -1;
    bool ok = v->IsNumber() && !v->text.empty() && v->text.size() <= 9 &&
              std::all_of(v->text.begin(), v->text.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!ok) Fail(std::string("needs \"") + key + "\" to be a non-negative integer", At(path, key));
    return std::stol(v->text);
  }

  int32_t Object(const JsonValue& s, const std::string& path) {
    static const std::set<std::string> kKnown = {"type", "properties", "required", "additionalProperties",
                                                 "unevaluatedProperties", "patternProperties", "propertyNames",
                                                 "minProperties", "maxProperties"};
    for (const auto& [key, value] : s.members) {
      if (!kKnown.count(key) && !IsAnnotation(key)) Fail("cannot write \"" + key + "\" on an object", At(path, key));
    }
    std::set<std::string> required;
    if (const JsonValue* r = s.Find("required")) {
      if (!r->IsArray()) Fail("needs \"required\" to be an array of names", At(path, "required"));
      for (const JsonValue& name : r->items) required.insert(name.text);
    }
    std::vector<int32_t> parts, kinds;
    std::vector<std::string> declared;
    const JsonValue* props = s.Find("properties");
    if (props && props->IsObject()) {
      for (const auto& [name, sub] : props->members) {
        std::string where = At(At(path, "properties"), name);
        declared.push_back(name);
        int32_t one = b_->Seq({Element(name, Value(sub, where), where), ws_});
        parts.push_back(required.count(name) ? one : b_->Optional(one));
        kinds.push_back(one);
      }
    }
    for (const std::string& name : required) {
      if (std::find(declared.begin(), declared.end(), name) == declared.end()) {
        Fail("needs the required property \"" + name + "\" declared in \"properties\"", At(path, "required"));
      }
    }
    // Other names: a pattern's (with its schema), or any other where additional ones are
    // allowed (explicitly, or by declaring no properties, as in JSON).
    static const CharDfa kNames = CharDfa::FromPattern("^[^/> \\t\\n\\r][^>]*$", false);
    CharDfa allowed = kNames;
    if (const JsonValue* pn = s.Find("propertyNames")) {
      const JsonValue* pattern = pn->IsObject() ? pn->Find("pattern") : nullptr;
      if (!pattern || !pattern->IsString() || !IsBare(*pn, "pattern")) {
        if (!(pn->IsObject() && IsBare(*pn, nullptr))) {
          Fail("supports propertyNames with a pattern only", At(path, "propertyNames"));
        }
      } else {
        allowed = allowed.Intersect(NamesOf(pattern->text, At(At(path, "propertyNames"), "pattern")));
      }
    }
    if (!declared.empty()) allowed = allowed.Minus(CharDfa::Words(declared));
    bool open = false;
    if (const JsonValue* patterns = s.Find("patternProperties"); patterns && patterns->IsObject()) {
      std::vector<CharDfa> seen;
      for (const auto& [pattern, sub] : patterns->members) {
        std::string where = At(At(path, "patternProperties"), pattern);
        CharDfa names = NamesOf(pattern, where);
        for (const std::string& name : declared) {
          if (names.Accepts(name) && !(sub.IsBool() && sub.boolean) && !(sub.IsObject() && IsBare(sub, nullptr))) {
            Fail("cannot check a declared property (\"" + name + "\") that a pattern also constrains", where);
          }
        }
        CharDfa mine = names.Intersect(allowed);
        for (const CharDfa& other : seen) {
          if (!mine.Intersect(other).IsEmpty()) Fail("cannot check a name that two patterns match", where);
        }
        allowed = allowed.Minus(names);
        if (mine.IsEmpty()) continue;
        seen.push_back(mine);
        kinds.push_back(b_->Seq({DynamicElement(NameRule(mine), Value(sub, where)), ws_}));
        parts.push_back(b_->Star(kinds.back()));
        open = true;
      }
    }
    const JsonValue* extra = s.Find("additionalProperties");
    if (!extra) extra = s.Find("unevaluatedProperties");
    const bool any_extra = !extra && !props && !s.Find("patternProperties");
    if ((any_extra || (extra && !(extra->IsBool() && !extra->boolean))) && !allowed.IsEmpty()) {
      int32_t value = any_extra || extra->IsBool() ? AnyValue() : Value(*extra, At(path, "additionalProperties"));
      kinds.push_back(b_->Seq({DynamicElement(NameRule(allowed), value), ws_}));
      parts.push_back(b_->Star(kinds.back()));
      open = true;
    }
    return Elements(parts, kinds, required.size(), Count(s, "minProperties", path), Count(s, "maxProperties", path),
                    open, path);
  }

  CharDfa NamesOf(const std::string& pattern, const std::string& path) {
    try {
      return CharDfa::FromPattern(pattern, true);
    } catch (const std::runtime_error& e) {  // RegexError, DfaLimitError
      Fail(std::string("got a pattern it cannot use: ") + e.what(), path);
    }
  }

  int32_t NameRule(const CharDfa& names) {
    return EmitDfa(b_, names, [&](const std::vector<CodepointRange>& c) { return b_->Class(c); }, "m3_names");
  }

  int32_t Array(const JsonValue& s, const std::string& path) {
    static const std::set<std::string> kKnown = {"type", "items", "prefixItems", "minItems", "maxItems"};
    for (const auto& [key, value] : s.members) {
      if (!kKnown.count(key) && !IsAnnotation(key)) Fail("cannot write \"" + key + "\" on an array", At(path, key));
    }
    std::vector<int32_t> prefix;
    if (const JsonValue* p = s.Find("prefixItems"); p && p->IsArray()) {
      for (size_t i = 0; i < p->items.size(); ++i) {
        std::string where = At(path, "prefixItems") + "/" + std::to_string(i);
        prefix.push_back(b_->Seq({Element("item", Value(p->items[i], where), where), ws_}));
      }
    }
    const JsonValue* items = s.Find("items");
    bool no_more = items && items->IsBool() && !items->boolean;
    int32_t item = no_more ? -1 : b_->Seq({Element("item", items ? Value(*items, At(path, "items")) : AnyValue(),
                                                   At(path, "items")), ws_});
    const int64_t lo = std::max<int64_t>(0, Count(s, "minItems", path)), hi = Count(s, "maxItems", path);
    // n items: the first min(n, prefix) by prefixItems, the rest by items.
    std::vector<int32_t> alts;
    const int64_t k = static_cast<int64_t>(prefix.size());
    for (int64_t n = lo; n < k && (hi < 0 || n <= hi); ++n) {
      alts.push_back(b_->Seq(std::vector<int32_t>(prefix.begin(), prefix.begin() + n)));
    }
    if (hi < 0 || hi >= k) {
      std::vector<int32_t> all = prefix;
      if (item >= 0) {
        all.push_back(b_->Repeat(item, static_cast<int32_t>(std::max<int64_t>(0, lo - k)),
                                 hi < 0 ? -1 : static_cast<int32_t>(hi - k)));
        alts.push_back(b_->Seq(all));
      } else if (lo <= k) {
        alts.push_back(b_->Seq(all));
      }
    }
    if (alts.empty()) Fail("got an array schema that no array meets", path);
    return b_->Seq({ws_, b_->Choice(alts)});
  }

  int32_t String(const JsonValue& s, const std::string& path) {
    for (const auto& [key, value] : s.members) {
      bool known_format = key == "format" && value.IsString() && value.text != "" &&
                          std::set<std::string>{"date-time", "date", "time", "duration", "email", "hostname", "ipv4",
                                                "ipv6", "uri", "uri-reference", "uuid"}.count(value.text);
      bool unchecked = key == "pattern" || known_format || (key == "minLength" && !(value.IsNumber() && value.text == "0")) ||
                       key == "maxLength";
      if (unchecked) {
        Fail("cannot check \"" + key + "\" on a string: its raw text runs to the namespace-marker exclusion",
             At(path, key));
      }
    }
    return RawText();
  }

  // Text without the namespace marker (the element's closing tag starts with it).
  int32_t RawText() {
    if (raw_text_ < 0) {
      TagDispatchSpec spec;
      spec.excludes = {kMarker};
      raw_text_ = b_->NewRule("m3_text");
      b_->SetBody(raw_text_, AddTagDispatch(b_->ir(), std::move(spec), {}));
    }
    return b_->Ref(raw_text_);
  }

  // Any value: raw text, or elements of any names holding any values.
  int32_t AnyValue() {
    if (any_value_ < 0) {
      any_value_ = b_->NewRule("m3_any");
      if (any_name_ < 0) DynamicElement(b_->Empty(), b_->Empty());  // makes any_name_
      int32_t element = DynamicElement(any_name_, b_->Ref(any_value_));
      b_->SetBody(any_value_, b_->Choice({RawText(), b_->Seq({ws_, b_->Plus(b_->Seq({element, ws_}))})}));
    }
    return b_->Ref(any_value_);
  }

  // A const or enum value: scalars as their text (a string raw), containers as elements.
  int32_t Literal(const JsonValue& v, const std::string& path) {
    switch (v.kind) {
      case JsonValue::Kind::kString:
        if (v.text.find(kMarker) != std::string::npos) Fail("cannot write a string holding the namespace marker", path);
        return b_->Bytes(v.text);
      case JsonValue::Kind::kObject: {
        std::vector<int32_t> parts = {ws_};
        for (const auto& [name, member] : v.members) {
          parts.push_back(Element(name, Literal(member, path), path));
          parts.push_back(ws_);
        }
        return v.members.empty() ? b_->Bytes("") : b_->Seq(parts);
      }
      case JsonValue::Kind::kArray: {
        std::vector<int32_t> parts = {ws_};
        for (const JsonValue& item : v.items) {
          parts.push_back(Element("item", Literal(item, path), path));
          parts.push_back(ws_);
        }
        return v.items.empty() ? b_->Bytes("") : b_->Seq(parts);
      }
      default:
        return b_->Bytes(DumpJson(v));
    }
  }

  static JsonValue WithType(const JsonValue& s, const std::string& type) {
    JsonValue one = s;
    bool set = false;
    for (auto& [key, value] : one.members) {
      if (key == "type") value = StringValue(type), set = true;
    }
    if (!set) one.members.emplace_back("type", StringValue(type));
    return one;
  }

  int32_t Value(const JsonValue& schema, const std::string& path) {
    // Nested values and $ref chains recurse here: bounded, as the JSON front end bounds
    // its subschemas, so that no schema can exhaust the stack.
    if (++depth_ > kMaxDepth) Fail("got values nested more than 1000 deep (a long chain of $refs?)", path);
    struct Leave {
      int& depth;
      ~Leave() { --depth; }
    } leave{depth_};
    if (schema.IsBool()) {
      if (!schema.boolean) Fail("cannot write a value whose schema is false", path);
      return AnyValue();
    }
    if (!schema.IsObject()) Fail("needs a schema object", path);
    const JsonValue& s = schema;
    if (IsBare(s, nullptr)) return AnyValue();
    if (const JsonValue* ref = s.Find("$ref")) {
      if (!IsBare(s, "$ref")) Fail("cannot write keywords beside a $ref", At(path, "$ref"));
      std::string key = ref->IsString() ? ref->text : "";
      auto it = refs_.find(key);
      if (it != refs_.end()) return b_->Ref(it->second);
      int32_t rule = b_->NewRule("m3_ref");
      refs_[key] = rule;  // first: a recursive definition refers to it
      b_->SetBody(rule, Value(Target(*ref, path), At(path, "$ref")));
      return b_->Ref(rule);
    }
    if (const JsonValue* c = s.Find("const")) return Literal(*c, At(path, "const"));
    if (const JsonValue* e = s.Find("enum"); e && e->IsArray()) {
      std::vector<int32_t> alts;
      for (size_t i = 0; i < e->items.size(); ++i) alts.push_back(Literal(e->items[i], At(path, "enum")));
      if (alts.empty()) Fail("got an empty enum", At(path, "enum"));
      return b_->Choice(alts);
    }
    for (const char* combinator : {"anyOf", "oneOf", "allOf"}) {
      const JsonValue* branches = s.Find(combinator);
      if (!branches) continue;
      if (!branches->IsArray() || branches->items.empty() || !IsBare(s, combinator)) {
        Fail(std::string("supports ") + combinator + " only as a schema's one keyword", At(path, combinator));
      }
      if (std::string(combinator) == "allOf" && branches->items.size() > 1) {
        Fail("supports allOf of one schema only", At(path, combinator));
      }
      if (std::string(combinator) == "oneOf") CheckDisjoint(*branches, At(path, combinator));
      std::vector<int32_t> alts;
      for (size_t i = 0; i < branches->items.size(); ++i) {
        alts.push_back(Value(branches->items[i], At(path, combinator) + "/" + std::to_string(i)));
      }
      return b_->Choice(alts);
    }
    std::vector<std::string> types;
    if (const JsonValue* t = s.Find("type")) {
      if (t->IsString()) types.push_back(t->text);
      for (const JsonValue& one : t->items) types.push_back(one.text);
    } else if (s.Find("properties") || s.Find("additionalProperties") || s.Find("patternProperties")) {
      types.push_back("object");
    } else if (s.Find("items") || s.Find("prefixItems")) {
      types.push_back("array");
    } else {
      Fail("needs a \"type\" (or a combinator) to write a value", path);
    }
    std::vector<int32_t> alts;
    for (const std::string& type : types) {
      JsonValue one = WithType(s, type);
      if (type == "object") {
        alts.push_back(Object(one, path));
      } else if (type == "array") {
        alts.push_back(Array(one, path));
      } else if (type == "string") {
        alts.push_back(String(one, path));
      } else if (type == "number" || type == "integer" || type == "boolean" || type == "null") {
        alts.push_back(scalar_(Scalar(one, type), path));
      } else {
        Fail("got an unknown type \"" + type + "\"", At(path, "type"));
      }
    }
    return b_->Choice(alts);
  }

  // The keywords of `s` that a scalar of `type` reads (the others are another type's).
  static JsonValue Scalar(const JsonValue& s, const std::string& type) {
    static const std::set<std::string> kNumeric = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                                   "multipleOf"};
    JsonValue out = EmptyObject();
    out.members.emplace_back("type", StringValue(type));
    if (type == "number" || type == "integer") {
      for (const auto& [key, value] : s.members) {
        if (kNumeric.count(key)) out.members.emplace_back(key, value);
      }
    }
    return out;
  }

  // oneOf's branches as alternatives: only where no value could meet two of them (one
  // type each, no two alike, not integer beside number).
  void CheckDisjoint(const JsonValue& branches, const std::string& path) {
    std::set<std::string> seen;
    for (const JsonValue& b : branches.items) {
      const JsonValue* t = b.IsObject() ? b.Find("type") : nullptr;
      if (!t || !t->IsString() || !seen.insert(t->text == "integer" ? "number" : t->text).second) {
        Fail("supports oneOf only of branches of different types (as alternatives they could overlap)", path);
      }
    }
  }

  static constexpr int kMaxDepth = 1000;
  int depth_ = 0;  // Value calls open now
  IrBuilder* b_;
  const JsonValue& root_;
  bool any_order_;
  const std::function<int32_t(const JsonValue&, const std::string&)>& scalar_;
  int32_t ws_ = -1, any_name_ = -1;   // expressions (references to their rules)
  int32_t raw_text_ = -1, any_value_ = -1;  // rules
  std::map<std::string, int32_t> refs_;  // $ref -> its rule (recursive definitions)
};

}  // namespace

int32_t MinimaxM3Parameters(IrBuilder* b, const JsonValue& schema, int max_whitespace, bool any_order,
                            const std::string& path,
                            const std::function<int32_t(const JsonValue&, const std::string&)>& scalar) {
  JsonValue read = schema;  // read as its declared draft (keywords beside a Draft 4-7 $ref do not count)
  try {
    ReadAsDeclaredDraft(&read);
  } catch (const SchemaError& e) {
    throw StructuralTagError(std::string("invalid JSON Schema: ") + e.what(), path + e.pointer);
  }
  return M3Writer(b, read, max_whitespace, any_order, scalar).Root(read, path);
}

}  // namespace xgr2
