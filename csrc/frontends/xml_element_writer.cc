#include "frontends/xml_element_writer.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace xgr2 {

XmlElementWriter::XmlElementWriter(IrBuilder* b, const JsonValue& root, std::string style, int max_ws, bool any_order,
                                   const ScalarGrammar& scalar)
    : SchemaValueWriter(b, root, style, scalar), any_order_(any_order) {
  ws_ = b_->RuleRef(style + "_ws",
                    b_->Repeat(b_->Class({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}}), 0, max_ws));
}

int32_t XmlElementWriter::Root(const JsonValue& schema, const std::string& path) {
  const JsonValue& s = Resolved(schema, path);
  if (s.IsBool()) {
    if (!s.boolean) Fail("cannot write arguments whose schema is false", path);
    return Properties(JsonEmptyObject(), path);
  }
  if (const JsonValue* t = s.Find("type"); t && !(t->IsString() && t->text == "object")) {
    Fail("needs an object schema at the root", PointerAt(path, "type"));
  }
  return Properties(s, path);
}

const JsonValue& XmlElementWriter::Resolved(const JsonValue& s, const std::string& path) {
  const JsonValue* cur = &s;
  for (int hops = 0; cur->IsObject(); ++hops) {
    const JsonValue* ref = cur->Find("$ref");
    if (!ref || !IsBareKeyword(*cur, "$ref")) break;
    if (hops > 16) Fail("got a $ref chain that does not end", path);
    cur = &Target(*ref, path);
  }
  return *cur;
}

int32_t XmlElementWriter::Elements(std::vector<int32_t> parts, const std::vector<int32_t>& kinds, size_t needed,
                                   int64_t min_count, int64_t max_count, bool unbounded, const std::string& path) {
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

int32_t XmlElementWriter::Properties(const JsonValue& s, const std::string& path) {
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
      int32_t one = b_->Seq({NamedElement(name, Value(sub, where), where), ws_});
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
  CharDfa allowed = NameAlphabet();
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
      kinds.push_back(b_->Seq({DynamicElement(mine, Value(sub, where)), ws_}));
      parts.push_back(b_->Star(kinds.back()));
      open = true;
    }
  }
  const JsonValue* extra = s.Find("additionalProperties");
  if (!extra) extra = s.Find("unevaluatedProperties");
  const bool any_extra = !extra && !props && !s.Find("patternProperties");
  if ((any_extra || (extra && !(extra->IsBool() && !extra->boolean))) && !allowed.IsEmpty()) {
    int32_t value = any_extra || extra->IsBool() ? AnyValue() : Value(*extra, PointerAt(path, "additionalProperties"));
    kinds.push_back(b_->Seq({DynamicElement(allowed, value), ws_}));
    parts.push_back(b_->Star(kinds.back()));
    open = true;
  }
  return Elements(parts, kinds, required.size(), Count(s, "minProperties", path), Count(s, "maxProperties", path),
                  open, path);
}

CharDfa XmlElementWriter::NamesOf(const std::string& pattern, const std::string& path) {
  try {
    return CharDfa::FromPattern(pattern, true);
  } catch (const std::runtime_error& e) {  // RegexError, DfaLimitError
    Fail(std::string("got a pattern it cannot use: ") + e.what(), path);
  }
}

int32_t XmlElementWriter::Items(const JsonValue& s, const std::string& path) {
  static const std::set<std::string> kKnown = {"type", "items", "prefixItems", "minItems", "maxItems"};
  CheckKnownKeywords(s, kKnown, "array", path);
  std::vector<int32_t> prefix;
  if (const JsonValue* p = s.Find("prefixItems"); p && p->IsArray()) {
    for (size_t i = 0; i < p->items.size(); ++i) {
      std::string where = PointerAt(path, "prefixItems") + "/" + std::to_string(i);
      prefix.push_back(b_->Seq({ItemElement(Value(p->items[i], where), where), ws_}));
    }
  }
  const JsonValue* items = s.Find("items");
  bool no_more = items && items->IsBool() && !items->boolean;
  std::string where = PointerAt(path, "items");
  int32_t item = no_more ? -1 : b_->Seq({ItemElement(items ? Value(*items, where) : AnyValue(), where), ws_});
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

}  // namespace xgr2
