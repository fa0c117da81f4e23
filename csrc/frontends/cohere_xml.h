// The Cohere style of structural tags' `json_schema` format ("cohere_xml"): the arguments
// as recursive XML elements (Command A's tool-call parameters),
//   <cofl:value name="NAME" type="TYPE">VALUE</cofl:value>
// TYPE "raw" for a string (VALUE its raw text), "json" for a number, boolean or null
// (VALUE its JSON text, whitespace around), "dict" for an object (VALUE its properties'
// elements), "list" for an array (VALUE its items' elements, which carry no name). Names
// escape & < > " as XML entities. A const / enum object or array is written as JSON text
// with TYPE "json". See docs/structural_tags.md.
#pragma once
#include <functional>
#include <string>

#include "grammar/ir_builder.h"
#include "support/json.h"

namespace xgr2 {

// The arguments of the object schema `schema` in the cohere_xml style, whitespace runs
// at most `max_whitespace` long between elements and around JSON text. `scalar(schema,
// path)` gives the JSON text grammar of a number, integer, boolean or null schema (no
// whitespace around). `any_order`: every object's elements in any order. Throws
// StructuralTagError at the pointer of what the style cannot write exactly.
int32_t CohereParameters(IrBuilder* b, const JsonValue& schema, int max_whitespace, bool any_order,
                         const std::string& path,
                         const std::function<int32_t(const JsonValue&, const std::string&)>& scalar);

}  // namespace xgr2
