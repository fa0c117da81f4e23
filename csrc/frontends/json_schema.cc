// JSON Schema -> grammar IR. One rule per object / array / referenced schema (per depth
// in the indent layout); keywords that cannot be expressed exactly follow the
// `unsupported` policy and are never silently dropped.
#include "frontends/json_schema.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>
#include <optional>
#include <set>
#include <stdexcept>

#include "grammar/ir_builder.h"
#include "frontends/excluded_strings.h"
#include "frontends/json_formats.h"
#include "frontends/json_text.h"
#include "frontends/number_range.h"
#include "frontends/regex.h"
#include "frontends/regex_dfa.h"
#include "frontends/schema_refs.h"
#include "grammar/repetition.h"
#include "support/json.h"
#include "support/stack.h"
#include "support/utf8.h"
#include "xgr2/errors.h"

namespace xgr2 {
namespace {

using Kind = JsonValue::Kind;

constexpr int kMaxIndentDepth = 32;   // indent layout: rules per depth up to here
constexpr int kMaxMergeDepth = 64;    // allOf / $ref merges nested deeper are refused
constexpr int kMaxSchemaNesting = 1000;  // subschemas compiled inside one another (C++ frames)
constexpr int kMaxFlattenNesting = 256;  // Flatten calls inside one another (C++ frames)
constexpr size_t kMaxEnumerated = 64;  // uniqueItems: at most this many enumerated values
constexpr size_t kMaxBranches = 256;   // allOf of anyOf / oneOf / if: at most this many combined branches
constexpr int kMaxDisjointDepth = 3;   // Disjoint looks into anyOf / oneOf branches up to this nesting
constexpr int kMaxDisjointNesting = 8; // Disjoint calls inside one another (through merges)
// Merged subschema copies one compile may make (the largest real-world schema seen, 0.2M;
// past 0.5M about 2 GB of memory).
constexpr size_t kMaxKeptSchemas = 500000;
// JSON values one compile may copy or compare (JsonValue::CopiedOnThisThread; copies
// share their children, so a copy counts one value per level changed): a bound on the
// time merges of a recursive schema take (tests/test_bad_input.py's allOf chain of 30
// definitions reaches it in under a second); the real-world schemas of the benchmarks stay below.
constexpr int64_t kMaxCopiedValues = 30000000;

// Internal keywords for the string languages that plain keywords cannot say, compiled
// through regex_dfa.h: `not pattern` (strings matching none of the listed patterns) and
// the patterns that an allOf adds beside `pattern` (strings matching all of them).
const char* const kNotPattern = "$xgr2:notPattern";
const char* const kMorePatterns = "$xgr2:morePatterns";
// true: a number with a fractional part (what `not: {type: integer}` leaves of numbers);
// generated in plain notation only (1.5, not 15e-1: with an exponent, whether a number
// is integral compares two unbounded counts, which no automaton does).
const char* const kNonIntegral = "$xgr2:nonIntegral";

// Keywords that only annotate (or that we may ignore exactly).
const std::set<std::string> kAnnotations = {
    "$schema", "$id", "$comment", "$anchor", "$dynamicAnchor", "$vocabulary", "title", "description", "default",
    "examples", "deprecated", "readOnly", "writeOnly", "$defs", "definitions", "contentEncoding",
    "contentMediaType", "contentSchema", "discriminator"};

// Keywords that constrain values; merged copies of schemas (allOf, $ref, if) keep only
// these, so that annotations such as a large `$defs` are not copied into every branch.
const std::set<std::string> kValidating = {
    "type", "enum", "const", "properties", "required", "additionalProperties", "patternProperties",
    "propertyNames", "minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies",
    "items", "prefixItems", "additionalItems", "contains", "minContains", "maxContains", "minItems", "maxItems",
    "uniqueItems", "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "anyOf", "oneOf", "allOf", "not", "if", "then", "else", "$ref",
    "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef", kNotPattern, kMorePatterns, kNonIntegral};

const char* const kTypes[] = {"null", "boolean", "object", "array", "number", "integer", "string"};

JsonValue Str(const std::string& text) {
  JsonValue v;
  v.kind = JsonValue::Kind::kString;
  v.text = text;
  return v;
}

JsonValue Num(const std::string& text) {
  JsonValue v;
  v.kind = JsonValue::Kind::kNumber;
  v.text = text;
  return v;
}

JsonValue BoolSchema(bool b) {
  JsonValue v;
  v.kind = JsonValue::Kind::kBool;
  v.boolean = b;
  return v;
}

JsonValue Arr(std::vector<JsonValue> items) {
  JsonValue v;
  v.kind = JsonValue::Kind::kArray;
  v.items = std::move(items);
  return v;
}

JsonValue Obj(std::vector<std::pair<std::string, JsonValue>> members) {
  JsonValue v;
  v.kind = JsonValue::Kind::kObject;
  v.members = std::move(members);
  return v;
}

// A rule name from a schema location: letters, digits and `_` only.
std::string RuleNameFor(const std::string& hint) {
  std::string out;
  for (char c : hint) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (ok) out += c;
    else if (!out.empty() && out.back() != '_') out += '_';
    if (out.size() > 40) break;
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out = "s_" + out;
  return out;
}

class SchemaCompiler {
 public:
  SchemaCompiler(const JsonValue& root, const JsonSchemaOptions& opt, GrammarIR* g)
      : root_(root), opt_(opt), b_(g), text_(&b_, MakeLayout(opt)) {
    IndexIds(root_);
    if (!opt.excludes.empty()) {
      excludes_.emplace(opt.excludes);
      text_.SetExcludes(&*excludes_);
    }
  }

  // Draft 4 calls only a number without fraction or exponent an integer (its
  // validators reject 1.0 for `integer`): where any schema is read as one of them,
  // listed integral numbers keep integer syntax (everywhere: narrower elsewhere).
  void SetIntegralAsIntegers(bool on) { text_.SetIntegralAsIntegers(on); }

  struct PendingResource {
    std::string name, uri;
    const std::string* text;
  };

  // The schema's `$schema` (resources without one are read in it) and whether it is Draft 4.
  void SetDraft(const JsonValue& declared, int draft_number, bool draft4) {
    draft_ = declared;
    draft_number_ = draft_number;
    SetIntegralAsIntegers(draft4);
  }

  // The schema's own URI: its `$id` (absolute by now), else the unnamed document's.
  void SetRootBase(const std::string& base, bool has_id) {
    root_base_ = base;
    root_has_id_ = has_id;
  }

  // Another document that `$ref`s may name by `name` (absolute), given as `uri`. Read only
  // when a `$ref` needs it (as jsonschema's registry does): a resource that nothing refers
  // to is never an error. The caller keeps `text` alive while this compiler lives.
  void AddResource(const std::string& name, const std::string& uri, const std::string* text) {
    pending_.push_back({name, uri, text});
    has_resources_ = true;
  }

  // Builds the rule `root` (rule 0) and returns its id.
  int32_t CompileRoot() {
    int32_t root = b_.NewRule("root");
    int32_t body = Schema(root_, "", 0);
    b_.SetBody(root, opt_.document_space ? b_.Seq({text_.DocumentSpace(), body, text_.DocumentSpace()}) : body);
    return root;
  }

  std::vector<std::string> TakeWarnings() { return std::move(warnings_); }

 private:
  // ---------------------------------------------------------------- setup
  static JsonLayout MakeLayout(const JsonSchemaOptions& opt) {
    JsonLayout l;
    l.max_whitespace = opt.max_whitespace;
    if (opt.indent >= 0) {
      l.kind = JsonLayout::Kind::kIndent;
      l.indent = opt.indent;
      l.item_separator = opt.has_separators ? opt.item_separator : ",";
      l.key_separator = opt.has_separators ? opt.key_separator : ": ";
    } else if (opt.has_separators) {
      l.kind = JsonLayout::Kind::kSeparators;
      l.item_separator = opt.item_separator;
      l.key_separator = opt.key_separator;
    } else if (!opt.any_whitespace) {
      l.kind = JsonLayout::Kind::kSeparators;
    }
    return l;
  }

  // $id and $anchor values -> the schema they name (for `$ref`s that are not pointers).
  // Anchors are kept per resource (`base#name`; MakeRefsAbsolute made the `$id`s and
  // `$ref`s of a document with resources absolute) and by name alone.
  void IndexIds(const JsonValue& s, std::string base = kUnnamedDocument, bool map = false) {
    // Two different schemas of one name: which one a `$ref` (or a pointer inside either)
    // means is undefined (Draft 2020-12 §8.2.1 requires identifiers to be unique); a
    // reference that needs it is an error (Resolve).
    auto name_as = [&](const std::string& name) {
      auto [it, fresh] = ids_.emplace(name, &s);
      if (!fresh && it->second != &s && !JsonEqual(*it->second, s)) ambiguous_ids_.insert(name);
      it->second = &s;
    };
    if (s.IsObject()) {
      for (const std::string key : {"$id", "$anchor", "$dynamicAnchor"}) {  // Draft 4's id: made $id (ReadAsDraft)
        const JsonValue* v = s.Find(key);
        if (map || !v || !v->IsString() || v->text.empty()) continue;  // map: names, not keywords
        bool anchor = key == "$anchor" || key == "$dynamicAnchor";  // a plain name: `#name` refers to it
        std::string name = anchor ? "#" + v->text : v->text;
        if (key == "$id" && name[0] != '#') base = name;
        name_as(name);
        if (name[0] == '#') name_as(base + name);  // an anchor, also per resource
      }
      for (const auto& [k, v] : s.members) {
        if (map || IsSubschemaKeyword(k)) IndexIds(v, base, !map && IsSchemaMap(k));
      }
    } else if (s.IsArray()) {
      for (const JsonValue& item : s.items) IndexIds(item, base);
    }
  }

  // ---------------------------------------------------------------- errors
  [[noreturn]] void Fail(const std::string& msg, const std::string& ptr) const { throw SchemaError(msg, ptr); }

  // A keyword we cannot express exactly: an error, or (warn / ignore) widen by skipping it.
  void Unsupported(const std::string& msg, const std::string& ptr) {
    if (opt_.unsupported == UnsupportedPolicy::kError) {
      throw SchemaError(msg, ptr, " (pass unsupported=\"warn\" or \"ignore\" to widen the grammar instead)");
    }
    warnings_.push_back(msg + " at " + (ptr.empty() ? "/" : ptr) + ": ignored, the grammar is wider than the schema");
  }

  // ---------------------------------------------------------------- $ref
  static std::string PercentDecode(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size() && isxdigit(static_cast<unsigned char>(s[i + 1])) &&
          isxdigit(static_cast<unsigned char>(s[i + 2]))) {
        out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        out += s[i];
      }
    }
    return out;
  }

  const JsonValue* FollowPointer(const JsonValue* node, const std::string& pointer, const std::string& ptr) {
    std::string p = PercentDecode(pointer);
    size_t i = 0;
    while (i < p.size()) {
      if (p[i] != '/') Fail("$ref `" + pointer + "` is not a JSON pointer", ptr);
      size_t j = p.find('/', i + 1);
      if (j == std::string::npos) j = p.size();
      std::string token;
      for (size_t k = i + 1; k < j; ++k) {
        if (p[k] == '~' && k + 1 < j && p[k + 1] == '0') token += '~', ++k;
        else if (p[k] == '~' && k + 1 < j && p[k + 1] == '1') token += '/', ++k;
        else token += p[k];
      }
      if (node->IsObject()) {
        node = node->Find(token);
      } else if (node->IsArray()) {
        char* end = nullptr;
        unsigned long idx = std::strtoul(token.c_str(), &end, 10);
        node = (!token.empty() && *end == 0 && idx < node->items.size()) ? &node->items[idx] : nullptr;
      } else {
        node = nullptr;
      }
      if (!node) Fail("$ref `" + pointer + "` points to nothing", ptr);
      i = j;
    }
    return node;
  }

  // The resource with the id `base`; else, in a compile without resources (a name
  // relative to a document that has no $id of its own), an id that ends with it; else null.
  const JsonValue* FindResource(const std::string& base, const std::string& ptr) const {
    auto exact = ids_.find(base);
    if (exact != ids_.end()) return exact->second;
    if (auto failed = unreadable_.find(base); failed != unreadable_.end()) Fail(failed->second, ptr);
    if (has_resources_) return nullptr;
    std::string tail = RefForMessage(base);
    for (const auto& [id, n] : ids_) {
      if (id.size() > tail.size() && id.compare(id.size() - tail.size(), tail.size(), tail) == 0 &&
          id[id.size() - tail.size() - 1] == '/') {
        return n;
      }
    }
    return nullptr;
  }

  // Reads every resource, once, when a `$ref` first names another document than the
  // schema: all of them, so that an `$id` that two documents claim is always seen. A
  // resource that cannot be read is an error only where a `$ref` names it.
  void ReadResources() {
    for (const PendingResource& r : pending_) {
      try {
        ReadResource(r);
      } catch (const SchemaError& e) {
        unreadable_.emplace(r.name, e.what());
      }
    }
    pending_.clear();
    // An `$id` inside a resource that is the schema's own (unnamed) URI: which one a `$ref`
    // means is unclear.
    if (!root_has_id_ && ids_.count(root_base_)) ambiguous_ids_.insert(root_base_);
  }

  // Whether a `$ref` anywhere in `s` has a relative path (neither `#...` nor an absolute URI).
  static bool HasRelativeDocumentRef(const JsonValue& s) {
    if (s.IsArray()) {
      for (const JsonValue& x : s.items) {
        if (HasRelativeDocumentRef(x)) return true;
      }
    } else if (s.IsObject()) {
      for (const auto& [k, v] : s.members) {
        if (k == "$ref" && v.IsString() && !v.text.empty() && v.text[0] != '#' && !IsAbsoluteUri(v.text)) return true;
        if (!IsSchemaData(k) && HasRelativeDocumentRef(v)) return true;
      }
    }
    return false;
  }

  void ReadResource(const PendingResource& r) {
    JsonValue doc;
    try {
      doc = ParseJson(*r.text);
    } catch (const std::invalid_argument& e) {
      Fail("resource `" + r.uri + "` is not valid JSON: " + e.what(), "");
    }
    if (doc.IsObject() && !doc.Find("$schema") && draft_.IsString()) doc.members.emplace_back("$schema", draft_);
    // jsonschema reads a referenced subschema in the referring schema's draft unless it
    // names its own: documents of different drafts are refused, as within one document.
    if (doc.IsObject() && DeclaredDraft(doc) != draft_number_) {
      Fail("resource `" + r.uri + "`: documents of different drafts are not supported", "");
    }
    try {
      ReadAsDeclaredDraft(&doc);
    } catch (const SchemaError& e) {
      Fail("resource `" + r.uri + "`: " + e.what(), "");
    }
    // An `$id` other than its name is the base of its relative references by the standard,
    // while jsonschema's registry resolves them against the name it was reached by: only
    // references that mean the same either way (`#...`, absolute URIs) are accepted then.
    if (const JsonValue* id = doc.IsObject() ? doc.Find("$id") : nullptr; id && id->IsString() && !id->text.empty() &&
                                                                       id->text[0] != '#') {
      std::string named = ResolveUri(r.name, id->text);
      if (size_t hash = named.find('#'); hash != std::string::npos) named.resize(hash);
      if (named != r.name && HasRelativeDocumentRef(doc)) {
        Fail("resource `" + r.uri + "` has the $id `" + RefForMessage(named) +
                 "` and a relative $ref to another document, which the two URIs would resolve differently",
             "");
      }
    }
    MakeRefsAbsolute(&doc, true, r.name);
    const JsonValue& kept = resources_.emplace_back(std::move(doc));
    auto [it, fresh] = ids_.emplace(r.name, &kept);
    if (!fresh && it->second != &kept && !JsonEqual(*it->second, kept)) ambiguous_ids_.insert(r.name);
    IndexIds(kept, r.name);
  }

  const JsonValue* Resolve(const std::string& ref, const std::string& ptr, std::string* target_ptr) {
    size_t hash = ref.find('#');
    std::string base = hash == std::string::npos ? ref : ref.substr(0, hash);
    std::string frag = hash == std::string::npos ? "" : ref.substr(hash + 1);
    const JsonValue* node = &root_;
    if (!pending_.empty() && !base.empty() && base != root_base_) ReadResources();
    if (!base.empty() && base == root_base_ && ambiguous_ids_.count(base)) {
      Fail("$ref `" + RefForMessage(ref) + "`: a resource has an $id that is the schema's own URI", ptr);
    }
    if (!base.empty() && base != root_base_) {
      node = FindResource(base, ptr);
      if (!node) Fail("$ref `" + RefForMessage(ref) + "` names a document that is neither this schema nor one of its resources "
                      "(pass it in resources=)", ptr);
      if (ambiguous_ids_.count(base)) {
        Fail("$ref `" + RefForMessage(ref) + "` is resolved in `" + RefForMessage(base) +
                 "`, the $id of two different schemas",
             ptr);
      }
    }
    if (!frag.empty() && frag[0] != '/') {
      auto it = ids_.find(base + "#" + frag);
      if (it == ids_.end()) it = ids_.find("#" + frag);
      if (it == ids_.end()) Fail("$ref `" + RefForMessage(ref) + "`: no $anchor `" + frag + "`", ptr);
      if (ambiguous_ids_.count(it->first)) Fail("$ref `" + RefForMessage(ref) + "`: two different schemas have its anchor", ptr);
      *target_ptr = RefForMessage(ref);
      return it->second;
    }
    // Inside another document, pointers name it (`r.json/$defs/a`), as whole-document refs do.
    *target_ptr = frag.empty() ? RefForMessage(ref) : node == &root_ ? frag : RefForMessage(base) + frag;
    return FollowPointer(node, frag, ptr);
  }

  // ---------------------------------------------------------------- merging (allOf)
  const JsonValue* Keep(JsonValue v) {
    // Merged copies of a recursive schema can multiply without end (each level merging
    // the next one's allOf anew): bounds on the copies kept and on the values copied,
    // instead of memory exhaustion.
    if (owned_.size() >= kMaxKeptSchemas) {
      Fail("the schema expands past " + std::to_string(kMaxKeptSchemas) +
               " merged subschemas (allOf / $ref merges of a recursive schema?)",
           "");
    }
    CheckWork();
    owned_.push_back(std::move(v));
    return &owned_.back();
  }

  void CheckWork() const {
    if (JsonValue::CopiedOnThisThread() - copied_at_start_ > kMaxCopiedValues) {
      Fail("the schema's merges copy or compare more than " + std::to_string(kMaxCopiedValues / 1000000) +
               " million JSON values (allOf / $ref merges of a recursive schema?)",
           "");
    }
  }

  static std::set<std::string> TypesOf(const JsonValue& s) {
    std::set<std::string> out;
    const JsonValue* t = s.Find("type");
    if (!t) {
      out.insert(std::begin(kTypes), std::end(kTypes));
    } else if (t->IsString()) {
      out.insert(t->text);
    } else {
      for (const JsonValue& x : t->items) out.insert(x.text);
    }
    if (out.count("number")) out.insert("integer");
    return out;
  }

  static JsonValue TypeValue(const std::set<std::string>& types) {
    JsonValue arr = Arr({});
    for (const char* t : kTypes) {
      if (types.count(t) && !(std::string(t) == "integer" && types.count("number"))) arr.items.push_back(Str(t));
    }
    return arr;
  }

  // A schema object with $ref and allOf folded into its keywords (and
  // unevaluatedProperties / Items rewritten first, while its subschemas are still apart).
  const JsonValue* Flatten(const JsonValue* s, const std::string& ptr, int depth) {
    if (s->IsObject() && (s->Find("unevaluatedProperties") || s->Find("unevaluatedItems"))) {
      s = WithoutUnevaluated(s, ptr, depth);
    }
    if (!s->IsObject() || (!s->Find("$ref") && !s->Find("allOf") && !s->Find("if") && !s->Find("dependentSchemas") &&
                           !s->Find("dependencies") && !s->Find("dependentRequired"))) {
      return s;
    }
    auto it = flattened_.find(s);
    if (it != flattened_.end()) return it->second;
    // Flattens inside flattens (merges, and Disjoint / Negation, which start again at
    // depth 0) are C++ frames too: a bound, not a stack overflow (a recursive if / oneOf
    // whose negation flattens the if again overflowed the stack after ~1,600 rounds).
    Nested nesting(&flatten_nesting_);
    if (flatten_nesting_ > kMaxFlattenNesting) {
      Fail("allOf / $ref / if merges nested more than " + std::to_string(kMaxFlattenNesting) +
               " deep (a recursive schema?)",
           ptr);
    }
    if (StackNearlyFull()) Fail(StackMessage("allOf / $ref / if merges", flatten_nesting_), ptr);
    const JsonValue* flat = FlattenOnce(s, ptr, depth);
    flattened_[s] = flat;
    return flat;
  }

