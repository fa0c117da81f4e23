// Grammars of JSON Schema `format` values, written from the ABNF of each RFC.
//
// Every grammar matches only printable ASCII without `"` and `\` (the header's
// contract), so where an RFC allows more (quoted e-mail local parts, non-ASCII IRIs and
// JSON-pointer tokens) the grammar is narrower. Where an RFC limit cannot be encoded
// compactly (total lengths of host names and mailboxes) the grammar is narrower too,
// never wider; docs/json_formats.md lists every narrowing.
#include "frontends/json_formats.h"

#include <algorithm>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace xgr2 {
namespace {

// RFC 3339 §5.6 full-date, exact: days per month, 29 February in leap years only
// (a year divisible by 4, except centuries not divisible by 400), years 0001-9999
// (jsonschema's checkers and Python's date reject year 0000).
constexpr const char* kFullDate = R"(
full-date ::= year "-" (m31 "-" d31 | m30 "-" d30 | "02-" d28) | leap-year "-02-29"
year ::= "000" [1-9] | "00" [1-9] [0-9] | "0" [1-9] [0-9] [0-9] | [1-9] [0-9] [0-9] [0-9]
# A two-digit multiple of 4 other than 00; a leap year ends in one, or is one followed by 00.
leap-year ::= [0-9] [0-9] mult4 | mult4 "00"
mult4 ::= "0" [48] | [2468] [048] | [13579] [26]
m31 ::= "0" [13578] | "1" [02]
m30 ::= "0" [469] | "11"
d28 ::= "0" [1-9] | "1" [0-9] | "2" [0-8]
d30 ::= d28 | "29" | "30"
d31 ::= d30 | "31"
)";

// RFC 3339 §5.6 full-time. Lower-case z is allowed (§5.6 note). Seconds are 00-59:
// a leap second (60) is refused, as jsonschema's checker does (narrower than the RFC).
constexpr const char* kFullTime = R"(
full-time ::= hour ":" sixty ":" sixty ("." [0-9]+)? ([Zz] | [+-] hour ":" sixty)
hour ::= [01] [0-9] | "2" [0-3]
sixty ::= [0-5] [0-9]
)";

// RFC 3339 Appendix A duration, exact (upper-case designators only).
constexpr const char* kDuration = R"(
root ::= "P" (dur-date | dur-time | n "W")
dur-date ::= (n "D" | n "M" (n "D")? | n "Y" (n "M" (n "D")?)?) dur-time?
dur-time ::= "T" (n "H" (n "M" (n "S")?)? | n "M" (n "S")? | n "S")
n ::= [0-9]+
)";

// Dotted-quad IPv4 (RFC 2673 §3.2 / RFC 3986 dec-octet): 0-255 without leading zeros,
// as Python's ipaddress (jsonschema's checker) requires.
constexpr const char* kIpv4 = R"(
ipv4 ::= dec-octet "." dec-octet "." dec-octet "." dec-octet
dec-octet ::= [0-9] | [1-9] [0-9] | "1" [0-9] [0-9] | "2" [0-4] [0-9] | "25" [0-5]
)";

// RFC 4291 §2.2 text forms, as written in RFC 3986 §3.2.2: `::` elides one or more
// groups, the last 32 bits may be a dotted quad. No zone index (RFC 6874).
constexpr const char* kIpv6 = R"(
ipv6 ::= (h16 ":"){6} ls32
  | "::" (h16 ":"){5} ls32
  | h16? "::" (h16 ":"){4} ls32
  | ((h16 ":")? h16)? "::" (h16 ":"){3} ls32
  | ((h16 ":"){0,2} h16)? "::" (h16 ":"){2} ls32
  | ((h16 ":"){0,3} h16)? "::" h16 ":" ls32
  | ((h16 ":"){0,4} h16)? "::" ls32
  | ((h16 ":"){0,5} h16)? "::" h16
  | ((h16 ":"){0,6} h16)? "::"
h16 ::= [0-9A-Fa-f]{1,4}
ls32 ::= h16 ":" h16 | ipv4
)";

