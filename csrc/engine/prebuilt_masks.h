// Node classifications made with the vocabulary, like its slices (looping_slice.h):
// JSON string content is in nearly every grammar (the builtin JSON grammar, every
// JSON Schema string, tool-call arguments), and classifying it is the costliest first
// mask a JSON grammar meets (the rest of Llama-3's vocabulary after the slice, about
// 600k instructions, 0.3 ms in a fresh process), so it is paid at tokenizer load
// rather than in the middle of the first generation.
#pragma once
#include <memory>

#include "engine/node_mask_pool.h"
#include "xgr2/tokenizer.h"

namespace xgr2 {

// Classifies the string content of the builtin JSON grammar and of the JSON Schema
// front end into `pool`, as prebuilt entries (NodeMaskPool::KeepPrebuilt): a grammar
// with the same structure there finds them by its reach key like any shared entry.
void PrebuildJsonStringMasks(const TokenizerInfo& tok, NodeMaskPool& pool);

// Classifies every node of the builtin JSON grammar (JSON mode: after the string
// content, its value starts are the costliest first masks, 0.1-0.2 ms each in a fresh
// process), and fills the states along three small documents with every kind of value
// (their contexts and uncertain-token walks), likewise as prebuilt entries.
void PrebuildBuiltinJsonMasks(const TokenizerInfo& tok, const std::shared_ptr<NodeMaskPool>& pool);

}  // namespace xgr2
