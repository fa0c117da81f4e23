#include "frontends/minimax_m3_xml.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "frontends/regex_dfa.h"
#include "frontends/schema_value_writer.h"
#include "frontends/schema_refs.h"
#include "grammar/tag_dispatch.h"
#include "xgr2/errors.h"

namespace xgr2 {
namespace {

constexpr const char* kMarker = "]<]minimax[>[";  // before every opening and closing tag

class M3Writer : public SchemaValueWriter {
 public:
  M3Writer(IrBuilder* b, const JsonValue& root, int max_ws, bool any_order, const ScalarGrammar& scalar)
      : SchemaValueWriter(b, root, "minimax_m3_xml", scalar), any_order_(any_order) {
    ws_ = b_->RuleRef("m3_ws", b_->Repeat(b_->Class({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}}), 0,
                                          max_ws));
  }

  // The root: an object's elements.
  int32_t Root(const JsonValue& schema, const std::string& path) {
    const JsonValue& s = Resolved(schema, path);
    if (s.IsBool()) {
      if (!s.boolean) Fail("cannot write arguments whose schema is false", path);
      return Object(JsonEmptyObject(), path);
    }
    if (const JsonValue* t = s.Find("type"); t && !(t->IsString() && t->text == "object")) {
      Fail("needs an object schema at the root", PointerAt(path, "type"));
    }
    return Object(s, path);
  }

 private:
  // A bare local $ref's target (chains followed), or `s`.
  const JsonValue& Resolved(const JsonValue& s, const std::string& path) {
    const JsonValue* cur = &s;
    for (int hops = 0; cur->IsObject(); ++hops) {
      const JsonValue* ref = cur->Find("$ref");
      if (!ref || !IsBareKeyword(*cur, "$ref")) break;
      if (hops > 16) Fail("got a $ref chain that does not end", path);
      cur = &Target(*ref, path);
    }
    return *cur;
  }

  // One element whose name is known: its tags spell it.
  int32_t Element(const std::string& name, int32_t value, const std::string& path) {
    bool blank =
        std::all_of(name.begin(), name.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
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
           PointerAt(path, "minProperties"));
    }
    if (max_count > 0 && (unbounded || max_count < static_cast<int64_t>(kinds.size()))) {
      Fail("cannot check maxProperties below the possible properties in declared order (any_order can)",
           PointerAt(path, "maxProperties"));
    }
    parts.insert(parts.begin(), ws_);
    return b_->Seq(parts);
  }

  int32_t Object(const JsonValue& s, const std::string& path) override {
    static const std::set<std::string> kKnown = {"type", "properties", "required", "additionalProperties",
                                                 "unevaluatedProperties", "patternProperties", "propertyNames",
                                                 "minProperties", "maxProperties"};
    CheckKnownKeywords(s, kKnown, "object", path);
    std::set<std::string> required;
    if (const JsonValue* r = s.Find("required")) {
      if (!r->IsArray()) Fail("needs \"required\" to be an array of names", PointerAt(path, "required"));
      for (const JsonValue& name : r->items) required.insert(name.text);
    }
    std::vector<int32_t> parts, kinds;
    std::vector<std::string> declared;
    const JsonValue* props = s.Find("properties");
    if (props && props->IsObject()) {
      for (const auto& [name, sub] : props->members) {
        std::string where = PointerAt(PointerAt(path, "properties"), name);
        declared.push_back(name);
        int32_t one = b_->Seq({Element(name, Value(sub, where), where), ws_});
        parts.push_back(required.count(name) ? one : b_->Optional(one));
        kinds.push_back(one);
      }
    }
    for (const std::string& name : required) {
      if (std::find(declared.begin(), declared.end(), name) == declared.end()) {
        Fail("needs the required property \"" + name + "\" declared in \"properties\"", PointerAt(path, "required"));
      }
    }
    // Other names: a pattern's (with its schema), or any other where additional ones are
    // allowed (explicitly, or by declaring no properties, as in JSON).
    static const CharDfa kNames = CharDfa::FromPattern("^[^/> \\t\\n\\r][^>]*$", false);
    CharDfa allowed = kNames;
    if (const JsonValue* pn = s.Find("propertyNames")) {
      const JsonValue* pattern = pn->IsObject() ? pn->Find("pattern") : nullptr;
      if (!pattern || !pattern->IsString() || !IsBareKeyword(*pn, "pattern")) {
        if (!(pn->IsObject() && IsBareKeyword(*pn, nullptr))) {
          Fail("supports propertyNames with a pattern only", PointerAt(path, "propertyNames"));
        }
      } else {
        allowed = allowed.Intersect(NamesOf(pattern->text, PointerAt(PointerAt(path, "propertyNames"), "pattern")));
      }
    }
    if (!declared.empty()) allowed = allowed.Minus(CharDfa::Words(declared));
    bool open = false;
    if (const JsonValue* patterns = s.Find("patternProperties"); patterns && patterns->IsObject()) {
      std::vector<CharDfa> seen;
      for (const auto& [pattern, sub] : patterns->members) {
        std::string where = PointerAt(PointerAt(path, "patternProperties"), pattern);
        CharDfa names = NamesOf(pattern, where);
        for (const std::string& name : declared) {
          bool free = (sub.IsBool() && sub.boolean) || (sub.IsObject() && IsBareKeyword(sub, nullptr));
          if (names.Accepts(name) && !free) {
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
      int32_t value =
          any_extra || extra->IsBool() ? AnyValue() : Value(*extra, PointerAt(path, "additionalProperties"));
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

  int32_t Array(const JsonValue& s, const std::string& path) override {
    static const std::set<std::string> kKnown = {"type", "items", "prefixItems", "minItems", "maxItems"};
    CheckKnownKeywords(s, kKnown, "array", path);
    std::vector<int32_t> prefix;
    if (const JsonValue* p = s.Find("prefixItems"); p && p->IsArray()) {
      for (size_t i = 0; i < p->items.size(); ++i) {
        std::string where = PointerAt(path, "prefixItems") + "/" + std::to_string(i);
        prefix.push_back(b_->Seq({Element("item", Value(p->items[i], where), where), ws_}));
      }
    }
    const JsonValue* items = s.Find("items");
    bool no_more = items && items->IsBool() && !items->boolean;
    int32_t item = no_more ? -1 : b_->Seq({Element("item", items ? Value(*items, PointerAt(path, "items")) : AnyValue(),
                                                   PointerAt(path, "items")), ws_});
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

  int32_t String(const JsonValue& s, const std::string& path) override {
    CheckUncheckedStringKeywords(s, path, ": its raw text runs to the namespace-marker exclusion");
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
  int32_t AnyValue() override {
    if (any_value_ < 0) {
      any_value_ = b_->NewRule("m3_any");
      if (any_name_ < 0) DynamicElement(b_->Empty(), b_->Empty());  // makes any_name_
      int32_t element = DynamicElement(any_name_, b_->Ref(any_value_));
      b_->SetBody(any_value_, b_->Choice({RawText(), b_->Seq({ws_, b_->Plus(b_->Seq({element, ws_}))})}));
    }
    return b_->Ref(any_value_);
  }

  // A const or enum value: scalars as their text (a string raw), containers as elements.
  int32_t Literal(const JsonValue& v, const std::string& path) override {
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

  bool any_order_;
  int32_t ws_ = -1, any_name_ = -1;         // expressions (references to their rules)
  int32_t raw_text_ = -1, any_value_ = -1;  // rules
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
