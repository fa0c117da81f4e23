// The Gemma style of structural tags' `json_schema` format ("gemma"): tool arguments as
// Gemma 4 writes them after `<|tool_call>call:NAME`, a JSON-like object with bare keys in
// case-insensitively sorted order (its chat template sorts them), strings between
// `<|"|>` delimiters and no whitespace:
//   {city:<|"|>Paris<|"|>,days:3,tags:[<|"|>a<|"|>],where:{lat:1.5}}
// See docs/structural_tags.md.
#pragma once
#include <functional>
#include <string>

#include "grammar/ir_builder.h"
#include "support/json.h"

namespace xgr2 {

// The arguments object of `schema` in the gemma style. `scalar(schema, path)` gives the
// JSON text grammar of a number, integer, boolean or null schema (no whitespace around).
// Throws StructuralTagError at the pointer of what the style cannot write exactly.
int32_t GemmaArguments(IrBuilder* b, const JsonValue& schema, const std::string& path,
                       const std::function<int32_t(const JsonValue&, const std::string&)>& scalar);

}  // namespace xgr2
