// Regex flags as rewrites around the plain front end: `s` rewrites the pattern's `.`,
// `i` rewrites the characters of the resulting expression.
#include "frontends/regex.h"

#include <algorithm>

namespace xgr2 {
namespace {

// `.` outside classes and escapes becomes `[\s\S]` (any character, newline included).
std::string DotMatchesAll(const std::string& pattern) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      out += c;
      out += pattern[++i];
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
    } else if (c == '[') {
      in_class = true;
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[i++];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[i++];  // `[]...]`: `]` is literal
    } else if (c == '.') {
      out += "[\\s\\S]";
      continue;
    }
    out += c;
  }
  return out;
}

// Adds the other ASCII case of every letter in the ranges.
std::vector<CodepointRange> WithAsciiCases(const std::vector<CodepointRange>& ranges) {
  std::vector<CodepointRange> out = ranges;
  for (CodepointRange r : ranges) {
    for (uint32_t lo : {uint32_t{'a'}, uint32_t{'A'}}) {
      uint32_t a = std::max(r.lo, lo), z = std::min(r.hi, lo + 25);
      if (a <= z) out.push_back({a ^ 0x20, z ^ 0x20});
    }
  }
  return out;
}

}  // namespace

int32_t AppendRegex(IrBuilder* b, const std::string& pattern, bool search, const RegexFlags& flags) {
  int32_t e = AppendRegex(b, flags.dot_all ? DotMatchesAll(pattern) : pattern, search);
  if (!flags.ignore_case) return e;
  return RewriteChars(b, e, [&](const std::vector<CodepointRange>& ranges) { return b->Class(WithAsciiCases(ranges)); });
}

}  // namespace xgr2
