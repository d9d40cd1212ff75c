// The flag documentation cannot drift from the program: docs/FLAGS.md holds
// exactly what `tokenwire serve --help` prints (api::ServeHelp), and the
// README names every flag.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "api/config.h"

namespace tw::api {
namespace {

std::string ReadSourceFile(const std::string& relative) {
  std::ifstream in(std::string(TW_SOURCE_DIR) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << relative;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every "--name" (lowercase letters, digits, dashes) that starts a word.
std::set<std::string> FlagNames(const std::string& text) {
  std::set<std::string> names;
  auto word_char = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; };
  for (size_t i = 0; i + 2 < text.size(); ++i) {
    const bool starts_word = i == 0 || text[i - 1] == ' ' || text[i - 1] == '\n' || text[i - 1] == '`';
    if (!starts_word || text[i] != '-' || text[i + 1] != '-' || !(text[i + 2] >= 'a' && text[i + 2] <= 'z')) continue;
    size_t j = i + 2;
    while (j < text.size() && word_char(text[j])) ++j;
    names.insert(text.substr(i, j - i));
    i = j;
  }
  return names;
}

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
}  // namespace tw::api
