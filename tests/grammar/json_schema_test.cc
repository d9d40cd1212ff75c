// grammar/json_schema.h: each keyword's language, checked with the Earley
// recognizer (tests/grammar/recognizer.h) on texts it must accept and texts it
// must refuse; the error messages for schemas it refuses.
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "grammar/json_schema_suite.h"
#include "grammar/json_validator.h"
#include "support/recognizer.h"

namespace tw::grammar {
namespace {

using testing::Accepts;
using testing::Viable;

json::Value ParseJson(const std::string& text) {
  json::Value v;
  const Status s = json::Parse(text, &v);
  EXPECT_TRUE(s.ok()) << s.message() << " in " << text;
  return v;
}

// The grammar of `schema` (compact JSON unless max_whitespace says more).
Grammar Compile(const std::string& schema, int max_whitespace = 0, bool strict = true) {
  JsonSchemaOptions o;
  o.max_whitespace = max_whitespace;
  o.strict = strict;
  Grammar g;
  const Status s = JsonSchemaGrammar(ParseJson(schema), o, GrammarLimits(), &g);
  EXPECT_TRUE(s.ok()) << s.message() << " for " << schema;
  return g;
}

// The error for `schema`, "" if it compiles.
std::string Error(const std::string& schema, bool strict = true) {
  JsonSchemaOptions o;
  o.strict = strict;
  Grammar g;
  return JsonSchemaGrammar(ParseJson(schema), o, GrammarLimits(), &g).message();
}

void ExpectLanguage(const std::string& schema, const std::vector<std::string>& yes, const std::vector<std::string>& no,
                    bool strict = true) {
  const Grammar g = Compile(schema, 0, strict);
  if (g.root < 0) return;
  for (const std::string& t : yes) EXPECT_TRUE(Accepts(g, t)) << schema << " should accept " << t;
  for (const std::string& t : no) EXPECT_FALSE(Accepts(g, t)) << schema << " should refuse " << t;
}

TEST(JsonSchema, Types) {
  ExpectLanguage(R"({"type":"null"})", {"null"}, {"nul", "0", "\"null\""});
  ExpectLanguage(R"({"type":"boolean"})", {"true", "false"}, {"null", "1", "True"});
  // Unbounded integers have at most 18 digits (within int64); numbers 18
  // integer digits, 16 after the point and 2 in the exponent (a double).
  ExpectLanguage(R"({"type":"integer"})", {"0", "7", "-12", "123456789012345678", "-999999999999999999"},
                 {"-0", "01", "1.0", "1e3", "+1", "", "-", "1234567890123456789"});
  ExpectLanguage(R"({"type":"number"})",
                 {"0", "-0", "1.5", "-0.25e-3", "1E+9", "10", "123456789012345678.1234567890123456e-99"},
                 {"01", ".5", "1.", "1e", "--1", "Infinity", "NaN", "1234567890123456789", "0.12345678901234567",
                  "1e100"});
  ExpectLanguage(R"({"type":"string"})", {R"("")", R"("abc")"}, {"abc", R"(")", "1"});
  ExpectLanguage(R"({"type":"array"})", {"[]", R"([1,"a",[null],{}])"}, {"[", "[1,]", "[,1]"});
  ExpectLanguage(R"({"type":"object"})", {"{}", R"({"a":1,"b":[{}]})"}, {R"({"a"})", R"({"a":1,})", "{1:2}"},
                 /*strict=*/false);
  ExpectLanguage(R"({"type":["string","null"]})", {"null", R"("x")"}, {"1", "[]"});
  // true and {}: any value.
  for (const char* any : {"true", "{}", R"({"description":"anything"})"}) {
    ExpectLanguage(any, {"null", "1", "-2.5e3", R"("s")", "[1,[2]]", R"({"k":{"l":[]}})"}, {"", "nope", "[1"});
  }
}

TEST(JsonSchema, StringsHaveEveryEscapeAndOnlyValidUtf8) {
  ExpectLanguage(R"({"type":"string"})",
                 {R"("\" \\ \/ \b \f \n \r \t")", R"("\u0041\u00e9\uFFFF")", R"("\ud83d\ude00")", "\"caf\xC3\xA9\"",
                  "\"\xF0\x9F\x98\x80\"", "\"\x7F\""},
                 {R"("\x")", R"("\u12")", R"("\ud800")", R"("\ud800x")", R"("\udc00\ud800")", "\"a\nb\"", "\"\x01\"",
                  "\"\xC3\"", "\"\xED\xA0\x80\"", "\"\xC0\xAF\"", R"("a"b")"});
}

TEST(JsonSchema, LengthsCountCodePoints) {
  ExpectLanguage(R"({"type":"string","minLength":2,"maxLength":3})",
                 {R"("ab")", R"("abc")", "\"\xC3\xA9\xC3\xA9\"", R"("\n\u0041")", R"("\ud83d\ude00x")"},
                 {R"("a")", R"("abcd")", "\"\xC3\xA9\"", R"("\ud83d\ude00")", R"("\n\n\n\n")"});
  ExpectLanguage(R"({"type":"string","maxLength":0})", {R"("")"}, {R"("a")"});
  ExpectLanguage(R"({"type":"string","minLength":1})", {R"("a")", R"("abcdefgh")"}, {R"("")"});
  // Two schemas with the same bounds share one rule.
  const Grammar g =
      Compile(R"({"type":"array","prefixItems":[{"type":"string","maxLength":5},{"type":"string","maxLength":5}]})");
  int n = 0;
  for (const Rule& r : g.rules) n += r.name.rfind("string-0..5", 0) == 0;
  EXPECT_EQ(n, 1);
}

// Every integer in [-1100, 1100] against several bounds, and the spellings
// that are never integers of a range.
TEST(JsonSchema, IntegerRangesAreExact) {
  struct Case {
    const char* keywords;
    int64_t lo, hi;  // inclusive; INT64_MIN / INT64_MAX for none
  };
  const int64_t kNo = INT64_MIN, kYes = INT64_MAX;
  const std::vector<Case> cases = {
      {R"("minimum":0)", 0, kYes},
      {R"("minimum":7,"maximum":7)", 7, 7},
      {R"("minimum":-1000,"maximum":1000)", -1000, 1000},
      {R"("minimum":13,"maximum":987)", 13, 987},
      {R"("minimum":-987,"maximum":-13)", -987, -13},
      {R"("minimum":-45,"maximum":109)", -45, 109},
      {R"("maximum":-1)", kNo, -1},
      {R"("maximum":99)", kNo, 99},
      {R"("minimum":100)", 100, kYes},
      {R"("minimum":-101)", -101, kYes},
      {R"("exclusiveMinimum":-10,"exclusiveMaximum":10)", -9, 9},
      {R"("minimum":1.5,"maximum":20.5)", 2, 20},
      {R"("exclusiveMinimum":1.5,"exclusiveMaximum":20.0)", 2, 19},
      {R"("minimum":0,"exclusiveMinimum":5,"maximum":900,"exclusiveMaximum":1000)", 6, 900},
      {R"("minimum":199,"maximum":1001)", 199, 1001},
      {R"("minimum":-1001,"maximum":-199)", -1001, -199},
  };
  for (const Case& c : cases) {
    const std::string schema = std::string(R"({"type":"integer",)") + c.keywords + "}";
    const Grammar g = Compile(schema);
    ASSERT_GE(g.root, 0) << schema;
    for (int64_t v = -1100; v <= 1100; ++v) {
      const bool in = v >= c.lo && v <= c.hi;
      ASSERT_EQ(Accepts(g, std::to_string(v)), in) << schema << " " << v;
    }
    for (const char* never : {"-0", "00", "01", "-01", "007", "1.0", "", "-", "+5"}) {
      EXPECT_FALSE(Accepts(g, never)) << schema << " " << never;
    }
  }
}

TEST(JsonSchema, IntegerRangesAtTheEdgesOfInt64) {
  // An open side is int64's edge.
  ExpectLanguage(R"({"type":"integer","minimum":9223372036854775806})", {"9223372036854775806", "9223372036854775807"},
                 {"9223372036854775805", "-1", "1000000000000000000", "9223372036854775808", "12345678901234567890123"});
  ExpectLanguage(R"({"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807})",
                 {"-9223372036854775808", "9223372036854775807", "0"}, {"-9223372036854775809", "9223372036854775808"});
  ExpectLanguage(R"({"type":"integer","maximum":-9223372036854775807})",
                 {"-9223372036854775807", "-9223372036854775808"},
                 {"-9223372036854775806", "0", "-9223372036854775809"});
  // A bound past int64 is brought in to it (the grammar is then stricter).
  ExpectLanguage(R"({"type":"integer","minimum":0,"maximum":1e30})", {"0", "9223372036854775807"},
                 {"9223372036854775808", "-1"});
  EXPECT_EQ(Error(R"({"type":"integer","minimum":1e30})"), "/: the schema matches nothing");
  EXPECT_EQ(Error(R"({"type":"integer","minimum":5,"maximum":4})"), "/: the schema matches nothing");
  EXPECT_EQ(Error(R"({"type":"integer","exclusiveMinimum":4,"exclusiveMaximum":5})"), "/: the schema matches nothing");
}

TEST(JsonSchema, EnumAndConstAreLiterals) {
  ExpectLanguage(R"({"enum":["red",1,null,{"a":[true]},[1,2]]})", {R"("red")", "1", "null", R"({"a":[true]})", "[1,2]"},
                 {R"("blue")", "2", R"({"a":[false]})", R"({ "a":[true]})", "[1, 2]", "1.0"});
  ExpectLanguage(R"({"const":"x\ny"})", {R"("x\ny")"}, {R"("x\u000ay")", R"("xy")"});
  // type narrows the values.
  ExpectLanguage(R"({"type":"string","enum":["a",1,"b"]})", {R"("a")", R"("b")"}, {"1"});
  ExpectLanguage(R"({"enum":["a","b","c"],"const":"b"})", {R"("b")"}, {R"("a")"});
}

TEST(JsonSchema, AnyOfOneOfAllOf) {
  ExpectLanguage(R"({"anyOf":[{"type":"integer"},{"type":"string","maxLength":1}]})", {"5", R"("a")"},
                 {R"("ab")", "null"});
  ExpectLanguage(R"({"oneOf":[{"const":1},{"const":"one"}]})", {"1", R"("one")"}, {"2"});
  ExpectLanguage(R"({"allOf":[{"type":"boolean"}]})", {"true"}, {"1"});
  // type beside anyOf narrows every alternative.
  ExpectLanguage(R"({"type":"string","anyOf":[{"maxLength":1},{"type":"integer"}]})", {R"("a")"}, {"1", R"("ab")"});
}

// 4 optional properties: all 16 subsets, in schema order, with commas only
// between members; never a leading, trailing or doubled comma.
TEST(JsonSchema, OptionalPropertiesPlaceCommasInEverySubset) {
  const std::string schema =
      R"({"type":"object","properties":{"a":{"const":1},"b":{"const":2},"c":{"const":3},"d":{"const":4}}})";
  const Grammar g = Compile(schema);
  const char names[] = {'a', 'b', 'c', 'd'};
  for (int mask = 0; mask < 16; ++mask) {
    std::string body;
    for (int i = 0; i < 4; ++i) {
      if (!(mask >> i & 1)) continue;
      if (!body.empty()) body += ",";
      body += std::string("\"") + names[i] + "\":" + std::to_string(i + 1);
    }
    EXPECT_TRUE(Accepts(g, "{" + body + "}")) << body;
    if (body.empty()) continue;
    EXPECT_FALSE(Accepts(g, "{," + body + "}")) << body;
    EXPECT_FALSE(Accepts(g, "{" + body + ",}")) << body;
    const size_t comma = body.find(',');
    if (comma != std::string::npos) {
      EXPECT_FALSE(Accepts(g, "{" + body.substr(0, comma) + ",," + body.substr(comma + 1) + "}")) << body;
      EXPECT_FALSE(Accepts(g, "{" + body.substr(0, comma) + body.substr(comma + 1) + "}")) << body;
    }
  }
  // Out of order, twice, or unknown (strict): refused.
  EXPECT_FALSE(Accepts(g, R"({"b":2,"a":1})"));
  EXPECT_FALSE(Accepts(g, R"({"a":1,"a":1})"));
  EXPECT_FALSE(Accepts(g, R"({"e":5})"));
}

// Required and optional interleaved: every subset of the optional ones.
TEST(JsonSchema, RequiredAndOptionalInterleaved) {
  const Grammar g = Compile(
      R"({"type":"object","properties":{"a":{"const":1},"b":{"const":2},"c":{"const":3},"d":{"const":4}},
          "required":["b","d"]})");
  for (int mask = 0; mask < 16; ++mask) {
    std::string body;
    for (int i = 0; i < 4; ++i) {
      if (!(mask >> i & 1)) continue;
      if (!body.empty()) body += ",";
      body += std::string("\"") + "abcd"[i] + "\":" + std::to_string(i + 1);
    }
    const bool has_required = (mask & 2) && (mask & 8);
    EXPECT_EQ(Accepts(g, "{" + body + "}"), has_required) << body;
  }
}

