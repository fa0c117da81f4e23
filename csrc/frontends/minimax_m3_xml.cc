#include "frontends/minimax_m3_xml.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "frontends/regex_dfa.h"
#include "frontends/schema_value_writer.h"
#include "frontends/xml_element_writer.h"
#include "frontends/schema_refs.h"
#include "grammar/tag_dispatch.h"
#include "xgr2/errors.h"

namespace xgr2 {
namespace {

constexpr const char* kMarker = "]<]minimax[>[";  // before every opening and closing tag

class M3Writer : public XmlElementWriter {
 public:
  M3Writer(IrBuilder* b, const JsonValue& root, int max_ws, bool any_order, const ScalarGrammar& scalar)
      : XmlElementWriter(b, root, "minimax_m3_xml", max_ws, any_order, scalar) {}

 private:
  int32_t NamedElement(const std::string& name, int32_t value, const std::string& path) override {
    bool blank =
        std::all_of(name.begin(), name.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
    if (blank || name[0] == '/' || name.find('>') != std::string::npos) {
      Fail("cannot write the element name \"" + name + "\" (it cannot be blank, start with '/' or hold '>')", path);
    }
    return b_->Seq({b_->Bytes(std::string(kMarker) + "<" + name + ">"), value,
                    b_->Bytes(std::string(kMarker) + "</" + name + ">")});
  }

  int32_t ItemElement(int32_t value, const std::string& path) override { return NamedElement("item", value, path); }

  int32_t DynamicElement(const CharDfa& names, int32_t value) override {
    return ElementOf(EmitDfa(b_, names, [&](const std::vector<CodepointRange>& c) { return b_->Class(c); },
                             "m3_names"),
                     value);
  }

  const CharDfa& NameAlphabet() const override {
    static const CharDfa kNames = CharDfa::FromPattern("^[^/> \\t\\n\\r][^>]*$", false);
    return kNames;
  }

  // One element named by `names` (a rule of names): the closing tag takes any name, as
  // XGrammar's style does (a grammar cannot repeat an unbounded name).
  int32_t ElementOf(int32_t names, int32_t value) {
    if (any_name_ < 0) {
      any_name_ = b_->RuleRef("m3_name", b_->Seq({b_->Class({{'/', '/'}, {'>', '>'}}, true),
                                                  b_->Star(b_->Class({{'>', '>'}}, true))}));
    }
    return b_->Seq({b_->Bytes(std::string(kMarker) + "<"), names, b_->Bytes(">"), value,
                    b_->Bytes(std::string(kMarker) + "</"), any_name_, b_->Bytes(">")});
  }

  int32_t Object(const JsonValue& s, const std::string& path) override { return Properties(s, path); }
  int32_t Array(const JsonValue& s, const std::string& path) override { return Items(s, path); }

  int32_t String(const JsonValue& s, const std::string& path) override {
    CheckUncheckedStringKeywords(s, path, ": its raw text runs to the namespace-marker exclusion");
    return RawText();
  }

  // Text without the namespace marker (the element's closing tag starts with it).
  int32_t RawText() {
    if (raw_text_ < 0) {
      TagDispatchSpec spec;
      spec.excludes = {kMarker};
      raw_text_ = b_->NewRule("m3_text");
      b_->SetBody(raw_text_, AddTagDispatch(b_->ir(), std::move(spec), {}));
    }
    return b_->Ref(raw_text_);
  }

  // Any value: raw text, or elements of any names holding any values.
  int32_t AnyValue() override {
    if (any_value_ < 0) {
      any_value_ = b_->NewRule("m3_any");
      if (any_name_ < 0) ElementOf(b_->Empty(), b_->Empty());  // makes any_name_
      int32_t element = ElementOf(any_name_, b_->Ref(any_value_));
      b_->SetBody(any_value_, b_->Choice({RawText(), b_->Seq({ws_, b_->Plus(b_->Seq({element, ws_}))})}));
    }
    return b_->Ref(any_value_);
  }

  // A const or enum value: scalars as their text (a string raw), containers as elements.
  int32_t Literal(const JsonValue& v, const std::string& path) override {
    switch (v.kind) {
      case JsonValue::Kind::kString:
        if (v.text.find(kMarker) != std::string::npos) Fail("cannot write a string holding the namespace marker", path);
        return b_->Bytes(v.text);
      case JsonValue::Kind::kObject: {
        std::vector<int32_t> parts = {ws_};
        for (const auto& [name, member] : v.members) {
          parts.push_back(NamedElement(name, Literal(member, path), path));
          parts.push_back(ws_);
        }
        return v.members.empty() ? b_->Bytes("") : b_->Seq(parts);
      }
      case JsonValue::Kind::kArray: {
        std::vector<int32_t> parts = {ws_};
        for (const JsonValue& item : v.items) {
          parts.push_back(ItemElement(Literal(item, path), path));
          parts.push_back(ws_);
        }
        return v.items.empty() ? b_->Bytes("") : b_->Seq(parts);
      }
      default:
        return b_->Bytes(DumpJson(v));
    }
  }

  int32_t any_name_ = -1;                   // an expression (a reference to its rule)
  int32_t raw_text_ = -1, any_value_ = -1;  // rules
};

}  // namespace

int32_t MinimaxM3Parameters(IrBuilder* b, const JsonValue& schema, int max_whitespace, bool any_order,
                            const std::string& path,
                            const std::function<int32_t(const JsonValue&, const std::string&)>& scalar) {
  JsonValue read = SchemaAsDeclared(schema, path);
  return M3Writer(b, read, max_whitespace, any_order, scalar).Root(read, path);
}

}  // namespace xgr2