  // ---------------------------------------------------------------- unevaluatedProperties / Items
  // `unevaluatedProperties: U` constrains the properties that no keyword of the schema
  // evaluated: its own properties / patternProperties / additionalProperties, and those of
  // the in-place subschemas (allOf, $ref, anyOf, oneOf, if / then / else,
  // dependentSchemas) that validate; `unevaluatedItems` likewise the items past those that
  // prefixItems / items / contains evaluated. Both are rewritten here, before allOf
  // merging mixes the subschemas' evaluations (merged, `{allOf: [{properties: {a},
  // unevaluatedProperties: false}, {properties: {b}}]}` would look as if it allowed `b`):
  //   * evaluations fixed by the schema (own keywords, allOf, $ref): U becomes
  //     `{properties: {n: true}, patternProperties: {p: true}, additionalProperties: U}`
  //     over the names n and patterns p evaluated (items: `{prefixItems: [true] * n,
  //     items: U}`), added to allOf; nothing if some keyword evaluates everything;
  //   * one anyOf, oneOf or if whose branches evaluate: that constraint per branch, with
  //     the branch's evaluations (anyOf: each branch with its own, which is exact when at
  //     most one branch holds and narrower, never wider, when several do; oneOf: exactly
  //     one holds, the branches stay as they are for that count and an anyOf of the
  //     constrained branches is added, or they replace the branches when these are
  //     disjoint; if: `then` adds the evaluations of `if`);
  //   * anything else (two of them, dependentSchemas or contains that evaluate,
  //     evaluations inside a nested anyOf) is refused.
  struct Evaluated {
    std::vector<std::string> names, patterns;  // properties, in the order met (declared order)
    size_t prefix = 0;                          // items: the first `prefix`
    bool all = false;                           // every property / item
  };

  // The keywords that evaluate properties (or items), and what they evaluate.
  static const std::vector<const char*>& EvaluatingKeywords(bool items) {
    static const std::vector<const char*> props = {"properties", "patternProperties", "additionalProperties",
                                                   "unevaluatedProperties"};
    static const std::vector<const char*> its = {"prefixItems", "items", "additionalItems", "contains",
                                                 "unevaluatedItems"};
    return items ? its : props;
  }

  static void AddOwnEvaluations(const JsonValue& s, bool items, Evaluated* out) {
    if (!items) {
      for (const char* k : {"properties", "patternProperties"}) {
        const JsonValue* map = s.Find(k);
        if (!map || !map->IsObject()) continue;
        std::vector<std::string>& list = std::string(k) == "properties" ? out->names : out->patterns;
        for (const auto& m : map->members) {
          if (std::find(list.begin(), list.end(), m.first) == list.end()) list.push_back(m.first);
        }
      }
      if (s.Find("additionalProperties") || s.Find("unevaluatedProperties")) out->all = true;
      return;
    }
    const JsonValue* it = s.Find("items");
    const JsonValue* prefix = s.Find("prefixItems");
    if (prefix && prefix->IsArray()) out->prefix = std::max(out->prefix, prefix->items.size());
    if (it && it->IsArray()) {  // draft 7's tuple; additionalItems covers the rest
      out->prefix = std::max(out->prefix, it->items.size());
      if (s.Find("additionalItems")) out->all = true;
    } else if (it) {
      out->all = true;
    }
    if (s.Find("unevaluatedItems")) out->all = true;
  }

  const JsonValue* RefTarget(const JsonValue& s, const std::string& ptr) {
    const JsonValue* ref = s.Find("$ref");
    if (!ref) return nullptr;
    if (!ref->IsString()) Fail("$ref must be a string", ptr + "/$ref");
    std::string target;
    return Resolve(ref->text, ptr + "/$ref", &target);
  }

  // Whether `s` or an in-place subschema has a keyword that evaluates properties (items).
  bool MayEvaluate(const JsonValue& s, bool items, const std::string& ptr, int depth) {
    if (!s.IsObject()) return false;
    if (depth > kMaxMergeDepth) Fail("allOf / $ref nested too deeply (a $ref that points to itself?)", ptr);
    for (const char* k : EvaluatingKeywords(items)) {
      if (s.Find(k)) return true;
    }
    for (const char* k : {"allOf", "anyOf", "oneOf", "if", "then", "else", "dependentSchemas", "dependencies"}) {
      const JsonValue* x = s.Find(k);
      if (x && ConditionalEvaluations(k, *x, items, ptr, depth)) return true;
    }
    const JsonValue* target = RefTarget(s, ptr);
    return target && MayEvaluate(*target, items, ptr, depth + 1);
  }

  // Whether the value of in-place applicator `k` evaluates properties (items).
  bool ConditionalEvaluations(const std::string& k, const JsonValue& v, bool items, const std::string& ptr,
                              int depth) {
    if (k == "allOf" || k == "anyOf" || k == "oneOf") {
      if (!v.IsArray()) return false;
      for (const JsonValue& x : v.items) {
        if (MayEvaluate(x, items, ptr, depth + 1)) return true;
      }
      return false;
    }
    if (k == "dependentSchemas" || k == "dependencies") {
      if (!v.IsObject()) return false;
      for (const auto& m : v.members) {
        if (MayEvaluate(m.second, items, ptr, depth + 1)) return true;
      }
      return false;
    }
    return MayEvaluate(v, items, ptr, depth + 1);
  }

  // Adds what `s` evaluates whenever it holds; false when that depends on which branch of
  // an anyOf / oneOf / if / dependentSchemas inside it holds, or on contains.
  bool FixedEvaluations(const JsonValue& s, bool items, const std::string& ptr, int depth, Evaluated* out) {
    if (!s.IsObject()) return true;
    if (depth > kMaxMergeDepth) Fail("allOf / $ref nested too deeply (a $ref that points to itself?)", ptr);
    if (items && s.Find("contains")) return false;
    AddOwnEvaluations(s, items, out);
    for (const char* k : {"anyOf", "oneOf", "if", "then", "else", "dependentSchemas", "dependencies"}) {
      const JsonValue* x = s.Find(k);
      if (x && ConditionalEvaluations(k, *x, items, ptr, depth)) return false;
    }
    if (const JsonValue* all = s.Find("allOf"); all && all->IsArray()) {
      for (const JsonValue& x : all->items) {
        if (!FixedEvaluations(x, items, ptr, depth + 1, out)) return false;
      }
    }
    const JsonValue* target = RefTarget(s, ptr);
    return !target || FixedEvaluations(*target, items, ptr, depth + 1, out);
  }

  // Every property (item) outside `e` must match `u`.
  static JsonValue OutsideMustMatch(const Evaluated& e, const JsonValue& u, bool items) {
    if (items) {
      JsonValue prefix = Arr({});
      for (size_t i = 0; i < e.prefix; ++i) prefix.items.push_back(BoolSchema(true));
      return Obj({{"prefixItems", prefix}, {"items", u}});
    }
    JsonValue names = Obj({}), patterns = Obj({});
    for (const std::string& n : e.names) names.members.emplace_back(n, BoolSchema(true));
    for (const std::string& p : e.patterns) patterns.members.emplace_back(p, BoolSchema(true));
    return Obj({{"properties", names}, {"patternProperties", patterns}, {"additionalProperties", u}});
  }

  // `branch` (absent: true) with the constraint of `u` outside `base`, the branch's own
  // evaluations and those of `extra` (the `if` beside a `then`); nullopt if not fixed.
  std::optional<JsonValue> Constrained(const JsonValue* branch, const Evaluated& base, const JsonValue* extra,
                                       const JsonValue& u, bool items, const std::string& ptr) {
    Evaluated e = base;
    if (branch && !FixedEvaluations(*branch, items, ptr, 1, &e)) return std::nullopt;
    if (extra && !FixedEvaluations(*extra, items, ptr, 1, &e)) return std::nullopt;
    JsonValue b = branch ? *branch : BoolSchema(true);
    if (e.all) return b;
    return Obj({{"allOf", Arr({b, OutsideMustMatch(e, u, items)})}});
  }

  const JsonValue* WithoutUnevaluated(const JsonValue* s, const std::string& ptr, int depth) {
    auto it = rewritten_.find(s);
    if (it != rewritten_.end()) return it->second;
    const JsonValue* out = s;
    for (bool items : {false, true}) {
      if (out->Find(items ? "unevaluatedItems" : "unevaluatedProperties")) out = RewriteUnevaluated(*out, items, ptr, depth);
    }
    return rewritten_[s] = out;
  }

  const JsonValue* RewriteUnevaluated(const JsonValue& s, bool items, const std::string& ptr, int depth) {
    const std::string keyword = items ? "unevaluatedItems" : "unevaluatedProperties";
    const JsonValue& u = *s.Find(keyword);
    std::string uptr = ptr + "/" + keyword;
    JsonValue out = WithoutKey(s, keyword);
    auto refuse = [&](const std::string& why) -> const JsonValue* {
      Unsupported("`" + keyword + "` " + why, uptr);
      return Keep(std::move(out));  // warn / ignore: left out (wider)
    };
    const std::string nested = "where a nested anyOf / oneOf / if" + std::string(items ? " or contains" : "") +
                               " decides what is evaluated";
    if (!u.IsBool() && !u.IsObject()) Fail(keyword + " must be a schema", uptr);
    if (u.IsBool() && u.boolean) return Keep(std::move(out));
    // The conditional applicators whose branches evaluate: at most one.
    std::vector<std::string> conditional;
    for (const char* k : {"anyOf", "oneOf", "if", "dependentSchemas", "dependencies"}) {
      const JsonValue* x = out.Find(k);
      bool evaluates = x && ConditionalEvaluations(k, *x, items, ptr, depth);
      if (std::string(k) == "if" && x) {
        for (const char* branch : {"then", "else"}) {
          if (const JsonValue* b = out.Find(branch)) evaluates = evaluates || MayEvaluate(*b, items, ptr, depth + 1);
        }
      }
      if (evaluates) conditional.push_back(k);
    }
    if (conditional.size() > 1) return refuse("beside more than one of anyOf / oneOf / if that evaluate");
    if (!conditional.empty() && conditional[0] != "anyOf" && conditional[0] != "oneOf" && conditional[0] != "if") {
      return refuse("beside " + conditional[0] + " that evaluate");
    }
    JsonValue fixed = out;
    if (!conditional.empty()) {
      for (const char* k : conditional[0] == "if" ? std::vector<const char*>{"if", "then", "else"}
                                                  : std::vector<const char*>{conditional[0].c_str()}) {
        fixed = WithoutKey(fixed, k);
      }
    }
    Evaluated base;
    if (!FixedEvaluations(fixed, items, ptr, depth, &base)) return refuse(nested);
    auto add_to_all_of = [&](JsonValue part) {
      const JsonValue* old = out.Find("allOf");
      JsonValue list = old && old->IsArray() ? *old : Arr({});
      list.items.push_back(std::move(part));
      out = WithoutKey(out, "allOf");
      out.members.emplace_back("allOf", std::move(list));
    };
    auto replace = [&](const std::string& k, JsonValue v) {
      out = WithoutKey(out, k);
      out.members.emplace_back(k, std::move(v));
    };
    if (conditional.empty()) {
      if (!base.all) add_to_all_of(OutsideMustMatch(base, u, items));
    } else if (conditional[0] == "if") {
      const JsonValue* cond = out.Find("if");
      std::optional<JsonValue> then = Constrained(out.Find("then"), base, cond, u, items, ptr + "/then");
      std::optional<JsonValue> otherwise = Constrained(out.Find("else"), base, nullptr, u, items, ptr + "/else");
      if (!then || !otherwise) return refuse(nested);
      replace("then", std::move(*then));
      replace("else", std::move(*otherwise));
    } else {
      const std::string k = conditional[0];
      const JsonValue& branches = *out.Find(k);
      if (!branches.IsArray()) Fail(k + " must be a non-empty array", ptr + "/" + k);
      JsonValue each = Arr({});
      for (size_t i = 0; i < branches.items.size(); ++i) {
        std::optional<JsonValue> c =
            Constrained(&branches.items[i], base, nullptr, u, items, ptr + "/" + k + "/" + std::to_string(i));
        if (!c) return refuse(nested);
        each.items.push_back(std::move(*c));
      }
      if (k == "anyOf" || BranchesDisjoint(branches.items)) {
        replace(k, std::move(each));  // oneOf of disjoint branches: at most one holds anyway
      } else {
        add_to_all_of(Obj({{"anyOf", std::move(each)}}));
      }
    }
    return Keep(std::move(out));
  }

  // ---------------------------------------------------------------- conditionals by case
  // An allOf of `if` / `then` / `else` whose `if`s test one property P by const / enum
  // (cfn-lint's version tables: if Engine is X then EngineVersion is one of ...):
  // distributing them pair by pair multiplies their branches. Instead, one case per tested
  // value of P, plus P with another value, P absent and not an object (together every JSON
  // value); in each case each `if`'s test of P is decided, leaving its `then`, its `else`,
  // or a conditional on the rest of the `if`. The grammar accepts the same JSON values as
  // without the split, under strict too (each `if`'s names stay declared, see
  // IfDeclarations), in the same property order unless the allOf has other items after
  // its first conditional (pair-by-pair merging moves those names first or last
  // depending on where they stand) or an `if` tests more than P (a case keeps a
  // conditional on the rest, whose names may then come after later items');
  // tests/test_json_schema_case_split.py compares both.
  // Marks the items it took in `split`; nullptr when the allOf does not have that shape.
  const JsonValue* SplitByDiscriminator(const std::vector<JsonValue>& items, std::vector<bool>* split) {
    constexpr size_t kMinConditionals = 3, kMaxValues = 64;
    struct Cond {
      size_t item;
      const JsonValue *when, *then, *otherwise;
    };
    std::vector<Cond> conds;
    for (size_t i = 0; i < items.size(); ++i) {
      const JsonValue& c = items[i];
      const JsonValue* when = c.IsObject() ? c.Find("if") : nullptr;
      if (!when || !when->IsObject()) continue;
      bool plain = true;
      for (const auto& [k, v] : c.members) plain = plain && (k == "if" || k == "then" || k == "else" || kAnnotations.count(k));
      for (const auto& [k, v] : when->members) {
        plain = plain && (k == "properties" || k == "required" || kAnnotations.count(k) ||
                          (k == "type" && v.IsString() && v.text == "object"));
      }
      const JsonValue *props = when->Find("properties"), *req = when->Find("required");
      plain = plain && (!props || props->IsObject()) && (!req || req->IsArray());
      // Without then and else a conditional adds nothing (Conditional): left out.
      const JsonValue *then = c.Find("then"), *otherwise = c.Find("else");
      if (plain && (then || otherwise)) conds.push_back({i, when, then, otherwise});
    }
    if (conds.size() < kMinConditionals) return nullptr;
    // P: the property that most `if`s require and test by const / enum.
    auto requires = [](const JsonValue& when, const std::string& name) {
      const JsonValue* req = when.Find("required");
      if (!req) return false;
      for (const JsonValue& r : req->items) {
        if (r.IsString() && r.text == name) return true;
      }
      return false;
    };
    auto test_of = [](const JsonValue& when, const std::string& name) -> const JsonValue* {
      const JsonValue* props = when.Find("properties");
      return props ? props->Find(name) : nullptr;
    };
    auto listed = [](const JsonValue* test) -> std::vector<JsonValue> {
      if (!test || !test->IsObject()) return {};
      for (const auto& [k, v] : test->members) {
        if (k != "const" && k != "enum" && k != "type" && !kAnnotations.count(k)) return {};
      }
      if (const JsonValue* c = test->Find("const")) return {*c};
      if (const JsonValue* e = test->Find("enum"); e && e->IsArray()) return e->items;
      return {};
    };
    std::map<std::string, size_t> votes;
    for (const Cond& c : conds) {
      if (const JsonValue* props = c.when->Find("properties")) {
        for (const auto& [name, test] : props->members) {
          if (requires(*c.when, name) && !listed(&test).empty()) ++votes[name];
        }
      }
    }
    std::string p;
    size_t best = 1;
    for (const auto& [name, n] : votes) {
      if (n > best) p = name, best = n;
    }
    if (p.empty()) return nullptr;
    std::vector<JsonValue> values;
    for (const Cond& c : conds) {
      for (const JsonValue& v : listed(test_of(*c.when, p))) {
        if (!Contains(values, v)) values.push_back(v);
      }
    }
    if (values.size() > kMaxValues) return nullptr;
    // Whether the `if` of `c` holds on its P part for a P of value `v` (-1: undecided).
    auto p_test = [&](const Cond& c, const JsonValue& v) -> int {
      const JsonValue* test = test_of(*c.when, p);
      if (!test || (test->IsBool() && test->boolean)) return 1;
      if (!test->IsObject()) return -1;
      if (!HasType(TypesOf(*test), v)) return 0;
      for (const auto& [k, kv] : test->members) {
        if (k == "type" || kAnnotations.count(k)) continue;
        int verdict;
        if (k == "const") {
          verdict = JsonEqual(kv, v);
        } else if (k == "enum") {
          if (!kv.IsArray()) return -1;
          verdict = Contains(kv.items, v);
        } else {
          verdict = ValuePasses(k, kv, v);
        }
        if (verdict <= 0) return verdict;
      }
      return 1;
    };
    auto without_p = [&](const JsonValue& when) {
      JsonValue rest = Obj({});
      for (const auto& [k, v] : when.members) {
        if (k == "properties") {
          JsonValue props = WithoutKey(v, p);
          if (!props.members.empty()) rest.members.emplace_back(k, props);
        } else if (k == "required") {
          JsonValue req = Arr({});
          for (const JsonValue& r : v.items) {
            if (!(r.IsString() && r.text == p)) req.items.push_back(r);
          }
          if (!req.items.empty()) rest.members.emplace_back(k, req);
        } else if (!kAnnotations.count(k) && k != "type") {  // type object: holds in these cases
          rest.members.emplace_back(k, v);
        }
      }
      return rest;
    };
    auto outcome = [&](const Cond& c, int holds, JsonValue* all) {
      // The `if`'s names stay declared whatever is decided (as in Conditional).
      if (std::optional<JsonValue> declared = IfDeclarations(*c.when, "", 0)) all->items.push_back(std::move(*declared));
      const JsonValue& original = items[c.item];
      if (holds < 0) return all->items.push_back(original);
      if (!holds) return all->items.push_back(c.otherwise ? *c.otherwise : BoolSchema(true));
      JsonValue rest = without_p(*c.when);
      if (rest.members.empty()) return all->items.push_back(c.then ? *c.then : BoolSchema(true));
      JsonValue cond = Obj({{"if", rest}});
      if (c.then) cond.members.emplace_back("then", *c.then);
      if (c.otherwise) cond.members.emplace_back("else", *c.otherwise);
      all->items.push_back(cond);
    };
    // A case merges the conditionals in their order: merging sets the order of the
    // declared properties (the grammar's order), which must stay that of the allOf. So the
    // case's constraint on P's value merges last (P is declared where the first `if` that
    // tests it declares it); its type and required go first, which lets merging drop
    // contradicting branches early (10x faster on cfn-lint's RDS table than last).
    JsonValue cases = Arr({});
    auto add_case = [&](JsonValue constraint, const std::function<int(const Cond&)>& holds) {
      JsonValue all = Arr({WithoutKey(constraint, "properties")});
      for (const Cond& c : conds) outcome(c, holds(c), &all);
      if (const JsonValue* props = constraint.Find("properties")) all.items.push_back(Obj({{"properties", *props}}));
      cases.items.push_back(Obj({{"allOf", std::move(all)}}));
    };
    for (const JsonValue& v : values) {
      add_case(Obj({{"type", Str("object")}, {"required", Arr({Str(p)})}, {"properties", Obj({{p, Obj({{"const", v}})}})}}),
               [&](const Cond& c) { return p_test(c, v); });
    }
    // P with a value no `if` lists: a listed-values test fails, others stay undecided.
    add_case(Obj({{"type", Str("object")}, {"required", Arr({Str(p)})},
                  {"properties", Obj({{p, Obj({{"not", Obj({{"enum", Arr(values)}})}})}})}}),
             [&](const Cond& c) { return listed(test_of(*c.when, p)).empty() ? -1 : 0; });
    // P absent: an `if` that requires it fails.
    add_case(Obj({{"type", Str("object")}, {"properties", Obj({{p, BoolSchema(false)}})}}),
             [&](const Cond& c) { return requires(*c.when, p) ? 0 : -1; });
    // Not an object: `properties` and `required` hold vacuously; `type: object` fails.
    add_case(Obj({{"type", Arr({Str("null"), Str("boolean"), Str("number"), Str("string"), Str("array")})}}),
             [&](const Cond& c) {
               const JsonValue* t = c.when->Find("type");
               return t ? 0 : 1;
             });
    for (const Cond& c : conds) (*split)[c.item] = true;
    return Keep(Obj({{"anyOf", std::move(cases)}}));
  }

