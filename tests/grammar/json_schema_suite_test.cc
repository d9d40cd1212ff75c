// The JSON Schema Test Suite (draft 2020-12) on the keywords that need no
// regular expression: see json_schema_suite.h for what is checked. Cases
// with a pattern or a format are checked here by the validator only; their
// grammars are json_schema_regex_test.cc's.
#include "grammar/json_schema_suite.h"

#include <gtest/gtest.h>

namespace tw::grammar::testing {
namespace {

const char* const kFiles[] = {
    "type.json",
    "properties.json",
    "required.json",
    "additionalProperties.json",
    "items.json",
    "prefixItems.json",
    "minItems.json",
    "maxItems.json",
    "enum.json",
    "const.json",
    "anyOf.json",
    "oneOf.json",
    "minLength.json",
    "maxLength.json",
    "minimum.json",
    "maximum.json",
    "exclusiveMinimum.json",
    "exclusiveMaximum.json",
    "ref.json",
    "defs.json",
    "pattern.json",
    "optional/format/date.json",
    "optional/format/date-time.json",
    "optional/format/time.json",
    "optional/format/uuid.json",
    "optional/format/email.json",
};

// Where the grammar's language differs from the schema's, by design
// (json_schema.h): "file / case / test" -> why.
const std::map<std::string, std::string>& Exceptions() {
  static const std::string kOneOf =
      "oneOf is compiled as anyOf: a context-free grammar cannot exclude the texts two alternatives share";
  static const std::map<std::string, std::string> k = {
      {"oneOf.json / oneOf with base schema / both oneOf valid", kOneOf},
      {"oneOf.json / oneOf with boolean schemas, all true / any value is invalid", kOneOf},
      {"oneOf.json / oneOf with boolean schemas, more than one true / any value is invalid", kOneOf},
      {"oneOf.json / oneOf complex types / both oneOf valid (complex)", kOneOf},
      {"oneOf.json / oneOf with empty schema / both valid - invalid", kOneOf},
      {"oneOf.json / oneOf with required / both valid - invalid", kOneOf},
      {"oneOf.json / oneOf with missing optional property / both oneOf valid", kOneOf},
      {"validator: pattern.json / pattern with Unicode property escape requires unicode mode / ASCII letters match",
       "std::regex (ECMAScript without the u flag) has no \\p{...}: the validator refuses the pattern"},
      {"validator: pattern.json / pattern with Unicode property escape requires unicode mode / Non-ASCII letters match",
       "std::regex (ECMAScript without the u flag) has no \\p{...}: the validator refuses the pattern"},
  };
  return k;
}

TEST(JsonSchemaSuite, CoreKeywords) {
  SuiteTally tally;
  for (const char* file : kFiles) {
    for (const SuiteCase& c : LoadSuiteFile(file)) RunSuiteCase(c, Exceptions(), !NeedsRegex(c.schema), &tally);
  }
  FinishSuite("JSON Schema Test Suite (no regex)", tally, Exceptions());
  EXPECT_GT(tally.cases - tally.refused - tally.validator_only, 60);
}

}  // namespace
}  // namespace tw::grammar::testing
