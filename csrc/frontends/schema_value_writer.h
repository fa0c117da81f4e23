// What the recursive argument styles of structural tags (minimax_m3_xml, gemma) share:
// reading a JSON Schema value by value (local $refs as rules, so recursive definitions
// stay recursive; const / enum; anyOf, one-schema allOf, oneOf of distinct types; type
// lists), each style writing objects, arrays, strings, literals and free values its way.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "grammar/ir_builder.h"
#include "support/json.h"

namespace xgr2 {

// `path` + "/" + `key` as a JSON pointer token.
std::string PointerAt(const std::string& path, const std::string& key);
// A JSON string / an empty JSON object.
JsonValue JsonStringValue(const std::string& text);
JsonValue JsonEmptyObject();
// `schema` read as its declared draft (keywords beside a Draft 4-7 $ref do not count); a
// StructuralTagError at `path` where it cannot be.
JsonValue SchemaAsDeclared(const JsonValue& schema, const std::string& path);
// Whether `key` only annotates (title, description, $defs, ...).
bool IsAnnotationKeyword(const std::string& key);
// Whether `keyword` (or nothing, when null) is the schema's only keyword besides annotations.
bool IsBareKeyword(const JsonValue& schema, const char* keyword);

class SchemaValueWriter {
 public:
  // `scalar(schema, path)`: the JSON text grammar of a number, integer, boolean or null
  // schema (no whitespace around).
  using ScalarGrammar = std::function<int32_t(const JsonValue&, const std::string&)>;
  SchemaValueWriter(IrBuilder* b, const JsonValue& root, std::string style, const ScalarGrammar& scalar)
      : b_(b), root_(root), style_(std::move(style)), scalar_(scalar) {}
  virtual ~SchemaValueWriter() = default;
  SchemaValueWriter(const SchemaValueWriter&) = delete;
  SchemaValueWriter& operator=(const SchemaValueWriter&) = delete;

 protected:
  // A value of `schema`, in the style (through the hooks below).
  int32_t Value(const JsonValue& schema, const std::string& path);

  virtual int32_t Object(const JsonValue& schema, const std::string& path) = 0;
  virtual int32_t Array(const JsonValue& schema, const std::string& path) = 0;
  virtual int32_t String(const JsonValue& schema, const std::string& path) = 0;
  virtual int32_t Literal(const JsonValue& value, const std::string& path) = 0;  // a const / enum value
  virtual int32_t AnyValue() = 0;  // a value of the schema {} (or true)

  // A StructuralTagError naming the style.
  [[noreturn]] void Fail(const std::string& msg, const std::string& path) const;
  // The target of a local $ref ("#", "#/$defs/NAME", "#/definitions/NAME").
  const JsonValue& Target(const JsonValue& ref, const std::string& path) const;
  // A count keyword's value (minItems, maxProperties, ...); -1 when absent.
  int64_t Count(const JsonValue& schema, const char* key, const std::string& path) const;
  // Fails on a keyword of `schema` (a `what`: "object", "array") neither in `known` nor
  // an annotation.
  void CheckKnownKeywords(const JsonValue& schema, const std::set<std::string>& known, const char* what,
                          const std::string& path) const;
  // Fails on a string's pattern, known format or length, which the style's raw text
  // cannot check (`why` says why).
  void CheckUncheckedStringKeywords(const JsonValue& schema, const std::string& path, const std::string& why) const;

  IrBuilder* b_;
  const JsonValue& root_;

 private:
  // oneOf's branches as alternatives: only where no value could meet two of them (one
  // type each, no two alike, not integer beside number).
  void CheckDisjoint(const JsonValue& branches, const std::string& path) const;

  static constexpr int kMaxDepth = 1000;
  const std::string style_;
  const ScalarGrammar& scalar_;
  int depth_ = 0;                        // Value calls open now
  std::map<std::string, int32_t> refs_;  // $ref -> its rule (recursive definitions)
};

}  // namespace xgr2
