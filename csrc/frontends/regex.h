// Regular expressions (the Python / ECMAScript subset used in JSON Schema `pattern`)
// compiled to grammar IR.
#pragma once
#include <string>

#include "grammar/ir_builder.h"
#include "xgr2/grammar.h"

namespace xgr2 {

// Parses `pattern` and appends its language to the builder's IR, as code points
// (kBytes / kCharClass / kSequence / kChoice / kRepeat / kEmpty only, never a rule
// reference, so a caller may rewrite every character, e.g. into JSON string escapes).
// Returns the expression id.
//  - search == false: the whole text must match (re.fullmatch); `^` / `$` at the ends
//    are accepted and change nothing.
//  - search == true: JSON Schema semantics (re.search): a side not anchored by `^` /
//    `$` may be preceded / followed by any code points.
// Throws RegexError (with the position) for syntax errors and unsupported constructs.
int32_t AppendRegex(IrBuilder* b, const std::string& pattern, bool search);

// Flags of XGrammar's `Regex(..., flags="is")` macro: `i` ASCII case-insensitive,
// `s` makes `.` match `\n` too.
struct RegexFlags {
  bool ignore_case = false;
  bool dot_all = false;
};
int32_t AppendRegex(IrBuilder* b, const std::string& pattern, bool search, const RegexFlags& flags);

// A grammar whose root rule `root` matches exactly the strings `pattern` fullmatches
// (with `search`: the strings with a part it matches).
GrammarPtr ParseRegex(const std::string& pattern, bool search = false);

}  // namespace xgr2
