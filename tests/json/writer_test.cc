// Writer / Serialize tests: escaping of every control character, U+FFFD
// replacement checked against the Unicode Standard's own example, shortest
// round-trip doubles checked against printf/strtod, Serialize -> Parse round
// trips, and the automatic commas of Writer.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "json/json.h"
#include "json/utf8.h"

namespace tw::json {
namespace {

using namespace std::string_literals;

std::string Quoted(std::string_view s) {
  std::string out;
  AppendQuoted(&out, s);
  return out;
}

TEST(JsonWriter, EscapesEveryControlCharacter) {
  for (int c = 0; c < 0x20; c++) {
    std::string want;
    switch (c) {
      case 0x08: want = "\\b"; break;
      case 0x09: want = "\\t"; break;
      case 0x0A: want = "\\n"; break;
      case 0x0C: want = "\\f"; break;
      case 0x0D: want = "\\r"; break;
      default: {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        want = buf;
      }
    }
    const std::string in(1, static_cast<char>(c));
    EXPECT_EQ(Quoted(in), "\"" + want + "\"") << "byte " << c;
    Value back;
    ASSERT_TRUE(Parse(Quoted(in), &back).ok());
    EXPECT_EQ(back.as_string(), in);
  }
  EXPECT_EQ(Quoted("a\"b\\c/d\x7F"), "\"a\\\"b\\\\c/d\x7F\"");  // '/' and DEL kept
  EXPECT_EQ(Quoted(""), "\"\"");
}

TEST(JsonWriter, KeepsValidUtf8) {
  const std::string s = "\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF \xEF\xBF\xBF";
  EXPECT_EQ(Quoted(s), "\"" + s + "\"");
}

TEST(JsonWriter, ReplacesInvalidUtf8AsInUnicodeTable3_8) {
  // The Unicode Standard, chapter 3, Table 3-8 ("U+FFFD for maximal subparts"):
  // 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64 -> a FFFD FFFD FFFD b FFFD c FFFD FFFD d
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(Quoted("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            "\"a" + r + r + r + "b" + r + "c" + r + r + "d\"");
  // Section 3.9's other cases: every byte of a surrogate / out-of-range /
  // overlong form is its own maximal subpart.
  EXPECT_EQ(Quoted("\xED\xA0\x80"), "\"" + r + r + r + "\"");
  EXPECT_EQ(Quoted("\xF4\x90\x80\x80"), "\"" + r + r + r + r + "\"");
  EXPECT_EQ(Quoted("\xC0\xAF"), "\"" + r + r + "\"");
  EXPECT_EQ(Quoted("\xE0\x80\xAF"), "\"" + r + r + r + "\"");
  EXPECT_EQ(Quoted("x\xF0\x9F\x98"), "\"x" + r + "\"");  // truncated at the end
  EXPECT_EQ(Quoted("\xFE\xFF"), "\"" + r + r + "\"");
}

TEST(JsonWriter, OutputIsAlwaysValidUtf8AndParsesBack) {
  std::mt19937 rng(12345);  // fixed seed: reproducible
  for (int iter = 0; iter < 2000; iter++) {
    std::string in(rng() % 24, '\0');
    for (char& c : in) c = static_cast<char>(rng() & 0xFF);
    const std::string q = Quoted(in);
    size_t bad = 0;
    ASSERT_TRUE(IsValidUtf8(q, &bad)) << "invalid at " << bad;
    Value v;
    ASSERT_TRUE(Parse(q, &v).ok()) << q;
    if (IsValidUtf8(in)) {
      EXPECT_EQ(v.as_string(), in);  // lossless when it was valid
    }
  }
}

// Shortest round trip, checked against an independent reference: the fewest
// significant digits p for which printf("%.{p-1}e") read back with strtod
// gives the same double. (Only a length bound for integer-form output: see
// below.)
int ShortestDigits(double d) {
  for (int p = 1; p <= 17; p++) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.*e", p - 1, d);
    if (std::strtod(buf, nullptr) == d) return p;
  }
  return 17;
}

int SignificantDigits(const std::string& s) {
  std::string digits;
  for (char c : s) {
    if (c == 'e' || c == 'E') break;
    if (c >= '0' && c <= '9') digits.push_back(c);
  }
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return 1;
  digits = digits.substr(first);
  const size_t last = digits.find_last_not_of('0');
  return static_cast<int>(last + 1);
}

TEST(JsonWriter, DoublesShortestRoundTrip) {
  std::vector<double> ds = {0.1, 1.0 / 3, 2.0 / 3, 1e21, 1e-7, 123456789.125, M_PI, DBL_MAX,
                            DBL_MIN, std::numeric_limits<double>::denorm_min(), 9007199254740993.0,
                            -2.5, 1e300, 5e-300, 0.30000000000000004, 100.0, 1e15, 1e16};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; i++) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof(d));
    if (std::isfinite(d)) ds.push_back(d);
  }
  for (double d : ds) {
    const std::string s = Serialize(Value::Double(d));
    Value back;
    ASSERT_TRUE(Parse(s, &back).ok()) << s;
    EXPECT_EQ(back.as_double(), d) << s;
    const int p = ShortestDigits(d);
    if (s.find_first_of(".e") != std::string::npos) {
      EXPECT_EQ(SignificantDigits(s), p) << s;
    } else {
      // Integer form: to_chars picks the fewest characters, and among equal
      // lengths the exact digits, so only the length can be checked: never
      // longer than the shortest scientific form.
      char sci[64];
      std::snprintf(sci, sizeof(sci), "%.*e", p - 1, d);
      EXPECT_LE(s.size(), std::strlen(sci)) << s << " vs " << sci;
    }
  }
  EXPECT_EQ(Serialize(Value::Double(0.1)), "0.1");
  EXPECT_EQ(Serialize(Value::Double(1e21)), "1e+21");
  EXPECT_EQ(Serialize(Value::Double(5e-324)), "5e-324");
  EXPECT_EQ(Serialize(Value::Double(100.0)), "100");
  EXPECT_EQ(Serialize(Value::Double(0.0)), "0");
}

