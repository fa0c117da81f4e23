"""EBNF grammars shared by the tests, each beside its hand translation to lark syntax.

``EBNF[name]`` is the xgr2 text (root rule ``root``); ``LARK[name]`` is the same language
for ``lark.Lark(..., start="root", parser="earley", lexer="dynamic")``. The lark texts use
only single-character regex terminals and fixed string literals, so the dynamic lexer
never has to choose a match length and lark decides exactly the same language.
"""

import xgr2

# RFC 8259 JSON, exactly the builtin grammar's text (see test_builtin_json_text).
JSON = str(xgr2.Grammar.builtin_json())

JSON_LARK = r"""
root: value
value: object | array | string | number | "true" | "false" | "null"
object: "{" ws (member (ws "," ws member)* ws)? "}"
array: "[" ws (value (ws "," ws value)* ws)? "]"
string: "\"" char* "\""
number: "-"? ("0" | /[1-9]/ /[0-9]/*) ("." /[0-9]/+)? (/[Ee]/ /[+\-]/? /[0-9]/+)?
ws: /[\t\n\r ]/*
member: string ws ":" ws value
char: /[^\x00-\x1F"\\]/ | "\\" escape
escape: /["\/\\bfnrt]/ | "u" /[0-9A-Fa-f]/ ~ 4
"""

# Arithmetic with left-recursive operators, unary minus, decimals and blanks.
ARITH = r"""
root ::= ws expr ws
expr ::= term | expr ws [+\-] ws term
term ::= factor | term ws [*/] ws factor
factor ::= number | "(" ws expr ws ")" | "-" factor
number ::= [0-9]+ ("." [0-9]+)?
ws ::= [ \t]*
"""

ARITH_LARK = r"""
root: ws expr ws
expr: term | expr ws /[+\-]/ ws term
term: factor | term ws /[*\/]/ ws factor
factor: number | "(" ws expr ws ")" | "-" factor
number: /[0-9]/+ ("." /[0-9]/+)?
ws: /[ \t]/*
"""

# Exponentially ambiguous: every split of a^n is a parse.
AMBIG = r"""
root ::= s
s ::= s s | "a"
"""

AMBIG_LARK = r"""
root: s
s: s s | "a"
"""

# Ambiguous with two letters, and with an ambiguous empty string (s s where s is nullable).
AMBIG_B = r"""
root ::= s "b" s | s
s ::= s s | "a" | "b" s "a" | ""
"""

AMBIG_B_LARK = r"""
root: s "b" s | s
s: s s | "a" | "b" s "a" |
"""

# Nullable and left-recursive rules, cycles through nullable rules (root -> root b, b nullable).
NULLABLE = r"""
root ::= a "x" e | root b
a ::= "" | a "y"
b ::= "z"? c
c ::= "" | c "w" | d
d ::= e e
e ::= "" | "q" e
"""

NULLABLE_LARK = r"""
root: a "x" e | root b
a: | a "y"
b: "z"? c
c: | c "w" | d
d: e e
e: | "q" e
"""

# Unicode character classes, a negated class with a repetition range, a multi-byte literal.
UNICODE = r"""
root ::= [α-ωА-я日本]+ ([^a-z\x00-\x1F]{1,3})? "✓"
"""

UNICODE_LARK = r"""
root: /[α-ωА-я日本]/+ (/[^a-z\x00-\x1F]/ ~ 1..3)? "✓"
"""

# Repetition ranges {m} {m,} {m,n} {,n} and negated classes.
REPEAT = r"""
root ::= item{2,4} ("," field){1,} ";"{0,2} tail
item ::= [a-c]{1,2} "."
field ::= [^,;\n.]{,2}
tail ::= ([^a-z,;.]{3} | "!"{2,}) "$"?
"""

REPEAT_LARK = r"""
root: item ~ 2..4 ("," field)+ (";" ~ 0..2) tail
item: /[a-c]/ ~ 1..2 "."
field: (/[^,;\n.]/ ~ 0..2)
tail: (/[^a-z,;.]/ ~ 3 | "!" ~ 2 "!"*) "$"?
"""

# Dense classes that a state loops on (accepted as token slices, see
# csrc/engine/looping_slice.h): free text with an exit, a loop through a rule, a
# JSON-like string, classes whose non-ASCII part does not loop (é, an emoji block
# left out: only their ASCII slice applies), and a bounded run that does not loop.
LOOPS = r"""
root ::= item (";" item)*
item ::= "t:" text | "i:" ident | "q:" quoted | "n:" narrow | "e:" emoji | "b:" bounded
text ::= [^;<]* ("<" [a-z]+ ">" text)?
ident ::= [a-zA-Z_] idc*
idc ::= [a-zA-Z0-9_]
quoted ::= "\"" qchar* "\""
qchar ::= [^"\\\x00-\x1F] | "\\" ["\\n]
narrow ::= [^;\x00-\x1Fé]*
emoji ::= [^;😀-🙏]*
bounded ::= [a-z ]{0,40}
"""

