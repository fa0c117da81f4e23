// Recursive-descent parser for the XGrammar/GBNF EBNF dialect:
//   rule     ::= NAME "::=" choice ("(=" choice ")")?
//   choice   ::= sequence ("|" sequence)*
//   sequence ::= postfix+
//   postfix  ::= primary ("*" | "+" | "?" | "{" m ("," n?)? "}")*
//   primary  ::= STRING | CHARCLASS | NAME | "(" choice ")" | MACRO "(" args ")"
// Comments run from '#' to the end of the line.
#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <unordered_set>

#include "grammar/ir_builder.h"
#include "frontends/regex.h"
#include "grammar/repetition.h"
#include "grammar/tag_dispatch.h"
#include "support/stack.h"
#include "support/utf8.h"
#include "xgr2/errors.h"
#include "xgr2/grammar.h"

namespace xgr2 {
namespace {

class EbnfParser {
 public:
  explicit EbnfParser(const std::string& text) : text_(text) {}

  GrammarPtr Parse(const std::string& root_name) {
    auto g = std::make_shared<GrammarIR>();
    g_ = g.get();
    SkipSpace();
    if (AtEnd()) Fail("the grammar is empty: expected a rule like `root ::= \"a\"`", pos_);
    while (!AtEnd()) {
      ParseRule();
      SkipSpace();
    }
    for (const auto& ref : pending_refs_) {
      auto it = rule_ids_.find(ref.name);
      if (it == rule_ids_.end() || g_->rules[it->second].body < 0 || macro_rules_.count(it->second)) {
        Fail("undefined rule `" + ref.name + "`", ref.pos);
      }
      g_->exprs[ref.expr].rule = it->second;
    }
    // Number rules in definition order (ids were handed out at first mention).
    std::vector<int32_t> new_id(g_->rules.size());
    std::vector<Rule> ordered;
    for (int32_t old : definition_order_) {
      new_id[old] = static_cast<int32_t>(ordered.size());
      ordered.push_back(g_->rules[old]);
    }
    g_->rules = std::move(ordered);
    for (Expr& e : g_->exprs) {
      if (e.kind == ExprKind::kRuleRef) e.rule = new_id[e.rule];
    }
    int32_t root = g_->FindRule(root_name);
    if (root < 0) {
      throw GrammarError("the root rule `" + root_name + "` is not defined");
    }
    g_->root = root;
    CheckDepth();
    CompressRepetitions(g_);
    return g;
  }

 private:
  struct PendingRef {
    int32_t expr;
    std::string name;
    size_t pos;
  };

  [[noreturn]] void Fail(const std::string& msg, size_t at) const {
    int line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') ++line, line_start = i + 1;
    }
    int column = 1;
    for (size_t i = line_start; i < at && i < text_.size(); ++i) {
      if ((static_cast<uint8_t>(text_[i]) & 0xC0) != 0x80) ++column;
    }
    size_t line_end = text_.find('\n', line_start);
    if (line_end == std::string::npos) line_end = text_.size();
    // Excerpt: at most kWindow bytes either side of the error, cut at character starts.
    constexpr size_t kWindow = 60;
    size_t from = at > line_start + kWindow ? at - kWindow : line_start;
    size_t to = std::min(line_end, std::max(at, line_start) + kWindow);
    auto is_cont = [&](size_t i) { return i < text_.size() && (static_cast<uint8_t>(text_[i]) & 0xC0) == 0x80; };
    while (from > line_start && is_cont(from)) --from;
    while (to < line_end && is_cont(to)) ++to;
    std::string excerpt = (from > line_start ? "..." : "") + text_.substr(from, to - from) + (to < line_end ? "..." : "");
    for (char& c : excerpt) {
      if (static_cast<uint8_t>(c) < 0x20 && c != '\t') c = ' ';  // keep the message printable
    }
    int caret = (from > line_start ? 3 : 0);
    for (size_t i = from; i < at && i < text_.size(); ++i) {
      if (!is_cont(i)) ++caret;
    }
    std::string full = msg + " at line " + std::to_string(line) + ", column " + std::to_string(column) +
                       ":\n  " + excerpt + "\n  " + std::string(caret, ' ') + "^";
    throw GrammarError(full, line, column);
  }