  // A schema that is only a `$ref` (and annotations): its target, else itself.
  const JsonValue* PureRefTarget(const JsonValue* s, const std::string& ptr, std::string* target_ptr) {
    for (int hops = 0; s->IsObject() && s->Find("$ref"); ++hops) {
      for (const auto& m : s->members) {
        if (m.first != "$ref" && !kAnnotations.count(m.first)) return s;
      }
      if (hops > kMaxMergeDepth) Fail("$ref chain too long (a $ref that points to itself?)", ptr);
      const JsonValue* ref = s->Find("$ref");
      if (!ref->IsString()) Fail("$ref must be a string", ptr + "/$ref");
      s = Resolve(ref->text, ptr + "/$ref", target_ptr);
    }
    return s;
  }

  const JsonValue* FlattenOnce(const JsonValue* s, const std::string& ptr, int depth) {
    if (depth > kMaxMergeDepth) Fail("allOf / $ref merges nested too deeply (a recursive allOf?)", ptr);
    JsonValue base = Obj({});
    std::vector<std::pair<const JsonValue*, std::string>> parts;
    for (const auto& [k, v] : s->members) {
      if (k == "$ref") {
        if (!v.IsString()) Fail("$ref must be a string", ptr + "/$ref");
        std::string target;
        parts.push_back({Resolve(v.text, ptr + "/$ref", &target), target});
      } else if (k == "allOf") {
        if (!v.IsArray() || v.items.empty()) Fail("allOf must be a non-empty array", ptr + "/allOf");
        // The case split, if it applies, takes the place of the first conditional it covers.
        std::vector<bool> split(v.items.size(), false);
        const JsonValue* cases = SplitByDiscriminator(v.items, &split);
        for (size_t i = 0; i < v.items.size(); ++i) {
          if (!split[i]) parts.push_back({&v.items[i], ptr + "/allOf/" + std::to_string(i)});
          else if (cases) parts.push_back({std::exchange(cases, nullptr), ptr + "/allOf"});
        }
      } else if (k == "if") {
        const JsonValue *then = s->Find("then"), *otherwise = s->Find("else");
        if (const JsonValue* c = Conditional(v, then, otherwise, ptr, depth)) parts.push_back({c, ptr + "/if"});
      } else if (k == "then" || k == "else") {
        continue;  // read with `if`; without one they mean nothing
      } else if (k == "dependentSchemas" || k == "dependencies" || k == "dependentRequired") {
        // An object with property `name` must also match the schema, or have the listed
        // properties (an array: dependentRequired, also in draft 7's `dependencies`).
        if (!v.IsObject()) Fail(k + " must be an object", ptr + "/" + k);
        for (const auto& [name, sub] : v.members) {
          std::string sub_ptr = ptr + "/" + k + "/" + JsonPointerToken(name);
          if (k == "dependentRequired" && !sub.IsArray()) Fail("dependentRequired must map names to arrays", sub_ptr);
          if (sub.IsArray()) {
            for (const JsonValue& dep : sub.items) {
              if (!dep.IsString()) Fail(k + " must list property names", sub_ptr);
            }
          }
          const JsonValue* cond = Keep(Obj({{"type", Str("object")}, {"required", Arr({Str(name)})}}));
          const JsonValue* then = sub.IsArray() ? Keep(Obj({{"required", sub}})) : &sub;
          if (const JsonValue* c = Conditional(*cond, then, nullptr, sub_ptr, depth)) parts.push_back({c, sub_ptr});
        }
      } else if (kValidating.count(k)) {
        base.members.emplace_back(k, v);
      }
    }
    return MergeParts(Keep(std::move(base)), parts, depth);
  }

  // `merged` with each part's flattened keywords folded in.
  const JsonValue* MergeParts(const JsonValue* merged, const std::vector<std::pair<const JsonValue*, std::string>>& parts,
                              int depth) {
    for (auto& [part, part_ptr] : parts) {
      const JsonValue* flat = Flatten(part, part_ptr, depth + 1);
      if (flat->IsBool()) {
        if (!flat->boolean) return flat;
        continue;
      }
      merged = Keep(Merge(*merged, *flat, part_ptr, depth));
      if (merged->IsBool()) return merged;  // no value meets both
    }
    return merged;
  }

  // Flatten(Keep(AllOf(x, y)), ptr, 0) without the copies of x and y into a new allOf
  // (each anyOf / oneOf branch of a large schema merges the keywords beside it; copying
  // those per branch was a fifth of azure-pipelines' compile). `x` and `y` must outlive
  // the compiler (Flatten keeps results by address). The merge of x alone is kept by
  // x's address: every branch of a combinator starts from the same keywords beside it.
  const JsonValue* FlatAllOf(const JsonValue& x, const JsonValue& y, const std::string& ptr) {
    const JsonValue*& alone = merged_alone_[&x];
    if (!alone) alone = MergeParts(Keep(Obj({})), {{&x, ptr + "/allOf/0"}}, 0);
    if (alone->IsBool()) return alone;  // false: no value meets x
    return MergeParts(alone, {{&y, ptr + "/allOf/1"}}, 0);
  }

  JsonValue Merge(const JsonValue& a, const JsonValue& b, const std::string& ptr, int depth) {
    JsonValue out = a;
    auto set = [&](const std::string& k, JsonValue v) {
      for (auto& m : out.members) {
        if (m.first == k) return void(m.second = std::move(v));
      }
      out.members.emplace_back(k, std::move(v));
    };
    for (const auto& [k, v] : b.members) {
      if (!kValidating.count(k)) continue;
      if (k == "items" || k == "prefixItems" || k == "additionalItems") continue;  // MergeArrayItems
      if (k == kNotPattern || k == kMorePatterns) {  // lists (also grown by `pattern` below): joined
        const JsonValue* have = out.Find(k);
        JsonValue list = have ? *have : Arr({});
        list.items.insert(list.items.end(), v.items.begin(), v.items.end());
        set(k, list);
        continue;
      }
      const JsonValue* mine = a.Find(k);
      if (mine && JsonEqual(*mine, v)) continue;
      if (k == "enum" || k == "const") {
        // Values listed on both sides, as one enum (const and enum side by side would be
        // read as the const alone).
        const JsonValue *oc = out.Find("const"), *oe = out.Find("enum");
        bool arrays = (!oe || oe->IsArray()) && (k != "enum" || v.IsArray());
        if ((oc || oe) && arrays) {
          auto listed_in = [](const std::vector<JsonValue>& xs, const std::vector<JsonValue>& ys) {
            JsonValue both = Arr({});
            for (const JsonValue& x : xs) {
              for (const JsonValue& y : ys) {
                if (JsonEqual(x, y)) both.items.push_back(x);
              }
            }
            return both.items;
          };
          std::vector<JsonValue> xs = oc ? std::vector<JsonValue>{*oc} : oe->items;
          if (oc && oe) xs = listed_in(xs, oe->items);  // written side by side
          JsonValue both = Arr(listed_in(xs, k == "const" ? std::vector<JsonValue>{v} : v.items));
          out = WithoutKey(WithoutKey(out, "const"), "enum");
          set("enum", both);
          continue;
        }
      }
      if (!mine) {
        set(k, v);
        continue;
      }
      if (k == "type") {
        std::set<std::string> x = TypesOf(a), y = TypesOf(b), both;
        for (const auto& t : x) {
          if (y.count(t)) both.insert(t);
        }
        set(k, TypeValue(both));
      } else if (k == "required") {
        JsonValue r = *mine;
        for (const JsonValue& name : v.items) {
          bool have = false;
          for (const JsonValue& n : r.items) have = have || JsonEqual(n, name);
          if (!have) r.items.push_back(name);
        }
        set(k, r);
      } else if (k == "properties" || k == "patternProperties") {
        JsonValue p = *mine;
        for (const auto& [name, sub] : v.members) {
          const JsonValue* old = p.Find(name);
          if (!old) {
            p.members.emplace_back(name, sub);
          } else {
            JsonValue both = AllOf(*old, sub);
            for (auto& m : p.members) if (m.first == name) m.second = both;
          }
        }
        set(k, p);
      } else if (k == "minimum" || k == "exclusiveMinimum" || k == "minLength" || k == "minItems" ||
                 k == "minProperties" || k == "minContains") {
        if (mine->IsNumber() && v.IsNumber()) {
          if (CompareDecimal(ParseDecimal(v.text), ParseDecimal(mine->text)) > 0) set(k, v);
        } else {
          Unsupported("cannot merge `" + k + "` values in allOf", ptr);
        }
      } else if (k == "maximum" || k == "exclusiveMaximum" || k == "maxLength" || k == "maxItems" ||
                 k == "maxProperties" || k == "maxContains") {
        if (mine->IsNumber() && v.IsNumber()) {
          if (CompareDecimal(ParseDecimal(v.text), ParseDecimal(mine->text)) < 0) set(k, v);
        } else {
          Unsupported("cannot merge `" + k + "` values in allOf", ptr);
        }
      } else if (k == "enum" || k == "const") {
        JsonValue both = Arr({});
        std::vector<JsonValue> xs = k == "const" ? std::vector<JsonValue>{*mine} : mine->items;
        std::vector<JsonValue> ys = k == "const" ? std::vector<JsonValue>{v} : v.items;
        for (const JsonValue& x : xs) {
          for (const JsonValue& y : ys) {
            if (JsonEqual(x, y)) both.items.push_back(x);
          }
        }
        set("enum", both);
        if (k == "const") out = WithoutKey(out, "const");
      } else if (k == "additionalProperties" || k == "propertyNames") {
        set(k, AllOf(*mine, v));
      } else if (k == "uniqueItems") {
        set(k, mine->boolean ? *mine : v);
      } else if (k == "pattern") {
        const JsonValue* more = out.Find(kMorePatterns);
        JsonValue list = more ? *more : Arr({});
        list.items.push_back(v);
        set(kMorePatterns, list);

      } else if (k == "anyOf" || k == "oneOf") {
        // Both sides have one: a branch per pair, each with the other keywords of both
        // sides; pairs that no value can meet are left out. (oneOf: pairs of disjoint
        // branches are disjoint, so exactly one pair holds iff one branch of each does.)
        if (!mine->IsArray() || !v.IsArray()) Fail(k + " must be a non-empty array", ptr + "/" + k);
        if (mine->items.size() * v.items.size() > kMaxBranches) {
          Unsupported("allOf of " + k + " / if combinations with more than " + std::to_string(kMaxBranches) +
                          " branches",
                      ptr);
          continue;
        }
        JsonValue rest_a = WithoutKey(a, k), rest_b = WithoutKey(b, k);
        JsonValue arr = Arr({});
        for (const JsonValue& x : mine->items) {
          for (const JsonValue& y : v.items) {
            const JsonValue* fx = Flatten(Keep(AllOf(rest_a, x)), ptr, depth + 1);
            const JsonValue* fy = Flatten(Keep(AllOf(rest_b, y)), ptr, depth + 1);
            if (Disjoint(*fx, *fy)) continue;
            arr.items.push_back(AllOf(*fx, *fy));
          }
        }
        if (arr.items.empty()) return BoolSchema(false);
        return Obj({{k, arr}});
      } else if (std::optional<std::string> lcm = k == "multipleOf" && mine->IsNumber() && v.IsNumber()
                                                     ? LeastCommonMultiple(mine->text, v.text)
                                                     : std::nullopt) {
        set(k, Num(*lcm));  // a multiple of both
      } else if (k == "not") {
        const JsonValue *ea = OnlyEnum(*mine), *eb = OnlyEnum(v);
        if (ea && eb) {  // not in A and not in B: not in A + B
          JsonValue both = *ea;
          both.items.insert(both.items.end(), eb->items.begin(), eb->items.end());
          set(k, Obj({{"enum", both}}));
        } else {
          set(k, Obj({{"anyOf", Arr({*mine, v})}}));
        }
      } else {
        Unsupported("allOf with two different `" + k + "` values", ptr);
      }
    }
    MergeArrayItems(a, b, &out);
    ConstrainAdditional(a, &out, ptr);
    ConstrainAdditional(b, &out, ptr);
    ConstrainOtherPatterns(a, b, &out, ptr);
    ConstrainOtherPatterns(b, a, &out, ptr);
    return out;
  }

  // The least common multiple of two positive decimals (a multiple of both is a multiple
  // of it: with both scaled to integers p / 10^e and q / 10^e, lcm(p, q) / 10^e), as a
  // JSON number; nullopt when either is not positive or the result needs over 36 digits.
  static std::optional<std::string> LeastCommonMultiple(const std::string& a, const std::string& b) {
    DecimalNumber x = ParseDecimal(a), y = ParseDecimal(b);
    if (x.negative || y.negative || x.digits.empty() || y.digits.empty()) return std::nullopt;
    int64_t e = std::min(x.exponent, y.exponent);
    using Wide = unsigned __int128;
    const Wide kLimit = Wide{1000000000000000000ull} * 1000000000000000000ull;  // 10^36
    auto scaled = [&](const DecimalNumber& d) -> std::optional<Wide> {
      if (d.digits.size() + static_cast<size_t>(d.exponent - e) > 36) return std::nullopt;
      Wide n = 0;
      for (char c : d.digits) n = n * 10 + static_cast<unsigned>(c - '0');
      for (int64_t i = e; i < d.exponent; ++i) n *= 10;
      return n;
    };
    std::optional<Wide> p = scaled(x), q = scaled(y);
    if (!p || !q) return std::nullopt;
    Wide g = *p, h = *q;
    while (h) g %= h, std::swap(g, h);
    Wide m = *p / g;
    if (m > kLimit / *q) return std::nullopt;
    m *= *q;
    std::string digits;
    for (; m; m /= 10) digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
    return e == 0 ? digits : digits + "e" + std::to_string(e);
  }

  // The item keywords of one schema, read as ArrayExpr reads them: a prefix of
  // per-position schemas (`prefixItems`, or Draft 4-7's `items` array) and the schema of
  // every later position (`items`, or `additionalItems` after an `items` array); null
  // where a keyword is absent (anything goes).
  struct ItemSchemas {
    const JsonValue* prefix = nullptr;
    const JsonValue* rest = nullptr;
  };
  static ItemSchemas ItemSchemasOf(const JsonValue& s) {
    const JsonValue* items = s.Find("items");
    if (items && items->IsArray()) return {items, s.Find("additionalItems")};
    const JsonValue* prefix = s.Find("prefixItems");
    return {prefix && prefix->IsArray() ? prefix : nullptr, items};
  }

  // allOf of two schemas' item keywords, position by position: a side without a prefix
  // applies its `items` to every position, also to those the other side's prefix names
  // (`{allOf: [{prefixItems: [A]}], items: B}` holds item 0 to A and B). Written in the
  // Draft 2020-12 form into `out` (a's keywords merged with b's).
  static void MergeArrayItems(const JsonValue& a, const JsonValue& b, JsonValue* out) {
    for (const JsonValue* side : {&a, &b}) {
      const JsonValue* prefix = side->Find("prefixItems");
      if (prefix && !prefix->IsArray()) {  // kept as written, for ArrayExpr's error
        *out = WithoutKey(*out, "prefixItems");
        out->members.emplace_back("prefixItems", *prefix);
        return;
      }
    }
    ItemSchemas x = ItemSchemasOf(a), y = ItemSchemasOf(b);
    if (!y.prefix && !y.rest) return;  // out holds a's own
    for (const char* k : {"items", "prefixItems", "additionalItems"}) *out = WithoutKey(*out, k);
    auto both = [](const JsonValue* p, const JsonValue* q) -> std::optional<JsonValue> {
      if (!p && !q) return std::nullopt;
      if (!p || !q) return p ? *p : *q;
      return JsonEqual(*p, *q) ? *p : AllOf(*p, *q);
    };
    size_t nx = x.prefix ? x.prefix->items.size() : 0, ny = y.prefix ? y.prefix->items.size() : 0;
    if (std::max(nx, ny) > 0) {
      JsonValue prefix = Arr({});
      for (size_t i = 0; i < std::max(nx, ny); ++i) {
        std::optional<JsonValue> at = both(i < nx ? &x.prefix->items[i] : x.rest, i < ny ? &y.prefix->items[i] : y.rest);
        prefix.items.push_back(at ? *at : BoolSchema(true));
      }
      out->members.emplace_back("prefixItems", std::move(prefix));
    }
    if (std::optional<JsonValue> rest = both(x.rest, y.rest)) out->members.emplace_back("items", std::move(*rest));
  }

  // A name that one side of a merge declares is an additional property of the other
  // side, unless one of that side's patternProperties matches it (whose schema then
  // applies through the merged patternProperties): its value must also meet that side's
  // additionalProperties (`false`: absent).
  void ConstrainAdditional(const JsonValue& side, JsonValue* merged, const std::string& ptr) {
    const JsonValue* addl = side.Find("additionalProperties");
    if (!addl || (addl->IsBool() && addl->boolean)) return;
    const JsonValue* own = side.Find("properties");
    const JsonValue* patterns = side.Find("patternProperties");
    auto matches_pattern = [&](const std::string& name) {
      if (!patterns || !patterns->IsObject()) return false;
      for (const auto& [pattern, schema] : patterns->members) {
        std::string pp = ptr + "/patternProperties/" + JsonPointerToken(pattern);
        try {
          if (PatternDfa(pattern, pp).Accepts(name)) return true;
        } catch (const DfaLimitError& e) {
          Unsupported(e.what(), pp);
          return true;  // (when ignored: the pattern's schema, not additionalProperties)
        }
      }
      return false;
    };
    for (auto& [k, props] : merged->members) {
      if (k != "properties" || !props.IsObject()) continue;
      for (auto& [name, sub] : props.members) {
        if ((own && own->IsObject() && own->Find(name)) || matches_pattern(name)) continue;
        sub = addl->IsBool() ? BoolSchema(false) : AllOf(sub, *addl);
      }
    }
  }

  // A key that only the other side's patternProperties match is an additional property
  // of `side`: the merged pattern's schema also takes `side`'s additionalProperties.
  // Exact when `side` has no patternProperties of its own; refused when it has (a key
  // matching patterns of both sides is not additional to it, which a pattern of the
  // merged schema cannot tell apart).
  void ConstrainOtherPatterns(const JsonValue& side, const JsonValue& other, JsonValue* merged,
                              const std::string& ptr) {
    const JsonValue* addl = side.Find("additionalProperties");
    const JsonValue* theirs = other.Find("patternProperties");
    if (!addl || (addl->IsBool() && addl->boolean) || !theirs || !theirs->IsObject()) return;
    const JsonValue* mine = side.Find("patternProperties");
    bool has_mine = mine && mine->IsObject() && !mine->members.empty();
    for (auto& [k, patterns] : merged->members) {
      if (k != "patternProperties" || !patterns.IsObject()) continue;
      for (auto& [pattern, sub] : patterns.members) {
        if (!theirs->Find(pattern) || (has_mine && mine->Find(pattern))) continue;
        if (has_mine) {
          Unsupported("allOf of patternProperties beside another branch's patternProperties and additionalProperties",
                      ptr + "/patternProperties/" + JsonPointerToken(pattern));
          continue;
        }
        sub = addl->IsBool() ? BoolSchema(false) : AllOf(sub, *addl);
      }
    }
  }

  static bool Contains(const std::vector<JsonValue>& values, const JsonValue& v) {
    for (const JsonValue& x : values) {
      if (JsonEqual(x, v)) return true;
    }
    return false;
  }

  // The values `const` / `enum` list: the const, or the enum; with both (written so, or
  // merged from an allOf), the const only if the enum lists it.
  static std::vector<JsonValue> ListedValues(const JsonValue* en, const JsonValue* co) {
    if (!co) return en->items;
    if (en && !Contains(en->items, *co)) return {};
    return {*co};
  }

  static JsonValue AllOf(const JsonValue& x, const JsonValue& y) { return Obj({{"allOf", Arr({x, y})}}); }

