#include "engine/grammar_sources.h"

#include <mutex>

#include "grammar/determinize.h"
#include "grammar/ir_builder.h"
#include "frontends/regex.h"
#include "frontends/regex_dfa.h"
#include "frontends/structural_tag.h"
#include "xgr2/errors.h"

namespace xgr2 {

std::shared_ptr<const GrammarFsm> BuildFsm(const GrammarIR& grammar) {
  return std::make_shared<const GrammarFsm>(BuildGrammarFsm(grammar));
}

ParsedGrammar GrammarFromEbnf(const std::string& text, const std::string& root) {
  GrammarPtr ir = ParseEbnf(text, root);
  auto fsm = BuildFsm(*ir);
  return ParsedGrammar{std::move(ir), std::move(fsm)};
}

ParsedGrammar GrammarFromRegex(const std::string& pattern, bool search) {
  GrammarPtr g = ParseRegex(pattern, search);
  auto fsm = BuildFsm(*g);
  return ParsedGrammar{std::move(g), std::move(fsm)};
}

std::optional<ParsedGrammar> GrammarFromNumericRange(bool integer, const NumericConstraints& c) {
  auto g = std::make_shared<GrammarIR>();
  IrBuilder b(g.get());
  g->root = b.NewRule("root");
  int32_t body = integer ? AppendIntegerRange(&b, c) : AppendNumberRange(&b, c);
  if (body < 0) return std::nullopt;
  b.SetBody(g->root, body);
  auto fsm = BuildFsm(*g);
  return ParsedGrammar{std::move(g), std::move(fsm)};
}

namespace {

// Builds, once per process, the automata of JSON text's fixed building blocks in the
// default layout (whitespace, separators, string content and escapes, non-ASCII
// characters, numbers, any value) and pins them: every schema grammar has them, and a
// cold compile of a schema should pay only for what is its own. About 0.3 ms, on the
// first schema or structural tag of the process.
void SeedJsonAutomata() {
  static std::once_flag once;
  std::call_once(once, [] {
    PinnedDfaScope pin;
    const std::string seed = R"({"type": "object", "properties": {"s": {"type": "string"}, "n": {"type": "number"},
        "i": {"type": "integer"}, "b": {"type": "boolean"}, "a": {"type": "array"}, "v": {}},
        "additionalProperties": {"type": "null"}})";
    try {
      BuildFsm(*JsonSchemaToGrammar(seed, JsonSchemaOptions{}).grammar);
    } catch (const std::exception&) {
      // Only a speed-up: without it every grammar builds these automata itself.
    }
  });
}

CharDfa RegexSetDfa(const std::string& a, const std::string& b, const std::string& op, int64_t min_len,
                    int64_t max_len) {
  try {
    CharDfa lengths = CharDfa::LengthBetween(min_len, max_len);
    CharDfa x = CharDfa::FromPattern(a, /*search=*/true);
    if (op == "a") return x.Intersect(lengths);
    if (op == "not_a") return x.Complement().Intersect(lengths);
    CharDfa y = CharDfa::FromPattern(b, /*search=*/true);
    if (op == "a_and_b") return x.Intersect(y).Intersect(lengths);
    if (op == "a_minus_b") return x.Minus(y).Intersect(lengths);
  } catch (const DfaLimitError& e) {
    throw GrammarError(e.what());
  }
  throw GrammarError("unknown operation " + op);
}

}  // namespace

std::vector<bool> RegexSetAccepts(const std::string& a, const std::string& b, const std::string& op, int64_t min_len,
                                  int64_t max_len, const std::vector<std::string>& texts) {
  CharDfa dfa = RegexSetDfa(a, b, op, min_len, max_len);
  std::vector<bool> out;
  for (const std::string& t : texts) out.push_back(dfa.Accepts(t));
  return out;
}

ParsedGrammar GrammarFromRegexSet(const std::string& a, const std::string& b, const std::string& op, int64_t min_len,
                                  int64_t max_len) {
  CharDfa dfa = RegexSetDfa(a, b, op, min_len, max_len);
  auto g = std::make_shared<GrammarIR>();
  IrBuilder builder(g.get());
  g->root = builder.NewRule("root");
  auto raw = [&](const std::vector<CodepointRange>& r) { return builder.Class(r); };
  builder.SetBody(g->root, EmitDfa(&builder, dfa, raw, "set"));
  auto fsm = BuildFsm(*g);
  return ParsedGrammar{std::move(g), std::move(fsm)};
}

std::pair<ParsedGrammar, std::vector<std::string>> GrammarFromJsonSchema(const std::string& schema,
                                                                         const JsonSchemaOptions& options) {
  SeedJsonAutomata();
  JsonSchemaGrammar result = JsonSchemaToGrammar(schema, options);
  std::shared_ptr<const GrammarFsm> fsm;
  try {
    fsm = BuildFsm(*result.grammar);
  } catch (const EmptyLanguageError&) {
    // strict writes only declared properties: say so when it alone left nothing.
    if (options.strict) {
      JsonSchemaOptions lax = options;
      lax.strict = false;
      bool lax_has_values = true;
      try {
        BuildFsm(*JsonSchemaToGrammar(schema, lax).grammar);
      } catch (const EmptyLanguageError&) {
        lax_has_values = false;
      } catch (const SchemaError&) {
        lax_has_values = false;
      }
      if (lax_has_values) {
        throw SchemaError("no JSON value that strict=True writes is valid under this schema (strict writes only "
                          "the properties a schema declares, and here every valid value needs another one); "
                          "it compiles with strict=False", "");
      }
    }
    throw SchemaError("no JSON value is valid under this schema (e.g. a required property that "
                      "nothing satisfies)", "");
  }
  return {ParsedGrammar{result.grammar, std::move(fsm)}, std::move(result.warnings)};
}

ParsedGrammar GrammarFromStructuralTag(const std::string& spec, const TokenizerInfo* tokenizer) {
  SeedJsonAutomata();
  GrammarPtr ir = StructuralTagToGrammar(spec, tokenizer);
  std::shared_ptr<const GrammarFsm> fsm;
  try {
    fsm = BuildFsm(*ir);
  } catch (const EmptyLanguageError&) {
    throw StructuralTagError("no output satisfies this structural tag", "");
  }
  return ParsedGrammar{ir, std::move(fsm)};
}

}  // namespace xgr2
