#include "frontends/schema_refs.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>

#include "xgr2/errors.h"

namespace xgr2 {
namespace {

// The five components of RFC 3986 §3; `has_*` tells an empty component from an absent one.
struct Uri {
  std::string scheme, authority, path, query, fragment;
  bool has_authority = false, has_query = false, has_fragment = false;
};

Uri Split(const std::string& s) {
  Uri u;
  size_t i = 0;
  size_t colon = s.find_first_of(":/?#");
  if (colon != std::string::npos && colon > 0 && s[colon] == ':' && std::isalpha(static_cast<unsigned char>(s[0]))) {
    u.scheme = s.substr(0, colon);
    i = colon + 1;
  }
  if (s.compare(i, 2, "//") == 0) {
    size_t end = s.find_first_of("/?#", i + 2);
    if (end == std::string::npos) end = s.size();
    u.has_authority = true;
    u.authority = s.substr(i + 2, end - i - 2);
    i = end;
  }
  size_t end = s.find_first_of("?#", i);
  if (end == std::string::npos) end = s.size();
  u.path = s.substr(i, end - i);
  i = end;
  if (i < s.size() && s[i] == '?') {
    end = s.find('#', i);
    if (end == std::string::npos) end = s.size();
    u.has_query = true;
    u.query = s.substr(i + 1, end - i - 1);
    i = end;
  }
  if (i < s.size() && s[i] == '#') {
    u.has_fragment = true;
    u.fragment = s.substr(i + 1);
  }
  return u;
}

std::string Join(const Uri& u) {
  std::string out;
  if (!u.scheme.empty()) out += u.scheme + ":";
  if (u.has_authority) out += "//" + u.authority;
  out += u.path;
  if (u.has_query) out += "?" + u.query;
  if (u.has_fragment) out += "#" + u.fragment;
  return out;
}

// RFC 3986 §5.2.4.
std::string RemoveDotSegments(std::string_view in) {
  std::string out;
  auto drop_last_segment = [&out] {
    size_t slash = out.rfind('/');
    out.erase(slash == std::string::npos ? 0 : slash);
  };
  while (!in.empty()) {
    if (in.substr(0, 3) == "../") {
      in.remove_prefix(3);
    } else if (in.substr(0, 2) == "./") {
      in.remove_prefix(2);
    } else if (in.substr(0, 3) == "/./") {
      in.remove_prefix(2);
    } else if (in == "/.") {
      in = "/";
    } else if (in.substr(0, 4) == "/../") {
      in.remove_prefix(3);
      drop_last_segment();
    } else if (in == "/..") {
      in = "/";
      drop_last_segment();
    } else if (in == "." || in == "..") {
      in = {};
    } else {
      size_t next = in.find('/', in[0] == '/' ? 1 : 0);
      if (next == std::string_view::npos) next = in.size();
      out.append(in.substr(0, next));
      in.remove_prefix(next);
    }
  }
  return out;
}

bool NamesResource(const JsonValue* id) { return id && id->IsString() && !id->text.empty() && id->text[0] != '#'; }

bool HasResourceId(const JsonValue& s, bool map) {
  if (s.IsArray()) {
    for (const JsonValue& x : s.items) {
      if (HasResourceId(x, false)) return true;
    }
  } else if (s.IsObject()) {
    if (!map && NamesResource(s.Find("$id"))) return true;
    for (const auto& [k, v] : s.members) {
      if ((map || IsSubschemaKeyword(k)) && HasResourceId(v, !map && IsSchemaMap(k))) return true;
    }
  }
  return false;
}

// `s` a schema (or an array of them), or with `map` an object whose members are schemas.
// `identified`: reached through subschema keywords only, so that its `$id` names a
// resource (inside an unknown keyword it does not, and the base stays).
void Rewrite(JsonValue* s, std::string base, bool map, bool identified = true) {
  if (s->IsArray()) {
    for (JsonValue& x : s->items) Rewrite(&x, base, false, identified);
    return;
  }
  if (!s->IsObject()) return;
  for (auto& [k, v] : s->members) {
    if (!map && identified && k == "$id" && NamesResource(&v)) {
      Uri id = Split(ResolveUri(base, v.text));
      id.has_fragment = false;  // an empty fragment ("x.json#") names the same resource
      base = v.text = Join(id);
    }
  }
  for (auto& [k, v] : s->members) {
    if (!map && k == "$ref" && v.IsString()) {
      v.text = ResolveUri(base, v.text);
    } else if (map || !IsSchemaData(k)) {
      Rewrite(&v, base, !map && IsSchemaMap(k), identified && (map || IsSubschemaKeyword(k)));
    }
  }
}

// What stays beside a `$ref` in Drafts 3-7: definitions refs may name, and annotations.
// `$id` goes too: beside a `$ref` it does not change the base URI in these drafts.
bool KeptBesideRef(const std::string& key) {
  static const char* kKept[] = {"$ref", "definitions", "$defs", "$schema", "$comment", "title", "description",
                                "default", "examples"};
  return std::any_of(std::begin(kKept), std::end(kKept), [&](const char* k) { return key == k; });
}

// Drafts by number: 3, 4, 6, 7, kDraft2019 (2019-09), and 0 for Draft 2020-12 (or a
// `$schema` xgr2 does not know, which reads as the latest draft, as jsonschema reads it).
constexpr int kDraft2019 = 2019;
constexpr int kDraft2020 = 2020;  // named by `$schema` (0: not named, read leniently)

// Whether a validator of `draft` ignores `keyword`: Draft 6 added const, contains and
// propertyNames and renamed `id` to `$id`, Draft 7 added if / then / else, Draft 2019-09
// the dependent* / unevaluated* / min- and maxContains keywords and `$anchor`, Draft
// 2020-12 prefixItems and the dynamic references.
bool UnknownTo(int draft, const std::string& keyword) {
  static const std::set<std::string> kSince6 = {"const", "contains", "propertyNames", "$id"};
  static const std::set<std::string> kSince7 = {"if", "then", "else"};
  static const std::set<std::string> kSince2019 = {
      "dependentRequired", "dependentSchemas", "unevaluatedProperties", "unevaluatedItems", "minContains",
      "maxContains", "$recursiveRef", "$anchor"};
  static const std::set<std::string> kSince2020 = {"prefixItems", "$dynamicRef", "$dynamicAnchor"};
  if (draft == 0) return false;  // no `$schema`: Draft 7's `dependencies` is read too
  if (draft == kDraft2020) return keyword == "id" || keyword == "dependencies";
  if (draft == kDraft2019) return keyword == "id" || keyword == "dependencies" || kSince2020.count(keyword);
  return (draft < 6 && kSince6.count(keyword)) || (draft >= 6 && keyword == "id") ||
         (draft < 7 && kSince7.count(keyword)) || kSince2019.count(keyword) || kSince2020.count(keyword);
}

// The draft a `$schema` URI names: its meta-schema's URI once normalised as jsonschema
// normalises it (no tabs or line breaks, no leading spaces or controls, the scheme in
// lower case, no empty query or fragment); 0 for any other.
int DraftOfUri(const std::string& text) {
  std::string uri;
  for (char c : text) {
    if (c != '\t' && c != '\r' && c != '\n') uri += c;
  }
  size_t first = 0;  // leading C0 controls and spaces go (Python's urlsplit), trailing ones stay
  while (first < uri.size() && static_cast<unsigned char>(uri[first]) <= 0x20) ++first;
  uri.erase(0, first);
  for (char& c : uri) {
    if (c == ':') break;
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (!uri.empty() && uri.back() == '#') uri.pop_back();
  if (!uri.empty() && uri.back() == '?') uri.pop_back();
  for (int draft : {3, 4, 6, 7}) {
    if (uri == "http://json-schema.org/draft-0" + std::to_string(draft) + "/schema") return draft;
  }
  if (uri == "https://json-schema.org/draft/2019-09/schema") return kDraft2019;
  return uri == "https://json-schema.org/draft/2020-12/schema" ? kDraft2020 : 0;
}

// Where ReadAsDraft is, as steps (an object key, or an array index where the key is
// null): the JSON pointer is only written for an error.
struct DraftPath {
  std::vector<std::pair<const std::string*, size_t>> steps;
  std::string Pointer() const {
    std::string out;
    for (auto [key, index] : steps) out += "/" + (key ? JsonPointerToken(*key) : std::to_string(index));
    return out;
  }
};

// Reads each schema as the draft its document names: in Drafts 4-7 a schema with `$ref`
// is only that reference; keywords of other drafts mean nothing; Draft 4's `id` is the
// `$id` of later drafts. A subschema may repeat the document's `$schema`, not name
// another: which draft a `$ref` target then follows depends on where the reference
// comes from (jsonschema evaluates it by the referring schema's draft).
void ReadAsDraft(JsonValue* s, bool map, int draft, bool* draft4, DraftPath* path) {
  if (s->IsArray()) {
    for (size_t i = 0; i < s->items.size(); ++i) {
      path->steps.emplace_back(nullptr, i);
      ReadAsDraft(&s->items[i], false, draft, draft4, path);
      path->steps.pop_back();
    }
    return;
  }
  if (!s->IsObject()) return;
  auto& m = s->members;
  if (!map) {
    if (const JsonValue* d = s->Find("$schema"); d && d->IsString()) {
      int named = DraftOfUri(d->text);
      auto family = [](int n) { return n == kDraft2020 ? 0 : n; };
      if (!path->steps.empty() && family(named) != family(draft)) {
        throw SchemaError("a subschema names another draft than the document (`$schema`): mixed drafts are not "
                          "supported",
                          path->Pointer() + "/$schema");
      }
      draft = named;
      if (draft == 3) {
        throw SchemaError("Draft 3 schemas are not supported (its required, extends, disallow and divisibleBy)",
                          path->Pointer() + "/$schema");
      }
    }
    if (draft == 4) *draft4 = true;
    if (draft) {
      bool ref = draft <= 7 && s->Find("$ref") != nullptr;
      auto unknown = [&](const auto& kv) { return (ref && !KeptBesideRef(kv.first)) || UnknownTo(draft, kv.first); };
      m.erase(std::remove_if(m.begin(), m.end(), unknown), m.end());
      if (draft == 4) {
        for (auto& [k, v] : m) {
          if (k == "id" && v.IsString()) k = "$id";
        }
      }
    }
  }
  for (auto& [k, v] : m) {
    if (map || !IsSchemaData(k)) {
      path->steps.emplace_back(&k, 0);
      ReadAsDraft(&v, !map && IsSchemaMap(k), draft, draft4, path);
      path->steps.pop_back();
    }
  }
}

}  // namespace

bool IsAbsoluteUri(const std::string& uri) { return !Split(uri).scheme.empty(); }

int DeclaredDraft(const JsonValue& root) {
  const JsonValue* declared = root.IsObject() ? root.Find("$schema") : nullptr;
  int draft = declared && declared->IsString() ? DraftOfUri(declared->text) : 0;
  return draft == 0 ? kDraft2020 : draft;
}

bool ReadAsDeclaredDraft(JsonValue* root) {
  bool draft4 = false;
  DraftPath path;
  ReadAsDraft(root, false, 0, &draft4, &path);
  return draft4;
}

std::string ResolveUri(const std::string& base_text, const std::string& ref_text) {
  Uri base = Split(base_text), ref = Split(ref_text), t;
  if (!ref.scheme.empty()) {
    t = ref;
    t.path = RemoveDotSegments(ref.path);
  } else {
    t.scheme = base.scheme;
    if (ref.has_authority) {
      t.has_authority = true;
      t.authority = ref.authority;
      t.path = RemoveDotSegments(ref.path);
      t.has_query = ref.has_query, t.query = ref.query;
    } else {
      t.has_authority = base.has_authority, t.authority = base.authority;
      if (ref.path.empty()) {
        t.path = base.path;
        t.has_query = ref.has_query || base.has_query;
        t.query = ref.has_query ? ref.query : base.query;
      } else {
        if (ref.path[0] == '/') {
          t.path = RemoveDotSegments(ref.path);
        } else {
          std::string merged = base.has_authority && base.path.empty()
                                   ? "/" + ref.path
                                   : base.path.substr(0, base.path.rfind('/') + 1) + ref.path;
          t.path = RemoveDotSegments(merged);
        }
        t.has_query = ref.has_query, t.query = ref.query;
      }
    }
  }
  t.has_fragment = ref.has_fragment, t.fragment = ref.fragment;
  return Join(t);
}

bool MakeRefsAbsolute(JsonValue* root, bool always, const std::string& base) {
  if (!always && !HasResourceId(*root, false)) return false;
  Rewrite(root, base, false);
  return true;
}

bool IsSchemaData(const std::string& key) {
  return key == "enum" || key == "const" || key == "default" || key == "examples";
}

bool IsSubschemaKeyword(const std::string& key) {
  static const std::set<std::string> kApplicators = {
      "items", "prefixItems", "additionalItems", "additionalProperties", "contains", "propertyNames", "not", "if",
      "then", "else", "allOf", "anyOf", "oneOf", "unevaluatedItems", "unevaluatedProperties", "contentSchema"};
  return kApplicators.count(key) || IsSchemaMap(key);
}

bool IsSchemaMap(const std::string& key) {
  return key == "properties" || key == "patternProperties" || key == "$defs" || key == "definitions" ||
         key == "dependentSchemas" || key == "dependencies";
}

std::string RefForMessage(const std::string& ref) {
  std::string_view doc(kUnnamedDocument), dir = doc.substr(0, doc.rfind('/') + 1);
  if (ref.compare(0, doc.size(), doc) == 0) return ref.substr(doc.size());
  if (ref.compare(0, dir.size(), dir) == 0) return ref.substr(dir.size());
  return ref;
}

}  // namespace xgr2