  // Children are created before their parents, so one pass computes tree depths.
  void CheckDepth() const {
    std::vector<int32_t> depth(g_->exprs.size(), 1);
    for (size_t i = 0; i < g_->exprs.size(); ++i) {
      for (int32_t c : g_->exprs[i].children) depth[i] = std::max(depth[i], depth[c] + 1);
      if (depth[i] > 2 * GrammarLimits::kMaxNesting) {
        throw GrammarError("expressions are nested too deeply (limit " +
                           std::to_string(2 * GrammarLimits::kMaxNesting) + " levels)");
      }
    }
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek(size_t k = 0) const { return pos_ + k < text_.size() ? text_[pos_ + k] : '\0'; }

  void SkipSpace() {
    while (!AtEnd()) {
      char c = Peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (!AtEnd() && Peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  static bool IsNameStart(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  static bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }

  std::string ParseName() {
    size_t start = pos_;
    while (!AtEnd() && IsNameChar(Peek())) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  // True when the text at the cursor is `NAME ::=` (the start of the next rule).
  bool AtRuleStart() const {
    size_t p = pos_;
    if (p >= text_.size() || !IsNameStart(text_[p])) return false;
    while (p < text_.size() && IsNameChar(text_[p])) ++p;
    auto skip_space = [&] {
      while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t' || text_[p] == '\r' || text_[p] == '\n')) ++p;
    };
    skip_space();
    if (p < text_.size() && text_[p] == '[') {  // rule options: `name[...] ::=` (rejected in ParseRule)
      size_t close = text_.find(']', p);
      if (close == std::string::npos) return false;
      p = close + 1;
      skip_space();
    }
    return text_.compare(p, 3, "::=") == 0;
  }

  int32_t RuleId(const std::string& name) {
    auto it = rule_ids_.find(name);
    if (it != rule_ids_.end()) return it->second;
    int32_t id = static_cast<int32_t>(g_->rules.size());
    g_->rules.push_back(Rule{name, -1, -1});
    rule_ids_[name] = id;
    return id;
  }

  void ParseRule() {
    size_t start = pos_;
    if (!IsNameStart(Peek())) Fail("expected a rule name", pos_);
    std::string name = ParseName();
    SkipSpace();
    if (Peek() == '[') {
      Fail("rule options (`" + name + "[...] ::=`: max_tokens, max_chars, capture, lazy, temperature) are not "
           "supported; define the rule without them", pos_);
    }
    if (text_.compare(pos_, 3, "::=") != 0) Fail("expected `::=` after rule name `" + name + "`", pos_);
    pos_ += 3;
    int32_t id = RuleId(name);
    if (macro_rules_.count(id)) {  // a macro's rule had this name: it takes another
      std::string other = UnusedRuleName(name);
      g_->rules[id].name = other;
      rule_ids_[other] = id;
      rule_ids_.erase(name);
      id = RuleId(name);
    }
    if (g_->rules[id].body >= 0) Fail("rule `" + name + "` is defined twice", start);
    depth_ = 0;
    int32_t body = ParseChoice();
    int32_t lookahead = -1;
    SkipSpace();
    if (Peek() == '(' && Peek(1) == '=') {
      size_t la_pos = pos_;
      pos_ += 2;
      lookahead = ParseChoice();
      SkipSpace();
      if (Peek() != ')') Fail("expected `)` to close the lookahead assertion", pos_);
      ++pos_;
      SkipSpace();
      if (!AtEnd() && !AtRuleStart()) Fail("a lookahead assertion must end its rule", la_pos);
    }
    g_->rules[id].body = body;
    g_->rules[id].lookahead = lookahead;
    definition_order_.push_back(id);
  }

  // Alternatives; one of several may be empty (`ws ::= | " "`, as GBNF allows), a lone
  // one may not.
  int32_t ParseChoice() {
    if (++depth_ > GrammarLimits::kMaxNesting) Fail("expressions are nested too deeply", pos_);
    if (StackNearlyFull()) Fail(StackMessage("expressions", depth_), pos_);
    std::vector<int32_t> alts;
    alts.push_back(ParseSequence());
    SkipSpace();
    while (Peek() == '|') {
      ++pos_;
      alts.push_back(ParseSequence());
      SkipSpace();
    }
    --depth_;
    if (alts.size() == 1 && alts[0] < 0) Fail("expected an expression", pos_);
    for (int32_t& a : alts) {
      if (a < 0) a = g_->AddExpr(Expr{});  // the empty string
    }
    if (alts.size() == 1) return alts[0];
    Expr e;
    e.kind = ExprKind::kChoice;
    for (int32_t a : alts) {  // flatten nested choices
      if (g_->exprs[a].kind == ExprKind::kChoice) {
        auto& ch = g_->exprs[a].children;
        e.children.insert(e.children.end(), ch.begin(), ch.end());
      } else {
        e.children.push_back(a);
      }
    }
    return g_->AddExpr(std::move(e));
  }

  bool AtSequenceEnd() {
    SkipSpace();
    if (AtEnd()) return true;
    char c = Peek();
    if (c == '|' || c == ')') return true;
    if (c == '(' && Peek(1) == '=') return true;
    return AtRuleStart();
  }

  // -1 for an empty sequence.
  int32_t ParseSequence() {
    std::vector<int32_t> items;
    while (!AtSequenceEnd()) items.push_back(ParsePostfix());
    if (items.empty()) return -1;
    if (items.size() == 1) return items[0];
    Expr e;
    e.kind = ExprKind::kSequence;
    for (int32_t it : items) {  // flatten nested sequences
      if (g_->exprs[it].kind == ExprKind::kSequence) {
        auto& ch = g_->exprs[it].children;
        e.children.insert(e.children.end(), ch.begin(), ch.end());
      } else {
        e.children.push_back(it);
      }
    }
    return g_->AddExpr(std::move(e));
  }

  int32_t ParseInt() {
    size_t start = pos_;
    int64_t v = 0;
    while (Peek() >= '0' && Peek() <= '9') {
      v = v * 10 + (Peek() - '0');
      if (v > GrammarLimits::kMaxRepeat) {
        Fail("repetition bound exceeds the limit of " + std::to_string(GrammarLimits::kMaxRepeat), start);
      }
      ++pos_;
    }
    if (pos_ == start) Fail("expected a number", pos_);
    return static_cast<int32_t>(v);
  }

  int32_t MakeRepeat(int32_t child, int32_t min, int32_t max) {
    Expr e;
    e.kind = ExprKind::kRepeat;
    e.children = {child};
    e.min = min;
    e.max = max;
    return g_->AddExpr(std::move(e));
  }

  int32_t ParsePostfix() {
    int32_t e = ParsePrimary();
    for (int ops = 0;; ++ops) {
      // Each operator nests the expression once more; bound it like parentheses.
      if (ops > GrammarLimits::kMaxNesting) Fail("too many postfix operators in a row", pos_);
      size_t before_space = pos_;
      SkipSpace();  // XGrammar and GBNF allow whitespace before an operator: `x {2, 3}`
      char c = Peek();
      if (c == '*') {
        ++pos_, e = MakeRepeat(e, 0, -1);
      } else if (c == '+') {
        ++pos_, e = MakeRepeat(e, 1, -1);
      } else if (c == '?') {
        ++pos_, e = MakeRepeat(e, 0, 1);
      } else if (c == '{') {
        size_t start = pos_++;
        SkipSpace();
        int32_t min = 0, max;
        if (Peek() != ',') min = ParseInt();
        SkipSpace();
        if (Peek() == ',') {
          ++pos_;
          SkipSpace();
          if (Peek() == '}') {
            max = -1;
          } else if (Peek() == '-') {  // XGrammar prints `x{n,}` as `x{n, -1}`
            if (Peek(1) != '1' || (Peek(2) >= '0' && Peek(2) <= '9')) {
              Fail("expected a number, or -1 for no upper bound", pos_);
            }
            pos_ += 2;
            max = -1;
          } else {
            max = ParseInt();
          }
          SkipSpace();
        } else {
          max = min;
        }
        if (Peek() != '}') Fail("expected `}` to close the repetition", pos_);
        ++pos_;
        if (max >= 0 && min > max) {
          Fail("repetition {" + std::to_string(min) + "," + std::to_string(max) + "} has min > max", start);
        }
        e = MakeRepeat(e, min, max);
      } else {
        pos_ = before_space;
        return e;
      }
    }
  }

  int32_t ParsePrimary() {
    char c = Peek();
    if (c == '"' || c == '\'') return ParseString();
    if (c == '[') return ParseCharClass();
    if (c == '<' && Peek(1) == '[') return ParseTokenSet();
    if (c == '!' && Peek(1) == '<' && Peek(2) == '[') {  // GBNF's `!<[ids]>`: any token but these
      size_t start = pos_++;
      int32_t e = ParseTokenSet();
      g_->exprs[e].negated = !g_->exprs[e].negated;
      if (!g_->exprs[e].negated && g_->exprs[e].ranges.empty()) Fail("empty token set (`!<[^]>` allows no token)", start);
      return e;
    }
    if (c == '.') {  // GBNF's any character: `[^]`
      ++pos_;
      Expr e;
      e.kind = ExprKind::kCharClass;
      e.negated = true;
      return g_->AddExpr(std::move(e));
    }
    if (c == '(') {
      size_t open = pos_++;
      SkipSpace();
      if (Peek() == ')') {  // `( )` matches the empty string
        ++pos_;
        return g_->AddExpr(Expr{});
      }
      int32_t e = ParseChoice();
      SkipSpace();
      if (Peek() != ')') Fail(AtEnd() ? "unclosed `(`" : "expected `)`", AtEnd() ? open : pos_);
      ++pos_;
      return e;
    }
    if (IsNameStart(c)) {
      size_t start = pos_;
      std::string name = ParseName();
      if (Peek() == '(' && IsMacro(name)) return ParseMacro(name, start);
      Expr e;
      e.kind = ExprKind::kRuleRef;
      int32_t id = g_->AddExpr(std::move(e));
      RuleId(name);
      pending_refs_.push_back({id, name, start});
      return id;
    }
    if (AtEnd()) Fail("unexpected end of grammar: expected an expression", pos_);
    Fail(std::string("unexpected character `") + CurrentChar() + "`", pos_);
  }

  // ---- Macros: `Name(arg, ..., key=value)`, XGrammar's function-call syntax ----
  struct MacroArg {
    enum Kind { kString, kInt, kBool, kName, kTuple } kind = kString;
    std::string text;  // kString (decoded UTF-8), kName
    int64_t number = 0;
    bool flag = false;
    std::vector<MacroArg> items;  // kTuple
    std::string key;              // named argument
    size_t pos = 0;
  };

  static bool IsMacro(const std::string& name) {
    return name == "Regex" || name == "Substring" || name == "TagDispatch" || name == "Token" ||
           name == "ExcludeToken" || name == "TokenTagDispatch";
  }

  MacroArg ParseMacroValue() {
    SkipSpace();
    MacroArg a;
    a.pos = pos_;
    char c = Peek();
    if (c == '"') {
      int32_t lit = ParseString();
      a.text = g_->exprs[lit].bytes;
      g_->exprs.pop_back();  // the literal was only a vehicle for the text
    } else if (c >= '0' && c <= '9') {
      a.kind = MacroArg::kInt;
      for (; Peek() >= '0' && Peek() <= '9'; ++pos_) {
        a.number = a.number * 10 + (Peek() - '0');
        if (a.number > INT32_MAX) Fail("integer argument is too large", a.pos);
      }
    } else if (c == '(') {
      a.kind = MacroArg::kTuple;
      if (++depth_ > GrammarLimits::kMaxNesting) Fail("macro arguments are nested too deeply", pos_);
      if (StackNearlyFull()) Fail(StackMessage("macro arguments", depth_), pos_);
      ++pos_;
      for (SkipSpace(); Peek() != ')';) {
        a.items.push_back(ParseMacroValue());
        SkipSpace();
        if (Peek() == ',') ++pos_, SkipSpace();
        else if (Peek() != ')') Fail("expected `,` or `)` in a tuple", pos_);
      }
      ++pos_;
      --depth_;
    } else if (IsNameStart(c)) {
      a.text = ParseName();
      a.kind = a.text == "true" || a.text == "false" ? MacroArg::kBool : MacroArg::kName;
      a.flag = a.text == "true";
    } else {
      Fail("expected a macro argument (a string, an integer, true/false, a rule name or a tuple)", pos_);
    }
    return a;
  }

  std::vector<MacroArg> ParseMacroArgs() {
    std::vector<MacroArg> args;
    ++pos_;  // (
    for (SkipSpace(); Peek() != ')';) {
      size_t at = pos_;
      std::string key;
      if (IsNameStart(Peek())) {  // `key=value`?
        size_t p = pos_;
        std::string name = ParseName();
        SkipSpace();
        if (Peek() == '=') {
          ++pos_, key = name;
        } else {
          pos_ = p;
        }
      }
      MacroArg a = ParseMacroValue();
      a.key = key;
      a.pos = at;
      args.push_back(std::move(a));
      SkipSpace();
      if (Peek() == ',') ++pos_, SkipSpace();
      else if (Peek() != ')') Fail(AtEnd() ? "unclosed macro call" : "expected `,` or `)` in a macro call", pos_);
    }
    ++pos_;
    return args;
  }

  int32_t ParseMacro(const std::string& name, size_t start) {
    std::vector<MacroArg> args = ParseMacroArgs();
    if (name == "Regex") return RegexMacro(args, start);
    if (name == "Substring") return SubstringMacro(args, start);
    if (name == "TagDispatch") return TagDispatchMacro(args, start);
    if (name == "Token" || name == "ExcludeToken") return TokenMacro(args, name == "ExcludeToken");
    if (name == "TokenTagDispatch") return TokenTagDispatchMacro(args);
    Fail("the `" + name + "` macro is not supported yet", start);
  }

  // XGrammar's TokenTagDispatch((id, rule), ..., loop_after_dispatch=true, excludes=(id, ...)):
  // TagDispatch over whole tokens. Free tokens are any but the triggers and the excluded
  // ones; a trigger token goes on with its rule; then free tokens again (looping), or the
  // end. The IR of the structural tags' `token_dispatch`: `(<[^t, x]> | <[t]> rule)*`,
  // without looping `<[^t, x]>* (<[t]> rule)?`.
  int32_t TokenTagDispatchMacro(const std::vector<MacroArg>& args) {
    IrBuilder b(g_);
    auto token_id = [&](const MacroArg& a) { return TokenIdArg(a, "TokenTagDispatch"); };
    std::vector<CodepointRange> not_free;
    std::vector<int32_t> parts;
    bool loop = true;
    for (const MacroArg& a : args) {
      if (a.key.empty()) {
        if (a.kind != MacroArg::kTuple || a.items.size() != 2 || a.items[1].kind != MacroArg::kName) {
          Fail("TokenTagDispatch takes (token_id, rule_name) pairs, then named options", a.pos);
        }
        CodepointRange trigger = token_id(a.items[0]);
        not_free.push_back(trigger);
        parts.push_back(b.Seq({b.Token({trigger}), RuleRefArg(a.items[1])}));
      } else if (a.key == "loop_after_dispatch") {
        if (a.kind != MacroArg::kBool) Fail("`loop_after_dispatch` takes true or false", a.pos);
        loop = a.flag;
      } else if (a.key == "excludes") {
        if (a.kind == MacroArg::kInt) {
          not_free.push_back(token_id(a));
        } else if (a.kind == MacroArg::kTuple) {
          for (const MacroArg& item : a.items) not_free.push_back(token_id(item));
        } else {
          Fail("`excludes` takes a token id or a tuple of token ids", a.pos);
        }
      } else {
        Fail("unknown TokenTagDispatch option `" + a.key + "` (expected loop_after_dispatch or excludes)", a.pos);
      }
    }
    int32_t free_token = b.Token(NormalizeRanges(std::move(not_free)), true);
    if (parts.empty()) return b.Star(free_token);
    int32_t part = parts.size() == 1 ? parts[0] : b.Choice(parts);
    if (loop) return b.Star(b.Choice({free_token, part}));
    return b.Seq({b.Star(free_token), b.Optional(part)});
  }

  // XGrammar's Token(id, ...) (one token with one of these ids) and ExcludeToken(id, ...)
  // (one token with none of them): `<[ids]>` and `<[^ids]>`.
  int32_t TokenMacro(const std::vector<MacroArg>& args, bool exclude) {
    const char* name = exclude ? "ExcludeToken" : "Token";
    if (args.empty()) Fail(std::string(name) + " needs at least one token id", pos_);
    Expr e;
    e.kind = ExprKind::kToken;
    e.negated = exclude;
    for (const MacroArg& a : args) {
      if (!a.key.empty()) Fail(std::string(name) + " takes token ids (integers) only", a.pos);
      e.ranges.push_back(TokenIdArg(a, name));
    }
    e.ranges = NormalizeRanges(std::move(e.ranges));
    return g_->AddExpr(std::move(e));
  }

  // A macro argument that is a token id, as a one-id range.
  CodepointRange TokenIdArg(const MacroArg& a, const char* macro) {
    if (a.kind != MacroArg::kInt) Fail(std::string(macro) + " takes token ids (integers) only", a.pos);
    if (a.number > GrammarLimits::kMaxTokenId) {
      Fail("token id too large (at most " + std::to_string(GrammarLimits::kMaxTokenId) + ")", a.pos);
    }
    uint32_t id = static_cast<uint32_t>(a.number);
    return {id, id};
  }

  // A reference to the rule a macro argument names, resolved once the grammar is read.
  int32_t RuleRefArg(const MacroArg& name) {
    Expr ref;
    ref.kind = ExprKind::kRuleRef;
    int32_t id = g_->AddExpr(std::move(ref));
    RuleId(name.text);
    pending_refs_.push_back({id, name.text, name.pos});
    return id;
  }

  // Regex("pattern", json_string=false, flags="")
  int32_t RegexMacro(const std::vector<MacroArg>& args, size_t start) {
    const MacroArg* pattern = nullptr;
    bool json_string = false;
    std::string flags;
    for (const MacroArg& a : args) {
      if (a.key.empty() && !pattern && a.kind == MacroArg::kString) {
        pattern = &a;
      } else if (a.key == "json_string" && a.kind == MacroArg::kBool) {
        json_string = a.flag;
      } else if (a.key == "flags" && a.kind == MacroArg::kString) {
        flags = a.text;
      } else {
        Fail("Regex takes a pattern string, json_string=true|false and flags=\"...\"", a.pos);
      }
    }
    if (!pattern) Fail("Regex needs a pattern string", start);
    RegexFlags rf;
    for (char f : flags) {
      if (f == 'i') rf.ignore_case = true;
      else if (f == 's') rf.dot_all = true;
      else if (f != 'u') Fail(std::string("unknown Regex flag `") + f + "` (expected i, s or u)", pattern->pos);
    }
    int32_t e;
    try {
      IrBuilder b(g_);
      e = AppendRegex(&b, pattern->text, false, rf);
      if (json_string) e = RestrictChars(&b, e, {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, kMaxCodepoint}});
    } catch (const RegexError& err) {
      Fail(std::string("invalid Regex pattern (at offset ") + std::to_string(err.position) + "): " + err.what(),
           pattern->pos);
    }
    return e;
  }

  // TagDispatch(("tag", rule), ..., stop_eos=true, stop_str=("s", ...), loop_after_dispatch=true,
  //             excludes=("x", ...), at_least_one=false); at_least_one is xgr2's own.
  int32_t TagDispatchMacro(const std::vector<MacroArg>& args, size_t start) {
    TagDispatchSpec spec;
    std::vector<int32_t> targets;
    auto strings = [&](const MacroArg& a) {
      std::vector<std::string> out;
      if (a.kind == MacroArg::kString) return std::vector<std::string>{a.text};
      if (a.kind != MacroArg::kTuple) Fail("`" + a.key + "` takes a string or a tuple of strings", a.pos);
      for (const MacroArg& item : a.items) {
        if (item.kind != MacroArg::kString) Fail("`" + a.key + "` takes strings only", item.pos);
        out.push_back(item.text);
      }
      return out;
    };
    auto flag = [&](const MacroArg& a) {
      if (a.kind != MacroArg::kBool) Fail("`" + a.key + "` takes true or false", a.pos);
      return a.flag;
    };
    for (const MacroArg& a : args) {
      if (a.key.empty()) {
        if (a.kind != MacroArg::kTuple || a.items.size() != 2 || a.items[0].kind != MacroArg::kString ||
            a.items[1].kind != MacroArg::kName) {
          Fail("TagDispatch takes (\"tag\", rule_name) pairs, then named options", a.pos);
        }
        spec.tags.push_back(a.items[0].text);
        targets.push_back(RuleRefArg(a.items[1]));
      } else if (a.key == "stop_eos") {
        spec.stop_eos = flag(a);
      } else if (a.key == "stop_str" || a.key == "stops") {  // `stops`: newer XGrammar's printed name
        spec.stop_strs = strings(a);
      } else if (a.key == "loop_after_dispatch") {
        spec.loop_after_dispatch = flag(a);
      } else if (a.key == "excludes") {
        spec.excludes = strings(a);
      } else if (a.key == "at_least_one") {
        spec.at_least_one = flag(a);
      } else {
        Fail("unknown TagDispatch option `" + a.key +
                 "` (expected stop_eos, stop_str (or stops), loop_after_dispatch, excludes or at_least_one)",
             a.pos);
      }
    }
    try {
      return AddTagDispatch(g_, std::move(spec), std::move(targets));  // bad tags reported here, with a position
    } catch (const GrammarError& err) {
      Fail(err.what(), start);
    }
  }

  // A rule a macro makes, called (never inlined): named `base_N`, a name no rule has yet.
  // A rule the grammar defines later under that name takes it (ParseRule renames this
  // one); a reference to it that the grammar never defines stays undefined.
  int32_t MacroRule(const std::string& base, int32_t body) {
    int32_t id = RuleId(UnusedRuleName(base));
    g_->rules[id].body = body;
    g_->rules[id].shared = true;
    definition_order_.push_back(id);
    macro_rules_.insert(id);
    Expr ref;
    ref.kind = ExprKind::kRuleRef;
    ref.rule = id;
    return g_->AddExpr(std::move(ref));
  }

  std::string UnusedRuleName(const std::string& base) {
    std::string name;
    do {
      name = base + "_" + std::to_string(++macro_rule_suffix_);
    } while (rule_ids_.count(name));
    return name;
  }

  // Every contiguous run of the chunks (chunks are atomic), the empty run included.
  int32_t SubstringMacro(const std::vector<MacroArg>& args, size_t start) {
    IrBuilder b(g_);
    for (const MacroArg& a : args) {
      if (!a.key.empty() || a.kind != MacroArg::kString) Fail("Substring takes strings only", a.pos);
    }
    // run[i]: chunk i, then optionally the run from i + 1 (shared by every start <= i).
    // Inlined, every start copies the runs after it: quadratic automata (past ~300 chunks,
    // the state limit) nested one level per chunk. Longer lists make each run a rule of
    // its own, called (never inlined): linear in the chunks.
    constexpr size_t kInlineChunks = 32;
    const bool as_rules = args.size() > kInlineChunks;
    std::vector<int32_t> run(args.size());
    for (size_t i = args.size(); i-- > 0;) {
      int32_t chunk = b.Bytes(args[i].text);
      int32_t body = i + 1 < args.size() ? b.Seq({chunk, b.Optional(run[i + 1])}) : chunk;
      run[i] = as_rules ? MacroRule("substring_run", body) : body;
    }
    std::vector<int32_t> alts = {b.Empty()};
    alts.insert(alts.end(), run.begin(), run.end());
    return b.Choice(alts);
  }

  // The character at the cursor, printable (control characters as \xHH).
  std::string CurrentChar() const {
    size_t p = pos_;
    int32_t cp = DecodeUtf8(text_, &p);
    if (cp < 0) return "?";
    if (cp < 0x20 || cp == 0x7F) {
      static const char kHex[] = "0123456789ABCDEF";
      return std::string("\\x") + kHex[cp >> 4] + kHex[cp & 15];
    }
    return text_.substr(pos_, p - pos_);
  }

  uint32_t ParseHex(int digits, size_t esc_pos) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      int d = HexDigit(Peek());
      if (d < 0) Fail("invalid escape: expected " + std::to_string(digits) + " hex digits", esc_pos);
      v = v * 16 + d;
      ++pos_;
    }
    if (v > kMaxCodepoint || (v >= 0xD800 && v <= 0xDFFF)) Fail("escape is not a valid Unicode code point", esc_pos);
    return v;
  }

  static int HexDigit(char h) {
    return (h >= '0' && h <= '9') ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
  }

  // `\x` followed by one or more hex digits, all of them read.
  uint32_t ParseHexRun(size_t esc_pos) {
    uint64_t v = 0;
    size_t digits = 0;
    for (int d; (d = HexDigit(Peek())) >= 0; ++pos_, ++digits) {
      v = v * 16 + d;
      if (v > kMaxCodepoint) Fail("escape is not a valid Unicode code point", esc_pos);
    }
    if (digits == 0) Fail("invalid escape: expected hex digits after `\\x`", esc_pos);
    if (v >= 0xD800 && v <= 0xDFFF) Fail("escape is not a valid Unicode code point", esc_pos);
    return static_cast<uint32_t>(v);
  }

  // Reads one (possibly escaped) character of a string or class; returns its code point.
  uint32_t ParseChar(bool in_class) {
    size_t start = pos_;
    if (Peek() == '\\') {
      ++pos_;
      if (AtEnd()) Fail("unterminated escape", start);
      char c = text_[pos_++];
      switch (c) {
        case 'n': return '\n';
        case 't': return '\t';
        case 'r': return '\r';
        case 'f': return '\f';
        case 'v': return '\v';
        case 'b': return '\b';
        case '0': return 0;
        case 'a': return 0x07;
        case 'e': return 0x1B;
        case 'x': return ParseHexRun(start);  // XGrammar: any number of hex digits
        case 'u': return ParseHex(4, start);
        case 'U': return ParseHex(8, start);
        default:
          if (c > ' ' && c < 0x7F && !std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
            return static_cast<uint8_t>(c);  // escaped punctuation stands for itself
          }
          Fail(std::string("invalid escape `\\") + c + "`", start);
      }
    }
    size_t p = pos_;
    int32_t cp = DecodeUtf8(text_, &p);
    if (cp < 0) Fail("invalid UTF-8 in grammar text", pos_);
    if (!in_class && (cp == '\n')) Fail("unterminated string literal", start);
    pos_ = p;
    return static_cast<uint32_t>(cp);
  }

  int32_t ParseString() {
    size_t start = pos_;
    char quote = text_[pos_++];
    Expr e;
    e.kind = ExprKind::kBytes;
    while (true) {
      if (AtEnd() || Peek() == '\n') Fail("unterminated string literal", start);
      if (Peek() == quote) break;
      AppendUtf8(ParseChar(false), &e.bytes);
    }
    ++pos_;
    if (e.bytes.empty()) e.kind = ExprKind::kEmpty;
    return g_->AddExpr(std::move(e));
  }

  int32_t ParseCharClass() {
    size_t start = pos_++;
    Expr e;
    e.kind = ExprKind::kCharClass;
    if (Peek() == '^') ++pos_, e.negated = true;
    std::vector<CodepointRange> ranges;
    while (true) {
      if (AtEnd()) Fail("unterminated character class", start);
      if (Peek() == ']') break;
      size_t item = pos_;
      uint32_t lo = ParseChar(true);
      uint32_t hi = lo;
      if (Peek() == '-' && Peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        hi = ParseChar(true);
        if (hi < lo) Fail("bad character range: the start is after the end", item);
      }
      ranges.push_back({lo, hi});
    }
    ++pos_;
    if (ranges.empty() && !e.negated) Fail("empty character class", start);
    e.ranges = NormalizeRanges(std::move(ranges));
    return g_->AddExpr(std::move(e));
  }

  // `<[1, 5-9]>`: one token with one of these ids; `<[^1, 5-9]>`: any token but these
  // (`<[^]>`: any token). Tokens are matched by id, never by their text.
  int32_t ParseTokenSet() {
    size_t start = pos_;
    pos_ += 2;
    Expr e;
    e.kind = ExprKind::kToken;
    if (Peek() == '^') ++pos_, e.negated = true;
    std::vector<CodepointRange> ids;
    auto id = [&]() -> uint32_t {
      size_t at = pos_;
      uint64_t v = 0;
      if (!std::isdigit(static_cast<unsigned char>(Peek()))) Fail("expected a token id", at);
      while (std::isdigit(static_cast<unsigned char>(Peek()))) {
        v = v * 10 + static_cast<uint64_t>(text_[pos_++] - '0');
        if (v > static_cast<uint64_t>(GrammarLimits::kMaxTokenId)) {
          Fail("token id too large (at most " + std::to_string(GrammarLimits::kMaxTokenId) + ")", at);
        }
      }
      return static_cast<uint32_t>(v);
    };
    SkipSpace();
    while (Peek() != ']') {
      if (AtEnd()) Fail("unterminated token set `<[`", start);
      if (!ids.empty()) {
        if (Peek() != ',') Fail("expected `,` or `]>` in the token set", pos_);
        ++pos_;
        SkipSpace();
      }
      size_t item = pos_;
      uint32_t lo = id(), hi = lo;
      SkipSpace();
      if (Peek() == '-') {
        ++pos_;
        SkipSpace();
        hi = id();
        if (hi < lo) Fail("bad token id range: the start is after the end", item);
        SkipSpace();
      }
      ids.push_back({lo, hi});
    }
    if (Peek(1) != '>') Fail("expected `]>` to close the token set", pos_);
    pos_ += 2;
    if (ids.empty() && !e.negated) Fail("empty token set", start);
    e.ranges = NormalizeRanges(std::move(ids));
    return g_->AddExpr(std::move(e));
  }

  const std::string& text_;
  size_t pos_ = 0;
  int depth_ = 0;
  GrammarIR* g_ = nullptr;
  std::unordered_map<std::string, int32_t> rule_ids_;
  std::vector<PendingRef> pending_refs_;
  std::vector<int32_t> definition_order_;
  std::unordered_set<int32_t> macro_rules_;  // ids of the rules macros made (MacroRule)
  int macro_rule_suffix_ = 0;
};

}  // namespace

GrammarPtr ParseEbnf(const std::string& text, const std::string& root_rule) {
  return EbnfParser(text).Parse(root_rule);
}

}  // namespace xgr2
