#include "frontends/schema_value_writer.h"

#include <algorithm>
#include <set>
#include <vector>

#include "frontends/json_formats.h"
#include "frontends/schema_refs.h"
#include "support/stack.h"
#include "xgr2/errors.h"

namespace xgr2 {

std::string PointerAt(const std::string& path, const std::string& key) { return path + "/" + JsonPointerToken(key); }

JsonValue JsonStringValue(const std::string& text) {
  JsonValue v;
  v.kind = JsonValue::Kind::kString;
  v.text = text;
  return v;
}

JsonValue SchemaAsDeclared(const JsonValue& schema, const std::string& path) {
  JsonValue read = schema;
  try {
    ReadAsDeclaredDraft(&read);
  } catch (const SchemaError& e) {
    throw StructuralTagError(std::string("invalid JSON Schema: ") + e.what(), path + e.pointer);
  }
  return read;
}

JsonValue JsonEmptyObject() {
  JsonValue v;
  v.kind = JsonValue::Kind::kObject;
  return v;
}

bool IsAnnotationKeyword(const std::string& key) {
  static const std::set<std::string> kAnnotations = {"title", "description", "default", "examples", "$comment",
                                                     "$schema", "$id", "$defs", "definitions", "deprecated",
                                                     "readOnly", "writeOnly"};
  return kAnnotations.count(key) > 0;
}

bool IsBareKeyword(const JsonValue& s, const char* keyword) {
  return std::all_of(s.members.begin(), s.members.end(),
                     [&](const auto& m) { return (keyword && m.first == keyword) || IsAnnotationKeyword(m.first); });
}

void SchemaValueWriter::Fail(const std::string& msg, const std::string& path) const {
  throw StructuralTagError("the style \"" + style_ + "\" " + msg, path);
}

const JsonValue& SchemaValueWriter::Target(const JsonValue& ref, const std::string& path) const {
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
  Fail("supports only local $refs to \"#\", \"#/$defs/NAME\" or \"#/definitions/NAME\"", PointerAt(path, "$ref"));
}

int64_t SchemaValueWriter::Count(const JsonValue& s, const char* key, const std::string& path) const {
  const JsonValue* v = s.Find(key);
  if (!v) return -1;
  bool ok = v->IsNumber() && !v->text.empty() && v->text.size() <= 9 &&
            std::all_of(v->text.begin(), v->text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!ok) Fail(std::string("needs \"") + key + "\" to be a non-negative integer", PointerAt(path, key));
  return std::stol(v->text);
}

void SchemaValueWriter::CheckKnownKeywords(const JsonValue& s, const std::set<std::string>& known, const char* what,
                                           const std::string& path) const {
  for (const auto& [key, value] : s.members) {
    if (!known.count(key) && !IsAnnotationKeyword(key)) {
      Fail("cannot write \"" + key + "\" on an " + what, PointerAt(path, key));
    }
  }
}

void SchemaValueWriter::CheckUncheckedStringKeywords(const JsonValue& s, const std::string& path,
                                                     const std::string& why) const {
  for (const auto& [key, value] : s.members) {
    bool known_format = key == "format" && value.IsString() && JsonFormatEbnf(value.text);  // others annotate
    bool no_minimum = key == "minLength" && value.IsNumber() && value.text == "0";
    if (key == "pattern" || known_format || (key == "minLength" && !no_minimum) || key == "maxLength") {
      Fail("cannot check \"" + key + "\" on a string" + why, PointerAt(path, key));
    }
  }
}

void SchemaValueWriter::CheckDisjoint(const JsonValue& branches, const std::string& path) const {
  std::set<std::string> seen;
  for (const JsonValue& b : branches.items) {
    const JsonValue* t = b.IsObject() ? b.Find("type") : nullptr;
    if (!t || !t->IsString() || !seen.insert(t->text == "integer" ? "number" : t->text).second) {
      Fail("supports oneOf only of branches of different types (as alternatives they could overlap)", path);
    }
  }
}

namespace {

// `s` with `type` as its one type.
JsonValue WithType(const JsonValue& s, const std::string& type) {
  JsonValue one = s;
  bool set = false;
  for (auto& [key, value] : one.members) {
    if (key == "type") value = JsonStringValue(type), set = true;
  }
  if (!set) one.members.emplace_back("type", JsonStringValue(type));
  return one;
}

// The keywords of `s` that a scalar of `type` reads (the others are another type's).
JsonValue Scalar(const JsonValue& s, const std::string& type) {
  static const std::set<std::string> kNumeric = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                                 "multipleOf"};
  JsonValue out = JsonEmptyObject();
  out.members.emplace_back("type", JsonStringValue(type));
  if (type == "number" || type == "integer") {
    for (const auto& [key, value] : s.members) {
      if (kNumeric.count(key)) out.members.emplace_back(key, value);
    }
  }
  return out;
}

}  // namespace

