#include "xgr2/grammar.h"

namespace xgr2 {

int32_t GrammarIR::FindRule(const std::string& name) const {
  for (size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

}  // namespace xgr2
