#include "support/json.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "support/stack.h"
#include "support/utf8.h"

namespace xgr2 {

thread_local int64_t JsonValue::copied_on_thread_ = 0;

namespace {

class JsonReader {
 public:
  explicit JsonReader(const std::string& text) : s_(text) {}

  JsonValue Document() {
    JsonValue v = Value(0);
    Space();
    if (p_ < s_.size()) Fail("unexpected text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < p_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line, column = 1;
      } else if ((static_cast<uint8_t>(s_[i]) & 0xC0) != 0x80) {
        ++column;
      }
    }
    throw std::invalid_argument("line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + what);
  }

  void Space() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\t' || s_[p_] == '\n' || s_[p_] == '\r')) ++p_;
  }

  bool Literal(const char* word) {
    size_t n = std::char_traits<char>::length(word);
    if (s_.compare(p_, n, word) != 0) return false;
    p_ += n;
    return true;
  }

  JsonValue Value(int depth) {
    if (depth > kMaxJsonDepth) Fail("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    if (StackNearlyFull()) Fail(StackMessage("values", depth));
    Space();
    if (p_ >= s_.size()) Fail("unexpected end of JSON text");
    JsonValue v;
    char c = s_[p_];
    if (c == '{') {
      v.kind = JsonValue::Kind::kObject;
      ++p_;
      Space();
      if (p_ < s_.size() && s_[p_] == '}') {
        ++p_;
        return v;
      }
      while (true) {
        Space();
        if (p_ >= s_.size() || s_[p_] != '"') Fail("expected a string key");
        std::string key = String();
        Space();
        if (p_ >= s_.size() || s_[p_] != ':') Fail("expected `:`");
        ++p_;
        v.members.emplace_back(std::move(key), Value(depth + 1));
        Space();
        if (p_ < s_.size() && s_[p_] == ',') {
          ++p_;
        } else if (p_ < s_.size() && s_[p_] == '}') {
          ++p_;
          return v;  // a plain `return v` moves; `return ++p_, v` copied the whole subtree
        } else {
          Fail("expected `,` or `}`");
        }
      }
    }
    if (c == '[') {
      v.kind = JsonValue::Kind::kArray;
      ++p_;
      Space();
      if (p_ < s_.size() && s_[p_] == ']') {
        ++p_;
        return v;
      }
      while (true) {
        v.items.push_back(Value(depth + 1));
        Space();
        if (p_ < s_.size() && s_[p_] == ',') {
          ++p_;
        } else if (p_ < s_.size() && s_[p_] == ']') {
          ++p_;
          return v;
        } else {
          Fail("expected `,` or `]`");
        }
      }
    }
    if (c == '"') {
      v.kind = JsonValue::Kind::kString;
      v.text = String();
      return v;
    }
    if (Literal("true")) {
      v.kind = JsonValue::Kind::kBool;
      v.boolean = true;
      return v;
    }
    if (Literal("false")) {
      v.kind = JsonValue::Kind::kBool;
      return v;
    }
    if (Literal("null")) return v;
    if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = JsonValue::Kind::kNumber;
      v.text = Number();
      return v;
    }
    size_t q = p_;
    int32_t cp = DecodeUtf8(s_, &q);
    if (cp < 0 || cp < 0x20) {
      static const char kHex[] = "0123456789abcdef";
      uint8_t byte = static_cast<uint8_t>(c);
      Fail(std::string("unexpected byte 0x") + kHex[byte >> 4] + kHex[byte & 15]);
    }
    Fail("unexpected character `" + s_.substr(p_, q - p_) + "`");
  }

  std::string Number() {
    size_t start = p_;
    auto digits = [&] {
      size_t d = p_;
      while (p_ < s_.size() && s_[p_] >= '0' && s_[p_] <= '9') ++p_;
      return p_ - d;
    };
    if (s_[p_] == '-') ++p_;
    if (p_ < s_.size() && s_[p_] == '0') {
      ++p_;
    } else if (digits() == 0) {
      Fail("invalid number");
    }
    if (p_ < s_.size() && s_[p_] == '.') {
      ++p_;
      if (digits() == 0) Fail("invalid number: digits must follow `.`");
    }
    if (p_ < s_.size() && (s_[p_] == 'e' || s_[p_] == 'E')) {
      ++p_;
      if (p_ < s_.size() && (s_[p_] == '+' || s_[p_] == '-')) ++p_;
      if (digits() == 0) Fail("invalid number: digits must follow the exponent");
    }
    return s_.substr(start, p_ - start);
  }

