// JSONTestSuite (nst/JSONTestSuite, test_parsing/, copied into
// tests/data/json/JSONTestSuite with its licence): every y_ file must parse,
// every n_ file must fail, and every i_ file must give the outcome our strict
// policy documents in json.h. Depth bound 64 throughout.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "json/json.h"
#include "support/chunking.h"

namespace tw::json {
namespace {

struct Case {
  std::string name;
  std::string bytes;
};

std::vector<Case> LoadPrefix(const std::string& prefix) {
  std::vector<Case> out;
  const std::string dir = testing::DataPath("json/JSONTestSuite");
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || e.path().extension() != ".json") continue;
    bool ok = false;
    std::string bytes = testing::ReadFile(e.path().string(), &ok);
    EXPECT_TRUE(ok) << name;
    out.push_back({name, std::move(bytes)});
  }
  std::sort(out.begin(), out.end(), [](const Case& a, const Case& b) { return a.name < b.name; });
  return out;
}

ParseLimits Depth64() {
  ParseLimits l;
  l.max_depth = 64;
  return l;
}

TEST(JsonTestSuite, AllYesFilesAccepted) {
  std::vector<Case> cases = LoadPrefix("y_");
  ASSERT_EQ(cases.size(), 95u) << "missing copies of y_ files?";
  int accepted = 0;
  for (const Case& c : cases) {
    Value v;
    Status st = Parse(c.bytes, &v, Depth64());
    EXPECT_TRUE(st.ok()) << c.name << ": " << st.message();
    accepted += st.ok();
  }
  EXPECT_EQ(accepted, 95);
}

TEST(JsonTestSuite, AllNoFilesRejectedWithOffset) {
  std::vector<Case> cases = LoadPrefix("n_");
  ASSERT_EQ(cases.size(), 188u) << "missing copies of n_ files?";
  int rejected = 0;
  for (const Case& c : cases) {
    Value v;
    size_t off = SIZE_MAX;
    Status st = Parse(c.bytes, &v, Depth64(), &off);
    EXPECT_FALSE(st.ok()) << c.name << " was accepted";
    if (st.ok()) continue;
    rejected++;
    EXPECT_LE(off, c.bytes.size()) << c.name;
    EXPECT_NE(st.message().find("at byte " + std::to_string(off)), std::string::npos)
        << c.name << ": " << st.message();
  }
  EXPECT_EQ(rejected, 188);
}

// Which y_/n_ outcomes depend on the depth bound: none. With the bound lifted
// (INT_MAX) every file gives the same outcome; the deep n_ files are then
// rejected for their real defect (unterminated), and since the parser keeps
// its own stack this costs no native recursion.
TEST(JsonTestSuite, NoYesOrNoOutcomeDependsOnDepthBound) {
  ParseLimits unbounded;
  unbounded.max_depth = INT_MAX;
  for (const char* prefix : {"y_", "n_"}) {
    for (const Case& c : LoadPrefix(prefix)) {
      Value a, b;
      const bool with_bound = Parse(c.bytes, &a, Depth64()).ok();
      const bool without = Parse(c.bytes, &b, unbounded).ok();
      EXPECT_EQ(with_bound, without) << c.name;
    }
  }
}

TEST(JsonTestSuite, DeepNoFilesRejectedByDepthBoundFirst) {
  // 100000 '[': rejected at the 65th bracket (offset 64), before any deeper
  // nesting is even looked at.
  bool ok = false;
  std::string deep =
      testing::ReadFile(testing::DataPath("json/JSONTestSuite/n_structure_100000_opening_arrays.json"), &ok);
  ASSERT_TRUE(ok);
  Value v;
  size_t off = 0;
  Status st = Parse(deep, &v, Depth64(), &off);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(off, 64u);
  EXPECT_NE(st.message().find("max_depth"), std::string::npos) << st.message();

  // [{"":[{"":... — 64 containers are '[' '{' alternating; the 65th fails.
  std::string mixed =
      testing::ReadFile(testing::DataPath("json/JSONTestSuite/n_structure_open_array_object.json"), &ok);
  ASSERT_TRUE(ok);
  st = Parse(mixed, &v, Depth64(), &off);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("max_depth"), std::string::npos) << st.message();
  // Each '[{"":' is 5 bytes holding two containers: the 65th container is the
  // '[' that opens the 33rd group.
  EXPECT_EQ(off, 32u * 5u);
}

// i_ files: the suite lets either outcome pass; we assert the outcome our
// policy promises so that a change in policy is a visible test change.
// Accepted (5): integers too big for int64 (become doubles), underflows (-> 0).
// Rejected (30): overflow to +-inf (1.5e+9999, -1e+9999, ...), every malformed UTF-8 / UTF-16 / surrogate
// case, the BOM, and 500 nested arrays (over the depth bound of 64).
TEST(JsonTestSuite, ImplementationDefinedFilesFollowPolicy) {
  const std::set<std::string> expect_accepted = {
      "i_number_double_huge_neg_exp.json",  // 123.456e-789 -> 0
      "i_number_real_underflow.json",       // 123e-10000000 -> 0
      "i_number_too_big_neg_int.json",      // -1e30-ish integer -> double
      "i_number_too_big_pos_int.json",
      "i_number_very_big_negative_int.json",
  };
  std::vector<Case> cases = LoadPrefix("i_");
  ASSERT_EQ(cases.size(), 35u) << "missing copies of i_ files?";
  int accepted = 0;
  for (const Case& c : cases) {
    Value v;
    Status st = Parse(c.bytes, &v, Depth64());
    std::printf("  %-55s %s\n", c.name.c_str(), st.ok() ? "accepted" : st.message().c_str());
    accepted += st.ok();
    EXPECT_EQ(st.ok(), expect_accepted.count(c.name) == 1) << c.name << ": " << st.message();
  }
  EXPECT_EQ(accepted, static_cast<int>(expect_accepted.size()));
}

}  // namespace
}  // namespace tw::json
