// Structural tags' `excludes` on a json_schema format: strings that may not occur in the
// text of a string value or property name. As in XGrammar, an exclusion matches the text
// as written (`"\u0061b"` holds no "ab"), never the quotes around it. The languages are
// automata over that written text, so a string's spellings, lengths and exclusions
// combine exactly.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "frontends/regex_dfa.h"

namespace xgr2 {

class ExcludedStrings {
 public:
  // `excludes`: non-empty UTF-8 strings.
  explicit ExcludedStrings(const std::vector<std::string>& excludes);

  // JSON string content (what goes between the quotes, every escape allowed) of
  // min_len..max_len characters (max_len < 0: no bound) holding no exclusion. Throws
  // DfaLimitError past CharDfa's limits.
  CharDfa Content(int64_t min_len, int64_t max_len) const;
  // The spellings of `utf8` as JSON string content that hold no exclusion (empty when
  // every spelling holds one): as JsonText::StringLiteral spells it, printable ASCII raw,
  // any other character raw or escaped in every form JSON allows.
  CharDfa Literal(const std::string& utf8) const;
  // Content, any length, that spells none of `names`.
  CharDfa ContentNotIn(const std::set<std::string>& names) const;
  // Raw text (no escapes: an XML-style value) holding no exclusion.
  const CharDfa& RawText() const { return without_; }
  // Whether raw `text` holds an exclusion.
  bool Holds(const std::string& text) const;

  const std::vector<std::string>& excludes() const { return excludes_; }

 private:
  std::vector<std::string> excludes_;
  CharDfa without_;  // strings holding none of them
};

}  // namespace xgr2