LOOPS_LARK = r"""
root: item (";" item)*
item: "t:" text | "i:" ident | "q:" quoted | "n:" narrow | "e:" emoji | "b:" bounded
text: /[^;<]/* ("<" /[a-z]/+ ">" text)?
ident: /[a-zA-Z_]/ idc*
idc: /[a-zA-Z0-9_]/
quoted: "\"" qchar* "\""
qchar: /[^"\\\x00-\x1F]/ | "\\" /["\\n]/
narrow: /[^;\x00-\x1Fé]/*
emoji: /[^;\U0001F600-\U0001F64F]/*
bounded: /[a-z ]/ ~ 0..40
"""

# A C-like expression chain (a rule per precedence level): after an operand a state
# holds an item for every level, large enough for walks to memoize their states
# (csrc/engine/state_memo.h).
EXPRS = r"""
root ::= stmt+
stmt ::= ws ident ws "=" ws expr ws ";"
expr ::= or_expr
or_expr ::= and_expr (ws "||" ws and_expr)*
and_expr ::= eq_expr (ws "&&" ws eq_expr)*
eq_expr ::= rel_expr (ws ("==" | "!=") ws rel_expr)*
rel_expr ::= add_expr (ws ("<" | ">" | "<=" | ">=") ws add_expr)*
add_expr ::= mul_expr (ws [+\-] ws mul_expr)*
mul_expr ::= unary (ws [*/%] ws unary)*
unary ::= [\-!] ws unary | postfix
postfix ::= primary (ws ("[" ws expr ws "]" | "(" ws args? ws ")" | "." ws ident))*
args ::= expr (ws "," ws expr)*
primary ::= ident | number | "(" ws expr ws ")"
ident ::= [a-zA-Z_] [a-zA-Z0-9_]*
number ::= [0-9]+ ("." [0-9]+)?
ws ::= [ \t\n]*
"""

EXPRS_LARK = r"""
root: stmt+
stmt: ws ident ws "=" ws expr ws ";"
expr: or_expr
or_expr: and_expr (ws "||" ws and_expr)*
and_expr: eq_expr (ws "&&" ws eq_expr)*
eq_expr: rel_expr (ws ("==" | "!=") ws rel_expr)*
rel_expr: add_expr (ws ("<" | ">" | "<=" | ">=") ws add_expr)*
add_expr: mul_expr (ws /[+\-]/ ws mul_expr)*
mul_expr: unary (ws /[*\/%]/ ws unary)*
unary: /[\-!]/ ws unary | postfix
postfix: primary (ws ("[" ws expr ws "]" | "(" ws args? ws ")" | "." ws ident))*
args: expr (ws "," ws expr)*
primary: ident | number | "(" ws expr ws ")"
ident: /[a-zA-Z_]/ /[a-zA-Z0-9_]/*
number: /[0-9]/+ ("." /[0-9]/+)?
ws: /[ \t\n]/*
"""

EBNF = {
    "json": JSON,
    "arith": ARITH,
    "ambig": AMBIG,
    "ambig_b": AMBIG_B,
    "nullable": NULLABLE,
    "unicode": UNICODE,
    "repeat": REPEAT,
    "loops": LOOPS,
    "exprs": EXPRS,
}

LARK = {
    "json": JSON_LARK,
    "arith": ARITH_LARK,
    "ambig": AMBIG_LARK,
    "ambig_b": AMBIG_B_LARK,
    "nullable": NULLABLE_LARK,
    "unicode": UNICODE_LARK,
    "repeat": REPEAT_LARK,
    "loops": LOOPS_LARK,
    "exprs": EXPRS_LARK,
}

# Characters that random strings for each grammar are drawn from: the grammar's own
# characters plus a few it never allows.
ALPHABET = {
    "json": '{}[],:" \n\t0123456789-+.eEtruefalsn\\/bu"AZaé\x01',
    "arith": "0123456789+-*/(). \tx",
    "ambig": "aab",
    "ambig_b": "abbc",
    "nullable": "xyzwqa",
    "unicode": "αβωАяЖ日本語✓a!Z \x05é",
    "repeat": "abcd.,;!$xX é\n",
    "loops": 'tiqnebq:;<>aZ_9 "\\né😀🙂🌍\x01',
    "exprs": "ab_Z09. =;+-*/%<>!&|()[],\t\n#é",
}
