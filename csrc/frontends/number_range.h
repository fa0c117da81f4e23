// JSON numbers and integers restricted by JSON Schema's numeric keywords
// (minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf), as digit-level
// automata in grammar IR: exact for bounds of any magnitude.
#pragma once
#include <string>

#include "grammar/ir_builder.h"

namespace xgr2 {

// Bounds are JSON number texts as written in the schema ("10", "-2.5", "1e3"); an empty
// string means no bound. multiple_of likewise ("" = none).
struct NumericConstraints {
  std::string minimum, maximum, multiple_of;
  bool exclusive_minimum = false, exclusive_maximum = false;
  // Only numbers with a fractional part (a nonzero digit after the point), written in
  // plain notation: what `not: {type: integer}` leaves (with an exponent, whether a
  // number is integral compares two unbounded counts, which no automaton does).
  bool non_integral = false;
};

// Appends the JSON text of the integers (RFC 8259 syntax, no fraction or exponent)
// that satisfy `c`. Returns the expression id, or -1 when no integer does.
// Throws SchemaError (pointer "") when a constraint cannot be expressed exactly.
int32_t AppendIntegerRange(IrBuilder* b, const NumericConstraints& c);

// The same for JSON numbers (integers and decimals).
int32_t AppendNumberRange(IrBuilder* b, const NumericConstraints& c);

}  // namespace xgr2
