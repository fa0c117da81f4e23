#include "frontends/json_formats.h"

namespace xgr2 {

const char* JsonFormatEbnf(const std::string& format) { return nullptr; }

}  // namespace xgr2