  // ---------------------------------------------------------------- if / then / else
  // `if` I `then` T `else` E as anyOf [allOf(I, T), allOf(not I, E)] (a missing branch is
  // `true`); nullptr when there is nothing to add or when `not I` cannot be written.
  const JsonValue* Conditional(const JsonValue& cond, const JsonValue* then, const JsonValue* otherwise,
                               const std::string& ptr, int depth) {
    if (!then && !otherwise) return nullptr;
    const JsonValue& yes = then ? *then : TrueSchema();
    const JsonValue& no = otherwise ? *otherwise : TrueSchema();
    std::optional<JsonValue> negated = Negation(cond, ptr, depth);
    if (!negated) {
      Unsupported("`if` whose negation this front end cannot write", ptr + "/if");
      return nullptr;
    }
    // The branches of `not I` go to the top, so that merging conditionals can drop the
    // pairs that contradict each other (see Merge). Every branch declares the names of I
    // first (strict mode's rule, see IfDeclarations).
    std::optional<JsonValue> declared = IfDeclarations(cond, ptr, depth);
    auto branch = [&](const JsonValue& x, const JsonValue& y) {
      return declared ? AllOf(*declared, AllOf(x, y)) : AllOf(x, y);
    };
    JsonValue branches = Arr({branch(cond, yes)});
    const JsonValue* alts = negated->IsObject() && negated->members.size() == 1 ? negated->Find("anyOf") : nullptr;
    for (const JsonValue& alt : alts ? alts->items : std::vector<JsonValue>{*negated}) {
      branches.items.push_back(branch(alt, no));
    }
    return Keep(Obj({{"anyOf", branches}}));
  }

  // Strict mode generates only declared names, and an `if` applies to every object
  // whether it holds or not: the names in its `properties` are declared in both branches
  // (value `true`, a no-op for validation), in the `if`'s order, before those of `then` /
  // `else`. Without this a branch where the `if` fails on one property would not declare
  // its other ones, and the case split (SplitByDiscriminator), which decides `if`s, could
  // not keep the same language. nullopt when the `if` declares nothing.
  std::optional<JsonValue> IfDeclarations(const JsonValue& cond, const std::string& ptr, int depth) {
    const JsonValue* flat = cond.IsObject() ? Flatten(&cond, ptr, depth + 1) : &cond;
    const JsonValue* props = flat->IsObject() ? flat->Find("properties") : nullptr;
    if (!props || !props->IsObject() || props->members.empty()) return std::nullopt;
    JsonValue names = Obj({});
    for (const auto& m : props->members) names.members.emplace_back(m.first, BoolSchema(true));
    return Obj({{"properties", std::move(names)}});
  }

  // A schema for exactly the values `s` rejects, or nullopt when this front end cannot
  // write one. A value fails `s` iff it fails one of its keywords: a branch per keyword.
  // `within`, when given, is a flattened schema that the values in question are known to
  // meet (the other branch of a oneOf): it lets `additionalProperties: false` be negated.
  std::optional<JsonValue> Negation(const JsonValue& s0, const std::string& ptr, int depth,
                                    const JsonValue* within = nullptr) {
    if (depth > kMaxMergeDepth) return std::nullopt;
    const JsonValue* flat = s0.IsObject() ? Flatten(&s0, ptr, depth + 1) : &s0;
    if (flat->IsBool()) return BoolSchema(!flat->boolean);
    if (!flat->IsObject()) return std::nullopt;
    const JsonValue& s = *flat;
    std::vector<JsonValue> branches;
    auto of_type = [](const char* type, std::vector<std::pair<std::string, JsonValue>> members) {
      members.emplace_back("type", Str(type));
      return Obj(std::move(members));
    };
    static const std::map<std::string, std::pair<const char*, const char*>> flipped_bounds = {
        {"minimum", {"number", "exclusiveMaximum"}},   {"exclusiveMinimum", {"number", "maximum"}},
        {"maximum", {"number", "exclusiveMinimum"}},   {"exclusiveMaximum", {"number", "minimum"}}};
    static const std::map<std::string, std::pair<const char*, const char*>> flipped_counts = {
        {"minLength", {"string", "maxLength"}},      {"maxLength", {"string", "minLength"}},
        {"minItems", {"array", "maxItems"}},         {"maxItems", {"array", "minItems"}},
        {"minProperties", {"object", "maxProperties"}}, {"maxProperties", {"object", "minProperties"}}};
    for (const auto& [k, v] : s.members) {
      if (!kValidating.count(k) || (k == "additionalProperties" && v.IsBool() && v.boolean)) continue;
      if (within && ImpliedBy(*within, s, k, v)) continue;  // no value `within` allows fails it
      if (k == "type") {
        std::set<std::string> types = TypesOf(s);
        // `not integer` leaves the non-integral numbers (kNonIntegral: in plain
        // notation only, a documented narrowing).
        if (types.count("integer") && !types.count("number")) {
          branches.push_back(of_type("number", {{kNonIntegral, BoolSchema(true)}}));
          types.insert("number");
        }
        std::set<std::string> other;
        for (const char* t : kTypes) {
          if (!types.count(t) && std::string(t) != "integer") other.insert(t);
        }
        if (!other.empty()) branches.push_back(Obj({{"type", TypeValue(other)}}));
      } else if (k == kNonIntegral) {
        branches.push_back(of_type("integer", {}));
      } else if (k == "const" || k == "enum") {
        if (k == "enum" && !v.IsArray()) return std::nullopt;
        branches.push_back(Obj({{"not", Obj({{"enum", k == "const" ? Arr({v}) : v}})}}));
      } else if (k == "required") {
        if (!v.IsArray()) return std::nullopt;
        for (const JsonValue& r : v.items) {
          if (!r.IsString()) return std::nullopt;
          branches.push_back(of_type("object", {{"properties", Obj({{r.text, BoolSchema(false)}})}}));
        }
      } else if (k == "properties") {
        if (!v.IsObject()) return std::nullopt;
        std::optional<std::set<std::string>> within_names = within ? GeneratedNames(*within) : std::nullopt;
        for (const auto& [name, sub] : v.members) {
          if (within_names && !within_names->count(name)) continue;  // never present within
          if (within && PropertyImpliedBy(*within, name, sub)) continue;
          // The value of `name` in an object that `within` allows meets its schema there.
          const JsonValue* wp = within ? within->Find("properties") : nullptr;
          const JsonValue* sub_within = wp && wp->IsObject() ? wp->Find(name) : nullptr;
          if (sub_within) sub_within = Flatten(sub_within, ptr, depth + 1);
          std::optional<JsonValue> neg = Negation(sub, ptr + "/properties/" + JsonPointerToken(name), depth + 1,
                                                  sub_within && sub_within->IsObject() ? sub_within : nullptr);
          if (!neg) return std::nullopt;
          if (neg->IsBool() && !neg->boolean) continue;
          branches.push_back(of_type("object", {{"required", Arr({Str(name)})}, {"properties", Obj({{name, *neg}})}}));
        }
      } else if (k == "not") {
        branches.push_back(v);
      } else if (k == "pattern") {
        if (!v.IsString()) return std::nullopt;
        branches.push_back(of_type("string", {{kNotPattern, Arr({v})}}));
      } else if (k == kNotPattern) {
        for (const JsonValue& p : v.items) branches.push_back(of_type("string", {{"pattern", p}}));
      } else if (k == kMorePatterns) {
        for (const JsonValue& p : v.items) branches.push_back(of_type("string", {{kNotPattern, Arr({p})}}));
      } else if (k == "contains" || k == "items") {
        // No item matches / some item fails.
        if (k == "contains" && (s.Find("minContains") || s.Find("maxContains"))) return std::nullopt;
        if (k == "items" && (!v.IsObject() && !v.IsBool())) return std::nullopt;  // draft 4 tuple form
        if (k == "items" && s.Find("prefixItems")) return std::nullopt;
        // Items of an array that `within` allows meet its `items` schema.
        const JsonValue* item_within =
            within && k == "items" && !within->Find("prefixItems") ? within->Find("items") : nullptr;
        if (item_within && item_within->IsObject()) item_within = Flatten(item_within, ptr, depth + 1);
        std::optional<JsonValue> neg = Negation(v, ptr + "/" + k, depth + 1,
                                                item_within && item_within->IsObject() ? item_within : nullptr);
        if (!neg) return std::nullopt;
        if (k == "contains") {
          branches.push_back(of_type("array", {{"items", *neg}}));
        } else if (!(neg->IsBool() && !neg->boolean)) {
          branches.push_back(of_type("array", {{"contains", *neg}}));
        }
      } else if (k == "oneOf" && v.IsArray() && !BranchesDisjoint(v.items)) {
        // Not exactly one branch: none, or two that may overlap.
        std::vector<const JsonValue*> flat;
        for (const JsonValue& br : v.items) flat.push_back(Flatten(&br, "", 0));
        JsonValue none = Arr({});
        for (const JsonValue& br : v.items) {
          std::optional<JsonValue> neg = Negation(br, ptr, depth + 1);
          if (!neg) return std::nullopt;
          none.items.push_back(*neg);
        }
        branches.push_back(Obj({{"allOf", none}}));
        for (size_t i = 0; i < v.items.size(); ++i) {
          for (size_t j = i + 1; j < v.items.size(); ++j) {
            if (!Disjoint(*flat[i], *flat[j])) branches.push_back(AllOf(v.items[i], v.items[j]));
          }
        }
      } else if (k == "anyOf" || k == "oneOf") {
        if (!v.IsArray()) return std::nullopt;
        JsonValue all = Arr({});
        for (const JsonValue& br : v.items) {
          std::optional<JsonValue> neg = Negation(br, ptr, depth + 1);
          if (!neg) return std::nullopt;
          all.items.push_back(*neg);
        }
        branches.push_back(Obj({{"allOf", all}}));
      } else if (k == "additionalProperties" && v.IsBool() && within && !s.Find("patternProperties")) {
        // A property outside `properties`: among the objects `within` generates, one of
        // its names that this schema does not declare.
        std::optional<std::set<std::string>> names = GeneratedNames(*within);
        const JsonValue* props = s.Find("properties");
        if (!names || (props && !props->IsObject())) return std::nullopt;
        for (const std::string& name : *names) {
          if (!props || !props->Find(name)) branches.push_back(of_type("object", {{"required", Arr({Str(name)})}}));
        }
      } else if (flipped_bounds.count(k)) {
        if (!v.IsNumber()) return std::nullopt;  // draft 4's boolean exclusiveMinimum
        auto [type, bound] = flipped_bounds.at(k);
        branches.push_back(of_type(type, {{bound, v}}));
      } else if (flipped_counts.count(k)) {
        auto [type, bound] = flipped_counts.at(k);
        std::optional<int64_t> count = CountValue(v);
        if (!count || *count >= 1000000000) return std::nullopt;  // n + 1 must stay a count
        int64_t n = *count;
        if (k.compare(0, 3, "min") == 0) {
          if (n > 0) branches.push_back(of_type(type, {{bound, Num(std::to_string(n - 1))}}));
        } else {
          branches.push_back(of_type(type, {{bound, Num(std::to_string(n + 1))}}));
        }
      } else {
        return std::nullopt;
      }
    }
    if (branches.empty()) return BoolSchema(false);
    if (branches.size() == 1) return branches[0];
    return Obj({{"anyOf", Arr(std::move(branches))}});
  }

  // Whether every value that meets the flattened schema `within` meets keyword `k`
  // (value `v`) of `s`: the same keyword there with a value at least as strict. Only
  // keywords whose meaning does not depend on their siblings are compared as values;
  // `additionalProperties` and `items` also need the siblings they read to agree.
  static bool ImpliedBy(const JsonValue& within, const JsonValue& s, const std::string& k, const JsonValue& v) {
    const JsonValue* w = within.Find(k);
    if (k == "type") {
      std::set<std::string> mine = TypesOf(s);
      for (const std::string& t : TypesOf(within)) {
        if (!mine.count(t)) return false;
      }
      return true;
    }
    if (!w) return false;
    if (k == "required") {
      if (!v.IsArray() || !w->IsArray()) return false;
      for (const JsonValue& name : v.items) {
        if (!Contains(w->items, name)) return false;
      }
      return true;
    }
    if (k == "additionalProperties" || k == "items") {
      // The same names / positions are left to it on both sides.
      for (const char* sibling : {"properties", "patternProperties", "prefixItems", "additionalItems"}) {
        const JsonValue *a = s.Find(sibling), *b = within.Find(sibling);
        if ((a || b) && !(a && b && JsonEqual(*a, *b))) return false;
      }
      if (k == "items" && !v.IsObject() && !v.IsBool()) return false;  // draft 4 tuples
      return JsonEqual(*w, v);
    }
    static const std::set<std::string> kSelfContained = {
        "enum", "const", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
        "uniqueItems", "propertyNames", "patternProperties", "not", "anyOf", "oneOf", "dependentRequired",
        kNotPattern, kMorePatterns, kNonIntegral};
    if (!kSelfContained.count(k)) return false;
    if (k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum") {
      // Draft 4's boolean exclusive flags change what the sibling bound means.
      for (const JsonValue* side : {&s, &within}) {
        for (const char* flag : {"exclusiveMinimum", "exclusiveMaximum"}) {
          if (const JsonValue* f = side->Find(flag); f && !f->IsNumber()) return false;
        }
      }
      if (!v.IsNumber() || !w->IsNumber()) return false;
    }
    return JsonEqual(*w, v);
  }

  // Whether the value of property `name`, in an object that meets `within`, meets `sub`:
  // `within` gives it the same schema (alone, or as one part of an allOf).
  static bool PropertyImpliedBy(const JsonValue& within, const std::string& name, const JsonValue& sub) {
    const JsonValue* props = within.Find("properties");
    const JsonValue* p = props && props->IsObject() ? props->Find(name) : nullptr;
    if (!p) return false;
    if (JsonEqual(*p, sub)) return true;
    const JsonValue* parts = p->IsObject() && p->members.size() == 1 ? p->Find("allOf") : nullptr;
    return parts && parts->IsArray() && Contains(parts->items, sub);
  }

  // The property names the grammar of `s` can write, when finite: those it declares or
  // requires, when it allows no others (additionalProperties false, or strict with
  // declared properties); nullopt otherwise. Under strict the grammar is narrower than
  // the schema, so this is exact for what it generates, not for the schema.
  std::optional<std::set<std::string>> GeneratedNames(const JsonValue& s) const {
    if (!s.IsObject() || s.Find("patternProperties") || s.Find("propertyNames")) return std::nullopt;
    const JsonValue* addl = s.Find("additionalProperties");
    const JsonValue* props = s.Find("properties");
    bool closed = addl ? addl->IsBool() && !addl->boolean : opt_.strict && props;
    if (!closed || (props && !props->IsObject())) return std::nullopt;
    std::set<std::string> names;
    if (props) {
      for (const auto& m : props->members) names.insert(m.first);
    }
    if (const JsonValue* req = s.Find("required"); req && req->IsArray()) {
      for (const JsonValue& r : req->items) {
        if (r.IsString()) names.insert(r.text);
      }
    }
    return names;
  }

  // ---------------------------------------------------------------- schemas
  int32_t AnyValue(int depth) { return Schema(TrueSchema(), "", depth); }

  const JsonValue& TrueSchema() {
    static const JsonValue t = BoolSchema(true);
    return t;
  }

  int LayoutDepth(int depth) const { return text_.layout().DependsOnDepth() ? depth : 0; }

  // Counts one call in progress for its lifetime (nesting bounds on C++ frames).
  struct Nested {
    explicit Nested(int* count) : n(count) { ++*n; }
    ~Nested() { --*n; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;
    int* n;
  };

  // The expression for the JSON texts valid under `s`, at nesting `depth`.
  int32_t Schema(const JsonValue& s_in, const std::string& ptr_in, int depth) {
    if (text_.layout().DependsOnDepth() && depth > kMaxIndentDepth) return Nothing(&b_);
    // Each nested subschema is a C++ frame: a bound, not a stack overflow (a chain of
    // thousands of `$ref`s, each to the next document's `items`, nests that deep).
    Nested nesting(&schema_nesting_);
    if (schema_nesting_ > kMaxSchemaNesting) {
      Fail("subschemas nested more than " + std::to_string(kMaxSchemaNesting) + " deep (a long chain of $refs?)",
           ptr_in);
    }
    if (StackNearlyFull()) Fail(StackMessage("subschemas", schema_nesting_), ptr_in);
    std::string ptr = ptr_in;
    const JsonValue& s = *PureRefTarget(&s_in, ptr_in, &ptr);
    auto key = std::make_pair(&s, LayoutDepth(depth));
    auto it = memo_.find(key);
    if (it != memo_.end()) return b_.Ref(it->second);
    // Merged copies (allOf, if) repeat the same subschemas at new addresses: share by content.
    auto content_key = std::make_pair(ContentHash(s), LayoutDepth(depth));
    auto [first, last] = memo_by_content_.equal_range(content_key);
    for (auto same = first; same != last; ++same) {
      if (JsonIdentical(*same->second.first, s)) {
        memo_[key] = same->second.second;
        return b_.Ref(same->second.second);
      }
    }
    CheckWork();  // the comparisons above count
    int32_t rule = b_.NewRule(RuleNameFor(ptr.empty() ? "root_value" : ptr));
    memo_[key] = rule;
    memo_by_content_.emplace(content_key, std::make_pair(&s, rule));
    b_.SetBody(rule, SchemaBody(s, ptr, depth));
    return b_.Ref(rule);
  }

  // A hash of a value's content (equal for JsonIdentical values), with those of objects
  // and arrays kept by their elements' identity (CowVector: copies share it): Schema
  // hashes every subschema it compiles, and hashing each one's whole subtree again cost
  // a quarter of azure-pipelines' compile. A stale entry (elements changed or freed
  // since) only makes a content match miss: matches are confirmed by JsonIdentical.
  uint64_t ContentHash(const JsonValue& v) {
    const void* id = v.IsObject() ? v.members.Identity() : v.IsArray() ? v.items.Identity() : nullptr;
    if (!id) return JsonHash(v);
    auto it = hashes_.find(id);
    if (it != hashes_.end()) return it->second;
    auto mix = [](uint64_t h, uint64_t x) { return (h ^ x) * 0x100000001B3ull + (h >> 29); };
    uint64_t h = mix(0x84222325CBF29CE4ull, static_cast<uint64_t>(v.kind));
    for (const JsonValue& x : v.items) h = mix(h, ContentHash(x));
    for (const auto& [k, x] : v.members) h = mix(mix(h, std::hash<std::string>{}(k)), ContentHash(x));
    h = mix(h, v.items.size() * 31 + v.members.size());
    hashes_.emplace(id, h);
    return h;
  }

  int32_t SchemaBody(const JsonValue& s0, const std::string& ptr, int depth) {
    if (s0.IsBool()) return s0.boolean ? Typed(s0, TypesOf(JsonValue{}), ptr, depth) : Nothing(&b_);
    if (!s0.IsObject()) Fail("a schema must be an object or a boolean", ptr);
    const JsonValue& s = *Flatten(&s0, ptr, 0);
    if (s.IsBool()) return s.boolean ? AnyValue(depth) : Nothing(&b_);
    for (const char* k : {"anyOf", "oneOf"}) {
      const JsonValue* branches = s.Find(k);
      if (!branches) continue;
      if (!branches->IsArray() || branches->items.empty()) Fail(std::string(k) + " must be a non-empty array", ptr + "/" + k);
      if (std::optional<JsonValue> listed = ListedBranches(branches->items, std::string(k) == "oneOf")) {
        JsonValue one = AllOf(WithoutKey(s, k), Obj({{"enum", std::move(*listed)}}));
        return SchemaBody(*Keep(std::move(one)), ptr, depth);
      }
      JsonValue rest_value = WithoutKey(s, k);
      bool has_rest = false;
      for (auto& m : rest_value.members) has_rest = has_rest || !kAnnotations.count(m.first);
      const JsonValue* rest = has_rest ? Keep(std::move(rest_value)) : nullptr;
      // oneOf: each branch without the values of the branches it may overlap.
      std::vector<const JsonValue*> exclusive;
      if (std::string(k) == "oneOf") exclusive = ExclusiveBranches(branches->items, rest, ptr + "/oneOf");
      std::vector<int32_t> alts;
      for (size_t i = 0; i < branches->items.size(); ++i) {
        std::string bp = ptr + "/" + k + "/" + std::to_string(i);
        const JsonValue* br = exclusive.empty() ? &branches->items[i] : exclusive[i];
        if (rest) br = FlatAllOf(*rest, *br, bp);
        if (!MayHaveValue(*br, bp)) continue;
        alts.push_back(Schema(*br, bp, depth));
      }
      if (alts.empty()) return Nothing(&b_);
      return b_.Choice(alts);
    }
    CheckKeywords(s, ptr);
    if (const JsonValue* n = s.Find("not")) {
      return NotSchema(s, *n, ptr, depth);
    }
    std::set<std::string> types = TypesOf(s);
    if (const JsonValue* t = s.Find("type")) {
      if (!t->IsString() && !t->IsArray()) Fail("type must be a string or an array of strings", ptr + "/type");
      std::vector<JsonValue> listed = t->IsString() ? std::vector<JsonValue>{*t} : t->items;
      for (const JsonValue& x : listed) {
        if (!x.IsString() || std::find(std::begin(kTypes), std::end(kTypes), x.text) == std::end(kTypes)) {
          Fail("unknown type " + DumpJson(x) + " (expected one of null, boolean, object, array, number, integer, string)",
               ptr + "/type");
        }
      }
    }
    const JsonValue* en = s.Find("enum");
    const JsonValue* co = s.Find("const");
    if (en || co) return Enumerated(s, ListedValues(en, co), types, ptr, depth, co != nullptr);
    return Typed(s, types, ptr, depth);
  }

