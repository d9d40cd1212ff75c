// Parser unit tests: the byte offset of each error class, the depth and size
// bounds, integer/double classification and range, escapes and surrogates,
// duplicate keys.
#include <gtest/gtest.h>

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "json/json.h"

namespace tw::json {
namespace {

using namespace std::string_literals;  // "..."s keeps embedded NULs

struct ErrorCase {
  std::string input;
  size_t offset;
  const char* message_part;
};

// Each error class: the offset is the first byte that cannot continue a valid
// document (see json.h), counted by hand for each input.
TEST(JsonParse, ErrorOffsets) {
  const ErrorCase cases[] = {
      {"", 0, "end of input"},
      {"   ", 3, "end of input"},
      {"[1,2", 4, "end of input"},
      {"[1 2]", 3, "',' or ']'"},
      {"[1,]", 3, "expected a value"},
      {"{\"a\" 1}", 5, "':'"},
      {"{\"a\":1,}", 7, "string key"},
      {"{\"a\":1 \"b\":2}", 7, "',' or '}'"},
      {"{1:2}", 1, "string key"},
      {"01", 1, "leading zero"},
      {"-01", 2, "leading zero"},
      {"+1", 0, "expected a value"},
      {".5", 0, "expected a value"},
      {"1.", 2, "digit after '.'"},
      {"1.e3", 2, "digit after '.'"},
      {"1e", 2, "exponent"},
      {"1e+", 3, "exponent"},
      {"-", 1, "digit"},
      {"-a", 1, "digit"},
      {"1 2", 2, "end of input after the document"},
      {"{} x", 3, "end of input after the document"},
      {"tru", 3, "literal true"},
      {"trUe", 2, "literal true"},
      {"nul", 3, "literal null"},
      {"falsy", 4, "literal false"},
      {"\"abc", 4, "unterminated string"},
      {"\"a\\", 3, "unterminated string"},
      {"\"a\x01\"", 2, "control character 0x01"},
      {"[\"\x00\"]"s, 2, "control character 0x00"},
      {"\"\x1f\"", 1, "control character 0x1F"},
      {"\"\\x\"", 2, "invalid escape"},
      {"\"\\U0041\"", 2, "invalid escape"},
      {"\"\\u12G4\"", 5, "hex digits"},
      {"\"\\u12", 5, "hex digits"},
      {"\"\\uDC00\"", 1, "lone low surrogate"},
      {"\"\\uD800\"", 7, "not followed by a low surrogate"},
      {"\"\\uD800", 7, "not followed by a low surrogate"},
      {"\"\\uD800\\u0041\"", 7, "not followed by a low surrogate"},
      {"\"\\uD800\\uD800\"", 7, "not followed by a low surrogate"},
      {"\"\\uD800\\n\"", 7, "not followed by a low surrogate"},
      {"\"\\uD800\\uDC0", 12, "hex digits"},
      {"\"\xC0\x80\"", 1, "invalid UTF-8"},              // overlong 2-byte lead
      {"\"\xC1\xBF\"", 1, "invalid UTF-8"},              // overlong 2-byte lead
      {"\"\xE0\x80\x80\"", 2, "invalid UTF-8"},          // overlong 3-byte
      {"\"\xE0\x9F\xBF\"", 2, "invalid UTF-8"},          // overlong 3-byte (U+07FF)
      {"\"\xF0\x8F\xBF\xBF\"", 2, "invalid UTF-8"},      // overlong 4-byte (U+FFFF)
      {"\"\xED\xA0\x80\"", 2, "invalid UTF-8"},          // UTF-8 encoded U+D800
      {"\"\xED\xBF\xBF\"", 2, "invalid UTF-8"},          // UTF-8 encoded U+DFFF
      {"\"\xF4\x90\x80\x80\"", 2, "invalid UTF-8"},      // U+110000
      {"\"\xF5\x80\x80\x80\"", 1, "invalid UTF-8"},      // lead over U+10FFFF
      {"\"\xFF\"", 1, "invalid UTF-8"},
      {"\"\x80\"", 1, "invalid UTF-8"},                  // stray continuation
      {"\"a\xBF\"", 2, "invalid UTF-8"},                 // stray continuation
      {"\"\xE2\x82\"", 3, "invalid UTF-8"},              // truncated by '"'
      {"\"\xE2\x82", 3, "invalid UTF-8"},                // truncated by the end
      {"\"\xF0\x9F\x98 \"", 4, "invalid UTF-8"},         // truncated 4-byte
      {"[\xC3\xA9]", 1, "expected a value"},             // UTF-8 outside a string
      {"\xEF\xBB\xBF{}", 0, "expected a value"},         // byte order mark
      {"\f1", 0, "expected a value"},                    // form feed is not whitespace
      {"[1,\v2]", 3, "expected a value"},                // nor is vertical tab
      {"[1e400]", 1, "out of double range"},
      {"-1e400", 0, "out of double range"},
      {"1.8e308", 0, "out of double range"},
      {"0.0001e400", 0, "out of double range"},          // leading zeros in the fraction
      {"1e99999999999999999999999999", 0, "out of double range"},
      {"[NaN]", 1, "expected a value"},
      {"[Infinity]", 1, "expected a value"},
      {"'a'", 0, "expected a value"},
  };
  for (const ErrorCase& c : cases) {
    Value v = Value::String("unchanged");
    size_t off = SIZE_MAX;
    Status st = Parse(c.input, &v, ParseLimits(), &off);
    ASSERT_FALSE(st.ok()) << "accepted: " << c.input;
    EXPECT_EQ(off, c.offset) << c.input << " -> " << st.message();
    EXPECT_NE(st.message().find("at byte " + std::to_string(c.offset)), std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find(c.message_part), std::string::npos)
        << c.input << " -> " << st.message();
    EXPECT_EQ(v.as_string(), "unchanged") << "*out modified on failure: " << c.input;
  }
}

TEST(JsonParse, ErrorOffsetIsOptional) {
  Value v;
  EXPECT_FALSE(Parse("[", &v).ok());  // no error_offset pointer: must not crash
}

std::string Nested(int depth, const std::string& open, const std::string& inner,
                   const std::string& close) {
  std::string s;
  for (int i = 0; i < depth; i++) s += open;
  s += inner;
  for (int i = 0; i < depth; i++) s += close;
  return s;
}

TEST(JsonParse, DepthBoundExactlyAtLimitPassesOneDeeperFails) {
  ParseLimits l;
  l.max_depth = 64;
  Value v;
  size_t off = 0;
  EXPECT_TRUE(Parse(Nested(64, "[", "", "]"), &v, l).ok());
  Status st = Parse(Nested(65, "[", "", "]"), &v, l, &off);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(off, 64u);  // the 65th '['
  EXPECT_NE(st.message().find("max_depth 64"), std::string::npos) << st.message();

  EXPECT_TRUE(Parse(Nested(64, "{\"k\":", "1", "}"), &v, l).ok());
  st = Parse(Nested(65, "{\"k\":", "1", "}"), &v, l, &off);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(off, 64u * 5u);  // the 65th '{'

  // Mixed: arrays and objects count together.
  EXPECT_TRUE(Parse(Nested(32, "[{\"k\":", "null", "}]"), &v, l).ok());
  EXPECT_FALSE(Parse(Nested(32, "[{\"k\":", "[]", "}]"), &v, l).ok());
}

TEST(JsonParse, DepthCountsOpenContainersNotSiblings) {
  ParseLimits l;
  l.max_depth = 2;
  Value v;
  size_t off = 0;
  EXPECT_TRUE(Parse("[[],[1],{\"a\":1},{}]", &v, l).ok()) << "siblings must not add up";
  EXPECT_FALSE(Parse("[[],[[]]]", &v, l, &off).ok());
  EXPECT_EQ(off, 5u);
  l.max_depth = 0;  // scalars only
  EXPECT_TRUE(Parse("\"s\"", &v, l).ok());
  EXPECT_FALSE(Parse("[]", &v, l, &off).ok());
  EXPECT_EQ(off, 0u);
}

TEST(JsonParse, SizeBound) {
  const std::string doc = "[1, 2, 3 ]";  // 10 bytes
  ParseLimits l;
  l.max_bytes = 10;
  Value v;
  size_t off = 0;
  EXPECT_TRUE(Parse(doc, &v, l).ok());
  l.max_bytes = 9;
  Status st = Parse(doc, &v, l, &off);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(off, 9u);
  EXPECT_NE(st.message().find("max_bytes 9"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("10 bytes"), std::string::npos) << st.message();
}

TEST(JsonParse, Int64RangeAndOnePast) {
  Value v;
  ASSERT_TRUE(Parse("9223372036854775807", &v).ok());
  ASSERT_TRUE(v.is_int());
  EXPECT_EQ(v.as_int(), INT64_MAX);
  ASSERT_TRUE(Parse("-9223372036854775808", &v).ok());
  ASSERT_TRUE(v.is_int());
  EXPECT_EQ(v.as_int(), INT64_MIN);

  ASSERT_TRUE(Parse("9223372036854775808", &v).ok());
  EXPECT_EQ(v.kind(), Value::Kind::kDouble);
  EXPECT_EQ(v.as_double(), 9223372036854775808.0);
  ASSERT_TRUE(Parse("-9223372036854775809", &v).ok());
  EXPECT_EQ(v.kind(), Value::Kind::kDouble);
  EXPECT_EQ(v.as_double(), -9223372036854775808.0);

  ASSERT_TRUE(Parse("-0", &v).ok());
  EXPECT_TRUE(v.is_int());
  EXPECT_EQ(v.as_int(), 0);
  ASSERT_TRUE(Parse("1.0", &v).ok());
  EXPECT_EQ(v.kind(), Value::Kind::kDouble);  // a fraction makes a double
  ASSERT_TRUE(Parse("1e2", &v).ok());
  EXPECT_EQ(v.kind(), Value::Kind::kDouble);  // so does an exponent
  EXPECT_EQ(v.as_double(), 100.0);
  ASSERT_TRUE(Parse("-12", &v).ok());
  EXPECT_EQ(v.as_double(), -12.0);  // as_double works on ints too
}

TEST(JsonParse, DoubleRangeUnderflowAndSubnormals) {
  Value v;
  ASSERT_TRUE(Parse("1e-400", &v).ok());
  EXPECT_EQ(v.as_double(), 0.0);
  EXPECT_FALSE(std::signbit(v.as_double()));
  ASSERT_TRUE(Parse("-1e-400", &v).ok());
  EXPECT_EQ(v.as_double(), 0.0);
  EXPECT_TRUE(std::signbit(v.as_double()));
  ASSERT_TRUE(Parse("0.000001e-320", &v).ok());
  EXPECT_EQ(v.as_double(), 0.0);
  ASSERT_TRUE(Parse("1e-99999999999999999999999", &v).ok());
  EXPECT_EQ(v.as_double(), 0.0);
  ASSERT_TRUE(Parse("5e-324", &v).ok());
  EXPECT_EQ(v.as_double(), std::numeric_limits<double>::denorm_min());
  ASSERT_TRUE(Parse("2.2250738585072014E-308", &v).ok());
  EXPECT_EQ(v.as_double(), DBL_MIN);
  ASSERT_TRUE(Parse("1.7976931348623157e308", &v).ok());
  EXPECT_EQ(v.as_double(), DBL_MAX);
  ASSERT_TRUE(Parse("-0.5E+1", &v).ok());
  EXPECT_EQ(v.as_double(), -5.0);
  ASSERT_TRUE(Parse("0e0", &v).ok());
  EXPECT_EQ(v.as_double(), 0.0);
  ASSERT_TRUE(Parse("123.456e-2", &v).ok());
  EXPECT_EQ(v.as_double(), 1.23456);
}

TEST(JsonParse, EscapesAndSurrogatePairs) {
  struct {
    const char* json;
    std::string want;
  } cases[] = {
      {R"("\"\\\/\b\f\n\r\t")", "\"\\/\b\f\n\r\t"},
      {R"("\u0000")", "\0"s},
      {R"("a\u0041\u00e9\u00E9")", "aA\xC3\xA9\xC3\xA9"},
      {R"("\u20AC")", "\xE2\x82\xAC"},
      {R"("\uFFFF")", "\xEF\xBF\xBF"},
      {R"("\uD83D\uDE00")", "\xF0\x9F\x98\x80"},  // U+1F600
      {R"("\ud800\udc00")", "\xF0\x90\x80\x80"},  // U+10000, lower-case hex
      {R"("\uDBFF\uDFFF")", "\xF4\x8F\xBF\xBF"},  // U+10FFFF
      {"\"\xF4\x8F\xBF\xBF \xC3\xA9 \xE2\x82\xAC\"", "\xF4\x8F\xBF\xBF \xC3\xA9 \xE2\x82\xAC"},
      {"\"\x7F\"", "\x7F"},  // DEL is not a control character for JSON
  };
  for (const auto& c : cases) {
    Value v;
    Status st = Parse(c.json, &v);
    ASSERT_TRUE(st.ok()) << c.json << ": " << st.message();
    ASSERT_TRUE(v.is_string());
    EXPECT_EQ(v.as_string(), c.want) << c.json;
  }
}

TEST(JsonParse, WhitespaceAndStructure) {
  Value v;
  ASSERT_TRUE(Parse(" \t\r\n{ \"a\" : [ 1 , { } , [ ] ] , \"b\" : null } \n", &v).ok());
  ASSERT_TRUE(v.is_object());
  ASSERT_EQ(v.members().size(), 2u);
  EXPECT_EQ(v.members()[0].first, "a");
  ASSERT_EQ(v.members()[0].second.items().size(), 3u);
  EXPECT_TRUE(v.members()[0].second.items()[1].is_object());
  EXPECT_TRUE(v.members()[0].second.items()[2].is_array());
  EXPECT_TRUE(v.Find("b")->is_null());
  ASSERT_TRUE(Parse("true", &v).ok());
  EXPECT_TRUE(v.is_bool() && v.as_bool());
  ASSERT_TRUE(Parse("false", &v).ok());
  EXPECT_TRUE(v.is_bool() && !v.as_bool());
  ASSERT_TRUE(Parse("{\"\":\"\"}", &v).ok());
  EXPECT_EQ(v.Find("")->as_string(), "");
}

TEST(JsonParse, FindReturnsLastDuplicate) {
  Value v;
  ASSERT_TRUE(Parse(R"({"a":1,"b":2,"a":3})", &v).ok());
  ASSERT_EQ(v.members().size(), 3u);  // all kept, in order
  EXPECT_EQ(v.members()[0].second.as_int(), 1);
  ASSERT_NE(v.Find("a"), nullptr);
  EXPECT_EQ(v.Find("a")->as_int(), 3);
  EXPECT_EQ(v.Find("b")->as_int(), 2);
  EXPECT_EQ(v.Find("c"), nullptr);
  EXPECT_EQ(v.Find("A"), nullptr);
  Value arr;
  ASSERT_TRUE(Parse("[\"a\"]", &arr).ok());
  EXPECT_EQ(arr.Find("a"), nullptr);  // not an object
}

TEST(JsonValue, BuildersAndWrongKindMutators) {
  Value a = Value::Array();
  a.Push(Value::Int(1));
  a.Set("x", Value::Int(2));  // no effect on an array
  EXPECT_EQ(a.items().size(), 1u);
  EXPECT_TRUE(a.members().empty());
  Value o = Value::Object();
  o.Push(Value::Int(1));  // no effect on an object
  o.Set("x", Value::Bool(true));
  EXPECT_TRUE(o.items().empty());
  EXPECT_TRUE(o.Find("x")->as_bool());
  Value s = Value::String("s");
  s.Push(Value());
  s.Set("k", Value());
  EXPECT_TRUE(s.items().empty() && s.members().empty());
  EXPECT_TRUE(Value::Null().is_null());
  EXPECT_EQ(Value::Double(2.5).as_double(), 2.5);
  EXPECT_TRUE(Value::Int(3).is_number());
  EXPECT_TRUE(Value::Double(3).is_number());
}

// Parse keeps every member of an object (RFC 8259 allows repeated names);
// FindDuplicateKey finds the first repeated one, at any depth, with its path.
TEST(JsonDuplicateKeys, FoundWithTheirPathAtAnyDepth) {
  struct Case {
    const char* text;
    bool dup;
    const char* path;
  };
  const Case cases[] = {
      {R"({"a":1,"b":2})", false, ""},
      {R"({"a":1,"a":2})", true, "a"},
      {R"({"a":{"x":1},"b":{"x":2}})", false, ""},  // the same key in two objects
      {R"({"a":{"x":1,"y":2,"x":3}})", true, "a.x"},
      {R"({"m":[{"r":1},{"r":1,"r":2}]})", true, "m[1].r"},
      {R"([[{"k":0,"k":0}]])", true, "[0][0].k"},
      {R"({"":1,"":2})", true, ""},
      {R"([1,"a",null])", false, ""},
      {R"("scalar")", false, ""},
  };
  for (const Case& c : cases) {
    Value v;
    ASSERT_TRUE(Parse(c.text, &v).ok()) << c.text;
    std::string path = "unset";
    EXPECT_EQ(FindDuplicateKey(v, &path), c.dup) << c.text;
    if (c.dup) {
      EXPECT_EQ(path, c.path) << c.text;
    }
  }
  // Many members: the set path, not the pairwise one.
  std::string big = "{";
  for (int i = 0; i < 5000; i++) big += "\"k" + std::to_string(i) + "\":0,";
  std::string ok_big = big.substr(0, big.size() - 1) + "}";
  big += "\"k4321\":1}";
  Value v;
  ASSERT_TRUE(Parse(ok_big, &v).ok());
  std::string path;
  EXPECT_FALSE(FindDuplicateKey(v, &path));
  ASSERT_TRUE(Parse(big, &v).ok());
  EXPECT_TRUE(FindDuplicateKey(v, &path));
  EXPECT_EQ(path, "k4321");
}

}  // namespace
}  // namespace tw::json
