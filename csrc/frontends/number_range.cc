// Numeric JSON Schema keywords as one explicit DFA over the characters of a JSON
// number, emitted as grammar rules (one per class of equivalent DFA states).
//
// The DFA reads the text left to right and keeps, per state, exactly what decides
// acceptance: the sign (which magnitude interval applies), how many integer digits
// were read (capped just past the longest bound, since length decides first), the
// lexicographic comparison with each bound's digits so far, the fraction position
// (capped), and the value modulo multipleOf's numerator. Every decision is made on
// digits, so bounds of any magnitude are exact; sizes are bounded by kMaxDigits,
// kMaxStates and kMaxRules. Semantics:
//   - Integers: -?(0|[1-9][0-9]*), never a fraction or exponent (non-integer bounds
//     thus round inward: minimum 1.5 accepts 2 and up).
//   - "-0" (and "-0.0") is accepted iff 0 satisfies the constraints: it is valid JSON
//     equal to 0.
//   - Leading zeros are never accepted (RFC 8259).
//   - Exponent notation ("1e5") is accepted only for numbers whose constraints depend
//     on the sign alone (no multipleOf; each bound absent or equal to 0): elsewhere the
//     set of exponent texts in a range is not regular, so the grammar narrows to
//     plain decimal texts (it never accepts a value outside the range).
//   - multipleOf m = M * 10^-d: numbers accept a value iff value * 10^d is an integer
//     multiple of M (fraction digits past d must be zeros); integers use the
//     equivalent integer modulus M / gcd(M, 10^d) (so 0.5 constrains nothing).
#include "frontends/number_range.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "xgr2/errors.h"

