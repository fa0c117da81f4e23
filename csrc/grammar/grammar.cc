#include "xgr2/grammar.h"

#include <algorithm>

#include "support/utf8.h"

namespace xgr2 {

std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](auto a, auto b) { return a.lo < b.lo; });
  size_t kept = 0;  // merged in place: no allocation
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (kept > 0 && ranges[i].lo <= ranges[kept - 1].hi + 1) {
      ranges[kept - 1].hi = std::max(ranges[kept - 1].hi, ranges[i].hi);
    } else {
      ranges[kept++] = ranges[i];
    }
  }
  ranges.resize(kept);
  return ranges;
}

std::vector<CodepointRange> WithoutSurrogates(const std::vector<CodepointRange>& ranges) {
  std::vector<CodepointRange> out;
  for (CodepointRange r : ranges) {
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      out.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) out.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) out.push_back({0xE000, r.hi});
  }
  return out;
}

std::vector<CodepointRange> ComplementRanges(const std::vector<CodepointRange>& ranges, uint32_t max) {
  std::vector<CodepointRange> out;
  out.reserve(ranges.size() + 1);
  uint32_t next = 0;
  for (const CodepointRange& r : ranges) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = std::max(next, r.hi + 1);
  }
  if (next <= max) out.push_back({next, max});
  return out;
}

int32_t GrammarIR::FindRule(const std::string& name) const {
  for (size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

}  // namespace xgr2
