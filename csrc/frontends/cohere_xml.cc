#include "frontends/cohere_xml.h"

#include <vector>

#include "frontends/raw_string.h"
#include "frontends/xml_element_writer.h"
#include "frontends/xml_parameters.h"
#include "support/utf8.h"
#include "xgr2/errors.h"

namespace xgr2 {
namespace {

constexpr const char* kOpen = "<cofl:value";
constexpr const char* kClose = "</cofl:value>";

class CohereWriter : public XmlElementWriter {
 public:
  // `scalar`: a number / boolean / null as a typed value (through Json); `json_text`: any
  // schema's JSON text, as the JSON front end writes it.
  CohereWriter(IrBuilder* b, const JsonValue& root, int max_ws, bool any_order, const ScalarGrammar& scalar,
               const ScalarGrammar& json_text)
      : XmlElementWriter(b, root, "cohere_xml", max_ws, any_order, scalar),
        raw_(b, kClose, "cohere_xml"),
        json_text_(json_text) {}

  // A number, boolean or null value from its JSON text.
  int32_t Json(int32_t text) { return Typed("json", b_->Seq({ws_, text, ws_})); }

 private:
  // A value from its type attribute on: ` type="TYPE">` then its body.
  int32_t Typed(const char* type, int32_t body) {
    return b_->Seq({b_->Bytes(std::string(" type=\"") + type + "\">"), body});
  }

  int32_t Object(const JsonValue& s, const std::string& path) override { return Typed("dict", Properties(s, path)); }
  int32_t Array(const JsonValue& s, const std::string& path) override { return Typed("list", Items(s, path)); }
  int32_t String(const JsonValue& s, const std::string& path) override { return Typed("raw", raw_.Value(s, path)); }

  int32_t Literal(const JsonValue& v, const std::string& path) override {
    if (!v.IsString()) {  // JSON text of that value, laid out as the JSON front end writes it
      JsonValue literal = JsonEmptyObject();
      literal.members.emplace_back("const", v);
      return Json(json_text_(literal, path));
    }
    if (v.text.find(kClose) != std::string::npos) Fail("cannot write a string holding </cofl:value>", path);
    return Typed("raw", b_->Bytes(v.text));
  }

  // Any value: raw text, a number / boolean / null, or a dict or list of any values.
  int32_t AnyValue() override {
    if (any_value_ < 0) {
      any_value_ = b_->NewRule("cohere_any");
      int32_t scalar = b_->NewRule("cohere_any_scalar");
      b_->SetBody(scalar, b_->Choice({Number(), b_->Bytes("true"), b_->Bytes("false"), b_->Bytes("null")}));
      b_->SetBody(any_value_, b_->Choice({Typed("raw", raw_.AnyText()), Json(b_->Ref(scalar)),
                                          Object(JsonEmptyObject(), ""), Array(JsonEmptyObject(), "")}));
    }
    return b_->Ref(any_value_);
  }

  // A JSON number.
  int32_t Number() {
    auto digits = [&](uint32_t lo) { return b_->Seq({b_->Class({{lo, '9'}}), b_->Star(b_->Class({{'0', '9'}}))}); };
    int32_t integer = b_->Choice({b_->Bytes("0"), digits('1')});
    int32_t fraction = b_->Optional(b_->Seq({b_->Bytes("."), digits('0')}));
    int32_t exponent =
        b_->Optional(b_->Seq({b_->Class({{'e', 'e'}, {'E', 'E'}}), b_->Optional(b_->Class({{'+', '+'}, {'-', '-'}})),
                              digits('0')}));
    return b_->Seq({b_->Optional(b_->Bytes("-")), integer, fraction, exponent});
  }

  int32_t NamedElement(const std::string& name, int32_t value, const std::string& path) override {
    for (size_t pos = 0; pos < name.size();) {
      if (DecodeUtf8(name, &pos) <= 0) {
        Fail("cannot write the name \"" + name + "\" (it must be UTF-8 without NUL)", path);
      }
    }
    std::string open = std::string(kOpen) + " name=\"" + XmlAttributeText(name) + "\"";
    return b_->Seq({b_->Bytes(open), value, b_->Bytes(kClose)});
  }

  int32_t ItemElement(int32_t value, const std::string&) override {
    return b_->Seq({b_->Bytes(kOpen), value, b_->Bytes(kClose)});
  }

  int32_t DynamicElement(const CharDfa& names, int32_t value) override {
    // A character of a name: itself, or its entity where it needs one.
    auto chars = [&](const std::vector<CodepointRange>& ranges) {
      std::vector<CodepointRange> plain;
      std::vector<int32_t> alts;
      for (const CodepointRange& r : ranges) {
        uint32_t lo = r.lo;
        for (uint32_t special : {'"', '&', '<', '>'}) {
          if (special < lo || special > r.hi) continue;
          if (lo < special) plain.push_back({lo, special - 1});
          alts.push_back(b_->Bytes(XmlAttributeEntity(special)));
          lo = special + 1;
        }
        if (lo <= r.hi) plain.push_back({lo, r.hi});
      }
      if (!plain.empty()) alts.push_back(b_->Class(plain));
      return b_->Choice(alts);
    };
    return b_->Seq({b_->Bytes(std::string(kOpen) + " name=\""), EmitDfa(b_, names, chars, "cohere_names"),
                    b_->Bytes("\""), value, b_->Bytes(kClose)});
  }

  const CharDfa& NameAlphabet() const override {
    static const CharDfa kNames = CharDfa::FromPattern("^[^\\x00]*$", false);
    return kNames;
  }

  RawStringWriter raw_;
  const ScalarGrammar& json_text_;
  int32_t any_value_ = -1;  // rule
};

}  // namespace

int32_t CohereParameters(IrBuilder* b, const JsonValue& schema, int max_whitespace, bool any_order,
                         const std::string& path,
                         const std::function<int32_t(const JsonValue&, const std::string&)>& scalar) {
  JsonValue read = SchemaAsDeclared(schema, path);
  CohereWriter* writer = nullptr;  // scalars are wrapped as the writer's JSON values
  const std::function<int32_t(const JsonValue&, const std::string&)> json =
      [&](const JsonValue& sub, const std::string& sub_path) { return writer->Json(scalar(sub, sub_path)); };
  CohereWriter w(b, read, max_whitespace, any_order, json, scalar);
  writer = &w;
  return w.Root(read, path);
}

}  // namespace xgr2