namespace xgr2 {
namespace {

// Documented limits: a bound's integer or fraction part may have this many digits
// (1e400 has 401); the DFA may explore and emit this many states (multipleOf
// multiplies them: about M for a multipleOf M without bounds, about M times the
// bound's digit count with a bound).
constexpr int32_t kMaxDigits = 1000;
constexpr int32_t kMaxStates = 20000;  // explored
constexpr int32_t kMaxRules = 4000;    // emitted, after merging equivalent states
constexpr uint64_t kMaxModulus = 100000;

// |value| as digits: `ip` canonical ("0" for zero), `fp` without trailing zeros.
struct Magnitude {
  std::string ip = "0", fp;
  bool IsZero() const { return ip == "0" && fp.empty(); }
};

struct Decimal {
  bool neg = false;  // never set for zero
  Magnitude mag;
  // Significant digits and power of ten: value = digits * 10^scale (zero: "").
  std::string digits;
  int64_t scale = 0;
};

std::string Quote(const std::string& s) { return "'" + s + "'"; }

// Parses a JSON number text exactly (no doubles). Throws SchemaError naming `keyword`
// when malformed or when it needs more than kMaxDigits digits.
Decimal ParseDecimal(const std::string& text, const std::string& keyword) {
  auto bad = [&]() { return SchemaError(keyword + " " + Quote(text) + " is not a JSON number", ""); };
  size_t i = 0, n = text.size();
  auto is_digit = [&](size_t k) { return k < n && text[k] >= '0' && text[k] <= '9'; };
  Decimal d;
  bool neg = i < n && text[i] == '-';
  if (neg) ++i;
  std::string int_digits, frac_digits;
  if (!is_digit(i)) throw bad();
  if (text[i] == '0') {
    int_digits = "0", ++i;
  } else {
    while (is_digit(i)) int_digits += text[i++];
  }
  if (i < n && text[i] == '.') {
    ++i;
    if (!is_digit(i)) throw bad();
    while (is_digit(i)) frac_digits += text[i++];
  }
  int64_t exp = 0;
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool exp_neg = i < n && text[i] == '-';
    if (i < n && (text[i] == '-' || text[i] == '+')) ++i;
    if (!is_digit(i)) throw bad();
    while (is_digit(i)) exp = std::min<int64_t>(exp * 10 + (text[i++] - '0'), int64_t{1} << 40);
    if (exp_neg) exp = -exp;
  }
  if (i != n) throw bad();
  std::string all = int_digits + frac_digits;
  size_t first = all.find_first_not_of('0');
  if (first == std::string::npos) return d;  // zero, whatever its sign or exponent
  size_t last = all.find_last_not_of('0');
  d.neg = neg;
  d.digits = all.substr(first, last - first + 1);
  d.scale = exp - static_cast<int64_t>(frac_digits.size()) + static_cast<int64_t>(all.size() - 1 - last);
  int64_t int_len = static_cast<int64_t>(d.digits.size()) + d.scale;  // digits before the point
  if (int_len > kMaxDigits || -d.scale > kMaxDigits) {
    throw SchemaError(keyword + " " + Quote(text) + " needs more than " + std::to_string(kMaxDigits) +
                          " digits before or after the decimal point",
                      "");
  }
  if (d.scale >= 0) {
    d.mag.ip = d.digits + std::string(d.scale, '0');
  } else if (int_len > 0) {
    d.mag.ip = d.digits.substr(0, int_len);
    d.mag.fp = d.digits.substr(int_len);
  } else {
    d.mag.fp = std::string(-int_len, '0') + d.digits;
  }
  return d;
}

// The magnitudes one sign may take: [lo, hi] with inclusiveness; no hi = unbounded.
struct Side {
  bool enabled = false;
  Magnitude lo;
  bool lo_incl = true;
  std::optional<Magnitude> hi;
  bool hi_incl = true;
};

struct Bound {
  Decimal value;
  bool exclusive = false;
};

// Positive side: magnitudes of x >= 0 in range; negative side: |x| for x <= 0 in range
// (so both sides hold zero when 0 is in range, giving "0" and "-0").
void SplitBySign(const std::optional<Bound>& lo, const std::optional<Bound>& hi, Side* pos, Side* neg) {
  pos->enabled = !hi || !hi->value.neg;
  if (lo && !lo->value.neg) pos->lo = lo->value.mag, pos->lo_incl = !lo->exclusive;
  if (hi) pos->hi = hi->value.mag, pos->hi_incl = !hi->exclusive;
  neg->enabled = !lo || lo->value.neg || lo->value.mag.IsZero();
  if (hi && (hi->value.neg || hi->value.mag.IsZero())) neg->lo = hi->value.mag, neg->lo_incl = !hi->exclusive;
  if (lo) neg->hi = lo->value.mag, neg->hi_incl = !lo->exclusive;
}

enum Cmp : uint8_t { kLt = 0, kEq = 1, kGt = 2 };
Cmp CmpDigit(int c, int bound_digit) { return c < bound_digit ? kLt : c > bound_digit ? kGt : kEq; }

enum Stage : uint8_t { kTop, kStart, kZero, kInt, kDot, kFrac, kExpStart, kExpSign, kExpDigits };

// Input symbols: digits 0-9, then these.
constexpr int kSymDot = 10, kSymMinus = 11, kSymExp = 12, kSymPlus = 13, kNumSymbols = 14;

// One DFA state, packed into a hash key.
struct State {
  Stage stage = kTop;
  uint8_t side = 0;           // 0 positive, 1 negative
  uint8_t lex_lo = kEq;       // integer part: lexicographic vs the bound's digits so far;
  uint8_t lex_hi = kEq;       // fraction: the value so far vs the bound
  uint8_t ok = 0;             // exponent stages: whether the mantissa satisfied the range;
                              // fraction (non_integral): whether a nonzero digit was read
  int32_t ilen = 0;           // integer digits read, capped
  int32_t fpos = 0;           // fraction digits read, capped
  uint32_t residue = 0;       // value * 10^min(fpos, d) mod M

