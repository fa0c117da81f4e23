// Ids grouped by a key, all groups in one array (a counting sort): one allocation where
// a vector per key costs one each (a grammar's rules, an automaton's states).
#pragma once
#include <cstdint>
#include <vector>

namespace xgr2 {

class Grouped {
 public:
  // `pairs(add)` calls add(key, id) for every pair, keys in [0, num_keys). It runs twice
  // (to count, then to fill) and must give the same pairs both times; each group keeps
  // its ids in that order.
  //
  //   Grouped callers(num_rules, [&](auto add) { for (...) add(callee, caller); });
  //   for (int32_t caller : callers[rule]) ...
  template <typename Pairs>
  Grouped(int32_t num_keys, Pairs pairs) : begin_(num_keys + 1, 0) {
    pairs([&](int32_t key, int32_t) { ++begin_[key + 1]; });
    for (int32_t k = 0; k < num_keys; ++k) begin_[k + 1] += begin_[k];
    ids_.resize(begin_[num_keys]);
    std::vector<int32_t> fill(begin_.begin(), begin_.end() - 1);
    pairs([&](int32_t key, int32_t id) { ids_[fill[key]++] = id; });
  }

  struct Ids {
    const int32_t* first;
    const int32_t* last;
    const int32_t* begin() const { return first; }
    const int32_t* end() const { return last; }
  };
  Ids operator[](int32_t key) const { return {ids_.data() + begin_[key], ids_.data() + begin_[key + 1]}; }

 private:
  std::vector<int32_t> begin_, ids_;
};

}  // namespace xgr2
