#include "frontends/schema_refs.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>

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
      if ((map || !IsSchemaData(k)) && HasResourceId(v, !map && IsSchemaMap(k))) return true;
    }
  }
  return false;
}

// `s` a schema (or an array of them), or with `map` an object whose members are schemas.
void Rewrite(JsonValue* s, std::string base, bool map) {
  if (s->IsArray()) {
    for (JsonValue& x : s->items) Rewrite(&x, base, false);
    return;
  }
  if (!s->IsObject()) return;
  for (auto& [k, v] : s->members) {
    if (!map && k == "$id" && NamesResource(&v)) {
      Uri id = Split(ResolveUri(base, v.text));
      id.has_fragment = false;  // an empty fragment ("x.json#") names the same resource
      base = v.text = Join(id);
    }
  }
  for (auto& [k, v] : s->members) {
    if (!map && k == "$ref" && v.IsString()) {
      v.text = ResolveUri(base, v.text);
    } else if (map || !IsSchemaData(k)) {
      Rewrite(&v, base, !map && IsSchemaMap(k));
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

// Whether a validator of `draft` (3-7) ignores `keyword`: Draft 6 added const, contains
// and propertyNames and renamed `id` to `$id`, Draft 7 added if / then / else, Draft
// 2019-09 and 2020-12 the rest.
bool UnknownTo(int draft, const std::string& keyword) {
  static const std::set<std::string> kSince6 = {"const", "contains", "propertyNames", "$id"};
  static const std::set<std::string> kSince7 = {"if", "then", "else"};
  static const std::set<std::string> kSince2019 = {
      "dependentRequired", "dependentSchemas", "unevaluatedProperties", "unevaluatedItems", "minContains",
      "maxContains", "prefixItems", "$dynamicRef", "$recursiveRef", "$anchor", "$dynamicAnchor"};
  return (draft < 6 && kSince6.count(keyword)) || (draft >= 6 && keyword == "id") ||
         (draft < 7 && kSince7.count(keyword)) || kSince2019.count(keyword);
}

// The draft (3, 4, 6 or 7) of a `$schema` URI, exactly as those drafts name their
// meta-schemas (`#` or not); 0 for any other, which reads as Draft 2020-12.
int DraftOfUri(std::string uri) {
  if (!uri.empty() && uri.back() == '#') uri.pop_back();
  for (int draft : {3, 4, 6, 7}) {
    if (uri == "http://json-schema.org/draft-0" + std::to_string(draft) + "/schema") return draft;
  }
  return 0;
}

// Drafts 3-7: a schema with `$ref` is only that reference, and keywords of other drafts
// mean nothing. A `$schema` sets the draft of the schema it stands in and of those below.
void ReadAsDraft(JsonValue* s, bool map, int draft, bool* draft34) {
  if (s->IsArray()) {
    for (JsonValue& x : s->items) ReadAsDraft(&x, false, draft, draft34);
    return;
  }
  if (!s->IsObject()) return;
  auto& m = s->members;
  if (!map) {
    if (const JsonValue* d = s->Find("$schema"); d && d->IsString()) draft = DraftOfUri(d->text);
    if (draft == 3 || draft == 4) *draft34 = true;
    if (draft) {
      bool ref = s->Find("$ref") != nullptr;
      auto unknown = [&](const auto& kv) { return (ref && !KeptBesideRef(kv.first)) || UnknownTo(draft, kv.first); };
      m.erase(std::remove_if(m.begin(), m.end(), unknown), m.end());
    }
  }
  for (auto& [k, v] : m) {
    if (map || !IsSchemaData(k)) ReadAsDraft(&v, !map && IsSchemaMap(k), draft, draft34);
  }
}

}  // namespace

int DeclaredDraft(const JsonValue& root) {
  const JsonValue* schema = root.IsObject() ? root.Find("$schema") : nullptr;
  return schema && schema->IsString() ? DraftOfUri(schema->text) : 0;
}

bool DropRefSiblingsForOldDrafts(JsonValue* root, bool* draft34) {
  bool any34 = false;
  ReadAsDraft(root, false, 0, &any34);
  if (draft34) *draft34 = any34;
  return DeclaredDraft(*root) != 0;
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

bool MakeRefsAbsolute(JsonValue* root) {
  if (!HasResourceId(*root, false)) return false;
  Rewrite(root, kUnnamedDocument, false);
  return true;
}

bool IsSchemaData(const std::string& key) {
  return key == "enum" || key == "const" || key == "default" || key == "examples";
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