  uint64_t Key() const {
    return uint64_t{stage} | uint64_t{side} << 4 | uint64_t{lex_lo} << 5 | uint64_t{lex_hi} << 7 |
           uint64_t{ok} << 9 | uint64_t(ilen) << 10 | uint64_t(fpos) << 21 | uint64_t{residue} << 32;
  }
};

struct Options {
  bool fraction = true;   // number (true) or integer (false)
  bool exponent = false;  // exponent forms (only when the constraints depend on the sign alone)
  uint64_t modulus = 1;   // M
  int32_t scale = 0;      // d
  bool limit_fraction = false;  // fraction digits past d must be zeros (numbers with multipleOf)
  bool non_integral = false;    // NumericConstraints::non_integral
};

// Builds the DFA of the number texts; transitions -1 = reject.
class NumberDfa {
 public:
  NumberDfa(const Side& pos, const Side& neg, const Options& opt) : side_{pos, neg}, opt_(opt) {
    int32_t longest_ip = 0, longest_fp = 0;
    for (const Side& s : side_) {
      longest_ip = std::max<int32_t>(longest_ip, s.lo.ip.size());
      longest_fp = std::max<int32_t>(longest_fp, s.lo.fp.size());
      if (s.hi) {
        longest_ip = std::max<int32_t>(longest_ip, s.hi->ip.size());
        longest_fp = std::max<int32_t>(longest_fp, s.hi->fp.size());
      }
    }
    cap_ilen_ = longest_ip + 1;
    cap_fpos_ = std::max(longest_fp, opt.scale);
    pow10_.assign(opt.scale + 1, 1 % opt.modulus);
    for (int32_t i = 1; i <= opt.scale; ++i) pow10_[i] = pow10_[i - 1] * 10 % opt.modulus;
  }

  // Explores the states reachable from the start (state 0); throws past kMaxStates.
  void Build(const std::string& what) {
    Intern(State{});
    for (size_t i = 0; i < states_.size(); ++i) {
      std::array<int32_t, kNumSymbols> row;
      for (int sym = 0; sym < kNumSymbols; ++sym) {
        std::optional<State> next = Step(states_[i], sym);
        row[sym] = next ? Intern(*next) : -1;
        if (states_.size() > static_cast<size_t>(kMaxStates)) {
          throw SchemaError(what + " needs more than " + std::to_string(kMaxStates) +
                                " automaton states: cannot be expressed",
                            "");
        }
      }
      next_.push_back(row);
      accept_.push_back(Accepts(states_[i]));
    }
  }

  int32_t NumStates() const { return static_cast<int32_t>(states_.size()); }
  int32_t Next(int32_t s, int sym) const { return next_[s][sym]; }
  bool Accepting(int32_t s) const { return accept_[s]; }

 private:
  int32_t Intern(const State& s) {
    auto [it, added] = ids_.emplace(s.Key(), static_cast<int32_t>(states_.size()));
    if (added) states_.push_back(s);
    return it->second;
  }

  static int BoundDigit(const std::string& digits, int32_t pos) {
    return pos < static_cast<int32_t>(digits.size()) ? digits[pos] - '0' : 0;
  }

  // The integer part read so far vs a bound's integer part: length decides first.
  static Cmp IntCmp(const State& s, uint8_t lex, const std::string& bound_ip) {
    int32_t len = static_cast<int32_t>(bound_ip.size());
    return s.ilen < len ? kLt : s.ilen > len ? kGt : static_cast<Cmp>(lex);
  }

  // The whole value vs a bound, if the text ended here.
  static Cmp FinalCmp(const State& s, uint8_t lex, const Magnitude& bound) {
    Cmp c = s.stage == kFrac ? static_cast<Cmp>(lex) : IntCmp(s, lex, bound.ip);
    int32_t frac_read = s.stage == kFrac ? s.fpos : 0;
    if (c == kEq && frac_read < static_cast<int32_t>(bound.fp.size())) return kLt;  // bound has more
    return c;
  }

  bool HiViolated(const State& s, const Side& side) const {
    if (!side.hi) return false;
    if (s.stage == kInt || s.stage == kZero) {
      int32_t len = static_cast<int32_t>(side.hi->ip.size());
      return s.ilen > len || (s.ilen == len && s.lex_hi == kGt);
    }
    return s.lex_hi == kGt;
  }

