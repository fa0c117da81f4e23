// Building blocks of JSON text (RFC 8259) in grammar IR: layouts (whitespace, separators,
// indentation), string characters with every escape, and literal values.
#pragma once
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "frontends/excluded_strings.h"
#include "grammar/ir_builder.h"
#include "support/json.h"

namespace xgr2 {

// Where whitespace may go. kAnyWhitespace: runs of at most kMaxWhitespace characters
// between tokens; kSeparators: exactly the separators; kIndent: exactly json.dumps's
// indent layout, which depends on the nesting depth.
struct JsonLayout {
  enum class Kind { kAnyWhitespace, kSeparators, kIndent } kind = Kind::kAnyWhitespace;
  std::string item_separator = ",", key_separator = ":";
  int indent = 0;
  int max_whitespace = 20;
  bool DependsOnDepth() const { return kind == Kind::kIndent; }
};

class JsonText {
 public:
  // CharIn's escapes take a rule of their own past this many expressions.
  static constexpr size_t kEscapeRuleExprs = 96;

  JsonText(IrBuilder* b, JsonLayout layout) : b_(b), layout_(std::move(layout)) {}
  IrBuilder* builder() const { return b_; }
  const JsonLayout& layout() const { return layout_; }

  // Around a whole document (whitespace for kAnyWhitespace, else nothing).
  int32_t DocumentSpace();
  // `[`/`{` and what follows before the first item of a non-empty container at `depth`.
  int32_t Open(char bracket, int depth);
  // What precedes `]`/`}` after the last item, and the bracket.
  int32_t Close(char bracket, int depth);
  int32_t EmptyContainer(char open, char close);
  // A container at `depth`: empty (when `empty_ok`) or `open`, `items` (-1: none allowed),
  // `close`, with the bracket and what the two forms share written once ("{" ws ("}" |
  // items ws "}")): each alternative's own copy of the bracket and the whitespace after
  // it doubled the automaton states every object and array begins with.
  int32_t Container(char open, char close, int depth, bool empty_ok, int32_t items);
  int32_t ItemSeparator(int depth);
  int32_t KeySeparator();

  // One character of a string's content whose code point is in `ranges` (sorted, merged),
  // in every form JSON allows: raw, short escape, \uXXXX (either case), surrogate pair.
  int32_t CharIn(const std::vector<CodepointRange>& ranges);
  // Any one character (exact: a surrogate pair is one character, lone surrogates excluded).
  int32_t AnyChar();
  // Every character from U+0080 on, in every form (shared rule).
  int32_t NonAsciiChar();
  // A string's content, any length, as the builtin JSON grammar writes it (shared rule).
  int32_t AnyContent();
  // The JSON text of a literal string: `"` then each character raw (or its escape when
  // it needs one; non-ASCII characters also as \uXXXX), then `"`.
  int32_t StringLiteral(const std::string& utf8);
  // The JSON text of a value (const / enum), objects in their key order.
  int32_t Value(const JsonValue& v, int depth);
  // Whether Value writes an integral number in integer syntax only ("2" for 2.0 or 2e0,
  // not also "2.0"): Draft 4 calls only such a number an integer.
  void SetIntegralAsIntegers(bool on) { integral_as_integers_ = on; }

  // Strings that string literals and AnyContent may not hold (structural tags'
  // `excludes`; nullptr: none). Set before anything is written.
  void SetExcludes(const ExcludedStrings* excludes) { excludes_ = excludes; }
  const ExcludedStrings* excludes() const { return excludes_; }
  // Content (between the quotes) in `dfa`'s language, an automaton over the text as
  // written (ExcludedStrings' languages).
  int32_t WrittenContent(const CharDfa& dfa, const std::string& name);

 private:
  int32_t CharInUncached(const std::vector<CodepointRange>& ranges);
  // NonAsciiChar's rules (the root and its escape rule), built once per process.
  static const GrammarIR& NonAsciiCharRules();
  int32_t Ws();
  // What follows an opening bracket before the first item at `depth`.
  int32_t AfterOpen(int depth);
  int32_t SharedSeparator(char c, int32_t* rule);
  int32_t SharedOpen(char bracket);
  int32_t SharedRule(const std::string& name, const std::vector<int32_t>& items, int32_t* rule);
  int32_t HexRange(uint32_t lo, uint32_t hi, int width);
  int32_t HexRangeUncached(uint32_t lo, uint32_t hi, int width);
  int32_t HexDigits(uint32_t lo, uint32_t hi);
  int32_t Newline(int depth);
  int32_t NumberSpellings(const std::string& text);
  int32_t IntegerLiteral(const std::string& text);

  IrBuilder* b_;
  JsonLayout layout_;
  int32_t ws_rule_ = -1, comma_rule_ = -1, colon_rule_ = -1, any_char_rule_ = -1, content_rule_ = -1,
          non_ascii_rule_ = -1;
  int32_t open_rules_[2] = {-1, -1};  // `{ ws`, `[ ws`
  // CharIn's expression per character set: automata (patterns, key languages) ask for
  // the same sets at many states, and each costs a tree of \uXXXX ranges.
  std::map<std::vector<std::pair<uint32_t, uint32_t>>, int32_t> char_in_;
  std::unordered_map<uint64_t, int32_t> hex_range_;  // HexRange's by (lo, hi, width)
  bool integral_as_integers_ = false;
  const ExcludedStrings* excludes_ = nullptr;
  std::map<std::string, int32_t> excluding_literals_;  // StringLiteral's rule per string, with excludes_
};

}  // namespace xgr2
