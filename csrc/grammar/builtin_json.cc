#include "xgr2/grammar.h"

namespace xgr2 {

// Any JSON value (RFC 8259), whitespace allowed between tokens but not around the
// root value, so generation ends right after the value closes.
const std::string& BuiltinJsonEbnf() {
  static const std::string kJson = R"(root ::= value
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws (member (ws "," ws member)* ws)? "}"
member ::= string ws ":" ws value
array ::= "[" ws (value (ws "," ws value)* ws)? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1F] | "\\" escape
escape ::= ["\\/bfnrt] | "u" [0-9a-fA-F]{4}
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+\-]? [0-9]+)?
ws ::= [ \t\n\r]*
)";
  return kJson;
}

}  // namespace xgr2
