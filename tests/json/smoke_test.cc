// Smoke test: one document through Parse, Serialize and Writer.
#include <gtest/gtest.h>

#include "json/json.h"

namespace tw::json {
namespace {

TEST(JsonSmoke, ParseSerializeWriter) {
  Value v;
  Status st = Parse(R"( {"a": [1, -2.5, true, null, "x\u00e9"], "b": {}} )", &v);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(v.is_object());
  ASSERT_NE(v.Find("a"), nullptr);
  EXPECT_EQ(v.Find("a")->items().size(), 5u);
  EXPECT_EQ(v.Find("a")->items()[0].as_int(), 1);
  EXPECT_EQ(v.Find("a")->items()[1].as_double(), -2.5);
  EXPECT_EQ(v.Find("a")->items()[4].as_string(), "x\xC3\xA9");
  EXPECT_EQ(Serialize(v), "{\"a\":[1,-2.5,true,null,\"x\xC3\xA9\"],\"b\":{}}");

  std::string out;
  Writer w(&out);
  w.BeginObject();
  w.Key("id");
  w.Int(7);
  w.Key("list");
  w.BeginArray();
  w.String("q\"");
  w.Double(0.1);
  w.Bool(false);
  w.Null();
  w.EndArray();
  w.EndObject();
  EXPECT_EQ(out, R"({"id":7,"list":["q\"",0.1,false,null]})");
}

}  // namespace
}  // namespace tw::json