TEST(JsonSchema, AdditionalProperties) {
  const std::string props = R"("properties":{"a":{"type":"integer"},"ab":{"type":"integer"}})";
  // Strict (the default): only the listed keys.
  ExpectLanguage("{" + props + "}", {R"({"a":1})", "{}"}, {R"({"a":1,"x":"y"})"});
  // Not strict: any other key after the listed ones.
  ExpectLanguage("{" + props + "}", {R"({"a":1,"x":"y"})", R"({"x":1,"y":[]})", R"({"a":1,"ab":2,"abc":{}})"},
                 {R"({"x":1,"a":1})", R"({"a":1,"a":"s"})"}, /*strict=*/false);
  // A schema for the others: keys that are none of the listed names.
  const std::string s = "{" + props + R"(,"additionalProperties":{"type":"string"}})";
  ExpectLanguage(s,
                 {R"({"a":1,"b":"x"})", R"({"":"x"})", R"({"abc":"x"})", R"({"A":"x"})", R"({"b\u0061":"x"})",
                  R"({"a\n":"x"})", R"({"\"":"x","\\":"y"})"},
                 {R"({"a":"x"})", R"({"ab":"x"})", R"({"\u0061":"x"})", R"({"a\u0062":"x"})", R"({"b":1})"});
  ExpectLanguage(R"({"additionalProperties":false,"properties":{"k":{}}})", {"{}", R"({"k":[1]})"}, {R"({"j":1})"},
                 false);
  ExpectLanguage(R"({"type":"object","additionalProperties":true})", {R"({"j":1})"}, {}, true);
  // strict closes only objects that list keys.
  ExpectLanguage(R"({"type":"object"})", {"{}", R"({"j":1})"}, {}, true);
  ExpectLanguage(R"({"type":"object","required":[]})", {"{}"}, {R"({"j":1})"}, true);
  // Names with escapes and non-ASCII are complemented as written.
  ExpectLanguage(
      R"({"properties":{"q\"":{"type":"null"},"é":{"type":"null"}},"additionalProperties":{"type":"boolean"}})",
      {R"({"q\"":null,"é":null,"q":true,"qq":true,"è":false})"},
      {R"({"q\"":true})", R"({"é":true})", R"({"q\u0022":true})"});
}

