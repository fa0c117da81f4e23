#include "engine/shared_by_reach.h"

namespace xgr2 {

int64_t MakeLookupKeys(const GrammarFsm& fsm, int32_t reach, int32_t radius, int repeats) {
  int64_t nodes = 0;
  volatile size_t sink = 0;  // the keys are used: not optimized away
  for (int k = 0; k < repeats; ++k) {
    nodes = 0;
    for (int32_t n = 0; n < fsm.NumNodes(); ++n) {
      if (!fsm.HasEdges(n)) continue;
      ++nodes;
      ByteDistances dist(fsm, {n}, nullptr, reach, kMaxKeyNodes);
      sink += BallKey(fsm, {n}, nullptr, dist, 1, kMaxKeyNodes).size();
      sink += BallKey(fsm, {n}, nullptr, dist, radius, kMaxKeyNodes).size();
    }
  }
  return nodes;
}

}  // namespace xgr2