  bool Accepts(const State& s) const {
    if (s.stage == kExpDigits) return s.ok;
    if (s.stage != kZero && s.stage != kInt && s.stage != kFrac) return false;
    if (opt_.non_integral && !(s.stage == kFrac && s.ok)) return false;
    const Side& side = side_[s.side];
    Cmp lo = FinalCmp(s, s.lex_lo, side.lo);
    if (lo == kLt || (lo == kEq && !side.lo_incl)) return false;
    if (side.hi) {
      Cmp hi = FinalCmp(s, s.lex_hi, *side.hi);
      if (hi == kGt || (hi == kEq && !side.hi_incl)) return false;
    }
    int32_t frac_read = s.stage == kFrac ? std::min(s.fpos, opt_.scale) : 0;
    return s.residue * pow10_[opt_.scale - frac_read] % opt_.modulus == 0;
  }

  std::optional<State> Step(State s, int sym) const {
    bool digit = sym < 10;
    switch (s.stage) {
      case kTop:
        if (sym == kSymMinus) {
          if (!side_[1].enabled) return std::nullopt;
          s.side = 1, s.stage = kStart;
          return s;
        }
        if (!side_[0].enabled) return std::nullopt;
        s.stage = kStart;
        return Step(s, sym);
      case kStart:
        return digit ? IntDigit(s, sym) : std::nullopt;
      case kInt:
        return digit ? IntDigit(s, sym) : sym == kSymDot ? Dot(s) : sym == kSymExp ? Exp(s) : std::nullopt;
      case kZero:
        return sym == kSymDot ? Dot(s) : sym == kSymExp ? Exp(s) : std::nullopt;
      case kDot:
      case kFrac:
        return digit ? FracDigit(s, sym) : sym == kSymExp && s.stage == kFrac ? Exp(s) : std::nullopt;
      case kExpStart:
        if (sym == kSymPlus || sym == kSymMinus) {
          s.stage = kExpSign;
          return s;
        }
        [[fallthrough]];
      case kExpSign:
      case kExpDigits:
        if (!digit) return std::nullopt;
        s.stage = kExpDigits;
        return s;
    }
    return std::nullopt;
  }

  std::optional<State> IntDigit(State s, int c) const {
    const Side& side = side_[s.side];
    int32_t len = s.ilen + 1;  // position len - 1 gets digit c
    if (s.stage == kStart) s.stage = c == 0 ? kZero : kInt;
    if (len <= static_cast<int32_t>(side.lo.ip.size()) && s.lex_lo == kEq) {
      s.lex_lo = CmpDigit(c, side.lo.ip[len - 1] - '0');
    }
    if (side.hi && len <= static_cast<int32_t>(side.hi->ip.size()) && s.lex_hi == kEq) {
      s.lex_hi = CmpDigit(c, side.hi->ip[len - 1] - '0');
    }
    s.ilen = std::min(len, cap_ilen_);
    s.residue = static_cast<uint32_t>((uint64_t{s.residue} * 10 + c) % opt_.modulus);
    if (HiViolated(s, side)) return std::nullopt;
    // Canonical forms, so that states that behave alike are one state: past the lower
    // bound's length the integer part stays above it; without an upper bound its length
    // then no longer matters.
    if (s.ilen > static_cast<int32_t>(side.lo.ip.size())) s.lex_lo = kGt;
    if (!side.hi && IntCmp(s, s.lex_lo, side.lo.ip) == kGt) s.ilen = cap_ilen_, s.lex_lo = kGt;
    return s;
  }

  std::optional<State> Dot(State s) const {
    if (!opt_.fraction) return std::nullopt;
    const Side& side = side_[s.side];
    s.lex_lo = IntCmp(s, s.lex_lo, side.lo.ip);
    if (side.hi) s.lex_hi = IntCmp(s, s.lex_hi, side.hi->ip);
    s.stage = kDot, s.ilen = 0, s.fpos = 0;
    if (s.lex_lo == kLt || HiViolated(s, side)) return std::nullopt;  // decided for good
    return s;
  }

