// JSON Schema (Draft 2020-12, with the Draft-07 spellings) compiled to grammar IR.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "xgr2/grammar.h"

namespace xgr2 {

enum class UnsupportedPolicy { kError, kWarn, kIgnore };

struct JsonSchemaOptions {
  // Whitespace between tokens, each run at most kMaxWhitespace characters.
  bool any_whitespace = true;
  // indent >= 0: exactly the layout of json.dumps(..., indent=indent). -1: none.
  int indent = -1;
  // As json.dumps's separators; empty: the default for the layout.
  std::string item_separator, key_separator;
  bool has_separators = false;
  // Undeclared properties only where the schema allows them explicitly.
  bool strict = true;
  UnsupportedPolicy unsupported = UnsupportedPolicy::kError;
  // XGrammar's relaxed objects (its `any_order`): every object's entries in any order,
  // each a permitted key with a value its schema allows, duplicates allowed and which
  // keys appear not tracked; only the number of entries is bounded, to
  // [max(minProperties, number of required names), maxProperties]. Wider than the
  // schema on purpose (docs/json_schema.md).
  bool any_order = false;

  // Other documents that `$ref`s may name: (URI, JSON text). A relative URI is taken
  // relative to the schema's own base (its `$id`, else an unnamed document's).
  std::vector<std::pair<std::string, std::string>> resources;

  // Structural tags' `excludes`: non-empty strings that no string without `pattern` or
  // a known `format`, and no property name, may hold as written (escapes not decoded).
  std::vector<std::string> excludes;

  static constexpr int kMaxWhitespace = 20;
  int max_whitespace = kMaxWhitespace;  // the bound on each run of any_whitespace
  // Whitespace before and after the whole document (any_whitespace). Off where the
  // document is a value inside other text that bounds its own whitespace around it
  // (structural tags' cohere_xml values): two bounded runs in a row would allow twice
  // the bound.
  bool document_space = true;
};

struct JsonSchemaGrammar {
  GrammarPtr grammar;
  std::vector<std::string> warnings;  // keywords widened or ignored (unsupported != kError)
};

// Throws SchemaError (with a JSON pointer) for malformed or unsupported schemas.
JsonSchemaGrammar JsonSchemaToGrammar(const std::string& schema_json, const JsonSchemaOptions& options);

}  // namespace xgr2
