#include "frontends/gemma_args.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <vector>

#include "frontends/schema_refs.h"
#include "frontends/schema_value_writer.h"
#include "grammar/tag_dispatch.h"
#include "xgr2/errors.h"

namespace xgr2 {
namespace {

constexpr const char* kQuote = "<|\"|>";  // Gemma's string delimiter (a special token)
// A string value may not hold the delimiter, nor a call's markers (a parser without
// string awareness would cut the call there).
const std::vector<std::string> kNotInStrings = {kQuote, "<|tool_call>", "<tool_call|>"};

// The template's dictsort: case-insensitive, then as written.
bool SortedBefore(const std::string& a, const std::string& b) {
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  std::string la = lower(a), lb = lower(b);
  return la != lb ? la < lb : a < b;
}

bool IsIdentifier(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

class GemmaWriter : public SchemaValueWriter {
 public:
  GemmaWriter(IrBuilder* b, const JsonValue& root, const ScalarGrammar& scalar)
      : SchemaValueWriter(b, root, "gemma", scalar), scalar_(scalar) {}

  int32_t Root(const JsonValue& schema, const std::string& path) {
    if (schema.IsBool()) {
      if (!schema.boolean) Fail("cannot write arguments whose schema is false", path);
      return AnyObject();
    }
    const JsonValue* t = schema.IsObject() ? schema.Find("type") : nullptr;
    if (!schema.IsObject() || (t && !(t->IsString() && t->text == "object"))) {
      Fail("needs an object schema at the root", path);
    }
    if (schema.Find("$ref")) return Value(schema, path);
    return Object(schema, path);
  }

 private:
  // `{` the members `}`: declared ones in sorted order (required present, optional maybe),
  // commas between those present; then undeclared ones where allowed.
  int32_t Object(const JsonValue& s, const std::string& path) override {
    static const std::set<std::string> kKnown = {"type", "properties", "required", "additionalProperties"};
    CheckKnownKeywords(s, kKnown, "object", path);
    std::set<std::string> required;
    if (const JsonValue* r = s.Find("required"); r && r->IsArray()) {
      for (const JsonValue& name : r->items) required.insert(name.text);
    }
    struct Member {
      std::string name;
      int32_t expr;
      bool required;
    };
    std::vector<Member> members;
    const JsonValue* props = s.Find("properties");
    if (props && props->IsObject()) {
      for (const auto& [name, sub] : props->members) {
        std::string where = PointerAt(PointerAt(path, "properties"), name);
        if (!IsIdentifier(name)) Fail("writes keys bare, so \"" + name + "\" must be an identifier", where);
        members.push_back({name, b_->Seq({b_->Bytes(name + ":"), Value(sub, where)}), required.count(name) > 0});
      }
    }
    for (const std::string& name : required) {
      if (!props || !props->Find(name)) {
        Fail("needs the required property \"" + name + "\" declared in \"properties\"", PointerAt(path, "required"));
      }
    }
    std::sort(members.begin(), members.end(),
              [](const Member& a, const Member& b) { return SortedBefore(a.name, b.name); });
    const JsonValue* extra = s.Find("additionalProperties");
    const bool open = (extra && !(extra->IsBool() && !extra->boolean)) || (!extra && !props);
    int32_t extra_member = -1;
    if (open) {
      int32_t value = !extra || extra->IsBool() ? AnyValue() : Value(*extra, PointerAt(path, "additionalProperties"));
      extra_member = b_->Seq({Name(), b_->Bytes(":"), value});
    }
    // Alternatives by the first member present: members before it are all optional.
    auto comma = [&](int32_t m) { return b_->Seq({b_->Bytes(","), m}); };
    auto tail = [&](size_t from) {
      std::vector<int32_t> parts;
      for (size_t j = from; j < members.size(); ++j) {
        parts.push_back(members[j].required ? comma(members[j].expr) : b_->Optional(comma(members[j].expr)));
      }
      if (extra_member >= 0) parts.push_back(b_->Star(comma(extra_member)));
      return parts.empty() ? b_->Bytes("") : b_->Seq(parts);
    };
    std::vector<int32_t> alts;
    for (size_t first = 0; first < members.size(); ++first) {
      alts.push_back(b_->Seq({members[first].expr, tail(first + 1)}));
      if (members[first].required) break;  // it cannot be left out
    }
    bool all_optional = std::none_of(members.begin(), members.end(), [](const Member& m) { return m.required; });
    if (all_optional) {
      if (extra_member >= 0) alts.push_back(b_->Seq({extra_member, b_->Star(comma(extra_member))}));
      alts.push_back(b_->Bytes(""));
    }
    return b_->Seq({b_->Bytes("{"), b_->Choice(alts), b_->Bytes("}")});
  }

  int32_t Name() {
    if (name_ < 0) {
      int32_t first = b_->Class({{'A', 'Z'}, {'_', '_'}, {'a', 'z'}});
      int32_t rest = b_->Star(b_->Class({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}));
      name_ = b_->RuleRef("gemma_key", b_->Seq({first, rest}));
    }
    return name_;
  }

  int32_t Array(const JsonValue& s, const std::string& path) override {
    static const std::set<std::string> kKnown = {"type", "items", "prefixItems", "minItems", "maxItems"};
    CheckKnownKeywords(s, kKnown, "array", path);
    std::vector<int32_t> prefix;
    if (const JsonValue* p = s.Find("prefixItems"); p && p->IsArray()) {
      for (size_t i = 0; i < p->items.size(); ++i) {
        prefix.push_back(Value(p->items[i], PointerAt(path, "prefixItems") + "/" + std::to_string(i)));
      }
    }
    const JsonValue* items = s.Find("items");
    const bool no_more = items && items->IsBool() && !items->boolean;
    const int32_t item = no_more ? -1 : items ? Value(*items, PointerAt(path, "items")) : AnyValue();
    const int64_t lo = std::max<int64_t>(0, Count(s, "minItems", path)), hi = Count(s, "maxItems", path);
    const int64_t k = static_cast<int64_t>(prefix.size());
    auto first_n = [&](int64_t n) {  // prefix[0..n) joined by commas
      std::vector<int32_t> parts;
      for (int64_t i = 0; i < n; ++i) {
        if (i > 0) parts.push_back(b_->Bytes(","));
        parts.push_back(prefix[i]);
      }
      return parts.empty() ? b_->Bytes("") : b_->Seq(parts);
    };
    // n items: the first min(n, k) by prefixItems (an array may stop inside them, as in
    // JSON Schema), the rest by items.
    std::vector<int32_t> alts;
    for (int64_t n = lo; n < k && (hi < 0 || n <= hi); ++n) alts.push_back(first_n(n));
    if (hi < 0 || hi >= k) {
      const int32_t r_lo = static_cast<int32_t>(std::max<int64_t>(0, lo - k));
      const int32_t r_hi = hi < 0 ? -1 : static_cast<int32_t>(hi - k);
      if (item < 0 || r_hi == 0) {
        if (r_lo == 0) alts.push_back(first_n(k));
      } else if (k == 0) {  // item (, item)*, or nothing when none is needed
        int32_t some = b_->Seq({item, b_->Repeat(b_->Seq({b_->Bytes(","), item}), std::max(0, r_lo - 1),
                                                 r_hi < 0 ? -1 : r_hi - 1)});
        alts.push_back(r_lo == 0 ? b_->Optional(some) : some);
      } else {
        alts.push_back(b_->Seq({first_n(k), b_->Repeat(b_->Seq({b_->Bytes(","), item}), r_lo, r_hi)}));
      }
    }
    if (alts.empty()) Fail("got an array schema that no array meets", path);
    return b_->Seq({b_->Bytes("["), b_->Choice(alts), b_->Bytes("]")});
  }

  int32_t String(const JsonValue& s, const std::string& path) override {
    CheckUncheckedStringKeywords(s, path, "");
    return Quoted(Text());
  }

  int32_t Quoted(int32_t text) { return b_->Seq({b_->Bytes(kQuote), text, b_->Bytes(kQuote)}); }

  int32_t Text() {
    if (text_ < 0) {
      TagDispatchSpec spec;
      spec.excludes = kNotInStrings;
      text_ = b_->NewRule("gemma_text");
      b_->SetBody(text_, AddTagDispatch(b_->ir(), std::move(spec), {}));
    }
    return b_->Ref(text_);
  }

  int32_t Literal(const JsonValue& v, const std::string& path) override {
    switch (v.kind) {
      case JsonValue::Kind::kString:
        for (const std::string& bad : kNotInStrings) {
          if (v.text.find(bad) != std::string::npos) Fail("cannot write a string holding \"" + bad + "\"", path);
        }
        return Quoted(b_->Bytes(v.text));
      case JsonValue::Kind::kObject: {
        std::vector<std::pair<std::string, const JsonValue*>> sorted;
        for (const auto& [name, member] : v.members) sorted.emplace_back(name, &member);
        std::sort(sorted.begin(), sorted.end(),
                  [](const auto& a, const auto& b) { return SortedBefore(a.first, b.first); });
        std::vector<int32_t> parts = {b_->Bytes("{")};
        for (size_t i = 0; i < sorted.size(); ++i) {
          if (!IsIdentifier(sorted[i].first)) {
            Fail("writes keys bare, so \"" + sorted[i].first + "\" must be an identifier", path);
          }
          parts.push_back(b_->Bytes((i ? "," : "") + sorted[i].first + ":"));
          parts.push_back(Literal(*sorted[i].second, path));
        }
        parts.push_back(b_->Bytes("}"));
        return b_->Seq(parts);
      }
      case JsonValue::Kind::kArray: {
        std::vector<int32_t> parts = {b_->Bytes("[")};
        for (size_t i = 0; i < v.items.size(); ++i) {
          if (i) parts.push_back(b_->Bytes(","));
          parts.push_back(Literal(v.items[i], path));
        }
        parts.push_back(b_->Bytes("]"));
        return b_->Seq(parts);
      }
      default:
        return b_->Bytes(DumpJson(v));
    }
  }

  // Any value: a string, a number, true, false, null, an object of identifier keys or an
  // array, of any values.
  int32_t AnyValue() override {
    if (any_ < 0) {
      any_ = b_->NewRule("gemma_any");
      JsonValue number = JsonEmptyObject();
      number.members.emplace_back("type", JsonStringValue("number"));
      int32_t value = b_->Ref(any_);
      int32_t list = b_->Optional(b_->Seq({value, b_->Star(b_->Seq({b_->Bytes(","), value}))}));
      b_->SetBody(any_, b_->Choice({Quoted(Text()), scalar_(number, "/"), b_->Bytes("true"), b_->Bytes("false"),
                                    b_->Bytes("null"), AnyObject(), b_->Seq({b_->Bytes("["), list, b_->Bytes("]")})}));
    }
    return b_->Ref(any_);
  }

  int32_t AnyObject() {
    int32_t member = b_->Seq({Name(), b_->Bytes(":"), AnyValue()});
    return b_->Seq({b_->Bytes("{"), b_->Optional(b_->Seq({member, b_->Star(b_->Seq({b_->Bytes(","), member}))})),
                    b_->Bytes("}")});
  }

  const ScalarGrammar& scalar_;     // for AnyValue's numbers
  int32_t name_ = -1;               // an expression (reference to its rule)
  int32_t text_ = -1, any_ = -1;    // rules
};

}  // namespace

int32_t GemmaArguments(IrBuilder* b, const JsonValue& schema, const std::string& path,
                       const std::function<int32_t(const JsonValue&, const std::string&)>& scalar) {
  JsonValue read = SchemaAsDeclared(schema, path);
  return GemmaWriter(b, read, scalar).Root(read, path);
}

}  // namespace xgr2
