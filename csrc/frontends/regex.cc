// Regex -> grammar IR: a recursive-descent parser over the pattern's code points that
// emits IR directly. Syntax follows Python's `re` (the test oracle), plus the
// ECMAScript spellings JSON Schema patterns use (`(?<name>...)`, `\u{...}`, surrogate
// pairs); docs/regex.md lists every choice.
#include "frontends/regex.h"

#include <algorithm>
#include <array>
#include <unordered_set>
#include <vector>

#include "grammar/repetition.h"

#include "support/stack.h"
#include "support/utf8.h"
#include "xgr2/errors.h"

namespace xgr2 {
namespace {

using Ranges = std::vector<CodepointRange>;

// The language of a sub-pattern, split by the anchors its strings were matched
// under: part[k] holds the strings matched with `^` (k & kStart) and/or `$` (k & kEnd)
// on their path; -1 when there are none. The parser allows `^` only where nothing can
// precede it and `$` only where nothing can follow it, so a full match ignores the
// split and a search pads the unanchored sides (Finish).
constexpr int kStart = 1, kEnd = 2;
struct Lang {
  std::array<int32_t, 4> part = {-1, -1, -1, -1};
  bool HasAnchor() const { return part[1] >= 0 || part[2] >= 0 || part[3] >= 0; }
  bool HasEnd() const { return part[kEnd] >= 0 || part[kStart | kEnd] >= 0; }
};

constexpr uint32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

bool IsSurrogate(uint32_t cp) { return cp >= kSurrogateLo && cp <= kSurrogateHi; }
bool IsDigit(uint32_t c) { return c >= '0' && c <= '9'; }
bool IsOctal(uint32_t c) { return c >= '0' && c <= '7'; }
bool IsAsciiLetter(uint32_t c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
bool IsWordChar(uint32_t c) { return IsDigit(c) || IsAsciiLetter(c) || c == '_'; }

int HexValue(uint32_t c) {
  if (IsDigit(c)) return static_cast<int>(c - '0');
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return static_cast<int>((c | 0x20) - 'a' + 10);
  return -1;
}

// Code points 0..kMaxCodepoint outside `ranges` (sorted, disjoint).
Ranges Complement(const Ranges& ranges) {
  Ranges out;
  uint32_t next = 0;
  for (auto r : ranges) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
  return out;
}

// The ASCII classes \d \w \s (as ECMAScript without the `u` flag, Python with re.ASCII).
Ranges ClassEscapeRanges(uint32_t letter) {
  switch (letter | 0x20) {
    case 'd':
      return {{'0', '9'}};
    case 'w':
      return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    default:  // 's': space, \t \n \v \f \r
      return {{'\t', '\r'}, {' ', ' '}};
  }
}

bool IsClassEscape(uint32_t c) {
  return c == 'd' || c == 'D' || c == 'w' || c == 'W' || c == 's' || c == 'S';
}

// One item of a character class or one escape: a single code point, or a set.
struct ClassItem {
  bool is_set = false;
  uint32_t cp = 0;
  Ranges set;
};

class RegexParser {
 public:
  RegexParser(IrBuilder* b, const std::string& pattern, bool dot_all) : b_(*b), dot_all_(dot_all) { Decode(pattern); }

  int32_t Parse(bool search) {
    Lang lang = ParseAlternation(/*at_start=*/true, /*depth=*/0);
    if (pos_ < text_.size()) Fail("unbalanced parenthesis", pos_);  // only a ')' stops it
    return search ? Search(lang) : FullMatch(lang);
  }

 private:
  [[noreturn]] void Fail(const std::string& msg, size_t pos) const {
    throw RegexError(msg + " at position " + std::to_string(pos), static_cast<int>(pos));
  }

  void Decode(const std::string& pattern) {
    for (size_t i = 0; i < pattern.size();) {
      int32_t cp = DecodeUtf8(pattern, &i);
      if (cp < 0) Fail("invalid UTF-8 in the pattern", text_.size());
      text_.push_back(static_cast<uint32_t>(cp));
    }
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  uint32_t Peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : 0xFFFFFFFF; }
  bool Match(uint32_t c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }

  // ---- Languages with anchors --------------------------------------------------

  Lang Plain(int32_t expr) {
    Lang l;
    l.part[0] = expr;
    return l;
  }

  Lang Concat(const Lang& a, const Lang& b) {
    Lang out;
    for (int ka = 0; ka < 4; ++ka) {
      for (int kb = 0; kb < 4; ++kb) {
        if (a.part[ka] < 0 || b.part[kb] < 0) continue;
        Add(&out, ka | kb, SeqOf(a.part[ka], b.part[kb]));
      }
    }
    return out;
  }

  // x y, without copying x when y is empty (a run of anchors stays linear).
  int32_t SeqOf(int32_t x, int32_t y) {
    if (b_.ir()->exprs[y].kind == ExprKind::kEmpty) return x;
    if (b_.ir()->exprs[x].kind == ExprKind::kEmpty) return y;
    return b_.Seq({x, y});
  }

  void Add(Lang* l, int k, int32_t expr) {
    l->part[k] = l->part[k] < 0 ? expr : b_.Choice({l->part[k], expr});
  }

  int32_t FullMatch(const Lang& l) {
    std::vector<int32_t> alts;
    for (int32_t p : l.part) {
      if (p >= 0) alts.push_back(p);
    }
    return b_.Choice(alts);
  }

  // re.search: a side without its anchor may be padded with any code points. The
  // padded side of each part is trimmed first (Trim), which keeps the language and
  // keeps `.*x{0,500}`-style automata from blowing up.
  int32_t Search(const Lang& l) {
    std::vector<int32_t> alts;
    for (int k = 0; k < 4; ++k) {
      if (l.part[k] < 0) continue;
      int32_t body = l.part[k];
      if (!(k & kEnd)) body = Trim(body, /*right=*/true);
      if (!(k & kStart)) body = Trim(body, /*right=*/false);
      std::vector<int32_t> seq;
      if (!(k & kStart)) seq.push_back(AnyString());
      seq.push_back(body);
      if (!(k & kEnd)) seq.push_back(AnyString());
      alts.push_back(b_.Seq(seq));
    }
    return b_.Choice(alts);
  }

  // An expression T with T .* == e .* (right) or .* T == .* e (left): only the
  // shortest way to start (end) each match matters next to padding. Empty when e
  // matches "" (then the padding alone covers it).
  int32_t Trim(int32_t id, bool right) {
    Expr e = b_.ir()->exprs[id];  // a copy: the arena grows below
    switch (e.kind) {
      case ExprKind::kSequence: {
        std::vector<int32_t>& items = e.children;
        while (!items.empty()) {  // trim the padded end; drop it while it can be empty
          size_t at = right ? items.size() - 1 : 0;
          int32_t t = Trim(items[at], right);
          if (b_.ir()->exprs[t].kind != ExprKind::kEmpty) {
            items[at] = t;
            break;
          }
          items.erase(items.begin() + static_cast<std::ptrdiff_t>(at));
        }
        return b_.Seq(items);
      }
      case ExprKind::kChoice: {
        std::vector<int32_t> alts;
        for (int32_t c : e.children) {
          int32_t t = Trim(c, right);
          if (b_.ir()->exprs[t].kind == ExprKind::kEmpty) return t;
          alts.push_back(t);
        }
        return b_.Choice(alts);
      }
      case ExprKind::kRepeat: {  // x{m,n} padded: x{m-1} then x trimmed
        if (e.min == 0) return b_.Empty();
        int32_t last = Trim(e.children[0], right);
        int32_t rest = e.min == 1 ? b_.Empty() : e.min == 2 ? e.children[0] : b_.Repeat(e.children[0], e.min - 1, e.min - 1);
        return right ? b_.Seq({rest, last}) : b_.Seq({last, rest});
      }
      default:
        return id;
    }
  }

  int32_t AnyString() { return b_.Star(b_.Class({}, /*negated=*/true)); }

  // ---- Structure -----------------------------------------------------------------

  // `at_start`: nothing can have been matched before this point (so `^` may appear).
  // Alternatives are collected per anchor set and joined once (no quadratic flattening).
  Lang ParseAlternation(bool at_start, int depth) {
    std::array<std::vector<int32_t>, 4> alts;
    do {
      Lang alt = ParseSequence(at_start, depth);
      for (int k = 0; k < 4; ++k) {
        if (alt.part[k] >= 0) alts[k].push_back(alt.part[k]);
      }
    } while (Match('|'));
    Lang out;
    for (int k = 0; k < 4; ++k) {
      if (!alts[k].empty()) out.part[k] = b_.Choice(std::move(alts[k]));
    }
    return out;
  }

  // Items without anchors are gathered in `run` and joined by one Seq; literal
  // characters without a quantifier are gathered into one string first.
  Lang ParseSequence(bool at_start, int depth) {
    Lang seq = Plain(b_.Empty());
    std::vector<int32_t> run;
    std::string literal;
    auto flush_literal = [&] {
      if (!literal.empty()) run.push_back(b_.Bytes(std::move(literal))), literal.clear();
    };
    auto flush = [&] {
      flush_literal();
      if (!run.empty()) seq = Concat(seq, Plain(b_.Seq(std::move(run)))), run.clear();
    };
    bool ended = false;  // a `$` was seen: only anchors may follow
    while (!AtEnd() && Peek() != '|' && Peek() != ')') {
      size_t item_pos = pos_;
      uint32_t c = Peek();
      if (c == '^' || c == '$') {
        flush();
        seq = Concat(seq, ParseAnchor(at_start));
        ended = ended || c == '$';
        continue;
      }
      Item item = ParseAtom(at_start, depth);
      bool quantified = ParseQuantifier(&item);
      if (ended && !item.zero_width) {
        Fail("`$` is only supported at the end of the pattern (nothing may follow it)", item_pos);
      }
      if (item.literal && !quantified) {
        AppendUtf8(item.cp, &literal);
      } else if (!item.lang.HasAnchor()) {
        flush_literal();
        run.push_back(item.lang.part[0]);
      } else {
        flush();
        seq = Concat(seq, item.lang);
      }
      ended = ended || item.lang.HasEnd();
      at_start = at_start && item.zero_width;
    }
    flush();
    return seq;
  }

  Lang ParseAnchor(bool at_start) {
    size_t anchor_pos = pos_;
    uint32_t c = text_[pos_++];
    if (IsQuantifierStart()) Fail("nothing to repeat", pos_);
    Lang anchor;
    if (c == '^') {
      if (!at_start) Fail("`^` is only supported at the start of the pattern", anchor_pos);
      anchor.part[kStart] = b_.Empty();
    } else {
      anchor.part[kEnd] = b_.Empty();
    }
    return anchor;
  }

  struct Item {
    Lang lang;
    bool literal = false;    // one code point, unquantified so far
    uint32_t cp = 0;
    bool zero_width = false;  // matches only "" (anchors and empty groups)
  };

  Item LiteralItem(uint32_t cp) {
    Item it;
    if (IsSurrogate(cp)) {  // a lone surrogate: no UTF-8 text contains one
      it.lang = Plain(b_.Class({}));
      return it;
    }
    it.literal = true;
    it.cp = cp;
    std::string s;
    AppendUtf8(cp, &s);
    it.lang = Plain(b_.Bytes(std::move(s)));
    return it;
  }

  Item SetItem(Ranges ranges, bool negated) {
    Item it;
    it.lang = Plain(b_.Class(std::move(ranges), negated));
    return it;
  }

  Item ParseAtom(bool at_start, int depth) {
    size_t start = pos_;
    uint32_t c = text_[pos_++];
    switch (c) {
      case '(':
        return ParseGroup(start, at_start, depth);
      case '[':
        return ParseClass(start);
      case '.':  // any code point but \n (Python's default), or any with the `s` flag
        return dot_all_ ? SetItem({}, /*negated=*/true) : SetItem({{'\n', '\n'}}, /*negated=*/true);
      case '\\':
        return ParseEscape(start);
      case '*':
      case '+':
      case '?':
        Fail("nothing to repeat", start);
      case '{':
        if (IsBraceQuantifier(start)) Fail("nothing to repeat", start);
        return LiteralItem(c);
      default:
        return LiteralItem(c);
    }
  }

  // ---- Groups --------------------------------------------------------------------

  Item ParseGroup(size_t open, bool at_start, int depth) {
    if (depth + 1 > GrammarLimits::kMaxNesting) {
      Fail("groups nested too deeply (limit " + std::to_string(GrammarLimits::kMaxNesting) + ")", open);
    }
    if (StackNearlyFull()) Fail(StackMessage("groups", depth + 1), open);
    if (Match('?')) {
      if (ParseGroupExtension(open)) return ZeroWidthItem();  // a comment
    }
    Item it;
    it.lang = ParseAlternation(at_start, depth + 1);
    if (!Match(')')) Fail("missing ), unterminated subpattern", open);
    it.zero_width = IsEmptyOnly(it.lang);
    return it;
  }

  Item ZeroWidthItem() {
    Item it;
    it.lang = Plain(b_.Empty());
    it.zero_width = true;
    return it;
  }

  bool IsEmptyOnly(const Lang& l) const {
    for (int32_t p : l.part) {
      if (p >= 0 && b_.ir()->exprs[p].kind != ExprKind::kEmpty) return false;
    }
    return true;
  }

  // After "(?": consumes the extension's prefix. Returns true for a comment (consumed
  // through its ')'), false for a group whose body follows; throws for the rest.
  bool ParseGroupExtension(size_t open) {
    uint32_t c = Peek();
    if (c == ':') {
      ++pos_;
      return false;
    }
    if (c == '#') {  // as Python: an escaped `)` does not end it
      while (!AtEnd() && Peek() != ')') pos_ += Peek() == '\\' && pos_ + 1 < text_.size() ? 2 : 1;
      if (!Match(')')) Fail("missing ), unterminated comment", open);
      return true;
    }
    if (c == 'P') {
      ++pos_;
      if (Peek() == '<') {
        ++pos_;
        ParseGroupName();
        return false;
      }
      if (Peek() == '=') Fail("backreferences ((?P=name)) are not supported", open);
      if (AtEnd()) Fail("unexpected end of pattern", pos_);
      Fail("unknown extension ?P" + std::string(1, static_cast<char>(Peek() < 128 ? Peek() : '?')), open + 1);
    }
    if (c == '<' && Peek(1) != '=' && Peek(1) != '!') {  // ECMAScript's named group
      ++pos_;
      ParseGroupName();
      return false;
    }
    if (c == '=' || c == '!' || c == '<') Fail("lookaround assertions are not supported", open);
    if (c == '>') Fail("atomic groups are not supported", open);
    if (c == '(') Fail("conditional groups are not supported", open);
    if (c < 128 && std::string("aiLmsux-").find(static_cast<char>(c)) != std::string::npos) {
      Fail("inline flags are not supported", open);
    }
    if (AtEnd()) Fail("unexpected end of pattern", pos_);
    Fail("unknown extension", open + 1);
  }

  // A group name up to and including its '>': an identifier, unique in the pattern.
  void ParseGroupName() {
    size_t start = pos_;
    std::vector<uint32_t> name;
    while (!AtEnd() && Peek() != '>') name.push_back(text_[pos_++]);
    if (!Match('>')) Fail("missing >, unterminated name", start);
    if (name.empty()) Fail("missing group name", start);
    bool ok = !IsDigit(name[0]);
    for (uint32_t c : name) ok = ok && (IsWordChar(c) || c >= 0x80);
    if (!ok) Fail("bad character in group name", start);
    std::string key;
    for (uint32_t c : name) AppendUtf8(c, &key);
    if (!names_.insert(key).second) Fail("redefinition of group name", start);
  }

  // ---- Quantifiers ---------------------------------------------------------------

  bool IsQuantifierStart() const {
    uint32_t c = Peek();
    return c == '*' || c == '+' || c == '?' || (c == '{' && IsBraceQuantifier(pos_));
  }

  // Python's rule: `{` starts a quantifier only as {m}, {m,}, {,n}, {m,n} or {,};
  // otherwise it is a literal.
  bool IsBraceQuantifier(size_t at) const {
    size_t i = at + 1;
    size_t digits = 0;
    while (i < text_.size() && IsDigit(text_[i])) ++i, ++digits;
    if (i < text_.size() && text_[i] == ',') {
      ++i;
      while (i < text_.size() && IsDigit(text_[i])) ++i;
    } else if (digits == 0) {
      return false;
    }
    return i < text_.size() && text_[i] == '}';
  }

  // Parses a quantifier after an atom, if any, and applies it. Returns whether one was.
  bool ParseQuantifier(Item* item) {
    if (!IsQuantifierStart()) return false;
    size_t qpos = pos_;
    int32_t min = 0, max = -1;
    ReadBounds(&min, &max);
    if (Match('+')) Fail("possessive quantifiers are not supported", qpos);
    Match('?');  // lazy: the same language
    if (IsQuantifierStart()) Fail("multiple repeat", pos_);
    if (item->zero_width) {  // "" repeated: once at most, as its anchors may not hold
      min = std::min(min, 1);
      max = max < 0 ? 1 : std::min(max, 1);
    }
    if (item->lang.HasAnchor() && (max < 0 || max > 1)) {
      Fail("an anchor inside a repetition is not supported", qpos);
    }
    item->lang = RepeatLang(item->lang, min, max);
    item->literal = false;
    return true;
  }

  void ReadBounds(int32_t* min, int32_t* max) {
    uint32_t c = text_[pos_++];
    if (c == '*') return;
    if (c == '+') {
      *min = 1;
      return;
    }
    if (c == '?') {
      *max = 1;
      return;
    }
    size_t lo_pos = pos_;
    int64_t lo = ReadNumber(), hi;
    bool has_lo = pos_ > lo_pos;
    if (Match(',')) {
      size_t hi_pos = pos_;
      hi = ReadNumber();
      if (pos_ == hi_pos) hi = -1;
    } else {
      hi = lo;
    }
    ++pos_;  // '}'
    *min = has_lo ? static_cast<int32_t>(lo) : 0;
    *max = static_cast<int32_t>(hi);
    if (hi >= 0 && lo > hi) Fail("min repeat greater than max repeat", lo_pos);
  }

  // Digits as a number; a bound above GrammarLimits::kMaxRepeat is an error.
  int64_t ReadNumber() {
    size_t start = pos_;
    int64_t n = 0;
    while (!AtEnd() && IsDigit(Peek())) {
      n = std::min<int64_t>(n * 10 + (text_[pos_++] - '0'), int64_t{1} << 40);
    }
    if (n > GrammarLimits::kMaxRepeat) {
      Fail("repetition bound above the limit of " + std::to_string(GrammarLimits::kMaxRepeat), start);
    }
    return n;
  }

  // A repetition of a sub-pattern with anchors happens at most once (checked above).
  Lang RepeatLang(const Lang& l, int32_t min, int32_t max) {
    if (!l.HasAnchor()) return Plain(b_.Repeat(l.part[0], min, max));
    if (max == 0) return Plain(b_.Empty());
    if (min == 1) return l;
    Lang out = l;
    Add(&out, 0, b_.Empty());
    return out;
  }

  // ---- Escapes -------------------------------------------------------------------

  Item ParseEscape(size_t start) {
    if (AtEnd()) Fail("bad escape (end of pattern)", start);
    uint32_t c = Peek();
    if (IsClassEscape(c)) {
      ++pos_;
      return SetItem(ClassEscapeRanges(c), /*negated=*/c < 'a');
    }
    if (c >= '1' && c <= '9' && !IsOctalTriple(pos_)) Fail("backreferences are not supported", start);
    switch (c) {
      case 'b':
      case 'B':
        Fail("word boundaries (\\b, \\B) are not supported", start);
      case 'A':
      case 'Z':
      case 'z':
      case 'G':
        Fail("the assertion \\" + std::string(1, static_cast<char>(c)) + " is not supported (use ^ and $)", start);
      case 'k':
        Fail("backreferences (\\k<name>) are not supported", start);
      case 'p':
      case 'P':
        Fail("Unicode property escapes are not supported", start);
      case 'N':
        Fail("named characters (\\N{...}) are not supported", start);
      default:
        break;
    }
    uint32_t cp = ParseCharEscape(start, /*in_class=*/false);
    return LiteralItem(cp);
  }

  bool IsOctalTriple(size_t at) const {
    return at + 2 < text_.size() && IsOctal(text_[at]) && IsOctal(text_[at + 1]) && IsOctal(text_[at + 2]);
  }

  // An escape that stands for one code point (after the backslash at `start`). Outside
  // a class a high-low surrogate pair of \u escapes is one code point (ECMAScript).
  uint32_t ParseCharEscape(size_t start, bool in_class) {
    uint32_t c = text_[pos_++];
    switch (c) {
      case 'a':
        return 0x07;
      case 'f':
        return '\f';
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case 'v':
        return '\v';
      case 'c':  // ECMAScript's control escape: \cJ is U+000A (a JSON Schema pattern may hold one)
        if (!AtEnd() && IsAsciiLetter(Peek())) return static_cast<uint32_t>(text_[pos_++]) % 32;
        Fail("bad escape \\c: a control escape takes an ASCII letter (\\cA to \\cZ)", start);
      case 'x':
        return ReadHex(2, start);
      case 'U':
        return ReadHex(8, start);
      case 'u': {
        if (Peek() == '{') return ReadBracedHex(start);  // a code point: never half of a pair
        uint32_t cp = ReadHex(4, start);
        if (!in_class) cp = JoinSurrogatePair(cp);
        return cp;
      }
      default:
        break;
    }
    if (IsOctal(c) && (c == '0' || in_class || IsOctalTriple(pos_ - 1))) return ReadOctal(c, start);
    if (IsDigit(c) || IsAsciiLetter(c)) {
      Fail("bad escape \\" + std::string(1, static_cast<char>(c)), start);
    }
    return c;  // escaped punctuation or a non-ASCII character stands for itself
  }

  // Python: \0 takes up to two more octal digits; \1..\7 (in a class) up to two more.
  uint32_t ReadOctal(uint32_t first, size_t start) {
    uint32_t v = first - '0';
    for (int i = 0; i < 2 && !AtEnd() && IsOctal(Peek()); ++i) v = v * 8 + (text_[pos_++] - '0');
    if (v > 0377) Fail("octal escape value outside of range 0-0o377", start);
    return v;
  }

  uint32_t ReadHex(int digits, size_t start) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      int h = AtEnd() ? -1 : HexValue(Peek());
      if (h < 0) Fail("incomplete escape", start);
      v = v * 16 + static_cast<uint32_t>(h), ++pos_;
    }
    if (v > kMaxCodepoint) Fail("bad escape: code point above U+10FFFF", start);
    return v;
  }

