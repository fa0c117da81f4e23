#include "grammar/token_spelling.h"

namespace xgr2 {
namespace {

// Splits [lo, hi] (ids of `width` bytes) into byte-range sequences, most significant
// byte first, appending them to `out` after the fixed `prefix` ranges.
void Split(uint32_t lo, uint32_t hi, int width, IdByteRanges prefix, int depth, std::vector<IdByteRanges>* out) {
  if (width == 1) {
    prefix.lo[depth] = static_cast<uint8_t>(lo);
    prefix.hi[depth] = static_cast<uint8_t>(hi);
    out->push_back(prefix);
    return;
  }
  const uint32_t unit = 1u << (8 * (width - 1));  // ids per value of the leading byte
  uint32_t first = lo / unit, last = hi / unit;
  auto lead = [&](uint32_t a, uint32_t b) {
    IdByteRanges p = prefix;
    p.lo[depth] = static_cast<uint8_t>(a);
    p.hi[depth] = static_cast<uint8_t>(b);
    return p;
  };
  if (first == last) return Split(lo % unit, hi % unit, width - 1, lead(first, first), depth + 1, out);
  if (lo % unit != 0) Split(lo % unit, unit - 1, width - 1, lead(first, first), depth + 1, out), ++first;
  bool partial_last = hi % unit != unit - 1;
  if (partial_last) --last;
  if (first <= last) {  // whole blocks: every lower byte free
    IdByteRanges p = lead(first, last);
    for (int d = depth + 1; d < kTokenIdBytes; ++d) p.lo[d] = 0, p.hi[d] = 0xFF;
    out->push_back(p);
  }
  if (partial_last) Split(0, hi % unit, width - 1, lead(last + 1, last + 1), depth + 1, out);
}

}  // namespace

std::vector<IdByteRanges> TokenIdRangeSequences(uint32_t lo, uint32_t hi) {
  std::vector<IdByteRanges> out;
  if (lo <= hi) Split(lo, hi, kTokenIdBytes, IdByteRanges{}, 0, &out);
  return out;
}

}  // namespace xgr2