  // The values of an anyOf / oneOf whose branches only list values (`enum` and
  // annotations): anyOf holds for any value listed, oneOf for a value that exactly one
  // branch lists (strings only: counted by text). nullopt for other branches. As one
  // enum, the keywords beside the combinator meet it once instead of being merged into
  // every branch: azure-pipelines lists its 260 task names as such branches, beside a
  // pattern in each of 259 other branches (65,793 merges, half its compile time).
  static std::optional<JsonValue> ListedBranches(const std::vector<JsonValue>& branches, bool one_of) {
    std::vector<JsonValue> listed;
    std::map<std::string, int> listed_by;  // oneOf: string -> branches that list it
    for (const JsonValue& br : branches) {
      const JsonValue* en = nullptr;
      if (!br.IsObject()) return std::nullopt;
      for (const auto& [k, v] : br.members) {
        if (k == "enum") en = &v;
        else if (kValidating.count(k)) return std::nullopt;
      }
      if (!en || !en->IsArray()) return std::nullopt;
      std::set<std::string> in_branch;
      for (const JsonValue& v : en->items) {
        if (one_of && !v.IsString()) return std::nullopt;
        if (one_of && in_branch.insert(v.text).second) ++listed_by[v.text];
        listed.push_back(v);
      }
    }
    // Each value once (identical branches were one rule by content before the union).
    std::vector<JsonValue> kept;
    std::set<std::string> seen;
    for (JsonValue& v : listed) {
      if (one_of && listed_by[v.text] != 1) continue;
      if (seen.insert(DumpJson(v)).second) kept.push_back(std::move(v));
    }
    return Arr(std::move(kept));
  }

  // Keywords this front end refuses (other unknown keywords only annotate).
  void CheckKeywords(const JsonValue& s, const std::string& ptr) {
    static const std::set<std::string> unsupported = {
        "unevaluatedProperties", "unevaluatedItems",  // rewritten by Flatten: only if left
        "$dynamicRef", "$recursiveRef"};
    for (const auto& [k, v] : s.members) {
      if (unsupported.count(k)) Unsupported("`" + k + "` is not supported", ptr + "/" + JsonPointerToken(k));
    }
  }

  // ---------------------------------------------------------------- oneOf
  // A value is valid under oneOf [b1..bn] iff it matches exactly one branch: branch i
  // becomes allOf(bi, not bj) for each j whose values may overlap bi's (pairs that
  // `Disjoint` proves apart need no negation, so disjoint oneOfs stay plain choices).
  // A `not bj` this front end cannot write is refused; under warn / ignore it is left
  // out (wider). allOf merging of the negations honours kMaxBranches.
  // `not bj` is written for values that meet branch i and `rest` (the keywords beside
  // the oneOf, or nullptr), which lets it use what they allow.
  std::vector<const JsonValue*> ExclusiveBranches(const std::vector<JsonValue>& branches, const JsonValue* rest,
                                                  const std::string& ptr) {
    std::vector<const JsonValue*> flat, out;
    // With the keywords beside the oneOf, so that a property they require can tell branches apart.
    for (const JsonValue& br : branches) flat.push_back(rest ? FlatAllOf(*rest, br, "") : Flatten(&br, "", 0));
    std::vector<bool> refused(branches.size(), false);
    for (size_t i = 0; i < branches.size(); ++i) {
      JsonValue parts = Arr({branches[i]});
      const JsonValue* within = nullptr;
      for (size_t j = 0; j < branches.size(); ++j) {
        if (j == i || Disjoint(*flat[i], *flat[j])) continue;
        std::string bp = ptr + "/" + std::to_string(j);
        if (!within) within = flat[i];
        std::optional<JsonValue> neg = Negation(branches[j], bp, 0, within->IsObject() ? within : nullptr);
        if (neg) {
          parts.items.push_back(std::move(*neg));
        } else if (!refused[j]) {
          refused[j] = true;
          Unsupported("oneOf whose branches may overlap (a value valid under two branches is invalid) and whose "
                      "branch " + std::to_string(j) + " this front end cannot negate",
                      bp);
        }
      }
      out.push_back(parts.items.size() == 1 ? &branches[i] : Keep(Obj({{"allOf", std::move(parts)}})));
    }
    // Each `not bj` adds a branch per keyword of bj, and each copies branch i: past
    // kMaxBranches in all, the grammar grows too large (a copy of a large object per branch).
    size_t total = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      const JsonValue* f = out[i] == &branches[i] ? flat[i] : Flatten(out[i], ptr + "/" + std::to_string(i), 0);
      const JsonValue* alts = f->IsObject() ? f->Find("anyOf") : nullptr;
      total += alts && alts->IsArray() ? alts->items.size() : 1;
    }
    if (total > kMaxBranches) {
      Unsupported("oneOf whose branches may overlap, with more than " + std::to_string(kMaxBranches) +
                      " branches once each excludes the others",
                  ptr);
      for (size_t i = 0; i < out.size(); ++i) out[i] = &branches[i];
    }
    return out;
  }

  // Whether no JSON value is valid under two of the branches (a sufficient check).
  bool BranchesDisjoint(const std::vector<JsonValue>& branches) {
    std::vector<const JsonValue*> flat;
    for (const JsonValue& br : branches) flat.push_back(Flatten(&br, "", 0));
    for (size_t i = 0; i < flat.size(); ++i) {
      for (size_t j = i + 1; j < flat.size(); ++j) {
        if (!Disjoint(*flat[i], *flat[j])) return false;
      }
    }
    return true;
  }

  // The JSON types `s` can match: its `type`, narrowed by the values of const / enum and
  // by the branches of anyOf / oneOf.
  std::set<std::string> PossibleTypes(const JsonValue& s, int depth) {
    if (s.IsBool()) return s.boolean ? TypesOf(JsonValue{}) : std::set<std::string>{};
    std::set<std::string> types = TypesOf(s);
    std::vector<JsonValue> values;
    if (const JsonValue* c = s.Find("const")) values.push_back(*c);
    if (const JsonValue* e = s.Find("enum"); e && e->IsArray()) values = e->items;
    if (s.Find("const") || s.Find("enum")) {
      std::set<std::string> of_values;
      for (const JsonValue& v : values) {
        for (const char* t : kTypes) {
          if (types.count(t) && HasType({t}, v)) of_values.insert(t);
        }
      }
      types = of_values;
    }
    for (const char* k : {"anyOf", "oneOf"}) {
      const JsonValue* branches = s.Find(k);
      if (!branches || !branches->IsArray() || depth > 8) continue;
      std::set<std::string> of_branches;
      for (const JsonValue& br : branches->items) {
        for (const auto& t : PossibleTypes(*Flatten(&br, "", 0), depth + 1)) of_branches.insert(t);
      }
      std::set<std::string> both;
      for (const auto& t : types) {
        if (of_branches.count(t) || (t == "integer" && of_branches.count("number"))) both.insert(t);
      }
      types = both;
    }
    if (types.count("number")) types.insert("integer");
    return types;
  }

  bool Disjoint(const JsonValue& a, const JsonValue& b) {
    if (a.IsBool() || b.IsBool()) return (a.IsBool() && !a.boolean) || (b.IsBool() && !b.boolean);
    // Disjoint flattens subschemas afresh (depth 0), whose merges may ask Disjoint again:
    // past a few nested calls, "not proven apart" (always a safe answer).
    if (disjoint_depth_ >= kMaxDisjointNesting) return false;
    ++disjoint_depth_;
    bool apart = DisjointFlat(a, b);
    --disjoint_depth_;
    return apart;
  }

  bool DisjointFlat(const JsonValue& a, const JsonValue& b) {
    std::set<std::string> ta = PossibleTypes(a, 0), tb = PossibleTypes(b, 0);
    bool overlap = false;
    for (const auto& t : ta) overlap = overlap || tb.count(t);
    if (!overlap) return true;
    // Finite value sets that share no value.
    auto values = [](const JsonValue& s, std::vector<JsonValue>* out) {
      if (const JsonValue* c = s.Find("const")) return out->push_back(*c), true;
      if (const JsonValue* e = s.Find("enum")) return *out = e->items, true;
      return false;
    };
    std::vector<JsonValue> va, vb;
    bool finite_a = values(a, &va), finite_b = values(b, &vb);
    if (finite_a && finite_b) {
      for (const auto& x : va) for (const auto& y : vb) if (JsonEqual(x, y)) return false;
      return true;
    }
    // Values that the other side's `not: {enum: [...]}` excludes, every one of them.
    auto excluded_by = [](const std::vector<JsonValue>& vs, const JsonValue& s) {
      const JsonValue* n = s.Find("not");
      const JsonValue* ex = n ? OnlyEnum(*n) : nullptr;
      if (!ex) return false;
      for (const JsonValue& v : vs) {
        bool hit = false;
        for (const JsonValue& x : ex->items) hit = hit || JsonEqual(v, x);
        if (!hit) return false;
      }
      return true;
    };
    if ((finite_a && excluded_by(va, b)) || (finite_b && excluded_by(vb, a))) return true;
    // Values the other side's own keywords reject, every one of them.
    auto rejected_by = [&](const std::vector<JsonValue>& vs, const JsonValue& s) {
      for (const JsonValue& v : vs) {
        if (!Rejects(s, v)) return false;
      }
      return true;
    };
    if ((finite_a && rejected_by(va, b)) || (finite_b && rejected_by(vb, a))) return true;
    // A side whose values all meet one of its anyOf / oneOf branches, each apart from the
    // other side (bounded: branches of branches are looked into a few levels deep).
    if (disjoint_depth_ <= kMaxDisjointDepth) {
      for (const JsonValue* side : {&a, &b}) {
        const JsonValue& other = side == &a ? b : a;
        for (const char* k : {"anyOf", "oneOf"}) {
          const JsonValue* branches = side->Find(k);
          if (!branches || !branches->IsArray() || branches->items.empty()) continue;
          bool apart = true;
          for (const JsonValue& br : branches->items) apart = apart && Disjoint(*Flatten(&br, "", 0), other);
          if (apart) return true;
        }
      }
    }
    // Numbers only, in ranges that do not meet (minor versions 0-2 and 3-8).
    bool numbers_only = true;
    for (const auto& t : ta) numbers_only = numbers_only && (!tb.count(t) || t == "number" || t == "integer");
    if (numbers_only && (Below(a, b) || Below(b, a))) return true;
    // Objects with a property required in both whose value sets share nothing, or required
    // by one side and forbidden (`false`) by the other.
    const JsonValue *pa = a.Find("properties"), *pb = b.Find("properties");
    const JsonValue *ra = a.Find("required"), *rb = b.Find("required");
    auto forbids = [](const JsonValue* required, const JsonValue* props) {
      if (!required || !props || !required->IsArray() || !props->IsObject()) return false;
      for (const JsonValue& name : required->items) {
        const JsonValue* p = name.IsString() ? props->Find(name.text) : nullptr;
        if (p && p->IsBool() && !p->boolean) return true;
      }
      return false;
    };
    // A name one side requires that the other side's closed property list leaves out.
    auto closed_to = [&](const JsonValue* required, const JsonValue& other) {
      const JsonValue* extra = other.Find("additionalProperties");
      const JsonValue* patterns = other.Find("patternProperties");
      if (!required || !required->IsArray() || !extra || !extra->IsBool() || extra->boolean ||
          (patterns && !patterns->IsObject())) {
        return false;
      }
      const JsonValue* props = other.Find("properties");
      auto matches_a_pattern = [&](const std::string& name) {
        if (!patterns) return false;
        for (const auto& [pattern, sub] : patterns->members) {
          try {
            if (SearchDfa(pattern).Accepts(name)) return true;
          } catch (const std::exception&) {
            return true;  // an invalid or too large pattern: assume it may match
          }
        }
        return false;
      };
      for (const JsonValue& name : required->items) {
        if (name.IsString() && !(props && props->IsObject() && props->Find(name.text)) && !matches_a_pattern(name.text)) {
          return true;
        }
      }
      return false;
    };
    bool objects_only = true;  // every value both may hold is an object
    for (const auto& t : ta) objects_only = objects_only && (!tb.count(t) || t == "object");
    if (objects_only && (forbids(ra, pb) || forbids(rb, pa) || closed_to(ra, b) || closed_to(rb, a))) return true;
    if (objects_only && pa && pb && ra && rb && ra->IsArray() && rb->IsArray()) {
      for (const JsonValue& name : ra->items) {
        bool in_b = false;
        for (const JsonValue& n : rb->items) in_b = in_b || JsonEqual(n, name);
        const JsonValue *sa = name.IsString() ? pa->Find(name.text) : nullptr,
                        *sb = name.IsString() ? pb->Find(name.text) : nullptr;
        if (in_b && sa && sb && Disjoint(*Flatten(sa, "", 0), *Flatten(sb, "", 0))) return true;
      }
    }
    return false;
  }

  // Whether `s` (flattened) rejects the value `v` for certain, by its type or by one of
  // the keywords ValuePasses decides.
  bool Rejects(const JsonValue& s, const JsonValue& v) {
    if (!HasType(TypesOf(s), v)) return true;
    for (const auto& [k, kv] : s.members) {
      if (ValuePasses(k, kv, v) == 0) return true;
    }
    return false;
  }

  // Whether every number `lo` allows is smaller than every number `hi` allows, by their
  // numeric bounds (draft 4's boolean exclusive flags: not decided, false).
  static bool Below(const JsonValue& lo, const JsonValue& hi) {
    const JsonValue *max = lo.Find("maximum"), *xmax = lo.Find("exclusiveMaximum");
    const JsonValue *min = hi.Find("minimum"), *xmin = hi.Find("exclusiveMinimum");
    auto number = [](const JsonValue* v) { return v && v->IsNumber(); };
    if ((max && !number(max)) || (xmax && !number(xmax)) || (min && !number(min)) || (xmin && !number(xmin))) {
      return false;
    }
    for (const JsonValue* top : {max, xmax}) {
      for (const JsonValue* bottom : {min, xmin}) {
        if (!top || !bottom) continue;
        int c = CompareDecimal(ParseDecimal(top->text), ParseDecimal(bottom->text));
        if (c < 0 || (c == 0 && (top == xmax || bottom == xmin))) return true;
      }
    }
    return false;
  }

  // The `enum` of a schema that has only an enum (and annotations), else nullptr.
  static const JsonValue* OnlyEnum(const JsonValue& s) {
    const JsonValue* en = s.IsObject() ? s.Find("enum") : nullptr;
    for (const auto& m : s.members) {
      if (m.first != "enum" && !kAnnotations.count(m.first)) return nullptr;
    }
    return en && en->IsArray() ? en : nullptr;
  }

  int32_t NotSchema(const JsonValue& s, const JsonValue& n, const std::string& ptr, int depth) {
    const JsonValue* rest = Keep(WithoutKey(s, "not"));
    if (const JsonValue* excluded = OnlyEnum(n)) return Excluding(*rest, *excluded, ptr, depth);
    // Negation writes `not` only around enums, which the next call takes directly; the
    // bound stops a `not` that this front end does not simplify.
    std::optional<JsonValue> neg = not_depth_ < kMaxMergeDepth ? Negation(n, ptr + "/not", depth) : std::nullopt;
    if (!neg) {
      Unsupported("`not` of a schema this front end cannot negate", ptr + "/not");
      return Schema(*rest, ptr, depth);
    }
    ++not_depth_;
    int32_t out = Schema(*Keep(AllOf(*rest, *neg)), ptr, depth);
    --not_depth_;
    return out;
  }

  // The values valid under `s` other than `excluded` (the `not: {enum: [...]}` that
  // Negation writes for const and enum).
  int32_t Excluding(const JsonValue& s, const JsonValue& excluded, const std::string& ptr, int depth) {
    if (!excluded.IsArray()) Fail("enum must be an array", ptr + "/not/enum");
    const JsonValue* en = s.Find("enum");
    const JsonValue* co = s.Find("const");
    if (en || co) {
      JsonValue kept = Arr({});
      for (const JsonValue& v : ListedValues(en, co)) {
        if (!Contains(excluded.items, v)) kept.items.push_back(v);
      }
      JsonValue narrowed = WithoutKey(WithoutKey(s, "const"), "enum");
      narrowed.members.emplace_back("enum", kept);
      return Schema(*Keep(std::move(narrowed)), ptr, depth);
    }
    std::set<std::string> types = TypesOf(s);
    std::set<std::string> strings;
    std::vector<JsonValue> numbers;
    bool structured = false;
    for (const JsonValue& x : excluded.items) {
      if (x.IsString()) strings.insert(x.text);
      if (x.IsNumber()) numbers.push_back(x);
      structured = structured || x.IsArray() || x.IsObject();
    }
    if (structured && (types.count("array") || types.count("object"))) {
      Unsupported("`not` of an array or object value", ptr + "/not");
    }
    std::vector<int32_t> alts;
    if (types.count("null") && !Contains(excluded.items, JsonValue{})) alts.push_back(b_.Bytes("null"));
    for (bool b : {true, false}) {
      if (types.count("boolean") && !Contains(excluded.items, BoolSchema(b))) alts.push_back(b_.Bytes(b ? "true" : "false"));
    }
    if (types.count("number") || types.count("integer")) {
      const char* type = types.count("number") ? "number" : "integer";
      if (numbers.empty()) {
        alts.push_back(NumberExpr(s, !types.count("number"), ptr));
      } else {
        // Open intervals between the excluded values, each with the bounds of `s`.
        std::sort(numbers.begin(), numbers.end(), [](const JsonValue& a, const JsonValue& b) {
          return CompareDecimal(ParseDecimal(a.text), ParseDecimal(b.text)) < 0;
        });
        JsonValue numeric = WithoutKey(s, "type");
        numeric.members.emplace_back("type", Str(type));
        for (size_t i = 0; i <= numbers.size(); ++i) {
          JsonValue piece = Obj({});
          if (i > 0) piece.members.emplace_back("exclusiveMinimum", numbers[i - 1]);
          if (i < numbers.size()) piece.members.emplace_back("exclusiveMaximum", numbers[i]);
          alts.push_back(Schema(*Keep(AllOf(numeric, piece)), ptr, depth));
        }
      }
    }
    if (types.count("string")) {
      const JsonValue* format = s.Find("format");
      bool known_format = format && format->IsString() && JsonFormatEbnf(format->text);
      bool constrained = s.Find("pattern") || s.Find(kNotPattern) || s.Find(kMorePatterns) || s.Find("minLength") ||
                         s.Find("maxLength") || known_format;
      if (strings.empty()) {
        alts.push_back(StringExpr(s, ptr));
      } else if (constrained && !known_format) {
        alts.push_back(StringExpr(s, ptr, &strings));  // the automaton of the rest, less the values
      } else if (constrained) {
        Unsupported("`not` of string values beside a `format`", ptr + "/not");
        alts.push_back(StringExpr(s, ptr));
      } else {
        alts.push_back(KeyNotIn(strings));
      }
    }
    if (types.count("array")) alts.push_back(ArrayValue(s, ptr, depth));
    if (types.count("object")) alts.push_back(ObjectValue(s, ptr, depth));
    alts.erase(std::remove(alts.begin(), alts.end(), -1), alts.end());
    if (alts.empty()) return Nothing(&b_);
    return b_.Choice(alts);
  }

  static JsonValue WithoutKey(const JsonValue& s, const std::string& key) {
    JsonValue out = s;
    out.members.erase(std::remove_if(out.members.begin(), out.members.end(), [&](auto& m) { return m.first == key; }),
                      out.members.end());
    return out;
  }

