#include "engine/shared_by_reach.h"

namespace xgr2 {

int64_t MakeLookupKeys(const GrammarFsm& fsm, int32_t radius, int repeats) {
  int64_t nodes = 0;
  volatile size_t sink = 0;  // the keys are used: not optimized away
  std::vector<int32_t> queue;
  for (int k = 0; k < repeats; ++k) {
    nodes = 0;
    for (int32_t n = 0; n < fsm.NumNodes(); ++n) {
      if (!fsm.HasEdges(n)) continue;
      ++nodes;
      ByteDistances dist(fsm, {n}, nullptr, radius, kMaxKeyNodes);
      sink += BallKey(fsm, {n}, nullptr, dist, 1, kMaxKeyNodes).size();
      // A walk that reached the whole ball of `radius`: its key, then a lookup's match.
      const int32_t* d = dist.UpTo(radius);
      NodeSet reached(fsm.NumNodes());
      queue.assign(1, n);
      reached.AskAll(n);
      auto reach = [&](int32_t m) {  // a walk that read every edge of what it reached
        if (d[m] <= radius && !reached.Contains(m)) reached.AskAll(m), queue.push_back(m);
      };
      for (size_t i = 0; i < queue.size(); ++i) {
        int32_t m = queue[i];
        for (int32_t e = fsm.edge_begin[m]; e < fsm.edge_begin[m + 1]; ++e) {
          reach(fsm.edges[e].target);
          if (fsm.edges[e].rule >= 0) reach(fsm.rule_start[fsm.edges[e].rule]);
        }
      }
      std::string key = ReachKey(fsm, {n}, nullptr, reached, kMaxKeyNodes);
      sink += key.size() + MatchesReachKey(fsm, {n}, nullptr, key, 0, 0, kMaxKeyNodes);
    }
  }
  return nodes;
}

}  // namespace xgr2
