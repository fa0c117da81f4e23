#include "frontends/raw_string.h"

#include <algorithm>
#include <iterator>

#include "frontends/json_formats.h"
#include "frontends/regex.h"
#include "xgr2/grammar.h"
#include "grammar/tag_dispatch.h"
#include "xgr2/errors.h"

namespace xgr2 {

void RawStringWriter::Fail(const std::string& msg, const std::string& path) const {
  throw StructuralTagError("the style \"" + style_ + "\" " + msg, path);
}

int32_t RawStringWriter::Value(const JsonValue& schema, const std::string& path) {
  static const char* kUnchecked[] = {"not", "allOf", "anyOf", "oneOf", "if", "then", "else", "$ref",
                                     "$dynamicRef", "dependentSchemas", "const", "enum"};
  for (const auto& [key, value] : schema.members) {
    if (std::any_of(std::begin(kUnchecked), std::end(kUnchecked), [&](const char* k) { return key == k; })) {
      Fail("cannot check \"" + key + "\" on a raw string value", path + "/" + JsonPointerToken(key));
    }
  }
  const JsonValue* pattern = schema.Find("pattern");
  const JsonValue* min = schema.Find("minLength");
  const JsonValue* max = schema.Find("maxLength");
  const JsonValue* format = schema.Find("format");
  const char* ebnf = format && format->IsString() ? JsonFormatEbnf(format->text) : nullptr;
  if (ebnf) {  // an unknown format is an annotation
    if (pattern || min || max) Fail("cannot combine \"format\" with pattern or a length on a raw string value", path);
    return Format(format->text, ebnf);
  }
  if (pattern) {
    if (!pattern->IsString()) Fail("needs \"pattern\" to be a string", path + "/pattern");
    if (min || max) Fail("cannot combine \"pattern\" with a length on a raw string value", path);
    try {
      return AppendRegex(b_, pattern->text, true);  // JSON Schema: matched anywhere in the text
    } catch (const RegexError& e) {
      Fail(std::string("got an invalid pattern: ") + e.what(), path + "/pattern");
    }
  }
  if (min || max) {
    auto bound = [&](const JsonValue* v, const char* key) -> int32_t {
      bool ok = v->IsNumber() && !v->text.empty() && v->text.size() <= 9 &&
                std::all_of(v->text.begin(), v->text.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!ok) Fail(std::string("needs \"") + key + "\" to be a non-negative integer", path + "/" + key);
      return static_cast<int32_t>(std::stol(v->text));
    };
    int32_t lo = min ? bound(min, "minLength") : 0, hi = max ? bound(max, "maxLength") : -1;
    if (hi >= 0 && hi < lo) Fail("got maxLength < minLength", path);
    if (!excludes_) return b_->Repeat(b_->Class({{0, 0x10FFFF}}), lo, hi);
    try {
      return EmitDfa(b_, CharDfa::LengthBetween(lo, hi).Intersect(excludes_->RawText()),
                     [&](const std::vector<CodepointRange>& r) { return b_->Class(r); }, "raw_string");
    } catch (const DfaLimitError& e) {
      Fail(std::string("cannot check a length beside excludes: ") + e.what(), path);
    }
  }
  return AnyText();
}

// A known format's raw text (its strings hold no `"` or `\`: the JSON grammar's own).
int32_t RawStringWriter::Format(const std::string& name, const char* ebnf) {
  auto it = formats_.find(name);
  if (it != formats_.end()) return b_->Ref(it->second);
  int32_t rule = ImportGrammar(b_, *ParseEbnf(ebnf, "root"), "format_" + name + "_");
  formats_[name] = rule;
  return b_->Ref(rule);
}

int32_t RawStringWriter::AnyText() {
  TagDispatchSpec spec;
  spec.excludes = {terminator_};
  if (excludes_) spec.excludes.insert(spec.excludes.end(), excludes_->excludes().begin(), excludes_->excludes().end());
  return AddTagDispatch(b_->ir(), std::move(spec), {});
}

}  // namespace xgr2