// RFC 3986 Appendix A, exact. `host` is IP-literal or reg-name: reg-name already
// matches every IPv4address. `uc` is unreserved / sub-delims / pct-encoded.
constexpr const char* kUriParts = R"(
uri ::= scheme ":" ("//" authority path-abempty | path-absolute | path-rootless)? ("?" query)? ("#" query)?
relative-ref ::= ("//" authority path-abempty | path-absolute | path-noscheme)? ("?" query)? ("#" query)?
scheme ::= [A-Za-z] [A-Za-z0-9+.-]*
authority ::= (userinfo "@")? host (":" [0-9]*)?
userinfo ::= (uc | ":")*
host ::= "[" (ipv6 | "v" [0-9A-Fa-f]+ "." (uc-nopct | ":")+) "]" | uc*
path-abempty ::= ("/" pchar*)*
path-absolute ::= "/" (pchar+ ("/" pchar*)*)?
path-noscheme ::= (uc | "@")+ ("/" pchar*)*
path-rootless ::= pchar+ ("/" pchar*)*
query ::= (pchar | [/?])*
pchar ::= uc | [:@]
uc ::= uc-nopct | "%" [0-9A-Fa-f] [0-9A-Fa-f]
uc-nopct ::= [A-Za-z0-9._~!$&'()*+,;=-]
)";

