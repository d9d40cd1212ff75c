// The flag documentation cannot drift from the program: docs/FLAGS.md holds
// exactly what `tokenwire serve --help` prints (app::ServeHelp), and the
// README names every flag.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "app/config.h"
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

}  // namespace
}  // namespace tw::app
