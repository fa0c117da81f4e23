// A small JSON reader (RFC 8259) for front ends that take JSON documents (JSON Schema,
// structural tags). Numbers keep their text, so bounds of any magnitude stay exact.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xgr2 {

// A vector whose copies share their elements until one of them is changed (copy on
// write). Const access never copies; any non-const access (operator[], begin / end,
// push_back, ...) first gives this vector elements of its own when they are shared.
// So a reference obtained through non-const access must not be used after the vector
// was copied. JsonValue holds its children in these: schema merges copy large
// subschemas, and a copy now costs one reference count per level, not the subtree.
template <typename T>
class CowVector {
 public:
  using value_type = T;
  using iterator = typename std::vector<T>::iterator;
  using const_iterator = typename std::vector<T>::const_iterator;

  CowVector() = default;
  explicit CowVector(std::vector<T> v) { *this = std::move(v); }
  CowVector& operator=(std::vector<T> v) {
    p_ = v.empty() ? nullptr : std::make_shared<std::vector<T>>(std::move(v));
    return *this;
  }
  operator const std::vector<T>&() const { return Get(); }  // NOLINT: read as a vector
  const std::vector<T>& Get() const { return p_ ? *p_ : Empty(); }
  // Whether both hold the very same elements (copies not changed since): then equal.
  bool SharesWith(const CowVector& other) const { return p_ && p_ == other.p_; }
  // The elements' address (nullptr when never filled): a key for memos of what was
  // computed from them, confirmed by content on use (a vector changed in place keeps
  // its address). Copies of one value are not shared across threads: use_count() is
  // only a safe test of sole ownership within one thread.
  const void* Identity() const { return p_.get(); }

  size_t size() const { return p_ ? p_->size() : 0; }
  bool empty() const { return size() == 0; }
  const T& operator[](size_t i) const { return (*p_)[i]; }
  const T& back() const { return p_->back(); }
  const T& front() const { return p_->front(); }
  const_iterator begin() const { return Get().begin(); }
  const_iterator end() const { return Get().end(); }

  T& operator[](size_t i) { return Mut()[i]; }
  T& back() { return Mut().back(); }
  iterator begin() { return Mut().begin(); }
  iterator end() { return Mut().end(); }
  void push_back(T x) { Mut().push_back(std::move(x)); }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    return Mut().emplace_back(std::forward<Args>(args)...);
  }
  template <typename It>
  iterator insert(const_iterator at, It first, It last) {
    return Mut().insert(at, first, last);  // `at` came from non-const end() / begin(): not shared
  }
  iterator erase(const_iterator first, const_iterator last) { return Mut().erase(first, last); }
  iterator erase(const_iterator at) { return Mut().erase(at); }
  void clear() { p_.reset(); }
  void resize(size_t n) { Mut().resize(n); }
  void reserve(size_t n) { Mut().reserve(n); }

 private:
  std::vector<T>& Mut() {
    if (!p_) {
      p_ = std::make_shared<std::vector<T>>();
    } else if (p_.use_count() > 1) {
      p_ = std::make_shared<std::vector<T>>(*p_);
    }
    return *p_;
  }
  static const std::vector<T>& Empty() {
    static const std::vector<T>* empty = new std::vector<T>;  // never destroyed
    return *empty;
  }
  std::shared_ptr<std::vector<T>> p_;
};

struct JsonValue {
  enum class Kind : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;  // kString: the decoded UTF-8 value; kNumber: the number as written
  CowVector<JsonValue> items;                             // kArray
  CowVector<std::pair<std::string, JsonValue>> members;  // kObject, in document order

  JsonValue() = default;
  // Copies share their children (CowVector) until changed. Each copied value counts in
  // CopiedOnThisThread, also those copied when a shared vector is changed (a front end
  // bounds its work by it, as merged copies of a recursive schema can multiply).
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

  // Values copied, and arrays / objects compared by JsonEqual / JsonIdentical, on this
  // thread so far: the work a front end bounds (see the copy constructor).
  static int64_t CopiedOnThisThread() { return copied_on_thread_; }
  static void CountVisited() { ++copied_on_thread_; }

  bool IsObject() const { return kind == Kind::kObject; }
  bool IsArray() const { return kind == Kind::kArray; }
  bool IsString() const { return kind == Kind::kString; }
  bool IsNumber() const { return kind == Kind::kNumber; }
  bool IsBool() const { return kind == Kind::kBool; }
  // The member `key` of an object (the last one if repeated), or nullptr.
  const JsonValue* Find(std::string_view key) const;

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

// Appends `s` (UTF-8) as a JSON string: `"`, `\` and control characters escaped as
// json.dumps escapes them, everything else raw.
void AppendJsonString(std::string_view s, std::string* out);

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
