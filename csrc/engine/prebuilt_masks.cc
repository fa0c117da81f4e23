#include "engine/prebuilt_masks.h"

#include <exception>
#include <memory>
#include <vector>

#include "engine/earley.h"
#include "engine/grammar_sources.h"
#include "engine/node_classify.h"
#include "engine/shared_by_reach.h"
#include "engine/token_mask_cache.h"

namespace xgr2 {
namespace {

// The string content node of each grammar: after the builtin `string` rule's opening
// quote, and the start of the front end's `json_string_content` rule.
struct ContentNode {
  std::shared_ptr<const GrammarFsm> fsm;
  int32_t node;
};

std::vector<ContentNode> JsonStringContentNodes() {
  std::vector<ContentNode> out;
  ParsedGrammar builtin = GrammarFromEbnf(BuiltinJsonEbnf(), "root");
  int32_t string_rule = builtin.ir->FindRule("string");
  if (string_rule >= 0) {
    int32_t after_quote = builtin.fsm->ByteTarget(builtin.fsm->rule_start[string_rule], '"');
    if (after_quote >= 0) out.push_back({builtin.fsm, after_quote});
  }
  ParsedGrammar schema = GrammarFromJsonSchema(R"({"type": "string"})", JsonSchemaOptions{}).first;
  int32_t content_rule = schema.ir->FindRule("json_string_content");
  if (content_rule >= 0) out.push_back({schema.fsm, schema.fsm->rule_start[content_rule]});
  return out;
}

// Crossing subtrees are merged from this many on (builtin JSON's content has 384 of
// Llama-3's; context walks elsewhere merge from kMinGroupedCrossing, as the build must
// pay back within the generation there).
constexpr size_t kMinPrebuiltGrouped = 128;

}  // namespace

void PrebuildJsonStringMasks(const TokenizerInfo& tok, NodeMaskPool& pool) {
  std::vector<ContentNode> nodes;
  try {
    nodes = JsonStringContentNodes();
  } catch (const std::exception&) {
    return;  // only a speed-up: the first grammar classifies them itself
  }
  NodeMaskPool::PrebuiltScope prebuilt(pool);
  for (const ContentNode& c : nodes) {
    auto classify = [&](NodeSet* reached, bool*) { return ClassifyInner(*c.fsm, tok, c.node, &pool, reached); };
    auto inner = SharedByReach<InnerMask>(*c.fsm, {c.node}, nullptr, "", pool, NodeMaskPool::Kind::kInner, classify);
    // The merge of its crossing subtrees (a string's end: 1,400 of Llama-3's trie
    // nodes), else built in the middle of the third string context of the process.
    inner->BuildGroupsNow(*c.fsm, tok, c.node, kMinPrebuiltGrouped);
  }
}

void PrebuildBuiltinJsonMasks(const TokenizerInfo& tok, const std::shared_ptr<NodeMaskPool>& pool) {
  std::shared_ptr<const GrammarFsm> fsm;
  try {
    fsm = GrammarFromEbnf(BuiltinJsonEbnf(), "root").fsm;
  } catch (const std::exception&) {
    return;  // only a speed-up
  }
  {
    NodeMaskPool::PrebuiltScope prebuilt(*pool);
    TokenMaskCache cache(fsm, tok, pool, /*direct_cold_walks=*/false);
    // Each node as a grammar's fill meets it (not PrecomputeAll's any-context form, which
    // a later grammar's per-context lookups would not find).
    for (int32_t node : cache.MissingNodes()) cache.Get(node, false);
    // The masks along documents with every kind of value, in and after each container,
    // nested up to four deep, compact and indented: their context walks (which tokens
    // crossing a node's rule go on after it: a key's or string value's closing quote
    // above all) and uncertain-token walks are what a state still walks on its first
    // visit. Stored under the grammar's id and by structure, like the masks.
    static const char* const kDocuments[] = {
        R"({"a": "b c", "d": [1, -2.5e3, true, false, null, {"e": {}, "f": [], "g": "h"}, [], ["i", 0, {"j": 1}]],)"
        R"( "k": {"l": 1, "m": "n", "o": {"p": [2, 3], "q": {"r": null, "s": "t"}}, "u": [{"v": 1, "w": 2}]},)"
        R"( "x": 0.5, "y": true})",
        R"({"a": {"b": {"c": {"d": "e", "f": 1}, "g": [{"h": {"i": true}}]}}, "j": [[{"k": ["l", {"m": 2}]}]]})",
        "{\n  \"a\": \"b\",\n  \"c\": {\n    \"d\": [\n      1,\n      {\n        \"e\": null\n      }\n    ],\n"
        "    \"f\": \"g\"\n  },\n  \"h\": [\n    \"i\",\n    2\n  ]\n}",
    };
    const size_t num_words = (static_cast<size_t>(tok.vocab_size()) + 31) / 32;
    std::vector<uint32_t> row(num_words);
    EarleyParser parser(*fsm, ThreadScratch());
    for (const char* document : kDocuments) {
      auto state = std::make_shared<EarleySet>();
      parser.Initial(state.get());
      for (const char* c = document;; ++c) {
        cache.FillBitmask(*state, row.data());
        if (!*c) break;
        auto next = std::make_shared<EarleySet>();
        if (!parser.Advance(*state, static_cast<uint8_t>(*c), next.get())) break;  // (never: they are JSON)
        KeepOrigins(next.get());
        state = std::move(next);
      }
    }
  }
}

}  // namespace xgr2