  uint32_t Hex4() {
    if (p_ + 4 > s_.size()) Fail("invalid \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char h = s_[p_++];
      int d = (h >= '0' && h <= '9') ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
      if (d < 0) Fail("invalid \\u escape");
      v = v * 16 + d;
    }
    return v;
  }

  std::string String() {
    ++p_;  // opening quote
    std::string out;
    while (true) {
      if (p_ >= s_.size()) Fail("unterminated string");
      uint8_t c = static_cast<uint8_t>(s_[p_]);
      if (c == '"') {
        ++p_;
        return out;
      }
      if (c < 0x20) Fail("raw control character in a string");
      if (c < 0x80 && c != '\\') {  // a run of plain ASCII, appended at once
        size_t q = p_ + 1;
        while (q < s_.size()) {
          uint8_t d = static_cast<uint8_t>(s_[q]);
          if (d < 0x20 || d >= 0x80 || d == '"' || d == '\\') break;
          ++q;
        }
        out.append(s_, p_, q - p_);
        p_ = q;
        continue;
      }
      if (c != '\\') {
        size_t q = p_;
        if (DecodeUtf8(s_, &q) < 0) Fail("invalid UTF-8");
        out.append(s_, p_, q - p_);
        p_ = q;
        continue;
      }
      if (++p_ >= s_.size()) Fail("unterminated escape");
      char e = s_[p_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = Hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF && s_.compare(p_, 2, "\\u") == 0) {
            size_t save = p_;
            p_ += 2;
            uint32_t lo = Hex4();
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else {
              p_ = save;
            }
          }
          if (cp >= 0xD800 && cp <= 0xDFFF) Fail("lone surrogate escape in a string");
          AppendUtf8(cp, &out);
          break;
        }
        default:
          if (static_cast<unsigned char>(e) >= 0x80) Fail("invalid escape: `\\` before a non-ASCII character");
          Fail(std::string("invalid escape `\\") + e + "`");
      }
    }
  }

  const std::string& s_;
  size_t p_ = 0;
};

void Dump(const JsonValue& v, std::string* out) {
  switch (v.kind) {
    case JsonValue::Kind::kNull: *out += "null"; return;
    case JsonValue::Kind::kBool: *out += v.boolean ? "true" : "false"; return;
    case JsonValue::Kind::kNumber: *out += v.text; return;
    case JsonValue::Kind::kString: AppendJsonString(v.text, out); return;
    case JsonValue::Kind::kArray:
      out->push_back('[');
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i) out->push_back(',');
        Dump(v.items[i], out);
      }
      out->push_back(']');
      return;
    case JsonValue::Kind::kObject:
      out->push_back('{');
      for (size_t i = 0; i < v.members.size(); ++i) {
        if (i) out->push_back(',');
        AppendJsonString(v.members[i].first, out);
        out->push_back(':');
        Dump(v.members[i].second, out);
      }
      out->push_back('}');
      return;
  }
}

}  // namespace

const JsonValue* JsonValue::Find(std::string_view key) const {
  for (auto it = members.end(); it != members.begin();) {  // from the end: the last one wins
    --it;
    if (it->first == key) return &it->second;
  }
  return nullptr;
}

JsonValue ParseJson(const std::string& text) { return JsonReader(text).Document(); }