int32_t SchemaValueWriter::Value(const JsonValue& s, const std::string& path) {
  // Nested values and $ref chains recurse here: bounded, as the JSON front end bounds
  // its subschemas, so that no schema can exhaust the stack.
  if (++depth_ > kMaxDepth) Fail("got values nested more than 1000 deep (a long chain of $refs?)", path);
  if (StackNearlyFull()) Fail(StackMessage("values", depth_), path);
  struct Leave {
    int& depth;
    ~Leave() { --depth; }
  } leave{depth_};
  if (s.IsBool()) {
    if (!s.boolean) Fail("cannot write a value whose schema is false", path);
    return AnyValue();
  }
  if (!s.IsObject()) Fail("needs a schema object", path);
  if (IsBareKeyword(s, nullptr)) return AnyValue();
  if (const JsonValue* ref = s.Find("$ref")) {
    if (!IsBareKeyword(s, "$ref")) Fail("cannot write keywords beside a $ref", PointerAt(path, "$ref"));
    std::string key = ref->IsString() ? ref->text : "";
    auto it = refs_.find(key);
    if (it != refs_.end()) return b_->Ref(it->second);
    int32_t rule = b_->NewRule(style_ + "_ref");
    refs_[key] = rule;  // first: a recursive definition refers to it
    b_->SetBody(rule, Value(Target(*ref, path), PointerAt(path, "$ref")));
    return b_->Ref(rule);
  }
  if (const JsonValue* c = s.Find("const")) return Literal(*c, PointerAt(path, "const"));
  if (const JsonValue* e = s.Find("enum"); e && e->IsArray()) {
    std::vector<int32_t> alts;
    for (const JsonValue& v : e->items) alts.push_back(Literal(v, PointerAt(path, "enum")));
    if (alts.empty()) Fail("got an empty enum", PointerAt(path, "enum"));
    return b_->Choice(alts);
  }
  for (const std::string combinator : {"anyOf", "oneOf", "allOf"}) {
    const JsonValue* branches = s.Find(combinator);
    if (!branches) continue;
    const std::string where = PointerAt(path, combinator);
    if (!branches->IsArray() || branches->items.empty() || !IsBareKeyword(s, combinator.c_str())) {
      Fail("supports " + combinator + " only as a schema's one keyword", where);
    }
    if (combinator == "allOf" && branches->items.size() > 1) Fail("supports allOf of one schema only", where);
    if (combinator == "oneOf") CheckDisjoint(*branches, where);
    std::vector<int32_t> alts;
    for (size_t i = 0; i < branches->items.size(); ++i) {
      alts.push_back(Value(branches->items[i], where + "/" + std::to_string(i)));
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
    if (type == "object") {
      alts.push_back(Object(WithType(s, type), path));
    } else if (type == "array") {
      alts.push_back(Array(WithType(s, type), path));
    } else if (type == "string") {
      alts.push_back(String(WithType(s, type), path));
    } else if (type == "number" || type == "integer" || type == "boolean" || type == "null") {
      alts.push_back(scalar_(Scalar(s, type), path));
    } else {
      Fail("got an unknown type \"" + type + "\"", PointerAt(path, "type"));
    }
  }
  return b_->Choice(alts);
}

}  // namespace xgr2