TEST(JsonSchema, RequiredNotInProperties) {
  // With additional properties: the key must appear, with their schema.
  ExpectLanguage(R"({"properties":{"a":{}},"required":["z"],"additionalProperties":{"type":"integer"}})",
                 {R"({"z":1})", R"({"a":"x","z":1,"q":2})"}, {R"({"a":1})", R"({"z":"s"})", "{}"});
  EXPECT_EQ(Error(R"({"properties":{"a":{}},"required":["z"]})"),
            "/: 'required' names \"z\", which is not in 'properties', and additional properties are not allowed");
  EXPECT_EQ(Error(R"({"properties":{"a":{}},"required":["z"]})", false), "");
}

TEST(JsonSchema, FalsePropertyMayNotAppear) {
  ExpectLanguage(R"({"properties":{"a":false,"b":{}},"additionalProperties":true})", {R"({"b":1})", R"({"c":1})"},
                 {R"({"a":1})"});
  EXPECT_EQ(Error(R"({"properties":{"a":false},"required":["a"]})"),
            "/: 'required' names \"a\", whose schema matches nothing");
}

TEST(JsonSchema, Arrays) {
  ExpectLanguage(R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})", {"[1]", "[1,2,3]"},
                 {"[]", "[1,2,3,4]", R"(["a"])", "[1,]"});
  ExpectLanguage(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]})",
                 {"[]", R"(["a"])", R"(["a",1])", R"(["a",1,null,{}])"}, {"[1]", R"(["a","b"])"});
  ExpectLanguage(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false})",
                 {"[]", R"(["a"])", R"(["a",1])"}, {R"(["a",1,2])"});
  ExpectLanguage(R"({"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"boolean"},"minItems":2})",
                 {R"(["a",true])", R"(["a",true,false])"}, {R"(["a"])", R"(["a",1])", "[true,true]"});
  ExpectLanguage(R"({"type":"array","prefixItems":[{},{},{}],"maxItems":2})", {"[]", "[1]", "[1,2]"}, {"[1,2,3]"});
  ExpectLanguage(R"({"type":"array","items":false})", {"[]"}, {"[1]"});
  ExpectLanguage(R"({"type":"array","minItems":2,"maxItems":2})", {"[1,[]]"}, {"[1]", "[1,2,3]"});
  ExpectLanguage(R"({"type":"array","uniqueItems":false})", {"[1,1]"}, {});
  EXPECT_EQ(Error(R"({"type":"array","minItems":3,"maxItems":2})"), "/: the schema matches nothing");
}

