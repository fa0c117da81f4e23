// Prints the IR as normalized EBNF. Parsing the output yields the same IR shape,
// so printing it again gives the same text.
#include <cstdio>

#include "support/utf8.h"
#include "xgr2/grammar.h"

namespace xgr2 {
namespace {

void AppendEscaped(uint32_t cp, bool in_class, std::string* out) {
  switch (cp) {
    case '\n': *out += "\\n"; return;
    case '\t': *out += "\\t"; return;
    case '\r': *out += "\\r"; return;
    case '\\': *out += "\\\\"; return;
    case '"': *out += in_class ? "\"" : "\\\""; return;
    default: break;
  }
  if (in_class && (cp == ']' || cp == '-' || cp == '^' || cp == '[')) {
    out->push_back('\\');
    out->push_back(static_cast<char>(cp));
    return;
  }
  char buf[16];
  // \uXXXX, not \xHH: `\x` reads every hex digit that follows (XGrammar's dialect).
  if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0) || cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF) {
    std::snprintf(buf, sizeof buf, "\\u%04X", cp);  // invisible: keep them readable
    *out += buf;
  } else {
    AppendUtf8(cp, out);
  }
}

// A repetition's bounds as EBNF writes them: `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}`.
void AppendBounds(int32_t min, int32_t max, std::string* out) {
  if (min == 0 && max == -1) {
    out->push_back('*');
  } else if (min == 1 && max == -1) {
    out->push_back('+');
  } else if (min == 0 && max == 1) {
    out->push_back('?');
  } else if (min == max) {
    *out += "{" + std::to_string(min) + "}";
  } else if (max == -1) {
    *out += "{" + std::to_string(min) + ",}";
  } else {
    *out += "{" + std::to_string(min) + "," + std::to_string(max) + "}";
  }
}

class Printer {
 public:
  explicit Printer(const GrammarIR& g) : g_(g) {}

  // `tight`: the caller binds tighter than a sequence (postfix operand).
  void Print(int32_t id, int parent_prec, std::string* out) const {
    const Expr& e = g_.exprs[id];
    int prec = Precedence(e);
    bool paren = prec < parent_prec;
    if (paren) out->push_back('(');
    switch (e.kind) {
      case ExprKind::kEmpty:
        *out += "\"\"";
        break;
      case ExprKind::kBytes: {
        out->push_back('"');
        size_t p = 0;
        while (p < e.bytes.size()) {
          int32_t cp = DecodeUtf8(e.bytes, &p);
          if (cp < 0) {  // not produced by the parser; print raw bytes as code points
            cp = static_cast<uint8_t>(e.bytes[p++]);
          }
          AppendEscaped(static_cast<uint32_t>(cp), false, out);
        }
        out->push_back('"');
        break;
      }
      case ExprKind::kCharClass: {
        // Classes may span surrogates (no UTF-8 text has them); printing them would write
        // invalid UTF-8.
        std::vector<CodepointRange> ranges = WithoutSurrogates(e.ranges);
        if ((!e.negated && ranges.empty()) ||
            (e.negated && e.ranges.size() == 1 && e.ranges[0].lo == 0 && e.ranges[0].hi >= kMaxCodepoint)) {  // matches nothing (front ends emit it); `[]` would not parse
          *out += "[^\\u0000-\\U0010FFFF]";
          break;
        }
        out->push_back('[');
        if (e.negated) out->push_back('^');
        for (auto r : ranges) {
          AppendEscaped(r.lo, true, out);
          if (r.hi != r.lo) {
            if (r.hi != r.lo + 1) out->push_back('-');
            AppendEscaped(r.hi, true, out);
          }
        }
        out->push_back(']');
        break;
      }
      case ExprKind::kRuleRef:
        *out += g_.rules[e.rule].name;
        break;
      case ExprKind::kSequence:
        for (size_t i = 0; i < e.children.size(); ++i) {
          if (i) out->push_back(' ');
          Print(e.children[i], 2, out);
        }
        break;
      case ExprKind::kChoice:
        for (size_t i = 0; i < e.children.size(); ++i) {
          if (i) *out += " | ";
          Print(e.children[i], 1, out);
        }
        break;
      case ExprKind::kRepeat:
        Print(e.children[0], 4, out);
        AppendBounds(e.min, e.max, out);
        break;
      case ExprKind::kTagDispatch:
        PrintDispatch(e, out);
        break;
      case ExprKind::kToken:
        *out += e.negated ? "<[^" : "<[";
        for (size_t i = 0; i < e.ranges.size(); ++i) {
          if (i) *out += ", ";
          *out += std::to_string(e.ranges[i].lo);
          if (e.ranges[i].hi != e.ranges[i].lo) *out += "-" + std::to_string(e.ranges[i].hi);
        }
        *out += "]>";
        break;
    }
    if (paren) out->push_back(')');
  }

 private:
  static void PrintString(const std::string& bytes, std::string* out) {
    out->push_back('"');
    size_t p = 0;
    while (p < bytes.size()) {
      int32_t cp = DecodeUtf8(bytes, &p);
      if (cp < 0) cp = static_cast<uint8_t>(bytes[p++]);
      AppendEscaped(static_cast<uint32_t>(cp), false, out);
    }
    out->push_back('"');
  }

  static void PrintStrings(const char* key, const std::vector<std::string>& list, std::string* out) {
    *out += std::string(", ") + key + "=(";
    for (size_t i = 0; i < list.size(); ++i) {
      if (i) *out += ", ";
      PrintString(list[i], out);
    }
    *out += list.size() == 1 ? ",)" : ")";
  }

  // XGrammar's spelling; every option is written out, so the text reads the same in
  // either engine whatever its defaults.
  void PrintDispatch(const Expr& e, std::string* out) const {
    const TagDispatchSpec& d = *e.dispatch;
    *out += "TagDispatch(";
    for (size_t i = 0; i < d.tags.size(); ++i) {
      if (i) *out += ", ";
      out->push_back('(');
      PrintString(d.tags[i], out);
      *out += ", ";
      Print(e.children[i], 0, out);
      out->push_back(')');
    }
    if (!d.tags.empty()) *out += ", ";
    *out += std::string("stop_eos=") + (d.stop_eos ? "true" : "false");
    PrintStrings("stop_str", d.stop_strs, out);
    *out += std::string(", loop_after_dispatch=") + (d.loop_after_dispatch ? "true" : "false");
    if (!d.excludes.empty()) PrintStrings("excludes", d.excludes, out);
    if (d.at_least_one) *out += ", at_least_one=true";
    out->push_back(')');
  }

  // 1: choice, 2: sequence, 3: repeat, 4: atom.
  static int Precedence(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kChoice: return 1;
      case ExprKind::kSequence: return 2;
      case ExprKind::kRepeat: return 3;
      default: return 4;
    }
  }
  const GrammarIR& g_;
};

}  // namespace

std::string PrintExpr(const GrammarIR& g, int32_t expr) {
  std::string out;
  Printer(g).Print(expr, 0, &out);
  return out;
}

std::string PrintGrammar(const GrammarIR& g) {
  std::string out;
  Printer p(g);
  for (const Rule& r : g.rules) {
    out += r.name + " ::= ";
    if (r.counted()) {  // its body repeated: reads back as the same counted rule
      p.Print(r.body, 4, &out);
      AppendBounds(r.count_min, r.count_max, &out);
    } else {
      p.Print(r.body, 0, &out);
    }
    if (r.lookahead >= 0) {
      out += " (= ";
      p.Print(r.lookahead, 0, &out);
      out += ")";
    }
    out += "\n";
  }
  return out;
}

}  // namespace xgr2
