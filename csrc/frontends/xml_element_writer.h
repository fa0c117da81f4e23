// What the recursive XML argument styles of structural tags (minimax_m3_xml, cohere_xml)
// share: an object's value is one element per property (declared ones in order, or any
// order; pattern, additional and property-name rules for the others; min/maxProperties),
// an array's one element per item (prefixItems, items, min/maxItems), with bounded
// whitespace between elements. Each style spells the elements and writes the leaves.
#pragma once
#include <string>
#include <vector>

#include "frontends/regex_dfa.h"
#include "frontends/schema_value_writer.h"

namespace xgr2 {

class XmlElementWriter : public SchemaValueWriter {
 public:
  XmlElementWriter(IrBuilder* b, const JsonValue& root, std::string style, int max_ws, bool any_order,
                   const ScalarGrammar& scalar);

  // The root object's elements (the root must be an object schema, true, or a $ref to one).
  int32_t Root(const JsonValue& schema, const std::string& path);

 protected:
  // An object's elements / an array's items, as the style spells elements.
  int32_t Properties(const JsonValue& schema, const std::string& path);
  int32_t Items(const JsonValue& schema, const std::string& path);

  // The element of the property `name` holding `value`.
  virtual int32_t NamedElement(const std::string& name, int32_t value, const std::string& path) = 0;
  // The element of a property named by any of `names` (decoded names) holding `value`.
  virtual int32_t DynamicElement(const CharDfa& names, int32_t value) = 0;
  // The element of an array item holding `value`.
  virtual int32_t ItemElement(int32_t value, const std::string& path) = 0;
  // The names an element can spell at all.
  virtual const CharDfa& NameAlphabet() const = 0;

  int32_t ws_ = -1;  // a bounded whitespace run (a reference to its rule)

 private:
  // A bare local $ref's target (chains followed), or `s`.
  const JsonValue& Resolved(const JsonValue& s, const std::string& path);
  // The elements `kinds`, required ones as `parts` built them.
  int32_t Elements(std::vector<int32_t> parts, const std::vector<int32_t>& kinds, size_t needed, int64_t min_count,
                   int64_t max_count, bool unbounded, const std::string& path);
  CharDfa NamesOf(const std::string& pattern, const std::string& path);

  bool any_order_;
};

}  // namespace xgr2