  // \u{H...}: 1 to 6 hex digits (ECMAScript's `u` mode spelling).
  uint32_t ReadBracedHex(size_t start) {
    ++pos_;  // '{'
    uint32_t v = 0;
    int digits = 0;
    while (!AtEnd() && HexValue(Peek()) >= 0) {
      v = std::min<uint32_t>(v * 16 + static_cast<uint32_t>(HexValue(text_[pos_++])), kMaxCodepoint + 1);
      ++digits;
    }
    if (digits == 0 || !Match('}')) Fail("incomplete escape \\u{...}", start);
    if (v > kMaxCodepoint) Fail("bad escape: code point above U+10FFFF", start);
    return v;
  }

  // A high surrogate followed by `\uHHHH` with a low surrogate: the code point they
  // encode (ECMAScript joins only this form; `\u{...}` names a code point).
  uint32_t JoinSurrogatePair(uint32_t hi) {
    if (hi < 0xD800 || hi > 0xDBFF || Peek() != '\\' || Peek(1) != 'u' || Peek(2) == '{') return hi;
    size_t save = pos_;
    pos_ += 2;
    uint32_t lo = ReadHex(4, save);
    if (lo < 0xDC00 || lo > 0xDFFF) {
      pos_ = save;
      return hi;
    }
    return 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
  }