  static bool HasType(const std::set<std::string>& types, const JsonValue& v) {
    switch (v.kind) {
      case Kind::kNull: return types.count("null");
      case Kind::kBool: return types.count("boolean");
      case Kind::kString: return types.count("string");
      case Kind::kArray: return types.count("array");
      case Kind::kObject: return types.count("object");
      case Kind::kNumber: {
        if (types.count("number")) return true;
        DecimalNumber d = ParseDecimal(v.text);
        return types.count("integer") && d.exponent >= 0;
      }
    }
    return false;
  }

  // Whether the constant `v` passes keyword `k` (value `kv`) beside enum / const: 1 yes,
  // 0 no, -1 cannot tell here. Keywords of another type than v's do not apply.
  int ValuePasses(const std::string& k, const JsonValue& kv, const JsonValue& v) {
    static const std::set<std::string> for_strings = {"minLength", "maxLength", "pattern", "format", kNotPattern,
                                                       kMorePatterns};
    static const std::set<std::string> for_numbers = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                                      "multipleOf", kNonIntegral};
    static const std::set<std::string> for_arrays = {"items", "prefixItems", "additionalItems", "contains",
                                                     "minContains", "maxContains", "minItems", "maxItems", "uniqueItems"};
    static const std::set<std::string> for_objects = {"properties", "required", "additionalProperties",
                                                      "patternProperties", "propertyNames", "minProperties",
                                                      "maxProperties", "dependentRequired"};
    bool applies = (for_strings.count(k) && v.IsString()) || (for_numbers.count(k) && v.IsNumber()) ||
                   (for_arrays.count(k) && v.IsArray()) || (for_objects.count(k) && v.IsObject());
    bool known = for_strings.count(k) || for_numbers.count(k) || for_arrays.count(k) || for_objects.count(k);
    if (!known) return k == "not" || k == "anyOf" || k == "oneOf" ? -1 : 1;  // others annotate
    if (!applies) return 1;
    auto bound = [&](int want_sign, bool strict) {
      if (!kv.IsNumber()) return kv.IsBool() ? -1 : 0;
      int c = CompareDecimal(ParseDecimal(v.text), ParseDecimal(kv.text));
      return (strict ? c * want_sign > 0 : c * want_sign >= 0) ? 1 : 0;
    };
    auto count_ok = [&](size_t n, bool is_min) {
      if (!kv.IsNumber()) return -1;
      int c = CompareDecimal(ParseDecimal(std::to_string(n)), ParseDecimal(kv.text));
      return (is_min ? c >= 0 : c <= 0) ? 1 : 0;
    };
    if (k == kNonIntegral) {
      DecimalNumber d = ParseDecimal(v.text);
      while (!d.digits.empty() && d.digits.back() == '0') d.digits.pop_back(), ++d.exponent;
      return !d.digits.empty() && d.exponent < 0 ? 1 : 0;
    }
    if (k == "minimum") return bound(1, false);
    if (k == "maximum") return bound(-1, false);
    if (k == "exclusiveMinimum") return bound(1, true);
    if (k == "exclusiveMaximum") return bound(-1, true);
    if (k == "minLength" || k == "maxLength") {
      size_t n = 0, p = 0;
      while (p < v.text.size()) DecodeUtf8(v.text, &p), ++n;
      return count_ok(n, k == "minLength");
    }
    if (k == "minItems" || k == "maxItems") return count_ok(v.items.size(), k == "minItems");
    if (k == "pattern" || k == kNotPattern || k == kMorePatterns) {  // does v match (none of) the pattern(s)?
      try {
        for (const JsonValue& p : k == "pattern" ? std::vector<JsonValue>{kv} : kv.items) {
          if (!p.IsString()) return -1;
          if (SearchDfa(p.text).Accepts(v.text) != (k != kNotPattern)) return 0;
        }
        return 1;
      } catch (const RegexError&) {
        return -1;
      } catch (const DfaLimitError&) {
        return -1;
      }
    }
    if (k == "minProperties" || k == "maxProperties") return count_ok(v.members.size(), k == "minProperties");
    if (k == "required") {
      for (const JsonValue& name : kv.items) {
        if (!name.IsString() || !v.Find(name.text)) return 0;
      }
      return 1;
    }
    return -1;
  }

  // False when `s` surely admits no value: it flattens to `false`, or it lists values
  // (const / enum) of which none passes its other keywords. Lets an anyOf skip such
  // branches without a rule each (azure-pipelines merges a 300-value anyOf into each of
  // 259 task branches, each keeping one or two values).
  bool MayHaveValue(const JsonValue& s0, const std::string& ptr) {
    if (!s0.IsObject()) return !s0.IsBool() || s0.boolean;
    const JsonValue& s = *Flatten(&s0, ptr, 0);
    if (s.IsBool()) return s.boolean;
    if (s.Find("anyOf") || s.Find("oneOf") || s.Find("not")) return true;
    const JsonValue *co = s.Find("const"), *en = s.Find("enum");
    if (!co && !(en && en->IsArray())) return true;
    std::set<std::string> types = TypesOf(s);
    for (const JsonValue& v : co ? std::vector<JsonValue>{*co} : en->items) {
      if (!HasType(types, v)) continue;
      bool keep = true;
      for (const auto& [k, kv] : s.members) {
        if (k == "enum" || k == "const" || k == "type" || kAnnotations.count(k)) continue;
        keep = keep && ValuePasses(k, kv, v) != 0;  // unknown (-1): kept, decided later
      }
      if (keep) return true;
    }
    return false;
  }

  int32_t Enumerated(const JsonValue& s, const std::vector<JsonValue>& values, const std::set<std::string>& types,
                     const std::string& ptr, int depth, bool is_const) {
    std::vector<int32_t> alts;
    for (const JsonValue& v : values) {
      if (!HasType(types, v)) continue;
      // A value that one keyword rejects is left out, whatever the keywords this front
      // end cannot decide on it say.
      bool keep = true;
      const std::string* undecided = nullptr;
      for (const auto& [k, kv] : s.members) {
        if (k == "enum" || k == "const" || k == "type" || kAnnotations.count(k)) continue;
        int verdict = ValuePasses(k, kv, v);
        if (verdict < 0 && !undecided) undecided = &k;
        keep = keep && verdict != 0;
      }
      if (keep && undecided) {
        Unsupported("`" + *undecided + "` beside `" + (is_const ? "const" : "enum") + "` on a value it applies to",
                    ptr + "/" + JsonPointerToken(*undecided));
      }
      if (keep) alts.push_back(text_.Value(v, LayoutDepth(depth)));
    }
    if (alts.empty()) return Nothing(&b_);
    return b_.Choice(alts);
  }

  int32_t Typed(const JsonValue& s, const std::set<std::string>& types, const std::string& ptr, int depth) {
    std::vector<int32_t> alts;
    if (types.count("null")) alts.push_back(b_.Bytes("null"));
    if (types.count("boolean")) alts.push_back(b_.Choice({b_.Bytes("true"), b_.Bytes("false")}));
    if (types.count("number")) {
      alts.push_back(NumberExpr(s, false, ptr));
    } else if (types.count("integer")) {
      alts.push_back(NumberExpr(s, true, ptr));
    }
    if (types.count("string")) alts.push_back(StringExpr(s, ptr));
    if (types.count("array")) alts.push_back(ArrayValue(s, ptr, depth));
    if (types.count("object")) alts.push_back(ObjectValue(s, ptr, depth));
    alts.erase(std::remove(alts.begin(), alts.end(), -1), alts.end());
    if (alts.empty()) return Nothing(&b_);
    return b_.Choice(alts);
  }

  static constexpr const char* kArrayKeywords[] = {
      "items", "prefixItems", "additionalItems", "contains", "minContains", "maxContains",
      "minItems", "maxItems", "uniqueItems", "unevaluatedItems"};
  static constexpr const char* kObjectKeywords[] = {
      "properties", "required", "additionalProperties", "patternProperties", "propertyNames",
      "minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies",
      "unevaluatedProperties"};

  template <size_t N>
  static bool HasAny(const JsonValue& s, const char* const (&keys)[N]) {
    for (const auto& member : s.members) {  // one pass, no key strings built
      for (const char* k : keys) {
        if (member.first == k) return true;
      }
    }
    return false;
  }

  // The arrays / objects `s` allows: its own automaton when it has a keyword of that kind,
  // else the shared one (AnyContainer).
  int32_t ArrayValue(const JsonValue& s, const std::string& ptr, int depth) {
    return HasAny(s, kArrayKeywords) ? ArrayExpr(s, ptr, depth) : AnyContainer('[', depth);
  }
  int32_t ObjectValue(const JsonValue& s, const std::string& ptr, int depth) {
    return HasAny(s, kObjectKeywords) ? ObjectExpr(s, ptr, depth) : AnyContainer('{', depth);
  }

  // An array or object with no keyword of its kind (`{"type": "array"}`, the arrays of
  // an untyped or `not`-ed value): any items, any properties. One shared rule each, so
  // that the many values that allow any container ("any value but a string", every
  // branch of an anyOf over scalar types) call one automaton instead of each carrying
  // its own copy of the container's brackets, separators and whitespace runs. Where the
  // layout depends on depth (indent), each keeps its own.
  int32_t AnyContainer(char bracket, int depth) {
    if (text_.layout().DependsOnDepth()) {
      return bracket == '[' ? ArrayExpr(TrueSchema(), "", depth) : ObjectExpr(TrueSchema(), "", depth);
    }
    int32_t& rule = any_container_[bracket == '[' ? 0 : 1];
    if (rule < 0) {
      rule = b_.NewRule(bracket == '[' ? "any_array" : "any_object");
      b_.SetShared(rule);
      b_.SetBody(rule, bracket == '[' ? ArrayExpr(TrueSchema(), "", depth) : ObjectExpr(TrueSchema(), "", depth));
    }
    return b_.Ref(rule);
  }

  // ---------------------------------------------------------------- numbers
  std::string NumberText(const JsonValue& s, const char* key, const std::string& ptr) {
    const JsonValue* v = s.Find(key);
    if (!v) return "";
    if (!v->IsNumber()) Fail(std::string(key) + " must be a number", ptr + "/" + key);
    return v->text;
  }

  int32_t NumberExpr(const JsonValue& s, bool integer, const std::string& ptr) {
    NumericConstraints c;
    std::string minimum = NumberText(s, "minimum", ptr), maximum = NumberText(s, "maximum", ptr);
    std::string xmin, xmax;
    const JsonValue* em = s.Find("exclusiveMinimum");
    const JsonValue* eM = s.Find("exclusiveMaximum");
    bool draft4_min = em && em->IsBool() && em->boolean, draft4_max = eM && eM->IsBool() && eM->boolean;
    if (em && em->IsNumber()) xmin = em->text;
    if (eM && eM->IsNumber()) xmax = eM->text;
    // The tighter of minimum / exclusiveMinimum (draft 4: a boolean beside minimum).
    c.minimum = minimum, c.exclusive_minimum = draft4_min && !minimum.empty();
    if (!xmin.empty() && (minimum.empty() || CompareDecimal(ParseDecimal(xmin), ParseDecimal(minimum)) >= 0)) {
      c.minimum = xmin, c.exclusive_minimum = true;
    }
    c.maximum = maximum, c.exclusive_maximum = draft4_max && !maximum.empty();
    if (!xmax.empty() && (maximum.empty() || CompareDecimal(ParseDecimal(xmax), ParseDecimal(maximum)) <= 0)) {
      c.maximum = xmax, c.exclusive_maximum = true;
    }
    c.multiple_of = NumberText(s, "multipleOf", ptr);
    if (!c.multiple_of.empty()) {
      DecimalNumber m = ParseDecimal(c.multiple_of);
      if (m.negative || m.digits.empty()) Fail("multipleOf must be positive", ptr + "/multipleOf");
    }
    const JsonValue* non_integral = s.Find(kNonIntegral);
    c.non_integral = non_integral && non_integral->IsBool() && non_integral->boolean;
    if (c.non_integral && integer) return Nothing(&b_);  // (not under the cache key of integers)
    // Schemas repeat their ranges ("minimum": 0 on every count): one automaton each.
    std::string key = std::string(integer ? "i" : c.non_integral ? "f" : "n") + (c.exclusive_minimum ? "(" : "[") +
                      c.minimum + "," + c.maximum + (c.exclusive_maximum ? ")" : "]") + "*" + c.multiple_of;
    if (auto it = numbers_.find(key); it != numbers_.end()) return it->second;
    try {
      int32_t e = integer ? AppendIntegerRange(&b_, c) : AppendNumberRange(&b_, c);
      return numbers_[key] = e < 0 ? Nothing(&b_) : e;
    } catch (const SchemaError& err) {
      std::string where = !c.multiple_of.empty() ? "/multipleOf" : "";
      if (opt_.unsupported == UnsupportedPolicy::kError) throw SchemaError(err.what(), ptr + where);
      Unsupported(err.what(), ptr + where);
      NumericConstraints none;
      return integer ? AppendIntegerRange(&b_, none) : AppendNumberRange(&b_, none);
    }
  }

  // ---------------------------------------------------------------- strings
  // A count keyword's value (minLength, maxItems, ...), capped at INT32_MAX; `fallback`
  // when absent.
  int64_t Count(const JsonValue& s, const char* key, const std::string& ptr, int64_t fallback) {
    const JsonValue* v = s.Find(key);
    if (!v) return fallback;
    std::optional<int64_t> n = CountValue(*v);
    if (!n) Fail(std::string(key) + " must be a non-negative integer", ptr + "/" + key);
    return *n;
  }

  // A non-negative integer's value capped at INT32_MAX; nullopt for any other value.
  static std::optional<int64_t> CountValue(const JsonValue& v) {
    if (!v.IsNumber()) return std::nullopt;
    DecimalNumber d = ParseDecimal(v.text);
    if (d.negative || d.exponent < 0) return std::nullopt;
    if (d.digits.size() + d.exponent > 10) return INT32_MAX;
    int64_t n = d.digits.empty() ? 0 : std::stoll(d.digits);
    for (int64_t e = 0; e < d.exponent; ++e) n *= 10;
    return std::min<int64_t>(n, INT32_MAX);
  }

  // `excluded`: strings left out (a `not` of string values), through the automaton path.
  int32_t StringExpr(const JsonValue& s, const std::string& ptr, const std::set<std::string>* excluded = nullptr) {
    int64_t min_len = Count(s, "minLength", ptr, 0), max_len = Count(s, "maxLength", ptr, -1);
    const JsonValue* pattern = s.Find("pattern");
    const JsonValue* not_patterns = s.Find(kNotPattern);
    const JsonValue* more_patterns = s.Find(kMorePatterns);
    const JsonValue* format = s.Find("format");
    if (max_len >= 0 && min_len > max_len) return Nothing(&b_);
    int32_t content = -1;
    if (pattern && !pattern->IsString()) Fail("pattern must be a string", ptr + "/pattern");
    if (excludes_ && !pattern && !more_patterns && (not_patterns || excluded)) {
      Unsupported("excludes on a string with `not` (its language is over values, excludes' over written text)", ptr);
    }
    if (not_patterns || more_patterns || excluded ||
        (pattern && (min_len > 0 || max_len >= 0 || LeadingLookaheads(pattern->text)))) {
      content = RegularContent(pattern, more_patterns, not_patterns, min_len, max_len, ptr, excluded);
    }
    if (pattern && content < 0) {
      try {
        int32_t re = AppendRegex(&b_, pattern->text, /*search=*/true);
        content = RewriteChars(&b_, re, [&](const std::vector<CodepointRange>& r) { return text_.CharIn(r); });
      } catch (const RegexError& e) {
        Fail(std::string("invalid pattern (at offset ") + std::to_string(e.position) + "): " + e.what(), ptr + "/pattern");
      }
    }
    if (format && format->IsString() && content < 0) {
      const char* ebnf = JsonFormatEbnf(format->text);
      if (ebnf) {
        if (min_len > 0 || max_len >= 0) {
          Unsupported("`format` together with minLength / maxLength", ptr + "/format");
        } else {
          auto it = formats_.find(format->text);
          if (it == formats_.end()) {
            GrammarPtr g = ParseEbnf(ebnf, "root");
            it = formats_.emplace(format->text, ImportGrammar(&b_, *g, "format_" + RuleNameFor(format->text) + "_")).first;
          }
          content = b_.Ref(it->second);
        }
      }  // unknown formats only annotate: any string
    } else if (format && format->IsString() && (pattern || not_patterns || more_patterns)) {
      if (JsonFormatEbnf(format->text)) Unsupported("`format` together with `pattern` or `not pattern`", ptr + "/format");
    }
    if (content < 0 && excludes_ && (min_len > 0 || max_len >= 0)) {
      try {
        content = text_.WrittenContent(excludes_->Content(min_len, max_len), "string");
      } catch (const DfaLimitError& e) {
        Unsupported(std::string(e.what()) + " (minLength / maxLength beside excludes)", ptr);
      }
    }
    if (content < 0) {
      if (min_len == 0 && max_len < 0) {
        content = text_.AnyContent();
      } else {
        content = b_.Repeat(text_.AnyChar(), static_cast<int32_t>(min_len),
                            max_len < 0 ? -1 : static_cast<int32_t>(max_len));
      }
    }
    return b_.Seq({b_.Bytes("\""), content, b_.Bytes("\"")});
  }

  // The automaton of a `pattern` read as a search, built once per pattern (a large schema
  // repeats its patterns, and each enum value beside one is checked against it). Throws
  // RegexError / DfaLimitError as CharDfa::FromPattern does.
  const CharDfa& SearchDfa(const std::string& pattern) {
    auto it = pattern_dfas_.find(pattern);
    if (it == pattern_dfas_.end()) it = pattern_dfas_.emplace(pattern, CharDfa::FromPattern(pattern, /*search=*/true)).first;
    return it->second;
  }

  // The automaton of a `pattern` (a search, as JSON Schema reads it); a SchemaError at
  // `ptr` when the pattern is invalid.
  const CharDfa& PatternDfa(const std::string& pattern, const std::string& ptr) {
    try {
      return SearchDfa(pattern);
    } catch (const RegexError& e) {
      Fail(std::string("invalid pattern (at offset ") + std::to_string(e.position) + "): " + e.what(), ptr);
    }
  }

  // String content that the IR cannot write from the regex directly: `pattern` (and the
  // patterns merged beside it) within length bounds, and/or none of the `not pattern`s,
  // as an automaton (regex_dfa.h). -1 (after Unsupported) when it is too large.
  int32_t RegularContent(const JsonValue* pattern, const JsonValue* more_patterns, const JsonValue* not_patterns,
                         int64_t min_len, int64_t max_len, const std::string& ptr,
                         const std::set<std::string>* excluded = nullptr) {
    std::string where = ptr + (pattern ? "/pattern" : "/not/pattern");
    try {
      CharDfa dfa = pattern ? PatternDfa(pattern->text, ptr + "/pattern") : CharDfa::LengthBetween(0, -1);
      if (more_patterns) {
        for (const JsonValue& p : more_patterns->items) dfa = dfa.Intersect(PatternDfa(p.text, where));
      }
      if (not_patterns) {
        for (const JsonValue& p : not_patterns->items) dfa = dfa.Minus(PatternDfa(p.text, where));
      }
      if (min_len > 0 || max_len >= 0) dfa = dfa.Intersect(CharDfa::LengthBetween(min_len, max_len));
      if (excluded) dfa = dfa.Minus(CharDfa::Words({excluded->begin(), excluded->end()}));
      return EmitDfa(&b_, dfa, [&](const std::vector<CodepointRange>& r) { return text_.CharIn(r); }, "string");
    } catch (const DfaLimitError& e) {
      Unsupported(std::string(e.what()) + " (pattern with minLength / maxLength, or not pattern)", where);
      return -1;
    }
  }

  // ---------------------------------------------------------------- arrays
  int32_t ArrayExpr(const JsonValue& s, const std::string& ptr, int depth) {
    int d = LayoutDepth(depth);
    int64_t min_items = Count(s, "minItems", ptr, 0), max_items = Count(s, "maxItems", ptr, -1);
    std::vector<const JsonValue*> prefix;
    std::vector<std::string> prefix_ptr;
    const JsonValue* rest = &TrueSchema();
    std::string rest_ptr = ptr + "/items";
    const JsonValue* prefix_items = s.Find("prefixItems");
    const JsonValue* items = s.Find("items");
    if (items && items->IsArray()) {  // draft 4-7 tuple form
      prefix_items = items;
      items = s.Find("additionalItems");
      rest_ptr = ptr + "/additionalItems";
    }
    if (prefix_items) {
      if (!prefix_items->IsArray()) Fail("prefixItems must be an array", ptr + "/prefixItems");
      for (size_t i = 0; i < prefix_items->items.size(); ++i) {
        prefix.push_back(&prefix_items->items[i]);
        prefix_ptr.push_back(ptr + "/prefixItems/" + std::to_string(i));
      }
    }
    if (items) rest = items;
    bool rest_false = rest->IsBool() && !rest->boolean;
    if (rest_false) max_items = max_items < 0 ? static_cast<int64_t>(prefix.size()) : std::min<int64_t>(max_items, prefix.size());
    if (max_items >= 0 && min_items > max_items) return Nothing(&b_);
    if (s.Find("contains")) return ContainsArray(s, rest, ptr, depth, min_items, max_items, !prefix.empty());
    if (const JsonValue* u = s.Find("uniqueItems"); u && u->IsBool() && u->boolean) {
      return UniqueArray(s, rest, ptr, depth, min_items, max_items, !prefix.empty());
    }
    auto item_at = [&](size_t i) {
      return i < prefix.size() ? Schema(*prefix[i], prefix_ptr[i], depth + 1) : Schema(*rest, rest_ptr, depth + 1);
    };
    // tail(i): items i.. given that i items were written, each after a separator.
    std::function<int32_t(size_t)> tail = [&](size_t i) -> int32_t {
      if (i >= prefix.size()) {
        if (rest_false) return b_.Empty();
        int64_t lo = std::max<int64_t>(0, min_items - static_cast<int64_t>(i));
        int64_t hi = max_items < 0 ? -1 : max_items - static_cast<int64_t>(i);
        if (hi == 0) return b_.Empty();
        int32_t one = b_.Seq({text_.ItemSeparator(d), item_at(i)});
        return b_.Repeat(one, static_cast<int32_t>(lo), static_cast<int32_t>(hi));
      }
      if (max_items >= 0 && static_cast<int64_t>(i) >= max_items) return b_.Empty();
      int32_t here = b_.Seq({text_.ItemSeparator(d), item_at(i), tail(i + 1)});
      return static_cast<int64_t>(i) < min_items ? here : b_.Optional(here);
    };
    return text_.Container('[', ']', d, min_items == 0, max_items != 0 ? b_.Seq({item_at(0), tail(1)}) : -1);
  }

  // Arrays whose items are drawn from a finite set, each used at most once, in the set's
  // order (a narrower but exact grammar: every array it allows has unique items).
  int32_t UniqueArray(const JsonValue& s, const JsonValue* rest, const std::string& ptr, int depth, int64_t min_items,
                      int64_t max_items, bool has_prefix) {
    const JsonValue* flat = Flatten(rest, ptr + "/items", 0);
    std::vector<JsonValue> values;
    bool finite = false;
    if (flat->IsObject()) {
      if (const JsonValue* c = flat->Find("const")) values = {*c}, finite = true;
      else if (const JsonValue* e = flat->Find("enum")) values = e->items, finite = true;
      else if (TypesOf(*flat) == std::set<std::string>{"boolean"}) {
        values = {BoolSchema(true), BoolSchema(false)}, finite = true;
      } else if (TypesOf(*flat) == std::set<std::string>{"null"}) {
        values = {JsonValue{}}, finite = true;
      }
    }
    if (!finite || has_prefix || values.size() > kMaxEnumerated) {
      Unsupported("uniqueItems with items that are not a small finite set", ptr + "/uniqueItems");
      JsonValue without = WithoutKey(s, "uniqueItems");
      return ArrayExpr(*Keep(std::move(without)), ptr, depth);
    }
    int d = LayoutDepth(depth);
    std::set<std::string> types = TypesOf(*flat);
    std::vector<JsonValue> distinct;
    for (const JsonValue& v : values) {
      bool dup = false;
      for (const JsonValue& w : distinct) dup = dup || JsonEqual(v, w);
      if (!dup && HasType(types, v)) distinct.push_back(v);
    }
    // seq(i, n): items chosen from distinct[i..] in order, n already written, each after a separator.
    std::map<std::pair<size_t, int64_t>, int32_t> memo;
    std::function<int32_t(size_t, int64_t)> seq = [&](size_t i, int64_t n) -> int32_t {
      if (i == distinct.size() || (max_items >= 0 && n >= max_items)) return n >= min_items ? b_.Empty() : Nothing(&b_);
      auto key = std::make_pair(i, n);
      if (auto it = memo.find(key); it != memo.end()) return b_.Ref(it->second);
      int32_t rule = b_.NewRule("unique_items");
      memo[key] = rule;
      int32_t take = b_.Seq({text_.ItemSeparator(d), text_.Value(distinct[i], LayoutDepth(depth + 1)), seq(i + 1, n + 1)});
      b_.SetBody(rule, b_.Choice({take, seq(i + 1, n)}));
      return b_.Ref(rule);
    };
    std::vector<int32_t> alts;
    if (min_items == 0) alts.push_back(text_.EmptyContainer('[', ']'));
    std::vector<int32_t> firsts;  // the first item written is distinct[i]
    for (size_t i = 0; i < distinct.size() && max_items != 0; ++i) {
      firsts.push_back(b_.Seq({text_.Value(distinct[i], LayoutDepth(depth + 1)), seq(i + 1, 1)}));
    }
    if (!firsts.empty()) alts.push_back(b_.Seq({text_.Open('[', d), b_.Choice(firsts), text_.Close(']', d)}));
    if (alts.empty()) return Nothing(&b_);
    return b_.Choice(alts);
  }

  int32_t ContainsArray(const JsonValue& s, const JsonValue* rest, const std::string& ptr, int depth, int64_t min_items,
                        int64_t max_items, bool has_prefix) {
    const JsonValue* contains = s.Find("contains");
    int64_t min_contains = Count(s, "minContains", ptr, 1);
    if (min_contains == 0 && !s.Find("maxContains")) {  // `contains` asks for nothing
      JsonValue without = WithoutKey(WithoutKey(s, "contains"), "minContains");
      return ArrayExpr(*Keep(std::move(without)), ptr, depth);
    }
    if (max_items == 0 && !has_prefix) {  // `items: false` or maxItems 0: only [] (no item is a hit)
      return min_contains == 0 ? text_.EmptyContainer('[', ']') : Nothing(&b_);
    }
    auto widened = [&](const std::string& why, const std::string& at) {
      Unsupported(why, at);
      JsonValue without = WithoutKey(WithoutKey(WithoutKey(s, "contains"), "minContains"), "maxContains");
      return ArrayExpr(*Keep(std::move(without)), ptr, depth);
    };
    if (has_prefix || min_items > 0 || max_items >= 0 || (s.Find("uniqueItems") && s.Find("uniqueItems")->boolean)) {
      return widened("contains with prefixItems, minItems, maxItems or uniqueItems", ptr + "/contains");
    }
    if (s.Find("maxContains")) return MaxContainsArray(s, *rest, ptr, depth, min_contains, widened);
    // At least min_contains hits among any items (a hit is also an `any`).
    int32_t any = Schema(*rest, ptr + "/items", depth + 1);
    int32_t hit = Schema(*Keep(AllOf(*rest, *contains)), ptr + "/contains", depth + 1);
    const auto n = static_cast<int32_t>(min_contains);
    return HitsAmongItems(any, hit, n, n, LayoutDepth(depth));
  }

  // [ (filler sep)* hit ( (sep filler)* sep hit ){lo-1,hi-1} (sep filler)* ]: lo..hi items
  // written as `hit` (lo >= 1), any number of `filler` items around them.
  int32_t HitsAmongItems(int32_t filler, int32_t hit, int32_t lo, int32_t hi, int d) {
    int32_t sep = text_.ItemSeparator(d);
    int32_t lead = b_.Star(b_.Seq({filler, sep}));
    int32_t more = b_.Repeat(b_.Seq({b_.Star(b_.Seq({sep, filler})), sep, hit}), lo - 1, hi - 1);
    int32_t trail = b_.Star(b_.Seq({sep, filler}));
    return b_.Seq({text_.Open('[', d), lead, hit, more, trail, text_.Close(']', d)});
  }

  // `contains` with maxContains: every item either matches `contains` (a hit) or not (a
  // miss, through its negation), so the hits are counted exactly: [] or
  // [ miss (sep miss)* ] when no hit is needed, and HitsAmongItems(miss, hit) for 1.. hits.
  template <class Widened>
  int32_t MaxContainsArray(const JsonValue& s, const JsonValue& rest, const std::string& ptr, int depth,
                           int64_t min_contains, Widened&& widened) {
    const int64_t max_contains = Count(s, "maxContains", ptr, -1);
    if (max_contains > GrammarLimits::kMaxRepeat) {
      return widened("maxContains above " + std::to_string(GrammarLimits::kMaxRepeat), ptr + "/maxContains");
    }
    if (max_contains < min_contains) return Nothing(&b_);
    std::optional<JsonValue> not_contains = Negation(*s.Find("contains"), ptr + "/contains", depth + 1);
    if (!not_contains) {
      return widened("maxContains beside a `contains` this front end cannot negate", ptr + "/maxContains");
    }
    const int d = LayoutDepth(depth);
    const int32_t sep = text_.ItemSeparator(d);
    const int32_t miss = Schema(*Keep(AllOf(rest, *not_contains)), ptr + "/contains", depth + 1);
    std::vector<int32_t> alts;
    if (min_contains == 0) {
      alts.push_back(text_.Container('[', ']', d, true, b_.Seq({miss, b_.Star(b_.Seq({sep, miss}))})));
    }
    if (max_contains >= 1) {
      const int32_t hit = Schema(*Keep(AllOf(rest, *s.Find("contains"))), ptr + "/contains", depth + 1);
      const auto lo = static_cast<int32_t>(std::max<int64_t>(min_contains, 1));
      alts.push_back(HitsAmongItems(miss, hit, lo, static_cast<int32_t>(max_contains), d));
    }
    return b_.Choice(alts);
  }

  // ---------------------------------------------------------------- objects
  struct Property {
    std::string name;
    int32_t value;
    bool required;
  };

  int32_t ObjectExpr(const JsonValue& s, const std::string& ptr, int depth) {
    int d = LayoutDepth(depth);
    const JsonValue* props = s.Find("properties");
    const JsonValue* req = s.Find("required");
    if (props && !props->IsObject()) Fail("properties must be an object", ptr + "/properties");
    if (req && !req->IsArray()) Fail("required must be an array", ptr + "/required");
    std::set<std::string> required;
    if (req) {
      for (const JsonValue& r : req->items) {
        if (!r.IsString()) Fail("required must list strings", ptr + "/required");
        required.insert(r.text);
      }
    }
    std::vector<Property> declared;
    std::set<std::string> names;
    // Declared and required names must also be names propertyNames allows.
    std::optional<CharDfa> names_dfa;
    const JsonValue* property_names = s.Find("propertyNames");
    if (property_names && ((props && !props->members.empty()) || !required.empty())) {
      names_dfa = NamesDfa(*property_names, ptr + "/propertyNames");
    }
    auto name_allowed = [&](const std::string& name) { return !names_dfa || names_dfa->Accepts(name); };
    for (const std::string& r : required) {
      if (!name_allowed(r)) return Nothing(&b_);
    }
    if (props) {
      for (const auto& [name, sub] : props->members) {
        if (!name_allowed(name)) continue;  // never present (and not required: checked above)
        std::string pp = ptr + "/properties/" + JsonPointerToken(name);
        const JsonValue& value_schema = *WithMatchingPatterns(s, name, sub, ptr);
        declared.push_back({name, b_.Seq({text_.StringLiteral(name), text_.KeySeparator(),
                                          Schema(value_schema, pp, depth + 1)}),
                            required.count(name) > 0});
        names.insert(name);
      }
    }
    // Required names without a declaration: any value (JSON Schema's default).
    for (const std::string& r : required) {
      if (!names.count(r)) {
        const JsonValue* addl = s.Find("additionalProperties");
        const JsonValue* by_pattern = WithMatchingPatterns(s, r, TrueSchema(), ptr);
        bool matched = by_pattern != &TrueSchema();
        const JsonValue& value_schema = matched ? *by_pattern : addl && !addl->IsBool() ? *addl : TrueSchema();
        if (!matched && addl && addl->IsBool() && !addl->boolean) return Nothing(&b_);
        declared.push_back({r, b_.Seq({text_.StringLiteral(r), text_.KeySeparator(),
                                       Schema(value_schema, ptr + "/additionalProperties", depth + 1)}), true});
        names.insert(r);
      }
    }
    int32_t extra = ExtraProperty(s, names, ptr, depth);
    int64_t min_props = Count(s, "minProperties", ptr, 0), max_props = Count(s, "maxProperties", ptr, -1);
    if (max_props >= 0 && min_props > max_props) return Nothing(&b_);  // no object has that many properties
    int64_t n_required = 0;
    for (auto& p : declared) n_required += p.required;
    if (opt_.any_order) return AnyOrderObject(declared, extra, std::max(min_props, n_required), max_props, d);
    // dependentRequired never gets here: Flatten turns it into conditionals.
    // Bounds every object of this grammar meets anyway cost no counting rules.
    bool trivially_bounded = min_props <= n_required &&
                             (max_props < 0 || (extra < 0 && max_props >= static_cast<int64_t>(declared.size())));
    if (trivially_bounded) min_props = 0, max_props = -1;
    return CountedObject(declared, extra, min_props, max_props, d);
  }

  // A property not declared: a key allowed by additionalProperties / patternProperties /
  // propertyNames, then its value; -1 when none is allowed.
  int32_t ExtraProperty(const JsonValue& s, const std::set<std::string>& names, const std::string& ptr, int depth) {
    const JsonValue* addl = s.Find("additionalProperties");
    const JsonValue* pattern_props = s.Find("patternProperties");
    const JsonValue* property_names = s.Find("propertyNames");
    // strict: a schema that declares properties gets no others unless it says so; one
    // that declares none (`{"type": "object"}`) allows any.
    bool declares = s.Find("properties") != nullptr;
    bool allowed = addl ? !(addl->IsBool() && !addl->boolean) : !(opt_.strict && declares);
    // propertyNames beside other key rules: its key language as an automaton, which every
    // undeclared key must also be in (declared names are checked in ObjectExpr).
    std::optional<CharDfa> names_dfa;
    if (property_names && (pattern_props || !names.empty())) {
      names_dfa = NamesDfa(*property_names, ptr + "/propertyNames");
      if (!names_dfa) return -1;
    }
    if (pattern_props && pattern_props->IsObject() && !pattern_props->members.empty()) {
      // strict: the patterns declare which keys are generated, as `properties` does.
      bool others = addl ? allowed : !opt_.strict;
      if (pattern_props->members.size() > 1 || !names.empty() || others || names_dfa) {
        return KeyRegions(*pattern_props, names, !others ? nullptr : addl ? addl : &TrueSchema(), ptr, depth,
                          names_dfa ? &*names_dfa : nullptr);
      }
      const auto& [pattern, sub] = pattern_props->members[0];
      std::string pp = ptr + "/patternProperties/" + JsonPointerToken(pattern);
      int32_t key;
      try {
        if (LeadingLookaheads(pattern)) {  // `^(?!X)...`: only the automaton takes it
          key = EmitKeys(SearchDfa(pattern));
        } else {
          int32_t re = AppendRegex(&b_, pattern, true);
          key = RewriteChars(&b_, re, [&](const std::vector<CodepointRange>& r) { return text_.CharIn(r); });
        }
      } catch (const RegexError& e) {
        Fail(std::string("invalid pattern (at offset ") + std::to_string(e.position) + "): " + e.what(), pp);
      } catch (const DfaLimitError& e) {
        Unsupported(std::string(e.what()) + " (a patternProperties key with a lookahead)", pp);
        return -1;
      }
      return b_.Seq({b_.Bytes("\""), key, b_.Bytes("\""), text_.KeySeparator(), Schema(sub, pp, depth + 1)});
    }
    if (!allowed) return -1;
    const JsonValue& value_schema = addl && !addl->IsBool() ? *addl : TrueSchema();
    int32_t key;
    if (names_dfa) {
      if (excludes_) Unsupported("excludes beside propertyNames and declared properties", ptr + "/propertyNames");
      CharDfa keys = names_dfa->Minus(CharDfa::Words({names.begin(), names.end()}));
      if (keys.IsEmpty()) return -1;
      key = b_.Seq({b_.Bytes("\""), EmitKeys(keys), b_.Bytes("\"")});
    } else if (property_names) {
      JsonValue key_schema = AllOf(*property_names, Obj({{"type", Str("string")}}));
      key = Schema(*Keep(std::move(key_schema)), ptr + "/propertyNames", depth + 1);
    } else {
      key = KeyNotIn(names);
    }
    return b_.Seq({key, text_.KeySeparator(), Schema(value_schema, ptr + "/additionalProperties", depth + 1)});
  }

  // `sub`, and the schemas of the patternProperties that `name` matches (allOf); `sub`
  // itself when none does.
  const JsonValue* WithMatchingPatterns(const JsonValue& s, const std::string& name, const JsonValue& sub,
                                        const std::string& ptr) {
    const JsonValue* pattern_props = s.Find("patternProperties");
    if (!pattern_props || !pattern_props->IsObject()) return &sub;
    const JsonValue* out = &sub;
    for (const auto& [pattern, schema] : pattern_props->members) {
      std::string pp = ptr + "/patternProperties/" + JsonPointerToken(pattern);
      try {
        if (PatternDfa(pattern, pp).Accepts(name)) out = Keep(AllOf(*out, schema));
      } catch (const DfaLimitError& e) {
        Unsupported(e.what(), pp);
      }
    }
    return out;
  }

  int32_t EmitKeys(const CharDfa& keys) {
    return EmitDfa(&b_, keys, [&](const std::vector<CodepointRange>& c) { return text_.CharIn(c); }, "key");
  }

  // The names `propertyNames` allows, as an automaton, when it says only what a string
  // automaton can (type string, pattern, min / maxLength, const, enum, true / false);
  // nullopt after Unsupported otherwise.
  std::optional<CharDfa> NamesDfa(const JsonValue& schema, const std::string& ptr) {
    const JsonValue& s = *Flatten(&schema, ptr, 0);
    if (s.IsBool()) return s.boolean ? CharDfa::LengthBetween(0, -1) : CharDfa::Words({});
    static const std::set<std::string> kNameKeywords = {"type", "pattern", "minLength", "maxLength", "const", "enum"};
    for (const auto& [k, v] : s.members) {
      if (kValidating.count(k) && !kNameKeywords.count(k)) {
        Unsupported("propertyNames with `" + k + "` beside declared properties or patternProperties", ptr + "/" + k);
        return std::nullopt;
      }
    }
    try {
      int64_t min_len = Count(s, "minLength", ptr, 0), max_len = Count(s, "maxLength", ptr, -1);
      CharDfa dfa = CharDfa::LengthBetween(min_len, max_len);
      if (const JsonValue* p = s.Find("pattern")) {
        if (!p->IsString()) Fail("pattern must be a string", ptr + "/pattern");
        dfa = dfa.Intersect(PatternDfa(p->text, ptr + "/pattern"));
      }
      const JsonValue* co = s.Find("const");
      const JsonValue* en = s.Find("enum");
      if (co || (en && en->IsArray())) {
        std::vector<std::string> words;
        for (const JsonValue& v : co ? std::vector<JsonValue>{*co} : en->items) {
          if (v.IsString()) words.push_back(v.text);
        }
        dfa = dfa.Intersect(CharDfa::Words(words));
      }
      if (!TypesOf(s).count("string")) return CharDfa::Words({});
      return dfa;
    } catch (const DfaLimitError& e) {
      Unsupported(e.what(), ptr);
      return std::nullopt;
    }
  }

  // The undeclared properties beside patternProperties: keys are split into regions, one
  // per set of patterns a key matches (its value must satisfy all of their schemas),
  // declared names left out; keys matching no pattern take `others` (additionalProperties;
  // nullptr: none allowed, true: any value). Each region's key language is an automaton.
  int32_t KeyRegions(const JsonValue& pattern_props, const std::set<std::string>& names, const JsonValue* others,
                     const std::string& ptr, int depth, const CharDfa* allowed_keys = nullptr) {
    constexpr size_t kMaxRegions = 64;
    struct Region {
      CharDfa keys;
      std::vector<size_t> patterns;
    };
    std::string pp = ptr + "/patternProperties";
    std::vector<int32_t> alts;
    try {
      if (pattern_props.members.size() == 1 && !others && !allowed_keys) {
        // One pattern and no other undeclared keys (OpenAPI's `^x-` beside
        // additionalProperties false, on every object): the pattern's keys but the
        // declared names it matches, without the automaton of every undeclared key.
        const auto& [pattern, sub] = pattern_props.members[0];
        std::string where = pp + "/" + JsonPointerToken(pattern);
        const CharDfa& p = PatternDfa(pattern, where);
        std::vector<std::string> matched;
        for (const std::string& name : names) {
          if (p.Accepts(name)) matched.push_back(name);
        }
        CharDfa keys = matched.empty() ? p : p.Minus(CharDfa::Words(matched));
        if (keys.IsEmpty()) return -1;
        return b_.Seq({b_.Bytes("\""), EmitKeys(keys), b_.Bytes("\""), text_.KeySeparator(), Schema(sub, where, depth + 1)});
      }
      CharDfa keys = allowed_keys ? *allowed_keys : CharDfa::LengthBetween(0, -1);
      std::vector<Region> regions = {{keys.Minus(CharDfa::Words({names.begin(), names.end()})), {}}};
      for (size_t i = 0; i < pattern_props.members.size(); ++i) {
        const std::string& pattern = pattern_props.members[i].first;
        const CharDfa& p = PatternDfa(pattern, pp + "/" + JsonPointerToken(pattern));
        std::vector<Region> split;
        for (Region& r : regions) {
          Region in{r.keys.Intersect(p), r.patterns};
          in.patterns.push_back(i);
          Region out{r.keys.Minus(p), r.patterns};
          if (!in.keys.IsEmpty()) split.push_back(std::move(in));
          if (!out.keys.IsEmpty()) split.push_back(std::move(out));
        }
        regions = std::move(split);
        if (regions.size() > kMaxRegions) {
          Unsupported("patternProperties whose patterns overlap in more than " + std::to_string(kMaxRegions) + " ways", pp);
          return -1;
        }
      }
      for (const Region& r : regions) {
        if (r.patterns.empty() && !others) continue;
        if (r.patterns.empty() && excludes_) {
          Unsupported("excludes on the names additionalProperties allows beside patternProperties", ptr);
        }
        const JsonValue* value = r.patterns.empty() ? others : &pattern_props.members[r.patterns[0]].second;
        for (size_t k = 1; k < r.patterns.size(); ++k) value = Keep(AllOf(*value, pattern_props.members[r.patterns[k]].second));
        std::string vp = r.patterns.empty() ? ptr + "/additionalProperties"
                                            : pp + "/" + JsonPointerToken(pattern_props.members[r.patterns[0]].first);
        int32_t key = EmitKeys(r.keys);
        alts.push_back(b_.Seq({b_.Bytes("\""), key, b_.Bytes("\""), text_.KeySeparator(), Schema(*value, vp, depth + 1)}));
      }
    } catch (const DfaLimitError& e) {
      Unsupported(std::string(e.what()) + " (patternProperties beside other keys)", pp);
      return -1;
    }
    if (alts.empty()) return -1;
    return b_.Choice(alts);
  }

  // A JSON string whose value is none of `names`, as a rule of its own (an object
  // writes it after each of its properties: one automaton, not one copy per place).
  int32_t KeyNotIn(const std::set<std::string>& names) {
    if (names.empty()) return b_.Seq({b_.Bytes("\""), text_.AnyContent(), b_.Bytes("\"")});
    auto it = key_not_in_.find(names);
    if (it == key_not_in_.end() && excludes_) {  // written names holding no exclusion, spelling none of `names`
      try {
        int32_t body = b_.Seq({b_.Bytes("\""), text_.WrittenContent(excludes_->ContentNotIn(names), "key"),
                               b_.Bytes("\"")});
        it = key_not_in_.emplace(names, b_.NewRule("key_not_in")).first;
        b_.SetBody(it->second, body);
      } catch (const DfaLimitError& e) {
        Unsupported(std::string(e.what()) + " (undeclared property names beside excludes)", "");
      }
    }
    if (it == key_not_in_.end()) {
      bool raw = std::all_of(names.begin(), names.end(), [](const std::string& n) {
        return std::all_of(n.begin(), n.end(), [](char c) {
          uint8_t u = static_cast<uint8_t>(c);  // char may be unsigned: compare bytes
          return u >= 0x20 && u < 0x7F && u != '"' && u != '\\';
        });
      });
      int32_t body = raw ? KeyNotInRaw(names) : KeyNotInAnyForm(names);
      it = key_not_in_.emplace(names, b_.NewRule("key_not_in")).first;
      b_.SetBody(it->second, body);
    }
    return b_.Ref(it->second);
  }

  // KeyNotIn for names of printable ASCII characters other than `"` and `\` (what names
  // almost always are), narrowed as names are written: while a string still spells the
  // start of a name, its printable ASCII characters are raw (never \u0061 for `a`; a
  // `\/` neither where `/` would go on spelling one), up to and including the first
  // character that leaves every name, as json.dumps writes them (DEL is left out of such
  // names: json.dumps escapes it with ensure_ascii). Each trie node is then a byte
  // edge per next character of the names and one class for any other character, where
  // the exact form needs a rule per set of next characters (every escape of every
  // character but those) and ~10x the work to build. A string is either a proper prefix
  // that is no name (`spelled`, a trie of literal bytes) or leaves the trie at a
  // character no name has there, then anything (`left`).
  int32_t KeyNotInRaw(const std::set<std::string>& names) {
    struct Node {
      bool is_name = false;
      std::map<char, int32_t> next;
    };
    std::vector<Node> trie(1);
    for (const std::string& n : names) {
      int32_t at = 0;
      for (char c : n) {
        auto it = trie[at].next.find(c);
        if (it != trie[at].next.end()) {
          at = it->second;
          continue;
        }
        int32_t child = static_cast<int32_t>(trie.size());
        trie.emplace_back();
        trie[at].next.emplace(c, child);
        at = child;
      }
      trie[at].is_name = true;
    }
    // Any character that never continues a name: short escapes (`\/` unless `/` does),
    // controls and DEL as \u00XX, non-ASCII in every form.
    auto unprintable = [&](bool slash_continues) {
      int32_t& rule = unprintable_[slash_continues];
      if (rule < 0) {
        std::vector<CodepointRange> letters = {{'"', '"'}, {'\\', '\\'}, {'b', 'b'}, {'f', 'f'},
                                               {'n', 'n'}, {'r', 'r'}, {'t', 't'}};
        if (!slash_continues) letters.push_back({'/', '/'});
        int32_t hex = b_.Class({{'0', '9'}, {'a', 'f'}, {'A', 'F'}});
        int32_t control = b_.Seq({b_.Bytes("u00"), b_.Choice({b_.Seq({b_.Class({{'0', '1'}}), hex}),
                                                                b_.Seq({b_.Bytes("7"), b_.Class({{'F', 'F'}, {'f', 'f'}})})})});
        rule = b_.NewRule("json_char_unprintable");
        b_.SetBody(rule, b_.Choice({b_.Seq({b_.Bytes("\\"), b_.Choice({b_.Class(letters), control})}),
                                    text_.NonAsciiChar()}));
      }
      return b_.Ref(rule);
    };
    // Children come after their parent: build from the last node back.
    std::vector<int32_t> spelled(trie.size(), -1), left(trie.size(), -1);
    for (size_t i = trie.size(); i-- > 0;) {
      const Node& node = trie[i];
      std::vector<int32_t> a, b;
      if (!node.is_name) a.push_back(b_.Empty());
      std::vector<CodepointRange> not_other = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};  // raw ASCII
      for (const auto& [c, child] : node.next) {
        if (spelled[child] >= 0) a.push_back(b_.Seq({b_.Bytes(std::string(1, c)), spelled[child]}));
        b.push_back(b_.Seq({b_.Bytes(std::string(1, c)), left[child]}));
        not_other.push_back({static_cast<uint8_t>(c), static_cast<uint8_t>(c)});
      }
      std::sort(not_other.begin(), not_other.end(), [](CodepointRange x, CodepointRange y) { return x.lo < y.lo; });
      int32_t other = b_.Class(ComplementRanges(not_other, 0x7F));
      b.push_back(b_.Choice({other, unprintable(node.next.count('/') > 0)}));
      if (!a.empty()) spelled[i] = b_.Choice(a);
      left[i] = b_.Choice(b);
    }
    int32_t leaves = b_.Seq({left[0], b_.Star(text_.AnyChar())});
    return b_.Seq({b_.Bytes("\""), spelled[0] >= 0 ? b_.Choice({spelled[0], leaves}) : leaves, b_.Bytes("\"")});
  }

  // KeyNotIn for any names (exact: a trie of the names, every character in every JSON
  // form).
  int32_t KeyNotInAnyForm(const std::set<std::string>& names) {
    // Decode names into code points; build the trie recursively over prefixes.
    std::vector<std::vector<uint32_t>> words;
    for (const std::string& n : names) {
      std::vector<uint32_t> w;
      size_t p = 0;
      while (p < n.size()) {
        int32_t cp = DecodeUtf8(n, &p);
        w.push_back(cp < 0 ? 0xFFFD : static_cast<uint32_t>(cp));
      }
      words.push_back(w);
    }
    int32_t free_tail = b_.Star(text_.AnyChar());
    std::function<int32_t(const std::vector<size_t>&, size_t)> node = [&](const std::vector<size_t>& ws, size_t k) -> int32_t {
      bool is_name = false;
      std::map<uint32_t, std::vector<size_t>> next;
      for (size_t w : ws) {
        if (words[w].size() == k) is_name = true;
        else next[words[w][k]].push_back(w);
      }
      std::vector<int32_t> alts;
      if (!is_name) alts.push_back(b_.Empty());
      std::vector<CodepointRange> other = {{0, 0xD7FF}, {0xE000, kMaxCodepoint}};
      for (const auto& [c, sub] : next) {
        alts.push_back(b_.Seq({text_.CharIn({{c, c}}), node(sub, k + 1)}));
        std::vector<CodepointRange> cut;
        for (auto r : other) {
          if (c < r.lo || c > r.hi) {
            cut.push_back(r);
            continue;
          }
          if (r.lo < c) cut.push_back({r.lo, c - 1});
          if (c < r.hi) cut.push_back({c + 1, r.hi});
        }
        other = cut;
      }
      alts.push_back(b_.Seq({OtherChars(other), free_tail}));
      return b_.Choice(alts);
    };
    std::vector<size_t> all(words.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    return b_.Seq({b_.Bytes("\""), node(all, 0), b_.Bytes("\"")});
  }

  // A rule for the JSON characters in `ranges`, one per distinct set: the trie of
  // KeyNotIn asks for "every character but these few" at each node.
  int32_t OtherChars(const std::vector<CodepointRange>& ranges) {
    std::vector<std::pair<uint32_t, uint32_t>> key;
    for (auto r : ranges) key.push_back({r.lo, r.hi});
    auto it = other_chars_.find(key);
    if (it == other_chars_.end()) {
      int32_t rule = b_.NewRule("json_char_but");
      b_.SetBody(rule, text_.CharIn(ranges));
      it = other_chars_.emplace(key, rule).first;
    }
    return b_.Ref(it->second);
  }

  // Declared properties in order (required ones always, optional ones maybe), then any
  // number of extra properties, with the count of properties in [min_props, max_props].
  int32_t CountedObject(const std::vector<Property>& declared, int32_t extra, int64_t min_props, int64_t max_props,
                        int d) {
    // Counts that no bound tells apart share rules: without maxProperties, all counts
    // from max(minProperties, 1) on are alike (1: a separator comes first).
    int64_t cap = max_props >= 0 ? max_props + 1 : std::max<int64_t>(min_props, 1);
    if (cap > 1000) throw SchemaError("minProperties / maxProperties above 1000 are not supported", "");
    int64_t n = static_cast<int64_t>(declared.size());
    std::map<std::pair<int64_t, int64_t>, int32_t> memo;
    // rest(i, k): properties from i on, k already written (k > 0: each starts with a separator).
    std::function<int32_t(int64_t, int64_t)> rest = [&](int64_t i, int64_t k) -> int32_t {
      int64_t kk = std::min(k, cap);
      if (max_props >= 0 && kk > max_props) return Nothing(&b_);
      auto key = std::make_pair(i, kk);
      if (auto it = memo.find(key); it != memo.end()) return b_.Ref(it->second);
      int32_t rule = b_.NewRule("props");
      memo[key] = rule;
      int32_t body;
      if (i < n) {
        const Property& p = declared[i];
        int32_t take = b_.Seq({kk ? text_.ItemSeparator(d) : b_.Empty(), p.value, rest(i + 1, kk + 1)});
        body = p.required ? take : b_.Choice({take, rest(i + 1, kk)});
      } else {
        std::vector<int32_t> alts;
        if (kk >= min_props) alts.push_back(b_.Empty());
        if (extra >= 0 && (max_props < 0 || kk < max_props)) {
          int64_t lo = std::max<int64_t>(0, min_props - kk), hi = max_props < 0 ? -1 : max_props - kk;
          if (kk == 0) {
            alts.push_back(b_.Seq({extra, b_.Repeat(b_.Seq({text_.ItemSeparator(d), extra}),
                                                    static_cast<int32_t>(std::max<int64_t>(0, lo - 1)),
                                                    hi < 0 ? -1 : static_cast<int32_t>(hi - 1))}));
          } else {
            alts.push_back(b_.Repeat(b_.Seq({text_.ItemSeparator(d), extra}), static_cast<int32_t>(std::max<int64_t>(1, lo)),
                                     hi < 0 ? -1 : static_cast<int32_t>(hi)));
          }
        }
        body = alts.empty() ? Nothing(&b_) : b_.Choice(alts);
      }
      b_.SetBody(rule, body);
      return b_.Ref(rule);
    };
    // The empty object, or "{" properties "}" with at least one property.
    bool can_be_empty = min_props == 0;
    for (const Property& p : declared) can_be_empty = can_be_empty && !p.required;
    return text_.Container('{', '}', d, can_be_empty, FirstProperty(declared, extra, rest, min_props, max_props, d));
  }

  // Options::any_order: `min_props` to `max_props` (-1: any number) entries, each any
  // declared property or an extra one, in any order, repeats allowed.
  int32_t AnyOrderObject(const std::vector<Property>& declared, int32_t extra, int64_t min_props, int64_t max_props,
                         int d) {
    if (max_props >= 0 && min_props > max_props) return Nothing(&b_);
    if (std::max(min_props, max_props) > 1000) {
      throw SchemaError("minProperties / maxProperties above 1000 are not supported", "");
    }
    std::vector<int32_t> kinds;
    for (const Property& p : declared) kinds.push_back(p.value);
    if (extra >= 0) kinds.push_back(extra);
    int32_t entries = -1;  // none: only the empty object
    if (!kinds.empty() && max_props != 0) {
      int32_t entry = b_.Choice(kinds);
      entries = b_.Seq({entry, b_.Repeat(b_.Seq({text_.ItemSeparator(d), entry}),
                                         static_cast<int32_t>(std::max<int64_t>(0, min_props - 1)),
                                         max_props < 0 ? -1 : static_cast<int32_t>(max_props - 1))});
    }
    return text_.Container('{', '}', d, min_props == 0, entries);
  }

  // The properties of a non-empty object: the first one written is declared[i] (all
  // optional ones before it skipped) or, after every declared one is skipped, an extra one.
  int32_t FirstProperty(const std::vector<Property>& declared, int32_t extra,
                        const std::function<int32_t(int64_t, int64_t)>& rest, int64_t min_props, int64_t max_props,
                        int d) {
    if (max_props == 0) return -1;
    std::vector<int32_t> alts;
    for (size_t i = 0; i < declared.size(); ++i) {
      alts.push_back(b_.Seq({declared[i].value, rest(static_cast<int64_t>(i) + 1, 1)}));
      if (declared[i].required) return b_.Choice(alts);
    }
    if (extra >= 0) {
      int64_t lo = std::max<int64_t>(0, min_props - 1), hi = max_props < 0 ? -1 : max_props - 1;
      alts.push_back(b_.Seq({extra, b_.Repeat(b_.Seq({text_.ItemSeparator(d), extra}), static_cast<int32_t>(lo),
                                              static_cast<int32_t>(hi))}));
    }
    if (alts.empty()) return -1;
    return b_.Choice(alts);
  }

  const JsonValue& root_;
  JsonSchemaOptions opt_;
  IrBuilder b_;
  std::optional<ExcludedStrings> excludes_;  // opt_.excludes (before text_, which points at it)
  JsonText text_;
  std::map<std::pair<const JsonValue*, int>, int32_t> memo_;
  // (JsonHash, layout depth) -> (schema, its rule); schemas as memo_ holds them.
  std::multimap<std::pair<uint64_t, int>, std::pair<const JsonValue*, int32_t>> memo_by_content_;
  std::unordered_map<std::string, CharDfa> pattern_dfas_;  // SearchDfa
  std::map<std::string, const JsonValue*> ids_;
  std::set<std::string> ambiguous_ids_;  // $ids that two different schemas have
  std::map<std::string, int32_t> formats_;
  std::map<const JsonValue*, const JsonValue*> flattened_;
  std::map<const JsonValue*, const JsonValue*> merged_alone_;  // FlatAllOf
  std::unordered_map<const void*, uint64_t> hashes_;           // ContentHash
  std::map<const JsonValue*, const JsonValue*> rewritten_;  // WithoutUnevaluated
  std::deque<JsonValue> owned_;
  std::vector<std::string> warnings_;
  std::vector<PendingResource> pending_;  // resources not read yet
  std::map<std::string, std::string> unreadable_;  // resource name -> why it could not be read
  std::string root_base_ = kUnnamedDocument;  // the schema's own URI (its $id, else unnamed)
  bool root_has_id_ = false, has_resources_ = false;
  int draft_number_ = 0;
  std::deque<JsonValue> resources_;  // those read (stable addresses: ids_ points into them)
  JsonValue draft_;
  int not_depth_ = 0;  // NotSchema calls in progress
  int schema_nesting_ = 0;  // Schema calls in progress
  int flatten_nesting_ = 0;  // Flatten calls in progress
  int disjoint_depth_ = 0;  // Disjoint calls in progress
  int64_t copied_at_start_ = JsonValue::CopiedOnThisThread();
  std::map<std::vector<std::pair<uint32_t, uint32_t>>, int32_t> other_chars_;
  std::map<std::set<std::string>, int32_t> key_not_in_;  // KeyNotIn's rules
  int32_t unprintable_[2] = {-1, -1};  // KeyNotInRaw's, by whether `/` continues a name
  std::unordered_map<std::string, int32_t> numbers_;  // NumberExpr by range
  int32_t any_container_[2] = {-1, -1};                // AnyContainer: `[`, `{`
};

}  // namespace

