#include "engine/prebuilt_masks.h"

#include <exception>
#include <memory>
#include <vector>

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
    TokenMaskCache(fsm, tok, pool, /*direct_cold_walks=*/false).PrecomputeAll(1);
  }
  // The grammar's own entries (its id, its node masks by grammar and by rule structure)
  // go: a grammar compiled later finds the structural ones, which stay.
  pool->Clear();
}

}  // namespace xgr2
