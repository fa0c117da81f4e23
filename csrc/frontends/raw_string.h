// A string value written as its raw text up to a closing tag, as the XML argument styles
// of structural tags write strings: any text without the closing tag, or the strings of
// a pattern (searched, as JSON Schema does), a known format or a length range.
#pragma once
#include <map>
#include <string>

#include "frontends/excluded_strings.h"
#include "grammar/ir_builder.h"
#include "support/json.h"

namespace xgr2 {

class RawStringWriter {
 public:
  // `terminator`: the closing tag free text may not hold; `style`: named in errors.
  RawStringWriter(IrBuilder* b, std::string terminator, std::string style)
      : b_(b), terminator_(std::move(terminator)), style_(std::move(style)) {}

  // The raw text of a string schema. Throws StructuralTagError (at the keyword's pointer)
  // on what raw text cannot check: a combinator, not, if, $ref, const, enum, or more than
  // one of pattern, a known format and the lengths (an unknown format is an annotation).
  int32_t Value(const JsonValue& schema, const std::string& path);
  // Any text without the terminator.
  int32_t AnyText();
  // Strings that raw text without a pattern or known format may not hold (structural
  // tags' `excludes`; nullptr: none).
  void SetExcludes(const ExcludedStrings* excludes) { excludes_ = excludes; }

 private:
  [[noreturn]] void Fail(const std::string& msg, const std::string& path) const;
  int32_t Format(const std::string& name, const char* ebnf);

  IrBuilder* b_;
  std::string terminator_, style_;
  std::map<std::string, int32_t> formats_;  // format name -> its rule
  const ExcludedStrings* excludes_ = nullptr;
};

}  // namespace xgr2
