// The MiniMax-M3 style of structural tags' `json_schema` format ("minimax_m3_xml"): the
// arguments as recursive XML, every value an element
//   ]<]minimax[>[<NAME>VALUE]<]minimax[>[</NAME>
// where an object's VALUE is its properties' elements, an array's its items' elements
// (each named `item`), a string its raw text (without the namespace marker), and a
// number, boolean or null its JSON text. See docs/structural_tags.md.
#pragma once
#include <functional>
#include <string>

#include "grammar/ir_builder.h"
#include "support/json.h"

namespace xgr2 {

// The arguments of the object schema `schema` in the minimax_m3_xml style, whitespace
// runs at most `max_whitespace` long between elements. `scalar(schema, path)` gives the
// JSON text grammar of a number, integer, boolean or null schema (no whitespace around).
// `any_order`: every object's elements in any order (as JsonSchemaOptions::any_order).
// Throws StructuralTagError at the pointer of what the style cannot write exactly.
int32_t MinimaxM3Parameters(IrBuilder* b, const JsonValue& schema, int max_whitespace, bool any_order,
                            const std::string& path,
                            const std::function<int32_t(const JsonValue&, const std::string&)>& scalar);

}  // namespace xgr2