// RFC 6570 §2 URI Template, level 4. Literals are the ASCII ones (no ucschar /
// iprivate: non-ASCII is outside the contract); the reserved operators `= , ! @ |` are
// refused (§2.2: reserved for future extensions, an error today). Narrower than §2 where
// the uri-template package (jsonschema's checker) refuses valid forms: a varname does
// not start with a pct-encoded varchar and a prefix length has at most 3 digits.
constexpr const char* kUriTemplate = R"(
root ::= ([!#$&(-;=?-[\]_a-z~] | "%" [0-9A-Fa-f] [0-9A-Fa-f] | expression)*
expression ::= "{" [+#./;?&]? varspec ("," varspec)* "}"
varspec ::= [A-Za-z0-9_] ("."? varchar)* (":" [1-9] [0-9]{0,2} | "*")?
varchar ::= [A-Za-z0-9_] | "%" [0-9A-Fa-f] [0-9A-Fa-f]
)";

// RFC 6901 JSON Pointer; reference tokens narrowed to printable ASCII without `"`, `\`.
constexpr const char* kJsonPointer = R"(
json-pointer ::= ("/" ([\x20\x21\x23-\x2E\x30-\x5B\x5D-\x7D] | "~" [01])*)*
)";

// Total length bounds by tiers. A dotted name of at most `total` characters whose parts
// have at most `max_part` cannot be matched by a compact automaton (it must count both),
// so this matches the union, over tiers n, of names of at most n parts of at most
// min(max_part, (total + 1) / n - 1) characters each: every match fits in `total`. The
// tiers are those of part lengths (total + 1) / c - 1 for c the powers of two, for c
// just past the most full-length parts that fit, and max_part; each with as many parts
// as fit; names outside every tier are refused (narrower). `part(len)` is the
// expression of one part of at most `len` characters.
std::string DottedTiers(const std::string& name, int total, int max_part,
                        const std::function<std::string(int)>& part) {
  std::vector<int> counts = {(total + 1) / (max_part + 1), (total + 1) / (max_part + 1) + 1, (total + 1) / 2};
  for (int n = 1; n <= (total + 1) / 2; n *= 2) counts.push_back(n);
  std::sort(counts.begin(), counts.end());
  std::string root = name + " ::=", rules;
  int prev_len = -1;
  for (size_t i = counts.size(); i-- > 0;) {  // most parts first; skip tiers another covers
    if (counts[i] < 1) continue;
    int len = std::min(max_part, (total + 1) / counts[i] - 1);
    int n = (total + 1) / (len + 1);  // as many parts as fit
    if (len == prev_len) continue;
    prev_len = len;
    std::string p = name + "-part" + std::to_string(len), tier = name + "-" + std::to_string(n);
    root += (root.back() == '=' ? " " : " | ") + tier;
    rules += tier + " ::= " + p + (n > 1 ? " (\".\" " + p + "){0," + std::to_string(n - 1) + "}" : "") + "\n";
    rules += p + " ::= " + part(len) + "\n";
  }
  return root + "\n" + rules;
}

// RFC 1123 §2.1 label (RFC 5321 sub-domain): letters, digits and hyphens, neither
// starting nor ending with a hyphen, at most `len` characters.
std::string Label(int len) {
  std::string out = "[A-Za-z0-9]";
  if (len == 2) out += " [A-Za-z0-9]?";
  if (len > 2) out += " ([A-Za-z0-9-]{0," + std::to_string(len - 2) + "} [A-Za-z0-9])?";
  return out;
}

std::string Build(const std::string& format) {
  if (format == "date") return std::string("root ::= full-date\n") + kFullDate;
  if (format == "time") return std::string("root ::= full-time\n") + kFullTime;
  if (format == "date-time") return std::string("root ::= full-date [Tt] full-time\n") + kFullDate + kFullTime;
  if (format == "duration") return kDuration;
  if (format == "ipv4") return std::string("root ::= ipv4\n") + kIpv4;
  if (format == "ipv6") return std::string("root ::= ipv6\n") + kIpv6 + kIpv4;
  if (format == "uuid") {  // RFC 4122 §3 string representation; any version and variant
    return "root ::= hex{8} \"-\" hex{4} \"-\" hex{4} \"-\" hex{4} \"-\" hex{12}\nhex ::= [0-9A-Fa-f]\n";
  }
  // RFC 3987 IRIs restricted to ASCII are exactly RFC 3986 URIs.
  if (format == "uri" || format == "iri") return std::string("root ::= uri\n") + kUriParts + kIpv6 + kIpv4;
  if (format == "uri-reference" || format == "iri-reference") {
    return std::string("root ::= uri | relative-ref\n") + kUriParts + kIpv6 + kIpv4;
  }
  if (format == "uri-template") return kUriTemplate;
  if (format == "json-pointer") return std::string("root ::= json-pointer\n") + kJsonPointer;
  if (format == "relative-json-pointer") {
    // draft-handrews-relative-json-pointer-01 §3 (no index manipulation).
    return std::string("root ::= (\"0\" | [1-9] [0-9]*) (\"#\" | json-pointer)\n") + kJsonPointer;
  }
  if (format == "hostname") {
    // RFC 1123 §2.1 host names; RFC 1034 §3.1: at most 253 characters besides the
    // trailing dot of an absolute name.
    return "root ::= name \".\"?\n" + DottedTiers("name", 253, 63, Label);
  }
  if (format == "email" || format == "idn-email") {
    // RFC 5321 §4.1.2 Mailbox with a Dot-string local part (quoted strings contain `"`)
    // and an RFC 5321 Domain or IPv4 / IPv6 address literal (no General-address-literal).
    // RFC 5321 §4.5.3.1: local part at most 64 octets, path at most 256 with its angle
    // brackets, so the domain gets at most 254 - 1 - 64 = 189. RFC 6531 (idn-email)
    // restricted to ASCII is RFC 5321.
    return "root ::= local \"@\" (domain | \"[\" (ipv4 | \"IPv6:\" ipv6) \"]\")\n" +
           DottedTiers("domain", 189, 63, Label) + kIpv6 + kIpv4 +
           DottedTiers("local", 64, 64, [](int len) { return len == 1 ? std::string("atext") : "atext{1," + std::to_string(len) + "}"; }) +
           "atext ::= [A-Za-z0-9!#$%&'*+/=?^_`{|}~-]\n";  // RFC 5322 §3.2.3
  }
  return "";
}

}  // namespace

const char* JsonFormatEbnf(const std::string& format) {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string, std::string>;
    for (const char* f : {"date", "time", "date-time", "duration", "ipv4", "ipv6", "uuid", "uri", "iri",
                          "uri-reference", "iri-reference", "uri-template", "json-pointer",
                          "relative-json-pointer", "hostname", "email", "idn-email"}) {
      (*t)[f] = Build(f);
    }
    return t;
  }();
  auto it = table->find(format);
  return it == table->end() ? nullptr : it->second.c_str();
}

}  // namespace xgr2
