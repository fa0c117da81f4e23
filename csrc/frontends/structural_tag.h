// Structural tags (XGrammar's JSON format, as vLLM and SGLang users send it) compiled to
// grammar IR: a tree of formats (const_string, json_schema, grammar, regex, any_text,
// sequence, or, optional, plus, star, repeat, tag, triggered_tags, tags_with_separator,
// dispatch, and the token-level token, exclude_token, any_tokens, token_triggered_tags,
// token_dispatch). Free text and triggers become TagDispatch expressions, tokens
// ExprKind::kToken. See docs/structural_tags.md.
#pragma once
#include <string>

#include "xgr2/grammar.h"
#include "xgr2/tokenizer.h"

namespace xgr2 {

// `spec_json` is one of: {"type": "structural_tag", "format": F}, a format object F, or
// the older {"type": "structural_tag", "structures": [...], "triggers": [...]}.
// `tokenizer` (may be null) resolves tokens given by their text. Throws
// StructuralTagError (with the JSON pointer of the bad field) for malformed specs.
GrammarPtr StructuralTagToGrammar(const std::string& spec_json, const TokenizerInfo* tokenizer);

}  // namespace xgr2
