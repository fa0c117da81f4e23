// A small JSON reader (RFC 8259) for front ends that take JSON documents (JSON Schema,
// structural tags). Numbers keep their text, so bounds of any magnitude stay exact.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xgr2 {

struct JsonValue {
  enum class Kind : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;  // kString: the decoded UTF-8 value; kNumber: the number as written
  std::vector<JsonValue> items;                             // kArray
  std::vector<std::pair<std::string, JsonValue>> members;  // kObject, in document order

  JsonValue() = default;
  // Copies are deep: each copied value counts in CopiedOnThisThread (a front end bounds
  // its work by it, as merged copies of a recursive schema can multiply).
  JsonValue(const JsonValue& other)
      : kind(other.kind), boolean(other.boolean), text(other.text), items(other.items), members(other.members) {
    ++copied_on_thread_;
  }
  JsonValue(JsonValue&&) noexcept = default;
  JsonValue& operator=(const JsonValue& other) {
    if (this != &other) *this = JsonValue(other);
    return *this;
  }
  JsonValue& operator=(JsonValue&&) noexcept = default;
  ~JsonValue() = default;

  // Values copied on this thread so far (see the copy constructor).
  static int64_t CopiedOnThisThread() { return copied_on_thread_; }

  bool IsObject() const { return kind == Kind::kObject; }
  bool IsArray() const { return kind == Kind::kArray; }
  bool IsString() const { return kind == Kind::kString; }
  bool IsNumber() const { return kind == Kind::kNumber; }
  bool IsBool() const { return kind == Kind::kBool; }
  // The member `key` of an object (the last one if repeated), or nullptr.
  const JsonValue* Find(const std::string& key) const;

 private:
  static thread_local int64_t copied_on_thread_;
};

// Throws std::invalid_argument with "line L, column C: what" for malformed text, and
// for nesting deeper than kMaxJsonDepth.
JsonValue ParseJson(const std::string& text);
constexpr int kMaxJsonDepth = 512;

// `key` as one token of a JSON pointer (RFC 6901): `~` as `~0`, `/` as `~1`.
std::string JsonPointerToken(const std::string& key);

// Compact JSON text of a value (the form json.dumps(..., separators=(",", ":"),
// ensure_ascii=False) writes; numbers as written).
std::string DumpJson(const JsonValue& v);

// Whether two values are equal as JSON Schema compares them (numbers by value: 1 == 1.0).
bool JsonEqual(const JsonValue& a, const JsonValue& b);

// Whether two values are the same document: DumpJson(a) == DumpJson(b) (numbers as
// written, members in order), without writing either.
bool JsonIdentical(const JsonValue& a, const JsonValue& b);
// A hash of the document, equal for JsonIdentical values.
uint64_t JsonHash(const JsonValue& v);

// A number's exact value as sign, digits without leading zeros and a decimal exponent:
// value = (negative ? -1 : 1) * digits * 10^exponent; digits "" for zero.
struct DecimalNumber {
  bool negative = false;
  std::string digits;
  int64_t exponent = 0;
};
DecimalNumber ParseDecimal(const std::string& json_number);
// Negative, zero or positive as a < b, a == b, a > b.
int CompareDecimal(const DecimalNumber& a, const DecimalNumber& b);

}  // namespace xgr2