JsonSchemaGrammar JsonSchemaToGrammar(const std::string& schema_json, const JsonSchemaOptions& options) {
  JsonValue root;
  try {
    root = ParseJson(schema_json);
  } catch (const std::invalid_argument& e) {
    throw SchemaError(std::string("the schema is not valid JSON: ") + e.what(), "");
  }
  // A resource without `$schema` is read in the schema's draft (as jsonschema's registry does).
  const JsonValue* declared = root.IsObject() ? root.Find("$schema") : nullptr;
  JsonValue draft = declared && declared->IsString() ? *declared : JsonValue();
  int draft_number = DeclaredDraft(root);
  bool draft4 = ReadAsDeclaredDraft(&root);
  MakeRefsAbsolute(&root, !options.resources.empty());
  std::string base = kUnnamedDocument;
  const JsonValue* id = root.IsObject() ? root.Find("$id") : nullptr;
  bool has_id = id && id->IsString() && !id->text.empty() && id->text[0] != '#';
  if (has_id) base = id->text.substr(0, id->text.find('#'));
  auto g = std::make_shared<GrammarIR>();
  SchemaCompiler compiler(root, options, g.get());
  compiler.SetDraft(draft, draft_number, draft4);
  compiler.SetRootBase(base, has_id);
  // Other documents, named by their URIs as given (a relative one against the unnamed
  // document's base, as a registry keeps names as given).
  for (const auto& [uri, text] : options.resources) {
    std::string name = ResolveUri(kUnnamedDocument, uri);
    if (size_t hash = name.find('#'); hash != std::string::npos) name.resize(hash);
    if (name == base) {
      // The schema's own `$id`: the schema wins, as in jsonschema (a registry that holds
      // the schema itself is common). The unnamed document's URI is nobody's name.
      if (has_id) continue;
      throw SchemaError("resource `" + uri + "` is given under the URI xgr2 gives a schema without $id", "");
    }
    compiler.AddResource(name, uri, &text);
  }
  try {
    g->root = compiler.CompileRoot();
  } catch (const DfaLimitError& e) {  // a literal's spellings beside `excludes`
    throw SchemaError(std::string(e.what()) + " (the spellings of a string literal beside excludes)", "");
  }
  CompressRepetitions(g.get());
  return JsonSchemaGrammar{g, compiler.TakeWarnings()};
}

}  // namespace xgr2
