// JSON Schema `format` values as grammars over the string's characters.
#pragma once
#include <string>

namespace xgr2 {

// EBNF text (start rule `root`) of the strings valid for `format` (date-time, date,
// time, duration, email, hostname, ipv4, ipv6, uri, uri-reference, uuid, ...), or
// nullptr when the format is unknown. Every string it matches is printable ASCII
// without `"` or `\`, so its JSON text is the string itself.
const char* JsonFormatEbnf(const std::string& format);

}  // namespace xgr2