TEST(JsonSchema, WhitespaceIsBounded) {
  for (int n : {0, 1, 3}) {
    const Grammar g = Compile(R"({"type":"object","properties":{"a":{"type":"array"}},"required":["a"]})", n);
    const std::string sp(n, ' '), more(n + 1, ' ');
    EXPECT_TRUE(
        Accepts(g, "{" + sp + "\"a\"" + sp + ":" + sp + "[" + sp + "1" + sp + "," + sp + "2" + sp + "]" + sp + "}"))
        << n;
    EXPECT_TRUE(Accepts(g, "{\"a\":[" + sp + "]}")) << n;
    EXPECT_FALSE(Accepts(g, "{" + more + "\"a\":[]}")) << n;
    EXPECT_FALSE(Accepts(g, "{\"a\"" + more + ":[]}")) << n;
    EXPECT_FALSE(Accepts(g, "{\"a\":[" + more + "]}")) << n;
    EXPECT_FALSE(Accepts(g, "{\"a\":[1" + more + ",2]}")) << n;
  }
  const Grammar g = Compile(R"({"type":"array"})", 2);
  EXPECT_TRUE(Accepts(g, "[\t\n]"));
  EXPECT_TRUE(Accepts(g, "[\r\n1 ,\t[ ]]"));
  EXPECT_FALSE(Accepts(g, "[\x0b]"));
  EXPECT_FALSE(Accepts(g, " []"));  // nothing before or after the value
}