  std::optional<State> FracDigit(State s, int c) const {
    const Side& side = side_[s.side];
    if (s.lex_lo == kEq) s.lex_lo = CmpDigit(c, BoundDigit(side.lo.fp, s.fpos));
    if (side.hi && s.lex_hi == kEq) s.lex_hi = CmpDigit(c, BoundDigit(side.hi->fp, s.fpos));
    if (s.fpos < opt_.scale) {
      s.residue = static_cast<uint32_t>((uint64_t{s.residue} * 10 + c) % opt_.modulus);
    } else if (c != 0 && opt_.limit_fraction) {
      return std::nullopt;  // a digit past multipleOf's precision
    }
    s.stage = kFrac, s.fpos = std::min(s.fpos + 1, cap_fpos_);
    if (opt_.non_integral && c != 0) s.ok = 1;
    if (s.lex_lo == kLt || HiViolated(s, side)) return std::nullopt;
    // Once both comparisons are decided and multipleOf's digits are read, the position
    // no longer matters.
    if (s.lex_lo != kEq && (!side.hi || s.lex_hi != kEq) && s.fpos >= opt_.scale) s.fpos = cap_fpos_;
    return s;
  }

  // Only used when the constraints depend on the sign alone: the exponent cannot
  // change whether the mantissa satisfied them.
  std::optional<State> Exp(State s) const {
    if (!opt_.exponent) return std::nullopt;
    State e;
    e.stage = kExpStart, e.side = s.side, e.ok = Accepts(s);
    return e;
  }