void AppendJsonString(std::string_view s, std::string* out) {
  static const char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t run = 0;  // start of the raw run not yet appended
  for (size_t i = 0; i < s.size(); ++i) {
    uint8_t c = static_cast<uint8_t>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        *out += "\\u00";
        out->push_back(kHex[c >> 4]);
        out->push_back(kHex[c & 15]);
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

std::string DumpJson(const JsonValue& v) {
  std::string out;
  Dump(v, &out);
  return out;
}

DecimalNumber ParseDecimal(const std::string& t) {
  DecimalNumber d;
  size_t p = 0;
  if (p < t.size() && t[p] == '-') d.negative = true, ++p;
  std::string digits;
  int64_t exponent = 0;
  for (; p < t.size() && t[p] >= '0' && t[p] <= '9'; ++p) digits += t[p];
  if (p < t.size() && t[p] == '.') {
    for (++p; p < t.size() && t[p] >= '0' && t[p] <= '9'; ++p) digits += t[p], --exponent;
  }
  if (p < t.size() && (t[p] == 'e' || t[p] == 'E')) {
    ++p;
    bool neg = false;
    if (p < t.size() && (t[p] == '+' || t[p] == '-')) neg = t[p++] == '-';
    int64_t e = 0;
    for (; p < t.size() && t[p] >= '0' && t[p] <= '9'; ++p) {
      if (e < (int64_t{1} << 40)) e = e * 10 + (t[p] - '0');  // saturate: such numbers are 0 or huge anyway
    }
    exponent += neg ? -e : e;
  }
  size_t lead = digits.find_first_not_of('0');
  if (lead == std::string::npos) return DecimalNumber{false, "", 0};
  digits.erase(0, lead);
  while (!digits.empty() && digits.back() == '0') digits.pop_back(), ++exponent;
  d.digits = digits;
  d.exponent = exponent;
  return d;
}

int CompareDecimal(const DecimalNumber& a, const DecimalNumber& b) {
  int sa = a.digits.empty() ? 0 : a.negative ? -1 : 1;
  int sb = b.digits.empty() ? 0 : b.negative ? -1 : 1;
  if (sa != sb) return sa < sb ? -1 : 1;
  if (sa == 0) return 0;
  // Compare magnitudes: first by the position of the leading digit, then digit by digit.
  int64_t top_a = a.exponent + static_cast<int64_t>(a.digits.size());
  int64_t top_b = b.exponent + static_cast<int64_t>(b.digits.size());
  int mag;
  if (top_a != top_b) {
    mag = top_a < top_b ? -1 : 1;
  } else {
    size_t n = std::max(a.digits.size(), b.digits.size());
    mag = 0;
    for (size_t i = 0; i < n && mag == 0; ++i) {
      char da = i < a.digits.size() ? a.digits[i] : '0', db = i < b.digits.size() ? b.digits[i] : '0';
      if (da != db) mag = da < db ? -1 : 1;
    }
  }
  return sa > 0 ? mag : -mag;
}

bool JsonEqual(const JsonValue& a, const JsonValue& b) {
  if (a.kind != b.kind) return false;
  // Scalars are not counted: an allOf of two large enums compares millions of them.
  if (a.IsArray() || a.IsObject()) JsonValue::CountVisited();
  if (a.items.SharesWith(b.items) || a.members.SharesWith(b.members)) return true;  // copies of one value
  switch (a.kind) {
    case JsonValue::Kind::kNull: return true;
    case JsonValue::Kind::kBool: return a.boolean == b.boolean;
    case JsonValue::Kind::kNumber: return CompareDecimal(ParseDecimal(a.text), ParseDecimal(b.text)) == 0;
    case JsonValue::Kind::kString: return a.text == b.text;
    case JsonValue::Kind::kArray:
      if (a.items.size() != b.items.size()) return false;
      for (size_t i = 0; i < a.items.size(); ++i) {
        if (!JsonEqual(a.items[i], b.items[i])) return false;
      }
      return true;
    case JsonValue::Kind::kObject:
      if (a.members.size() != b.members.size()) return false;
      for (const auto& [k, v] : a.members) {
        const JsonValue* w = b.Find(k);
        if (!w || !JsonEqual(v, *w)) return false;
      }
      return true;
  }
  return false;
}

std::string JsonPointerToken(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

bool JsonIdentical(const JsonValue& a, const JsonValue& b) {
  if (a.IsArray() || a.IsObject()) JsonValue::CountVisited();
  if (a.kind != b.kind || a.boolean != b.boolean || a.text != b.text || a.items.size() != b.items.size() ||
      a.members.size() != b.members.size()) {
    return false;
  }
  if (a.items.SharesWith(b.items) || a.members.SharesWith(b.members)) return true;  // copies of one value
  for (size_t i = 0; i < a.items.size(); ++i) {
    if (!JsonIdentical(a.items[i], b.items[i])) return false;
  }
  for (size_t i = 0; i < a.members.size(); ++i) {
    if (a.members[i].first != b.members[i].first || !JsonIdentical(a.members[i].second, b.members[i].second)) {
      return false;
    }
  }
  return true;
}

uint64_t JsonHash(const JsonValue& v) {
  auto mix = [](uint64_t h, uint64_t x) { return (h ^ x) * 0x100000001B3ull + (h >> 29); };
  uint64_t h = mix(0xCBF29CE484222325ull, static_cast<uint64_t>(v.kind) << 1 | v.boolean);
  h = mix(h, std::hash<std::string>{}(v.text));
  for (const JsonValue& x : v.items) h = mix(h, JsonHash(x));
  for (const auto& [k, x] : v.members) h = mix(mix(h, std::hash<std::string>{}(k)), JsonHash(x));
  return mix(h, v.items.size() * 31 + v.members.size());
}

}  // namespace xgr2