TEST(JsonWriter, NegativeZeroAndNonFinite) {
  EXPECT_EQ(Serialize(Value::Double(-0.0)), "-0.0");
  Value back;
  ASSERT_TRUE(Parse("-0.0", &back).ok());
  EXPECT_EQ(back.kind(), Value::Kind::kDouble);
  EXPECT_TRUE(std::signbit(back.as_double()));
  EXPECT_EQ(Serialize(Value::Double(std::numeric_limits<double>::infinity())), "null");
  EXPECT_EQ(Serialize(Value::Double(-std::numeric_limits<double>::infinity())), "null");
  EXPECT_EQ(Serialize(Value::Double(std::nan(""))), "null");
}

TEST(JsonWriter, Ints) {
  EXPECT_EQ(Serialize(Value::Int(INT64_MIN)), "-9223372036854775808");
  EXPECT_EQ(Serialize(Value::Int(INT64_MAX)), "9223372036854775807");
  EXPECT_EQ(Serialize(Value::Int(0)), "0");
}

TEST(JsonWriter, CommasAndNesting) {
  std::string out = "prefix:";  // Writer appends
  Writer w(&out);
  w.BeginObject();
  w.Key("a");
  w.BeginArray();
  w.EndArray();
  w.Key("b");
  w.BeginObject();
  w.EndObject();
  w.Key("c");
  w.BeginArray();
  w.Int(-1);
  w.BeginObject();
  w.Key("k\n");
  w.String("v\x01");
  w.Key("n");
  w.Null();
  w.EndObject();
  w.BeginArray();
  w.Bool(true);
  w.EndArray();
  w.Double(1.5);
  w.Raw("{\"pre\":[1]}");
  w.EndArray();
  w.Key("d");
  w.Raw("7");
  w.EndObject();
  EXPECT_EQ(out,
            "prefix:{\"a\":[],\"b\":{},\"c\":[-1,{\"k\\n\":\"v\\u0001\",\"n\":null},[true],1.5,"
            "{\"pre\":[1]}],\"d\":7}");
  Value v;
  EXPECT_TRUE(Parse(std::string_view(out).substr(7), &v).ok());

  std::string top;
  Writer scalar(&top);
  scalar.String("only");
  EXPECT_EQ(top, "\"only\"");
}

bool Same(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kNull: return true;
    case Value::Kind::kBool: return a.as_bool() == b.as_bool();
    case Value::Kind::kInt: return a.as_int() == b.as_int();
    case Value::Kind::kDouble:
      return a.as_double() == b.as_double() &&
             std::signbit(a.as_double()) == std::signbit(b.as_double());
    case Value::Kind::kString: return a.as_string() == b.as_string();
    case Value::Kind::kArray:
      if (a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); i++) {
        if (!Same(a.items()[i], b.items()[i])) return false;
      }
      return true;
    case Value::Kind::kObject:
      if (a.members().size() != b.members().size()) return false;
      for (size_t i = 0; i < a.members().size(); i++) {
        if (a.members()[i].first != b.members()[i].first) return false;
        if (!Same(a.members()[i].second, b.members()[i].second)) return false;
      }
      return true;
  }
  return false;
}

TEST(JsonSerialize, RoundTripThroughParse) {
  Value inner = Value::Object();
  inner.Set("dup", Value::Int(1));
  inner.Set("dup", Value::Int(2));
  inner.Set("", Value::String(""));
  Value arr = Value::Array();
  arr.Push(Value::Null());
  arr.Push(Value::Bool(false));
  arr.Push(Value::Bool(true));
  arr.Push(Value::Int(INT64_MIN));
  arr.Push(Value::Double(-0.0));
  arr.Push(Value::Double(6.02214076e23));
  arr.Push(Value::Double(0.5));
  arr.Push(Value::String("tab\there \"q\" \\ \xE2\x82\xAC \xF0\x9F\x98\x80 \0 end"s));
  arr.Push(Value::Array());
  arr.Push(inner);
  Value root = Value::Object();
  root.Set("arr", arr);
  root.Set("k\x1f\"", Value::Object());

  const std::string s1 = Serialize(root);
  Value back;
  Status st = Parse(s1, &back);
  ASSERT_TRUE(st.ok()) << st.message() << "\n" << s1;
  EXPECT_TRUE(Same(root, back)) << s1;
  EXPECT_EQ(Serialize(back), s1);
  EXPECT_EQ(back.Find("arr")->items()[9].Find("dup")->as_int(), 2);
}

TEST(JsonSerialize, CompactForm) {
  Value v;
  ASSERT_TRUE(Parse(" { \"a\" : [ 1 , 2.5 , \"\\u00e9\" ] , \"b\" : { } } ", &v).ok());
  EXPECT_EQ(Serialize(v), "{\"a\":[1,2.5,\"\xC3\xA9\"],\"b\":{}}");
}

TEST(JsonSerialize, DeepTreeUsesNoRecursion) {
  // 64 levels (the default bound): Serialize must reproduce it exactly.
  std::string doc;
  for (int i = 0; i < 64; i++) doc += "[";
  for (int i = 0; i < 64; i++) doc += "]";
  Value v;
  ASSERT_TRUE(Parse(doc, &v).ok());
  EXPECT_EQ(Serialize(v), doc);
}

}  // namespace
}  // namespace tw::json