TEST(JsonSchema, RecursionThroughRef) {
  const std::string tree = R"({"$defs":{"node":{"type":"object","properties":{"value":{"type":"integer"},
      "children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["value"]}},"$ref":"#/$defs/node"})";
  ExpectLanguage(tree,
                 {R"({"value":1})", R"({"value":1,"children":[{"value":2,"children":[{"value":3}]},{"value":4}]})"},
                 {R"({"value":1,"children":[{}]})", R"({"children":[]})"});
  ExpectLanguage(R"({"type":["array","integer"],"items":{"$ref":"#"}})", {"1", "[[1,[]],2]"}, {"[[true]]"});
  ExpectLanguage(R"({"definitions":{"a b":{"type":"null"},"x/y":{"type":"boolean"}},
      "prefixItems":[{"$ref":"#/definitions/a%20b"},{"$ref":"#/definitions/x~1y"}],"type":"array"})",
                 {"[null,true]"}, {"[true,null]"});
  // A cycle of references that never reaches a value matches nothing.
  EXPECT_EQ(Error(R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})"),
            "the grammar matches nothing: rule 'root' never completes (it needs 'ref-a', which never does)");
}

TEST(JsonSchema, SchemaWithoutTypeAppliesEachTypesKeywords) {
  ExpectLanguage(R"({"maxLength":2,"maxItems":1,"properties":{"a":{"type":"integer"}}})",
                 {R"("ab")", "[1]", "null", "true", "1.5", R"({"a":1})", R"({"a":1,"b":2})"},
                 {R"("abc")", "[1,2]", R"({"a":"x"})"}, /*strict=*/false);
}

