#include "frontends/json_schema.h"

#include "xgr2/errors.h"

namespace xgr2 {

JsonSchemaGrammar JsonSchemaToGrammar(const std::string& schema_json, const JsonSchemaOptions& options) {
  throw SchemaError("JSON Schema is not implemented yet", "");
}

}  // namespace xgr2
