// The flag documentation cannot drift from the program: docs/FLAGS.md holds
// exactly what `tokenwire serve --help` prints (app::ServeHelp), and the
// README names every flag. And every param docs/openai.md's parameter
// tables name has a row in the interop check that sends each one
// (tests/interop/openai/param_rows.json, `make interop`).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "app/config.h"
#include "json/json.h"
#include "support/source_text.h"

namespace tw::app {
namespace {

using ::tw::testing::FlagNames;
using ::tw::testing::ReadSourceFile;

TEST(DocsTest, FlagsDocIsExactlyTheHelpText) {
  const std::string doc = ReadSourceFile("docs/FLAGS.md");
  const size_t open = doc.find("```\n");
  ASSERT_NE(open, std::string::npos) << "docs/FLAGS.md has no ``` block";
  const size_t close = doc.find("```", open + 4);
  ASSERT_NE(close, std::string::npos);
  EXPECT_EQ(doc.substr(open + 4, close - open - 4), ServeHelp())
      << "regenerate: build/tokenwire serve --help, into docs/FLAGS.md";
}

TEST(DocsTest, ReadmeNamesEveryFlag) {
  const std::set<std::string> flags = FlagNames(ServeHelp());
  ASSERT_GT(flags.size(), 20u);
  const std::set<std::string> in_readme = FlagNames(ReadSourceFile("README.md"));
  for (const std::string& f : flags) EXPECT_TRUE(in_readme.count(f)) << f << " is missing from README.md";
}

// The `names` in the first cell of each row of docs/openai.md's two
// parameter tables, by API ("completions" under the "| param | class |"
// header, "chat" under "| OpenAI param | accepted |").
std::map<std::string, std::set<std::string>> DocumentedParams() {
  std::map<std::string, std::set<std::string>> out;
  std::istringstream doc(ReadSourceFile("docs/openai.md"));
  std::string line, api;
  while (std::getline(doc, line)) {
    if (line.rfind("| param | class |", 0) == 0) api = "completions";
    else if (line.rfind("| OpenAI param | accepted |", 0) == 0) api = "chat";
    else if (line.rfind("|", 0) != 0) api.clear();  // the table ended
    if (api.empty() || line.rfind("|---", 0) == 0) continue;
    const std::string cell = line.substr(1, line.find('|', 1) - 1);
    for (size_t a = cell.find('`'); a != std::string::npos; a = cell.find('`', a)) {
      const size_t b = cell.find('`', a + 1);
      if (b == std::string::npos) break;
      const std::string name = cell.substr(a + 1, b - a - 1);
      // Names only (a value such as `{"type":"text"}` is not one).
      if (name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_*") == std::string::npos) out[api].insert(name);
      a = b + 1;
    }
  }
  return out;
}

TEST(DocsTest, EveryParamOfTheOpenAiTablesIsSentByTheInteropCheck) {
  const auto documented = DocumentedParams();
  ASSERT_GT(documented.count("completions") ? documented.at("completions").size() : 0, 30u);
  ASSERT_GT(documented.count("chat") ? documented.at("chat").size() : 0, 30u);
  json::Value rows;
  const std::string text = ReadSourceFile("tests/interop/openai/param_rows.json");
  json::ParseLimits lim;
  lim.max_bytes = text.size() + 1;
  ASSERT_TRUE(json::Parse(text, &rows, lim).ok());
  std::map<std::string, std::set<std::string>> sent;  // api -> each row's `row` and the params it sends
  for (const json::Value& r : rows.Find("rows")->items()) {
    const std::string api = r.Find("api")->as_string();
    sent[api].insert(r.Find("row")->as_string());
    for (const auto& [k, v] : r.Find("params")->members()) sent[api].insert(k);
  }
  for (const auto& [api, names] : documented) {
    for (const std::string& name : names) {
      const bool prefix = !name.empty() && name.back() == '*';  // `guided_*`
      const std::string stem = prefix ? name.substr(0, name.size() - 1) : name;
      bool found = false;
      for (const std::string& s : sent[api]) found |= prefix ? s.rfind(stem, 0) == 0 : s == stem;
      EXPECT_TRUE(found) << api << " param `" << name << "` (docs/openai.md) has no row in "
                         << "tests/interop/openai/param_rows.json";
    }
  }
}

}  // namespace
}  // namespace tw::app
