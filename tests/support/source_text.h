// Reading the project's own text in tests: a file of the source tree, and the
// command-line flags a text names. Shared by the tests that keep the docs and
// help texts in step with the code (tests/docs/docs_test.cc, help_test.cc,
// doc_names_test.cc).
#pragma once

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace tw::testing {

// A file of the source tree (TW_SOURCE_DIR), whole; "" (and a test failure)
// if it cannot be read.
inline std::string ReadSourceFile(const std::string& relative) {
  std::ifstream in(std::string(TW_SOURCE_DIR) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << relative;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every "--name" in `text` (a lowercase letter, then lowercase letters,
// digits and dashes) not glued to a word before it: "--port", "[--seed S]",
// "`--log-level`", "'--stop'"; not "a--b" or "x---y".
inline std::set<std::string> FlagNames(std::string_view text) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::set<std::string> out;
  for (size_t i = 0; i + 2 < text.size(); i++) {
    if (text.compare(i, 2, "--") != 0 || !std::islower(static_cast<unsigned char>(text[i + 2]))) continue;
    if (i > 0 && (ident(text[i - 1]) || text[i - 1] == '-')) continue;
    size_t j = i + 2;
    while (j < text.size() && (std::islower(static_cast<unsigned char>(text[j])) ||
                               std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '-')) {
      j++;
    }
    out.insert(std::string(text.substr(i, j - i)));
    i = j;
  }
  return out;
}

}  // namespace tw::testing
