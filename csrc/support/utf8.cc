#include "support/utf8.h"

#include <unordered_map>

namespace xgr2 {

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

int32_t DecodeUtf8(const std::string& text, size_t* pos) {
  auto byte = [&](size_t i) -> uint32_t { return static_cast<uint8_t>(text[i]); };
  size_t i = *pos;
  if (i >= text.size()) return -1;
  uint32_t b0 = byte(i);
  int len;
  uint32_t cp;
  if (b0 < 0x80) {
    len = 1, cp = b0;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07;
  } else {
    return -1;
  }
  if (i + len > text.size()) return -1;
  for (int k = 1; k < len; ++k) {
    uint32_t b = byte(i + k);
    if ((b & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (b & 0x3F);
  }
  static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > kMaxCodepoint || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  *pos = i + len;
  return static_cast<int32_t>(cp);
}

namespace {

int EncodedLength(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// Splits [lo, hi] (same encoded length) until each piece is a product of byte ranges.
void SplitSameLength(uint32_t lo, uint32_t hi, std::vector<ByteRangeSeq>* out) {
  int len = EncodedLength(lo);
  // A piece is a byte-range product when, for some k, lo and hi agree on all but the
  // last k continuation groups, and those groups span the full 0x00..0x3F range.
  for (int k = 1; k < len; ++k) {
    uint32_t mask = (1u << (6 * k)) - 1;
    if ((lo & ~mask) != (hi & ~mask)) {
      if ((lo & mask) != 0) {
        SplitSameLength(lo, lo | mask, out);
        SplitSameLength((lo | mask) + 1, hi, out);
        return;
      }
      if ((hi & mask) != mask) {
        SplitSameLength(lo, (hi & ~mask) - 1, out);
        SplitSameLength(hi & ~mask, hi, out);
        return;
      }
    }
  }
  std::string a, b;
  AppendUtf8(lo, &a);
  AppendUtf8(hi, &b);
  ByteRangeSeq seq;
  seq.len = len;
  for (int i = 0; i < len; ++i) {
    seq.lo[i] = static_cast<uint8_t>(a[i]);
    seq.hi[i] = static_cast<uint8_t>(b[i]);
  }
  out->push_back(seq);
}

}  // namespace

std::vector<ByteRangeSeq> Utf8RangeSequences(uint32_t lo, uint32_t hi) {
  std::vector<ByteRangeSeq> out;
  if (hi > kMaxCodepoint) hi = kMaxCodepoint;
  // Exclude surrogates, which have no UTF-8 encoding.
  if (lo <= 0xDFFF && hi >= 0xD800) {
    if (lo < 0xD800) {
      auto a = Utf8RangeSequences(lo, 0xD7FF);
      out.insert(out.end(), a.begin(), a.end());
    }
    if (hi > 0xDFFF) {
      auto b = Utf8RangeSequences(0xE000, hi);
      out.insert(out.end(), b.begin(), b.end());
    }
    return out;
  }
  static const uint32_t kBounds[4] = {0x7F, 0x7FF, 0xFFFF, kMaxCodepoint};
  uint32_t start = lo;
  for (uint32_t bound : kBounds) {
    if (start > hi) break;
    if (start > bound) continue;
    uint32_t end = hi < bound ? hi : bound;
    SplitSameLength(start, end, &out);
    start = end + 1;
  }
  return out;
}

int Utf8Step(int state, uint8_t b) {
  auto in = [b](int lo, int hi) { return b >= lo && b <= hi; };
  switch (state) {
    case 0:
      if (b < 0x80) return 0;
      if (in(0xC2, 0xDF)) return 1;
      if (b == 0xE0) return 4;
      if (b == 0xED) return 5;
      if (in(0xE1, 0xEF)) return 2;
      if (b == 0xF0) return 6;
      if (b == 0xF4) return 7;
      if (in(0xF1, 0xF3)) return 3;
      return -1;
    case 1: return in(0x80, 0xBF) ? 0 : -1;
    case 2: return in(0x80, 0xBF) ? 1 : -1;
    case 3: return in(0x80, 0xBF) ? 2 : -1;
    case 4: return in(0xA0, 0xBF) ? 1 : -1;
    case 5: return in(0x80, 0x9F) ? 1 : -1;
    case 6: return in(0x90, 0xBF) ? 2 : -1;
    case 7: return in(0x80, 0x8F) ? 2 : -1;
  }
  return -1;
}

size_t CompleteUtf8Prefix(const std::string& b) {
  size_t n = b.size(), i = n;
  while (i > 0 && n - i < 4 && (static_cast<uint8_t>(b[i - 1]) & 0xC0) == 0x80) --i;
  if (i == 0) return n;
  uint8_t lead = static_cast<uint8_t>(b[i - 1]);
  size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return (n - (i - 1)) < need ? i - 1 : n;
}

const std::vector<ByteRangeSeq>& CachedUtf8RangeSequences(uint32_t lo, uint32_t hi) {
  thread_local std::unordered_map<uint64_t, std::vector<ByteRangeSeq>> memo;
  uint64_t key = uint64_t{lo} << 32 | hi;
  auto it = memo.find(key);
  if (it != memo.end()) return it->second;
  if (memo.size() >= 4096) memo.clear();  // bounded; entries are cheap to remake
  return memo.emplace(key, Utf8RangeSequences(lo, hi)).first->second;
}

}  // namespace xgr2
