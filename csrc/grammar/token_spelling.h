// How the byte automata match a token by id (ExprKind::kToken): the byte 0xFF, which
// no UTF-8 text contains (so no grammar text and no text token ever scans it), then the
// id in three bytes, big-endian. The engine scans this spelling for a token whose id an
// automaton expects, besides (for a text token) its own bytes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace xgr2 {

constexpr uint8_t kTokenMarker = 0xFF;
constexpr int kTokenIdBytes = 3;

// 0xFF and the id's three bytes.
inline std::string TokenSpelling(int32_t id) {
  return std::string{static_cast<char>(kTokenMarker), static_cast<char>((id >> 16) & 0xFF),
                     static_cast<char>((id >> 8) & 0xFF), static_cast<char>(id & 0xFF)};
}

// The ids [lo, hi] as sequences of kTokenIdBytes byte ranges (at most 5): an id is in
// [lo, hi] exactly when its bytes fall in the ranges of one sequence.
struct IdByteRanges {
  uint8_t lo[kTokenIdBytes];
  uint8_t hi[kTokenIdBytes];
};
std::vector<IdByteRanges> TokenIdRangeSequences(uint32_t lo, uint32_t hi);

}  // namespace xgr2
