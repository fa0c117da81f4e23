// $id scopes of a JSON Schema document (Draft 2020-12 §8.2): every `$ref` is resolved
// against the base URI of the resource it stands in, so `#/$defs/x` inside a subschema
// with its own `$id` names that resource's `$defs`, not the root document's.
#pragma once
#include <string>

#include "support/json.h"

namespace xgr2 {

// The base URI of a document without a root `$id` (RFC 3986 needs an absolute base).
inline constexpr const char* kUnnamedDocument = "https://xgr2.invalid/schema.json";

// RFC 3986 §5.2: `ref` resolved against the absolute URI `base` (dot segments removed).
std::string ResolveUri(const std::string& base, const std::string& ref);

// If the document has an `$id` that names a resource (not a `#name` anchor), or with
// `always`, rewrites each `$id` to its absolute URI and each `$ref` to an absolute URI
// reference, both resolved against the enclosing resource's base (the document's own is
// `base`; $id before $ref, as in Draft 2020-12); enum, const, default and examples are
// data and stay as written. Returns whether it did.
bool MakeRefsAbsolute(JsonValue* root, bool always = false, const std::string& base = kUnnamedDocument);

// Whether `uri` has a scheme (RFC 3986 §4.3), so no base changes what it names.
bool IsAbsoluteUri(const std::string& uri);

// The draft a document's `$schema` names (3, 4, 6, 7, 2019, 2020; no or an unknown
// `$schema`: 2020), for telling documents of different drafts apart.
int DeclaredDraft(const JsonValue& root);

// Reads the document as the draft its `$schema` names (the meta-schema URI of Draft 4, 6,
// 7, 2019-09 or 2020-12, normalised as jsonschema normalises it; any other, or none,
// reads as 2020-12 that also knows Draft 7's `dependencies`): in Drafts 4-7 the keywords
// beside a `$ref` are ignored and removed, `$id` included (keeping `definitions` /
// `$defs`, which refs may still name, and annotations); the keywords the draft does not
// know are removed (const, contains, propertyNames and `$id` before Draft 6, `id` from
// Draft 6 on, if / then / else before Draft 7, the 2019-09 and 2020-12 keywords such as
// dependentRequired, `$anchor` and prefixItems); Draft 4's `id` becomes `$id`. Throws
// SchemaError for Draft 3 and for a subschema whose `$schema` names another draft than
// the document. Returns whether the document is Draft 4.
bool ReadAsDeclaredDraft(JsonValue* root);

// Keywords of a schema object whose values are data, not schemas (never walked for
// $id / $ref), and those whose values map names to schemas (`properties`, `$defs`, ...:
// a member there named `default` or `$id` is a schema or a property, not a keyword).
bool IsSchemaData(const std::string& key);
// Keywords whose values are subschemas (or maps or arrays of them): where an `$id` names
// a resource (one inside an unknown keyword does not).
bool IsSubschemaKeyword(const std::string& key);
bool IsSchemaMap(const std::string& key);

// A reference as a message should show it: relative again when it lies in the unnamed
// document's directory.
std::string RefForMessage(const std::string& ref);

}  // namespace xgr2