TEST(JsonSchema, ErrorsNameTheKeywordAndItsPlace) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"properties":{"age":{"type":"integer","multipleOf":2}}})", "/properties/age: 'multipleOf' is not supported"},
      {R"({"type":"array","uniqueItems":true})", "/: 'uniqueItems' is not supported"},
      {R"({"items":{"not":{"type":"null"}}})", "/items: 'not' is not supported"},
      {R"({"anyOf":[{"type":"string"},{"if":{},"then":{}}]})", "/anyOf/1: 'if' is not supported"},
      {R"({"$defs":{"x~y":{"patternProperties":{}}},"$ref":"#/$defs/x~0y"})",
       "/$defs/x~0y: 'patternProperties' is not supported"},
      {R"({"type":"number","minimum":0})", "/: 'minimum' is supported only on integers (type \"integer\")"},
      {R"({"allOf":[{},{}]})", "/: 'allOf' is supported with exactly one schema (it has 2)"},
      {R"({"type":"string","format":"hostname"})", "/: 'format' \"hostname\" is not supported"},
      {R"({"$ref":"other.json#/x"})",
       "/: '$ref' to 'other.json#/x' is not supported (only \"#\" and \"#/...\" pointers)"},
      {R"({"$ref":"#/$defs/missing"})", "/: '$ref' to '#/$defs/missing': no such place in the schema"},
      {R"({"type":"strin"})", "/: 'type' must name JSON types (null, boolean, object, array, string, integer, number)"},
      {R"({"type":"object","properties":{"a":{"type":"string"}},"anyOf":[{}]})",
       "/: 'properties' beside 'anyOf' is not supported"},
      {R"({"enum":[1,2],"maximum":1})", "/: 'maximum' beside 'enum' is not supported"},
      {R"({"type":"string","minLength":-1})", "/: 'minLength' must be a non-negative integer"},
      {R"({"type":"string","maxLength":100000000})",
       "/: 'maxLength' is too large for the grammar's limits (20000 rules, 200000 elements)"},
      {R"({"items":[{"type":"string"}]})",
       "/: 'items' as an array (draft 7 tuples) is not supported: use 'prefixItems'"},
      {"false", "/: the schema matches nothing"},
      {R"({"type":"integer","enum":["a"]})", "/: the schema matches nothing"},
      {R"({"type":"string","pattern":"a","minLength":1})", "/: 'minLength' beside 'pattern' is not supported"},
      {"[]", "/: a schema must be an object or a boolean"},
  };
  for (const auto& [schema, want] : cases) EXPECT_EQ(Error(schema), want) << schema;
}

