#include "frontends/json_text.h"

#include <algorithm>
#include <set>

#include "support/utf8.h"

namespace xgr2 {
namespace {

constexpr uint32_t kNoRawFrom = 0x20;  // raw characters start here; below: escapes only

// Short escapes: the character and the letter after the backslash.
constexpr std::pair<uint32_t, char> kShortEscapes[] = {
    {'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'\b', 'b'}, {'\f', 'f'}, {'\n', 'n'}, {'\r', 'r'}, {'\t', 't'}};

bool InRanges(const std::vector<CodepointRange>& ranges, uint32_t c) {
  for (auto r : ranges) {
    if (c >= r.lo && c <= r.hi) return true;
  }
  return false;
}

// ranges ∩ [lo, hi]
std::vector<CodepointRange> Clip(const std::vector<CodepointRange>& ranges, uint32_t lo, uint32_t hi) {
  std::vector<CodepointRange> out;
  for (auto r : ranges) {
    uint32_t a = std::max(r.lo, lo), z = std::min(r.hi, hi);
    if (a <= z) out.push_back({a, z});
  }
  return out;
}

// Whether `ranges` (sorted, merged) holds every character from U+0080 on.
bool CoversNonAscii(const std::vector<CodepointRange>& ranges) {
  auto holds = [&](uint32_t lo, uint32_t hi) {
    for (auto r : ranges) {
      if (r.lo <= lo && hi <= r.hi) return true;
    }
    return false;
  };
  return holds(0x80, 0xD7FF) && holds(0xE000, kMaxCodepoint);
}

}  // namespace

int32_t JsonText::Ws() {
  if (ws_rule_ < 0) {
    int32_t space = b_->Class({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}});
    ws_rule_ = b_->NewRule("ws");
    b_->SetBody(ws_rule_, b_->Repeat(space, 0, layout_.max_whitespace));
  }
  return b_->Ref(ws_rule_);
}

// `ws c ws` as one shared rule: inlined, its two whitespace runs (20 states each) were
// copied after every property name of every object, and an object with hundreds of
// optional properties got automata of tens of thousands of states (renovate's
// configuration schema: 22,000 in one rule; its compile time halved with this).
int32_t JsonText::SharedSeparator(char c, int32_t* rule) {
  if (*rule >= 0) return b_->Ref(*rule);
  return SharedRule(c == ',' ? "comma" : "colon", {Ws(), b_->Bytes(std::string(1, c)), Ws()}, rule);
}

// `{ ws` and `[ ws` likewise: inlined, every object and array rule had a whitespace
// run of its own after the bracket, 21 automaton states to build and determinize per
// schema (median real-world schemas: -7% compile and first mask). The run before a
// closing bracket stays inlined: as a rule, tokens such as `},` or `}]` would run past
// its end and be resolved per parser state (+5% cold mask work, +1M instructions on
// some masks, measured on BFCL schemas).
int32_t JsonText::SharedOpen(char bracket) {
  int32_t* rule = &open_rules_[bracket == '{' ? 0 : 1];
  if (*rule >= 0) return b_->Ref(*rule);
  return SharedRule(bracket == '{' ? "open_brace" : "open_bracket", {b_->Bytes(std::string(1, bracket)), Ws()}, rule);
}

// A new shared rule (called, never inlined) with body `items`, kept in `*rule`.
int32_t JsonText::SharedRule(const std::string& name, const std::vector<int32_t>& items, int32_t* rule) {
  *rule = b_->NewRule(name);
  b_->SetBody(*rule, b_->Seq(items));
  b_->SetShared(*rule);
  return b_->Ref(*rule);
}

int32_t JsonText::DocumentSpace() {
  return layout_.kind == JsonLayout::Kind::kAnyWhitespace ? Ws() : b_->Empty();
}

int32_t JsonText::Newline(int depth) {
  return b_->Bytes("\n" + std::string(static_cast<size_t>(layout_.indent) * depth, ' '));
}

int32_t JsonText::AfterOpen(int depth) {
  switch (layout_.kind) {
    case JsonLayout::Kind::kAnyWhitespace: return Ws();
    case JsonLayout::Kind::kSeparators: return b_->Empty();
    case JsonLayout::Kind::kIndent: return Newline(depth + 1);
  }
  return b_->Empty();
}

int32_t JsonText::Open(char bracket, int depth) {
  if (layout_.kind == JsonLayout::Kind::kAnyWhitespace) return SharedOpen(bracket);
  return b_->Seq({b_->Bytes(std::string(1, bracket)), AfterOpen(depth)});
}

int32_t JsonText::Close(char bracket, int depth) {
  int32_t close = b_->Bytes(std::string(1, bracket));
  switch (layout_.kind) {
    case JsonLayout::Kind::kAnyWhitespace: return b_->Seq({Ws(), close});
    case JsonLayout::Kind::kSeparators: return close;
    case JsonLayout::Kind::kIndent: return b_->Seq({Newline(depth), close});
  }
  return close;
}

int32_t JsonText::EmptyContainer(char open, char close) {
  if (layout_.kind == JsonLayout::Kind::kAnyWhitespace) {
    return b_->Seq({SharedOpen(open), b_->Bytes(std::string(1, close))});
  }
  return b_->Bytes(std::string{open, close});
}

int32_t JsonText::Container(char open, char close, int depth, bool empty_ok, int32_t items) {
  if (items < 0) return empty_ok ? EmptyContainer(open, close) : Nothing(b_);
  if (!empty_ok) return b_->Seq({Open(open, depth), items, Close(close, depth)});
  int32_t end = b_->Bytes(std::string(1, close));
  int32_t rest = b_->Seq({items, Close(close, depth)});
  // Any whitespace: the empty form ("{ }") shares the run after the bracket too.
  if (layout_.kind == JsonLayout::Kind::kAnyWhitespace) return b_->Seq({SharedOpen(open), b_->Choice({end, rest})});
  return b_->Seq({b_->Bytes(std::string(1, open)), b_->Choice({end, b_->Seq({AfterOpen(depth), rest})})});
}

int32_t JsonText::ItemSeparator(int depth) {
  switch (layout_.kind) {
    case JsonLayout::Kind::kAnyWhitespace: return SharedSeparator(',', &comma_rule_);
    case JsonLayout::Kind::kSeparators: return b_->Bytes(layout_.item_separator);
    case JsonLayout::Kind::kIndent: return b_->Seq({b_->Bytes(layout_.item_separator), Newline(depth + 1)});
  }
  return b_->Bytes(",");
}

int32_t JsonText::KeySeparator() {
  if (layout_.kind == JsonLayout::Kind::kAnyWhitespace) return SharedSeparator(':', &colon_rule_);
  return b_->Bytes(layout_.key_separator);
}

int32_t JsonText::HexDigits(uint32_t lo, uint32_t hi) {
  std::vector<CodepointRange> r;
  r.reserve(3);
  auto add = [&](uint32_t a, uint32_t z, uint32_t base) {  // digit values [a, z] written from `base`
    uint32_t x = std::max(lo, a), y = std::min(hi, z);
    if (x <= y) r.push_back({base + x - a, base + y - a});
  };
  add(0, 9, '0');
  add(10, 15, 'a');
  add(10, 15, 'A');
  return b_->Class(r);
}

// `width` hex digits (either case) whose value is in [lo, hi].
int32_t JsonText::HexRange(uint32_t lo, uint32_t hi, int width) {
  if (width == 0) return b_->Empty();
  // The same ranges recur (any 3 hex digits below every leading digit, in each \uXXXX
  // tree of a grammar): each is one expression, shared like CharIn's.
  uint64_t key = lo | uint64_t{hi} << 20 | uint64_t(width) << 40;
  auto [memo, fresh] = hex_range_.try_emplace(key, -1);
  if (!fresh) return memo->second;
  int32_t expr = HexRangeUncached(lo, hi, width);
  hex_range_[key] = expr;  // `memo` may be invalid: the recursion inserted more
  return expr;
}

int32_t JsonText::HexRangeUncached(uint32_t lo, uint32_t hi, int width) {
  uint32_t unit = 1u << (4 * (width - 1)), full = unit - 1;
  uint32_t dlo = lo / unit, dhi = hi / unit, rlo = lo % unit, rhi = hi % unit;
  if (dlo == dhi) return b_->Seq({HexDigits(dlo, dlo), HexRange(rlo, rhi, width - 1)});
  std::vector<int32_t> alts;
  uint32_t mid_lo = dlo, mid_hi = dhi;
  if (rlo != 0) alts.push_back(b_->Seq({HexDigits(dlo, dlo), HexRange(rlo, full, width - 1)})), ++mid_lo;
  if (rhi != full) alts.push_back(b_->Seq({HexDigits(dhi, dhi), HexRange(0, rhi, width - 1)})), --mid_hi;
  if (mid_lo <= mid_hi) alts.push_back(b_->Seq({HexDigits(mid_lo, mid_hi), HexRange(0, full, width - 1)}));
  return b_->Choice(alts);
}

int32_t JsonText::CharIn(const std::vector<CodepointRange>& ranges) {
  // "Every character but a few ASCII ones" (a key trie's other characters, negated
  // pattern classes) is common, and the non-ASCII part of such a set, with its \uXXXX
  // trees and surrogate pairs, is most of its expressions: one shared rule writes it.
  if (CoversNonAscii(ranges) && ranges.front().lo < 0x80) {
    return b_->Choice({CharIn(Clip(ranges, 0, 0x7F)), NonAsciiChar()});
  }
  std::vector<std::pair<uint32_t, uint32_t>> key;
  key.reserve(ranges.size());
  for (CodepointRange r : ranges) key.emplace_back(r.lo, r.hi);
  auto [memo, fresh] = char_in_.try_emplace(std::move(key), -1);
  if (fresh) memo->second = CharInUncached(ranges);
  return memo->second;
}

int32_t JsonText::CharInUncached(const std::vector<CodepointRange>& ranges) {
  std::vector<int32_t> alts;
  // Raw: everything but controls, `"` and `\`.
  std::vector<CodepointRange> raw = Clip(ranges, kNoRawFrom, kMaxCodepoint), raw_ok;
  for (auto r : raw) {
    for (uint32_t bad : {uint32_t{'"'}, uint32_t{'\\'}}) {
      if (r.lo <= bad && bad <= r.hi) {
        if (r.lo < bad) raw_ok.push_back({r.lo, bad - 1});
        r.lo = bad + 1;
      }
    }
    if (r.lo <= r.hi) raw_ok.push_back(r);
  }
  if (!raw_ok.empty()) alts.push_back(b_->Class(raw_ok));
  std::string short_letters;
  for (auto [c, letter] : kShortEscapes) {
    if (InRanges(ranges, c)) short_letters += letter;
  }
  std::vector<int32_t> after_backslash;
  const size_t exprs_before = b_->ir()->exprs.size();
  if (!short_letters.empty()) {
    std::vector<CodepointRange> letters;
    for (char l : short_letters) letters.push_back({static_cast<uint32_t>(l), static_cast<uint32_t>(l)});
    after_backslash.push_back(b_->Class(letters));
  }
  for (auto r : Clip(ranges, 0, 0xFFFF)) {  // \uXXXX, surrogates excluded
    for (auto part : {CodepointRange{r.lo, std::min(r.hi, 0xD7FFu)}, CodepointRange{std::max(r.lo, 0xE000u), r.hi}}) {
      if (part.lo <= part.hi) after_backslash.push_back(b_->Seq({b_->Bytes("u"), HexRange(part.lo, part.hi, 4)}));
    }
  }
  for (auto r : Clip(ranges, 0x10000, kMaxCodepoint)) {  // surrogate pairs
    uint32_t a = r.lo - 0x10000, z = r.hi - 0x10000;
    uint32_t ha = a >> 10, hz = z >> 10, la = a & 0x3FF, lz = z & 0x3FF;
    auto pair = [&](uint32_t h0, uint32_t h1, uint32_t l0, uint32_t l1) {
      after_backslash.push_back(b_->Seq({b_->Bytes("u"), HexRange(0xD800 + h0, 0xD800 + h1, 4), b_->Bytes("\\u"),
                                         HexRange(0xDC00 + l0, 0xDC00 + l1, 4)}));
    };
    if (ha == hz) {
      pair(ha, ha, la, lz);
    } else {
      pair(ha, ha, la, 0x3FF);
      if (ha + 1 <= hz - 1) pair(ha + 1, hz - 1, 0, 0x3FF);
      pair(hz, hz, 0, lz);
    }
  }
  if (!after_backslash.empty()) {
    int32_t escapes = b_->Choice(after_backslash);
    // The \uXXXX trees of a wide set (anything but a few characters) are large: kept in
    // a rule of their own, an automaton that writes the set at each of its states
    // (patterns, key languages) does not copy them into every state's rule. Written
    // characters rarely are escapes, so the extra rule call is rare; a tree this large
    // is never inlined (fsm_builder.cc), smaller ones stay in place.
    if (b_->ir()->exprs.size() - exprs_before > kEscapeRuleExprs) {
      int32_t rule = b_->NewRule("json_escape");
      b_->SetBody(rule, escapes);
      escapes = b_->Ref(rule);
    }
    alts.push_back(b_->Seq({b_->Bytes("\\"), escapes}));
  }
  if (alts.empty()) return Nothing(b_);
  return b_->Choice(alts);
}

int32_t JsonText::NonAsciiChar() {
  if (non_ascii_rule_ < 0) non_ascii_rule_ = ImportGrammar(b_, NonAsciiCharRules(), "");
  return b_->Ref(non_ascii_rule_);
}

// Built once per process and copied into each grammar that needs it: its \uXXXX trees
// and surrogate pairs are a few hundred expressions, the same every time, and copying
// them costs less than building them (-4% of the front end of a small schema with an
// `if` on an object's keys).
const GrammarIR& JsonText::NonAsciiCharRules() {
  static const GrammarIR* const rules = [] {
    auto* g = new GrammarIR();
    IrBuilder b(g);
    JsonText text(&b, JsonLayout{});
    int32_t body = text.CharInUncached({{0x80, 0xD7FF}, {0xE000, kMaxCodepoint}});
    g->root = b.NewRule("json_char_non_ascii");
    b.SetBody(g->root, body);
    return g;
  }();
  return *rules;
}

int32_t JsonText::AnyChar() {
  if (any_char_rule_ < 0) {
    int32_t body = CharIn({{0, 0xD7FF}, {0xE000, kMaxCodepoint}});
    any_char_rule_ = b_->NewRule("json_char");
    b_->SetBody(any_char_rule_, body);
  }
  return b_->Ref(any_char_rule_);
}

int32_t JsonText::WrittenContent(const CharDfa& dfa, const std::string& name) {
  return EmitDfa(b_, dfa, [&](const std::vector<CodepointRange>& r) { return b_->Class(r); }, name);
}

int32_t JsonText::AnyContent() {
  if (content_rule_ < 0 && excludes_) {
    content_rule_ = b_->NewRule("json_string_content");
    b_->SetBody(content_rule_, WrittenContent(excludes_->Content(0, -1), "json_content"));
  }
  if (content_rule_ < 0) {
    // The builtin JSON grammar's string body, so masks are shared with it across grammars.
    int32_t hex = b_->Class({{'0', '9'}, {'a', 'f'}, {'A', 'F'}});
    int32_t ch = b_->Choice({b_->Class({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}, true),
                             b_->Seq({b_->Bytes("\\"), b_->Choice({b_->Class({{'"', '"'}, {'\\', '\\'}, {'/', '/'},
                                                                              {'b', 'b'}, {'f', 'f'}, {'n', 'n'},
                                                                              {'r', 'r'}, {'t', 't'}}),
                                                                   b_->Seq({b_->Bytes("u"), b_->Repeat(hex, 4, 4)})})})});
    content_rule_ = b_->NewRule("json_string_content");
    b_->SetBody(content_rule_, b_->Star(ch));
  }
  return b_->Ref(content_rule_);
}

int32_t JsonText::StringLiteral(const std::string& utf8) {
  if (excludes_) {  // the spellings that hold no exclusion (none: Nothing)
    auto it = excluding_literals_.find(utf8);
    if (it == excluding_literals_.end()) {
      int32_t content = WrittenContent(excludes_->Literal(utf8), "json_literal");
      it = excluding_literals_.emplace(utf8, b_->Seq({b_->Bytes("\""), content, b_->Bytes("\"")})).first;
    }
    return it->second;
  }
  std::vector<int32_t> parts = {b_->Bytes("\"")};
  std::string run;  // raw ASCII characters, one literal
  size_t p = 0;
  while (p < utf8.size()) {
    size_t start = p;
    int32_t cp = DecodeUtf8(utf8, &p);
    if (cp < 0) cp = 0xFFFD, p = start + 1;
    uint32_t c = static_cast<uint32_t>(cp);
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      run += static_cast<char>(c);
      continue;
    }
    if (!run.empty()) parts.push_back(b_->Bytes(run)), run.clear();
    parts.push_back(CharIn({{c, c}}));
  }
  if (!run.empty()) parts.push_back(b_->Bytes(run));
  parts.push_back(b_->Bytes("\""));
  return b_->Seq(parts);
}

// A constant number as written, and in the plain spellings equal to it that json.dumps
// writes (2.0 -> "2.0", "2"; 1e2 -> "100", "100.0"; 0.5e1 -> "5", "5.0").
int32_t JsonText::NumberSpellings(const std::string& text) {
  std::set<std::string> spellings = {text};
  DecimalNumber d = ParseDecimal(text);
  if (d.exponent < 1000 && d.exponent > -1000) {
    std::string sign = d.negative ? "-" : "";
    if (d.digits.empty()) {
      spellings.insert({"0", "0.0", "-0", "-0.0"});
    } else if (d.exponent >= 0) {
      std::string whole = sign + d.digits + std::string(static_cast<size_t>(d.exponent), '0');
      spellings.insert(whole);
      spellings.insert(whole + ".0");
    } else {
      size_t frac = static_cast<size_t>(-d.exponent);
      std::string digits = d.digits.size() > frac ? d.digits : std::string(frac - d.digits.size() + 1, '0') + d.digits;
      spellings.insert(sign + digits.substr(0, digits.size() - frac) + "." + digits.substr(digits.size() - frac));
    }
  }
  std::vector<int32_t> alts;
  for (const std::string& s : spellings) alts.push_back(b_->Bytes(s));
  return b_->Choice(alts);
}

int32_t JsonText::IntegerLiteral(const std::string& text) {
  DecimalNumber d = ParseDecimal(text);
  if (d.digits.empty()) return b_->Choice({b_->Bytes("0"), b_->Bytes("-0")});
  if (d.exponent < 0 || d.exponent >= 1000) return NumberSpellings(text);  // not integral, or huge
  std::string sign = d.negative ? "-" : "";
  return b_->Bytes(sign + d.digits + std::string(static_cast<size_t>(d.exponent), '0'));
}

int32_t JsonText::Value(const JsonValue& v, int depth) {
  switch (v.kind) {
    case JsonValue::Kind::kNull: return b_->Bytes("null");
    case JsonValue::Kind::kBool: return b_->Bytes(v.boolean ? "true" : "false");
    case JsonValue::Kind::kNumber: return integral_as_integers_ ? IntegerLiteral(v.text) : NumberSpellings(v.text);
    case JsonValue::Kind::kString: return StringLiteral(v.text);
    case JsonValue::Kind::kArray: {
      if (v.items.empty()) return EmptyContainer('[', ']');
      std::vector<int32_t> parts = {Open('[', depth)};
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i) parts.push_back(ItemSeparator(depth));
        parts.push_back(Value(v.items[i], depth + 1));
      }
      parts.push_back(Close(']', depth));
      return b_->Seq(parts);
    }
    case JsonValue::Kind::kObject: {
      if (v.members.empty()) return EmptyContainer('{', '}');
      std::vector<int32_t> parts = {Open('{', depth)};
      for (size_t i = 0; i < v.members.size(); ++i) {
        if (i) parts.push_back(ItemSeparator(depth));
        parts.push_back(StringLiteral(v.members[i].first));
        parts.push_back(KeySeparator());
        parts.push_back(Value(v.members[i].second, depth + 1));
      }
      parts.push_back(Close('}', depth));
      return b_->Seq(parts);
    }
  }
  return b_->Empty();
}

}  // namespace xgr2