  Side side_[2];
  Options opt_;
  int32_t cap_ilen_ = 1, cap_fpos_ = 0;
  std::vector<uint64_t> pow10_;
  std::vector<State> states_;
  std::unordered_map<uint64_t, int32_t> ids_;
  std::vector<std::array<int32_t, kNumSymbols>> next_;
  std::vector<uint8_t> accept_;
};

// States from which an accepting state is reachable.
std::vector<uint8_t> LiveStates(const NumberDfa& dfa) {
  int32_t n = dfa.NumStates();
  std::vector<std::vector<int32_t>> preds(n);
  std::vector<uint8_t> live(n, 0);
  std::vector<int32_t> stack;
  for (int32_t s = 0; s < n; ++s) {
    for (int sym = 0; sym < kNumSymbols; ++sym) {
      if (dfa.Next(s, sym) >= 0) preds[dfa.Next(s, sym)].push_back(s);
    }
    if (dfa.Accepting(s)) live[s] = 1, stack.push_back(s);
  }
  while (!stack.empty()) {
    int32_t s = stack.back();
    stack.pop_back();
    for (int32_t p : preds[s]) {
      if (!live[p]) live[p] = 1, stack.push_back(p);
    }
  }
  return live;
}

// Classes of equivalent live states (Moore's partition refinement), class of the
// start = 0; -1 for dead states. Pruned and canonical DFAs are already small; this
// merges what is left (the two signs' states under symmetric constraints, integer
// lengths that no longer matter), within a work budget past which it keeps every state.
std::vector<int32_t> EquivalenceClasses(const NumberDfa& dfa, const std::vector<uint8_t>& live) {
  constexpr int64_t kWorkBudget = 20000000;  // state-symbol visits
  int32_t n = dfa.NumStates();
  std::vector<int32_t> cls(n, -1), identity(n, -1);
  int32_t num_live = 0;
  for (int32_t s = 0; s < n; ++s) {
    if (live[s]) identity[s] = num_live++, cls[s] = dfa.Accepting(s) ? 1 : 0;
  }
  using Signature = std::array<int32_t, kNumSymbols + 1>;
  struct Hash {
    size_t operator()(const Signature& sig) const {
      uint64_t h = 1469598103934665603ull;
      for (int32_t v : sig) h = (h ^ static_cast<uint32_t>(v)) * 1099511628211ull;
      return h;
    }
  };
  int32_t num_classes = -1;
  for (int64_t work = 0;; work += int64_t{num_live} * kNumSymbols) {
    if (work > kWorkBudget) return identity;
    std::unordered_map<Signature, int32_t, Hash> ids;
    std::vector<int32_t> next_cls(n, -1);
    for (int32_t s = 0; s < n; ++s) {  // state 0 first: its class gets id 0
      if (!live[s]) continue;
      Signature sig;
      sig[0] = cls[s];
      for (int sym = 0; sym < kNumSymbols; ++sym) {
        int32_t t = dfa.Next(s, sym);
        sig[sym + 1] = t < 0 ? -1 : cls[t];
      }
      next_cls[s] = ids.emplace(sig, static_cast<int32_t>(ids.size())).first->second;
    }
    cls.swap(next_cls);
    if (static_cast<int32_t>(ids.size()) == num_classes) return cls;
    num_classes = static_cast<int32_t>(ids.size());
  }
}

// The characters of a set of symbols, as code point ranges.
std::vector<CodepointRange> SymbolRanges(const std::vector<int>& syms) {
  static constexpr char kChars[kNumSymbols] = {'0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '.', '-', 'e', '+'};
  std::vector<CodepointRange> out;
  for (int sym : syms) {
    uint32_t c = static_cast<uint8_t>(kChars[sym]);
    out.push_back({c, c});
    if (sym == kSymExp) out.push_back({'E', 'E'});
  }
  return out;  // IrBuilder::Class sorts and merges
}

// One rule per class of states: (its self-loop)* then the end of the text (if
// accepting) or a symbol and the rule of the next class. A DFA without longer cycles
// (no multipleOf) gives non-recursive rules, which the FSM builder inlines while small.
int32_t EmitRules(IrBuilder* b, const NumberDfa& dfa, const std::vector<int32_t>& cls) {
  int32_t num_classes = *std::max_element(cls.begin(), cls.end()) + 1;
  if (num_classes > kMaxRules) {
    throw SchemaError("needs " + std::to_string(num_classes) + " automaton states, more than " +
                          std::to_string(kMaxRules), "");
  }
  std::vector<int32_t> rule(num_classes, -1);
  for (int32_t c = 0; c < num_classes; ++c) rule[c] = b->NewRule("number_" + std::to_string(c));
  for (int32_t s = 0; s < dfa.NumStates(); ++s) {
    int32_t c = cls[s];
    if (c < 0 || b->ir()->rules[rule[c]].body >= 0) continue;  // dead, or its class is done
    std::vector<int> self;
    std::vector<std::pair<int32_t, std::vector<int>>> by_target;  // in order of first symbol
    for (int sym = 0; sym < kNumSymbols; ++sym) {
      int32_t t = dfa.Next(s, sym) < 0 ? -1 : cls[dfa.Next(s, sym)];
      if (t < 0) continue;
      if (t == c) {
        self.push_back(sym);
        continue;
      }
      auto it = std::find_if(by_target.begin(), by_target.end(), [&](const auto& p) { return p.first == t; });
      if (it == by_target.end()) {
        by_target.push_back({t, {sym}});
      } else {
        it->second.push_back(sym);
      }
    }
    std::vector<int32_t> alts;
    if (dfa.Accepting(s)) alts.push_back(b->Empty());
    for (const auto& [t, syms] : by_target) alts.push_back(b->Seq({b->Class(SymbolRanges(syms)), b->Ref(rule[t])}));
    int32_t rest = b->Choice(alts);
    b->SetBody(rule[c], self.empty() ? rest : b->Seq({b->Star(b->Class(SymbolRanges(self))), rest}));
  }
  return b->Ref(rule[0]);
}

uint64_t Gcd(uint64_t a, uint64_t b) { return b == 0 ? a : Gcd(b, a % b); }

// multipleOf as M * 10^-d with M an integer (M <= kMaxModulus).
Options ParseMultipleOf(const std::string& text, bool integer) {
  Options opt;
  opt.fraction = !integer;
  if (text.empty()) return opt;
  Decimal m = ParseDecimal(text, "multipleOf");
  if (m.neg || m.digits.empty()) throw SchemaError("multipleOf " + Quote(text) + " must be greater than 0", "");
  auto too_large = [&]() {
    return SchemaError("multipleOf " + Quote(text) + " is too large to express (its digits, without the decimal point, "
                       "must form an integer of at most " + std::to_string(kMaxModulus) + ")", "");
  };
  // Integer digits times 10^max(scale, 0).
  int64_t zeros = std::max<int64_t>(m.scale, 0);
  if (static_cast<int64_t>(m.digits.size()) + zeros > 6) throw too_large();
  uint64_t modulus = std::stoull(m.digits);
  for (int64_t i = 0; i < zeros; ++i) modulus *= 10;
  if (modulus > kMaxModulus) throw too_large();
  int32_t scale = static_cast<int32_t>(std::max<int64_t>(-m.scale, 0));
  if (integer) {
    // n * 10^d divisible by M <=> n divisible by M / gcd(M, 10^d); M < 10^17 has at most
    // 16 factors of 2 or 5, so 10^min(d, 17) gives the same gcd.
    uint64_t p = 1;
    for (int32_t i = 0; i < std::min(scale, 17); ++i) p *= 10;
    opt.modulus = modulus / Gcd(modulus, p);
  } else {
    opt.modulus = modulus, opt.scale = scale, opt.limit_fraction = true;
  }
  return opt;
}

std::optional<Bound> ParseBound(const std::string& text, bool exclusive, const std::string& inclusive_name,
                                const std::string& exclusive_name) {
  if (text.empty()) return std::nullopt;
  return Bound{ParseDecimal(text, exclusive ? exclusive_name : inclusive_name), exclusive};
}

// A number in JSON's syntax (RFC 8259) or, for `integer`, one without fraction or
// exponent, with no bound: one rule of the fixed expression. Every schema with an
// unconstrained number has it (any value has one), and the digit automaton built for
// ranges would cost ~250k instructions to say the same.
int32_t PlainNumber(IrBuilder* b, bool integer) {
  auto digit = [&] { return b->Class({{'0', '9'}}); };
  int32_t body = b->Seq({b->Optional(b->Bytes("-")),
                         b->Choice({b->Bytes("0"), b->Seq({b->Class({{'1', '9'}}), b->Star(digit())})})});
  if (!integer) {
    int32_t fraction = b->Optional(b->Seq({b->Bytes("."), b->Plus(digit())}));
    int32_t exponent =
        b->Optional(b->Seq({b->Class({{'E', 'E'}, {'e', 'e'}}), b->Optional(b->Class({{'+', '+'}, {'-', '-'}})),
                            b->Plus(digit())}));
    body = b->Seq({body, fraction, exponent});
  }
  return b->RuleRef(integer ? "integer" : "number", body);
}

int32_t AppendRange(IrBuilder* b, const NumericConstraints& c, bool integer) {
  if (c.non_integral && integer) return -1;
  if (c.minimum.empty() && c.maximum.empty() && c.multiple_of.empty() && !c.non_integral) {
    return PlainNumber(b, integer);
  }
  std::optional<Bound> lo = ParseBound(c.minimum, c.exclusive_minimum, "minimum", "exclusiveMinimum");
  std::optional<Bound> hi = ParseBound(c.maximum, c.exclusive_maximum, "maximum", "exclusiveMaximum");
  Options opt = ParseMultipleOf(c.multiple_of, integer);
  bool sign_only = (!lo || lo->value.mag.IsZero()) && (!hi || hi->value.mag.IsZero());
  opt.exponent = !integer && c.multiple_of.empty() && sign_only && !c.non_integral;
  opt.non_integral = c.non_integral;
  Side pos, neg;
  SplitBySign(lo, hi, &pos, &neg);
  NumberDfa dfa(pos, neg, opt);
  std::string what = c.multiple_of.empty() ? std::string("this numeric range")
                                            : "multipleOf " + c.multiple_of + " with these bounds";
  dfa.Build(what);
  std::vector<uint8_t> live = LiveStates(dfa);
  if (!live[0]) return -1;
  try {
    return EmitRules(b, dfa, EquivalenceClasses(dfa, live));
  } catch (const SchemaError& e) {
    throw SchemaError(what + " " + e.what() + ": cannot be expressed", "");
  }
}

}  // namespace

int32_t AppendIntegerRange(IrBuilder* b, const NumericConstraints& c) { return AppendRange(b, c, true); }

int32_t AppendNumberRange(IrBuilder* b, const NumericConstraints& c) { return AppendRange(b, c, false); }

}  // namespace xgr2