TEST(JsonSchema, DeepSchemasAreRefused) {
  std::string deep = R"({"type":"string"})";
  for (int i = 0; i < 70; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  json::Value v;
  json::ParseLimits limits;
  limits.max_depth = 200;
  ASSERT_TRUE(json::Parse(deep, &v, limits).ok());
  Grammar g;
  const Status s = JsonSchemaGrammar(v, JsonSchemaOptions(), GrammarLimits(), &g);
  EXPECT_NE(s.message().find("the schema is nested deeper than 64"), std::string::npos) << s.message();
}

TEST(JsonSchema, LimitsAreKept) {
  GrammarLimits small;
  small.max_rules = 100;
  Grammar g;
  const Status s = JsonSchemaGrammar(ParseJson(R"({"type":"string","maxLength":500})"), JsonSchemaOptions(), small, &g);
  EXPECT_EQ(s.message(), "/: 'maxLength' is too large for the grammar's limits (100 rules, 200000 elements)");
  // A big but possible bound compiles.
  const Grammar ok = Compile(R"({"type":"string","minLength":2000,"maxLength":3000})");
  EXPECT_FALSE(Accepts(ok, "\"" + std::string(1999, 'x') + "\""));
  EXPECT_TRUE(Accepts(ok, "\"" + std::string(2000, 'x') + "\""));
}

TEST(JsonSchema, AnnotationsAndUnknownKeywordsAreIgnored) {
  ExpectLanguage(R"({"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x","title":"t","description":"d",
      "$comment":"c","default":1,"examples":[1],"deprecated":false,"readOnly":true,"writeOnly":false,"x-vendor":{"a":1},
      "type":"integer"})",
                 {"1"}, {"\"a\""});
}

TEST(JsonObjectGrammar, AnyObject) {
  for (int ws : {0, 2}) {
    JsonSchemaOptions o;
    o.max_whitespace = ws;
    Grammar g;
    ASSERT_TRUE(JsonObjectGrammar(o, GrammarLimits(), &g).ok());
    EXPECT_TRUE(Accepts(g, "{}"));
    EXPECT_TRUE(Accepts(g, R"({"a":[1,{"b":null}],"c":"d","a":2})"));
    EXPECT_FALSE(Accepts(g, "[]"));
    EXPECT_FALSE(Accepts(g, "1"));
    EXPECT_FALSE(Accepts(g, R"({"a":})"));
    EXPECT_TRUE(Viable(g, R"({"a":[1,{"b)"));
    EXPECT_EQ(Accepts(g, "{ }"), ws > 0);
    EXPECT_EQ(Accepts(g, "{  \"a\"  :  1  }"), ws >= 2);
    EXPECT_FALSE(Accepts(g, "{   }"));
  }
}

// The grammar's language agrees with the validator on a handful of texts
// per schema (the suite test does this at scale).
TEST(JsonSchema, GrammarAndValidatorAgree) {
  const std::string schema = R"({"type":"object","properties":{"id":{"type":"integer","minimum":1},
      "tags":{"type":"array","items":{"type":"string","maxLength":3},"maxItems":2},"kind":{"enum":["a","b"]}},
      "required":["id"]})";
  const Grammar g = Compile(schema);
  const json::Value s = ParseJson(schema);
  for (const char* text :
       {R"({"id":1})", R"({"id":0})", R"({"id":2,"tags":["abc","d"]})", R"({"id":2,"tags":["abcd"]})",
        R"({"id":2,"tags":["a","b","c"]})", R"({"id":3,"kind":"b"})", R"({"id":3,"kind":"c"})"}) {
    EXPECT_EQ(Accepts(g, text), testing::Validate(s, ParseJson(text), nullptr)) << text;
  }
}

