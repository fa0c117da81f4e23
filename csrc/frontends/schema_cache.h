// A process-wide cache of the JSON Schema front end's results, keyed by the schema's
// text and the options: a server sees the same tool schemas in request after request
// (structural tags, tool-calling presets), and the IR is immutable, so one result
// serves them all. Bounded (docs/limits.md); least recently used entries go first.
#pragma once
#include <string>

#include "frontends/json_schema.h"

namespace xgr2 {

// JsonSchemaToGrammar(schema_json, options), from the cache when seen before. Errors
// are not cached (they throw again).
JsonSchemaGrammar CachedJsonSchemaToGrammar(const std::string& schema_json, const JsonSchemaOptions& options);

// The options as a key prefix (every field, length-prefixed where free text).
std::string OptionsKey(const JsonSchemaOptions& options);

// Empties the cache.
void ClearJsonSchemaCache();

}  // namespace xgr2
