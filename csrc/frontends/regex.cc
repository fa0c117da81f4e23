#include "frontends/regex.h"

#include "xgr2/errors.h"

namespace xgr2 {

int32_t AppendRegex(IrBuilder* b, const std::string& pattern, bool search) {
  throw RegexError("regular expressions are not implemented yet", 0);
}

GrammarPtr ParseRegex(const std::string& pattern) {
  auto g = std::make_shared<GrammarIR>();
  IrBuilder b(g.get());
  int32_t root = b.NewRule("root");
  b.SetBody(root, AppendRegex(&b, pattern, false));
  g->root = root;
  return g;
}

}  // namespace xgr2