// A random small JSON value: the shapes the schemas below care about.
json::Value RandomValue(std::mt19937* rng, int depth) {
  auto pick = [&](int n) { return static_cast<int>((*rng)() % n); };
  static const char* const kStrings[] = {"", "a", "ab", "abc", "abcd", "\xC3\xA9", "q\"", "\n\n", "b", "zz"};
  static const char* const kKeys[] = {"a", "b", "c", "ab", "", "d"};
  switch (depth > 2 ? pick(4) : pick(6)) {
    case 0: return json::Value::Int(pick(41) - 20);
    case 1: return json::Value::String(kStrings[pick(10)]);
    case 2: return pick(2) ? json::Value::Null() : json::Value::Bool(pick(2));
    case 3: return json::Value::Double((pick(41) - 20) / 4.0);
    case 4: {
      json::Value a = json::Value::Array();
      for (int n = pick(5); n > 0; --n) a.Push(RandomValue(rng, depth + 1));
      return a;
    }
    default: {
      json::Value o = json::Value::Object();
      for (const char* k : kKeys) {
        if (pick(2)) o.members().push_back({k, RandomValue(rng, depth + 1)});
      }
      return o;
    }
  }
}

// The grammar and the validator agree on random values (written canonically,
// as in the suite test) for schemas that mix the keywords.
TEST(JsonSchema, GrammarAndValidatorAgreeOnRandomValues) {
  const char* const schemas[] = {
      R"({"type":"object","properties":{"a":{"type":"integer","minimum":-3,"exclusiveMaximum":9},"b":{"type":"string","maxLength":2},
          "c":{"type":["array","null"],"items":{"type":"integer"},"maxItems":2}},"required":["b"]})",
      R"({"properties":{"a":{},"ab":{"type":"boolean"}},"required":["d"],"additionalProperties":{"type":["string","integer"]}})",
      R"({"type":"array","prefixItems":[{"type":"integer"},{"type":"string","minLength":1}],"items":{"type":"null"},"minItems":1,"maxItems":3})",
      R"({"anyOf":[{"type":"integer","maximum":0},{"type":"string","minLength":2,"maxLength":3},{"enum":[null,[1,2],{"a":1}]}]})",
      R"({"$defs":{"t":{"type":["object","integer"],"properties":{"a":{"$ref":"#/$defs/t"},"b":{"$ref":"#/$defs/t"}},
          "additionalProperties":false}},"$ref":"#/$defs/t"})",
      R"({"maxLength":1,"maxItems":1,"minimum":0,"type":["string","array","integer","boolean"],"items":{"type":"number"}})",
      R"({"type":"object","additionalProperties":{"type":"array","prefixItems":[{"type":"number"}],"items":false}})",
  };
  std::mt19937 rng(20240601);
  int accepted = 0, total = 0;
  for (const char* text : schemas) {
    const json::Value schema = ParseJson(text);
    const Grammar g = Compile(text, 0, false);
    ASSERT_GE(g.root, 0) << text;
    for (int i = 0; i < 400; ++i) {
      const json::Value v = RandomValue(&rng, 0);
      const std::string canonical = json::Serialize(testing::Canonical(schema, schema, v));
      const bool valid = testing::Validate(schema, v, nullptr);
      ASSERT_EQ(Accepts(g, canonical), valid) << text << "\n" << canonical;
      accepted += valid;
      ++total;
    }
  }
  EXPECT_GT(accepted, total / 20);  // both verdicts are exercised
}

// tests/data/grammar/schemas: 50 real-world schemas (README.md names their
// sources) compile, strict or not, and their grammars pass Check.
TEST(JsonSchemaRealWorld, FiftySchemasCompile) {
  const std::string dir = std::string(TW_SOURCE_DIR) + "/tests/data/grammar/schemas";
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++n;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    json::Value schema;
    ASSERT_TRUE(json::Parse(ss.str(), &schema).ok()) << entry.path();
    for (bool strict : {true, false}) {
      JsonSchemaOptions o;
      o.strict = strict;
      o.max_whitespace = strict ? 8 : 0;
      Grammar g;
      const Status s = JsonSchemaGrammar(schema, o, GrammarLimits(), &g);
      EXPECT_TRUE(s.ok()) << entry.path().filename() << ": " << s.message();
      EXPECT_TRUE(Check(g).ok()) << entry.path().filename() << ": " << Check(g).message();
      EXPECT_GT(g.rules.size(), 1u);
    }
  }
  EXPECT_EQ(n, 50);
}

}  // namespace
}  // namespace tw::grammar
