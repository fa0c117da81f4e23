// A grammar ready to compile from each kind of source: its IR plus its automata, built
// (and so validated) when the grammar is made rather than at its first compile.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontends/json_schema.h"
#include "frontends/number_range.h"
#include "grammar/fsm.h"
#include "xgr2/grammar.h"
#include "xgr2/tokenizer.h"

namespace xgr2 {

// Builds (and so validates) the automata of a grammar; throws GrammarError.
std::shared_ptr<const GrammarFsm> BuildFsm(const GrammarIR& grammar);

struct ParsedGrammar {
  GrammarPtr ir;
  std::shared_ptr<const GrammarFsm> fsm;
};

ParsedGrammar GrammarFromEbnf(const std::string& text, const std::string& root);
// The whole input matches `pattern` (or, with `search`, some part of it).
ParsedGrammar GrammarFromRegex(const std::string& pattern, bool search);
// The number front end alone (tests); nullopt when no number satisfies `c`.
std::optional<ParsedGrammar> GrammarFromNumericRange(bool integer, const NumericConstraints& c);
// Tests only: the regular-language operations of frontends/regex_dfa.h alone, on the
// search languages A and B of two patterns: `op` is "a", "not_a", "a_and_b" or
// "a_minus_b", intersected with lengths min_len..max_len (max_len < 0: unbounded).
// Membership of each text (UTF-8), and the same language emitted as a grammar.
std::vector<bool> RegexSetAccepts(const std::string& a, const std::string& b, const std::string& op, int64_t min_len,
                                  int64_t max_len, const std::vector<std::string>& texts);
ParsedGrammar GrammarFromRegexSet(const std::string& a, const std::string& b, const std::string& op, int64_t min_len,
                                  int64_t max_len);
// The grammar and the warnings of the unsupported keywords it ignored. A schema that
// no value satisfies is a SchemaError.
std::pair<ParsedGrammar, std::vector<std::string>> GrammarFromJsonSchema(const std::string& schema,
                                                                         const JsonSchemaOptions& options);
// A structural tag (XGrammar's JSON format); one that no output satisfies is a
// StructuralTagError. `tokenizer` (may be null) resolves tokens given by their text.
ParsedGrammar GrammarFromStructuralTag(const std::string& spec, const TokenizerInfo* tokenizer = nullptr);

}  // namespace xgr2
