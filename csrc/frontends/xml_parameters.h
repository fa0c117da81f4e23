// The XML parameter styles of structural tags' `json_schema` format (`style`:
// "qwen_xml", "minimax_xml", "deepseek_xml", "glm_xml", "kimi_k3_xml"): an object schema's properties
// written as tags instead of a JSON object, as those models' tool calls write arguments:
//   qwen_xml      <parameter=NAME>VALUE</parameter>
//   minimax_xml   <parameter name="NAME">VALUE</parameter>
//   deepseek_xml  <｜DSML｜parameter name="NAME" string="true|false">VALUE</｜DSML｜parameter>
//   glm_xml       <arg_key>NAME</arg_key><arg_value>VALUE</arg_value>
//   kimi_k3_xml   <|open|>argument key="NAME" type="TYPE"<|sep|>VALUE<|close|>argument<|sep|>
// A string value is its raw text; other values are JSON. See docs/structural_tags.md.
#pragma once
#include <functional>
#include <string>

#include "frontends/excluded_strings.h"
#include "grammar/ir_builder.h"
#include "support/json.h"

namespace xgr2 {

// The entity a double-quoted XML attribute writes for `c` (`&`, `"`, `<`, `>`), or
// nullptr; `text` with those written so (as Kimi-K3's and Cohere's parsers unescape them).
const char* XmlAttributeEntity(uint32_t c);
std::string XmlAttributeText(const std::string& text);

// Whether `style` names an XML style (and not "json").
bool IsXmlStyle(const std::string& style);

// The parameters of the object schema `schema` in `style`, whitespace runs at most
// `max_whitespace` long between them and around JSON values. `json_value(schema, path)`
// gives the JSON grammar of a property's schema. `any_order`: the parameters in any
// order, repeats allowed, their number in [max(minProperties, number of required),
// maxProperties] (as JsonSchemaOptions::any_order). Throws StructuralTagError at `path`
// (the schema's pointer) for what the style cannot write.
// `excludes` (nullptr: none): strings that raw values without a pattern or known format,
// string literals and other names may not hold.
int32_t XmlParameters(IrBuilder* b, const JsonValue& schema, const std::string& style, int max_whitespace,
                      bool any_order, const std::string& path,
                      const std::function<int32_t(const JsonValue&, const std::string&)>& json_value,
                      const ExcludedStrings* excludes = nullptr);

}  // namespace xgr2
