#include "frontends/number_range.h"

#include "xgr2/errors.h"

namespace xgr2 {

int32_t AppendIntegerRange(IrBuilder* b, const NumericConstraints& c) {
  throw SchemaError("numeric ranges are not implemented yet", "");
}

int32_t AppendNumberRange(IrBuilder* b, const NumericConstraints& c) {
  throw SchemaError("numeric ranges are not implemented yet", "");
}

}  // namespace xgr2
