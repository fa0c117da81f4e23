#include "frontends/excluded_strings.h"

#include <cstdio>
#include <vector>

#include "support/utf8.h"

namespace xgr2 {
namespace {

// A code point as a regex atom (no escaping questions: every character spelled alike).
std::string Atom(uint32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\u{%X}", c);
  return buf;
}

// One character of JSON string content as written: raw (not `"`, `\` or a control),
// a short escape, \uXXXX of a non-surrogate, or a surrogate pair.
constexpr const char* kJsonChar =
    R"((?:[^"\\\u{0}-\u{1F}]|\\["\\/bfnrt]|\\u(?:[0-9a-cA-CefEF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))"
    R"(|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}))";

// \uXXXX with each hex letter in either case.
std::string HexEscape(uint32_t unit) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "%04X", unit);
  std::string out = "\\\\u";
  for (const char* p = hex; *p; ++p) {
    if (*p >= 'A' && *p <= 'F') {
      out += std::string("[") + *p + static_cast<char>(*p - 'A' + 'a') + "]";
    } else {
      out += *p;
    }
  }
  return out;
}

// Every spelling of one character, as a regex group; printable ASCII only raw, as
// JsonText::StringLiteral writes literals (json.dumps's spelling of names and enums).
std::string Spellings(uint32_t c) {
  if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') return Atom(c);
  std::string alts;
  auto add = [&](const std::string& a) { alts += (alts.empty() ? "" : "|") + a; };
  if (c >= 0x20 && c != '"' && c != '\\') add(Atom(c));
  static const std::pair<uint32_t, char> kShort[] = {{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'\b', 'b'},
                                                     {'\f', 'f'}, {'\n', 'n'}, {'\r', 'r'}, {'\t', 't'}};
  for (const auto& [code, letter] : kShort) {
    if (code == c) add("\\\\" + Atom(static_cast<uint8_t>(letter)));
  }
  if (c <= 0xFFFF) {
    add(HexEscape(c));
  } else {
    uint32_t v = c - 0x10000;
    add(HexEscape(0xD800 + (v >> 10)) + HexEscape(0xDC00 + (v & 0x3FF)));
  }
  return "(?:" + alts + ")";
}

// The code points of `utf8`, an invalid byte as U+FFFD (as JsonText::StringLiteral reads it).
std::vector<uint32_t> CodePoints(const std::string& utf8) {
  std::vector<uint32_t> out;
  size_t p = 0;
  while (p < utf8.size()) {
    size_t start = p;
    int32_t cp = DecodeUtf8(utf8, &p);
    if (cp < 0) cp = 0xFFFD, p = start + 1;
    out.push_back(static_cast<uint32_t>(cp));
  }
  return out;
}

std::string LiteralPattern(const std::string& utf8) {
  std::string out;
  for (uint32_t c : CodePoints(utf8)) out += Spellings(c);
  return out;
}

CharDfa Without(const std::vector<std::string>& excludes) {
  std::string any;
  for (const std::string& e : excludes) {
    std::string atoms;
    for (uint32_t c : CodePoints(e)) atoms += Atom(c);
    any += (any.empty() ? "" : "|") + atoms;
  }
  if (any.empty()) return CharDfa::LengthBetween(0, -1);
  return CharDfa::FromPattern(any, /*search=*/true).Complement();
}

}  // namespace

ExcludedStrings::ExcludedStrings(const std::vector<std::string>& excludes)
    : excludes_(excludes), without_(Without(excludes)) {}

CharDfa ExcludedStrings::Content(int64_t min_len, int64_t max_len) const {
  std::string count = max_len < 0 ? (min_len == 0 ? "*" : "{" + std::to_string(min_len) + ",}")
                                   : "{" + std::to_string(min_len) + "," + std::to_string(max_len) + "}";
  return CharDfa::FromPattern(std::string(kJsonChar) + count, /*search=*/false).Intersect(without_);
}

CharDfa ExcludedStrings::Literal(const std::string& utf8) const {
  return CharDfa::FromPattern(LiteralPattern(utf8), /*search=*/false).Intersect(without_);
}

CharDfa ExcludedStrings::ContentNotIn(const std::set<std::string>& names) const {
  CharDfa content = Content(0, -1);
  if (names.empty()) return content;
  std::string any;
  for (const std::string& n : names) any += (any.empty() ? "(?:" : "|(?:") + LiteralPattern(n) + ")";
  return content.Minus(CharDfa::FromPattern(any, /*search=*/false));
}

bool ExcludedStrings::Holds(const std::string& text) const { return !without_.Accepts(text); }

}  // namespace xgr2