  // ---- Character classes ---------------------------------------------------------

  // Python's class syntax: `]` first is a literal, `-` first or last is a literal,
  // escapes inside (\b is backspace), a range's ends must be single characters.
  Item ParseClass(size_t open) {
    bool negated = Match('^');
    Ranges ranges;
    bool first = true;
    while (true) {
      if (AtEnd()) Fail("unterminated character set", open);
      if (Peek() == ']' && !first) break;
      first = false;
      size_t item_pos = pos_;
      ClassItem lo = ParseClassItem(open);
      if (Peek() == '-' && Peek(1) != ']' && Peek(1) != 0xFFFFFFFF) {
        ++pos_;
        ClassItem hi = ParseClassItem(open);
        if (lo.is_set || hi.is_set || lo.cp > hi.cp) Fail("bad character range", item_pos);
        ranges.push_back({lo.cp, hi.cp});
      } else if (lo.is_set) {
        ranges.insert(ranges.end(), lo.set.begin(), lo.set.end());
      } else {
        ranges.push_back({lo.cp, lo.cp});
      }
    }
    ++pos_;  // ']'
    return SetItem(std::move(ranges), negated);
  }

  ClassItem ParseClassItem(size_t open) {
    if (AtEnd()) Fail("unterminated character set", open);
    ClassItem it;
    size_t start = pos_;
    uint32_t c = text_[pos_++];
    if (c != '\\') {
      it.cp = c;
      return it;
    }
    if (AtEnd()) Fail("unterminated character set", open);
    uint32_t e = Peek();
    if (IsClassEscape(e)) {
      ++pos_;
      Ranges r = ClassEscapeRanges(e);
      it.is_set = true;
      it.set = e < 'a' ? Complement(r) : r;
      return it;
    }
    if (e == 'b') {
      ++pos_;
      it.cp = 0x08;
      return it;
    }
    if (e == 'p' || e == 'P') Fail("Unicode property escapes are not supported", start);
    if (e == 'N') Fail("named characters (\\N{...}) are not supported", start);
    it.cp = ParseCharEscape(start, /*in_class=*/true);
    return it;
  }

  IrBuilder& b_;
  bool dot_all_;
  std::vector<uint32_t> text_;  // the pattern's code points
  size_t pos_ = 0;
  std::unordered_set<std::string> names_;  // group names seen
};

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

int32_t AppendRegex(IrBuilder* b, const std::string& pattern, bool search) {
  return AppendRegex(b, pattern, search, RegexFlags{});
}

int32_t AppendRegex(IrBuilder* b, const std::string& pattern, bool search, const RegexFlags& flags) {
  int32_t e = RegexParser(b, pattern, flags.dot_all).Parse(search);
  if (!flags.ignore_case) return e;
  return RewriteChars(b, e, [&](const std::vector<CodepointRange>& ranges) { return b->Class(WithAsciiCases(ranges)); });
}

GrammarPtr ParseRegex(const std::string& pattern, bool search) {
  auto g = std::make_shared<GrammarIR>();
  IrBuilder b(g.get());
  int32_t root = b.NewRule("root");
  b.SetBody(root, AppendRegex(&b, pattern, search));
  g->root = root;
  CompressRepetitions(g.get());
  return g;
}

}  // namespace xgr2
