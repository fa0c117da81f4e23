#include "xgr2/grammar.h"

#include <algorithm>

#include "support/utf8.h"

namespace xgr2 {

std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> ranges) {
  std::sort(ranges.begin(), ranges.end(), [](auto a, auto b) { return a.lo < b.lo; });
  std::vector<CodepointRange> out;
  for (auto r : ranges) {
    if (!out.empty() && r.lo <= out.back().hi + 1) {
      out.back().hi = std::max(out.back().hi, r.hi);
    } else {
      out.push_back(r);
    }
  }
  return out;
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
