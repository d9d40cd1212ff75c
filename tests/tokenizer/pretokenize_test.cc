// The hand-written GPT-2 pre-tokenizer against the regex it implements.
//
// The expected splits in kRegexCases were produced by Python's `regex` module
// (2026.5.9) running OpenAI's pattern with findall(); they are an independent
// reference for the alternation semantics (first alternative wins, greedy
// runs, \s+(?!\S) backing off one character).
#include "tokenizer/pretokenize.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tokenizer/test_vectors.h"

namespace tw::tokenizer {
namespace {

struct RegexCase {
  std::string text;
  std::vector<std::string> pieces;
};

const std::vector<RegexCase> kRegexCases = {
    {"Hello world", {"Hello", " world"}},
    {"a  b", {"a", " ", " b"}},
    {"a   b", {"a", "  ", " b"}},
    {"a \x0A b", {"a", " \x0A", " b"}},
    {"a\x0A\x0A" "b", {"a", "\x0A", "\x0A", "b"}},
    {"trailing   ", {"trailing", "   "}},
    {"  lead", {" ", " lead"}},
    {"don't", {"don", "'t"}},
    {"I'LL", {"I", "'", "LL"}},
    {"they're we've I'm you'll he'd", {"they", "'re", " we", "'ve", " I", "'m", " you", "'ll", " he", "'d"}},
    {"'s", {"'s"}},
    {"''s", {"''", "s"}},
    {"x's'", {"x", "'s", "'"}},
    {"123abc", {"123", "abc"}},
    {" 123 456", {" 123", " 456"}},
    {"a1b2", {"a", "1", "b", "2"}},
    {" !!!?", {" !!!?"}},
    {" \x09\x09x", {" \x09", "\x09", "x"}},
    {"\xC2\xA0x", {"\xC2\xA0", "x"}},
    {"\xE3\x80\x80\xE3\x80\x80y", {"\xE3\x80\x80", "\xE3\x80\x80", "y"}},
    {"caf\xC3\xA9 na\xC3\xAFve", {"caf\xC3\xA9", " na\xC3\xAFve"}},
    {"\xD9\xA3\xD9\xA4 \xC2\xBD", {"\xD9\xA3\xD9\xA4", " \xC2\xBD"}},
    {"\xF0\x9F\x98\x80\xF0\x9F\x98\x80 ok", {"\xF0\x9F\x98\x80\xF0\x9F\x98\x80", " ok"}},
    {" \xF0\x9F\x91\x8D\xE2\x80\x8D\xF0\x9F\x8F\xBD", {" \xF0\x9F\x91\x8D\xE2\x80\x8D\xF0\x9F\x8F\xBD"}},
    {"\xE2\x80\xA8\xE2\x80\xA9z", {"\xE2\x80\xA8", "\xE2\x80\xA9", "z"}},
    {"\xC2\x85" "a", {"\xC2\x85", "a"}},
    {"x\xE2\x80\x8By", {"x", "\xE2\x80\x8B", "y"}},
    {"\xEF\xBB\xBFx", {"\xEF\xBB\xBF", "x"}},
    {"  \x0A", {"  \x0A"}},
    {"\x0A \x0A  x", {"\x0A \x0A ", " x"}},
    {"a , b", {"a", " ,", " b"}},
    {"' s", {"'", " s"}},
    {" 's", {" '", "s"}},
    {"\xE1\x9A\x80\xE1\x9A\x80 ", {"\xE1\x9A\x80\xE1\x9A\x80 "}},
    {"\xC2\xB2\xE2\x85\xA0x", {"\xC2\xB2\xE2\x85\xA0", "x"}},
    {"", {}},
};

std::vector<std::string> Split(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view p : SplitPieces(text)) out.emplace_back(p);
  return out;
}

TEST(PreTokenize, MatchesPythonRegexFindall) {
  for (const RegexCase& c : kRegexCases) EXPECT_EQ(Split(c.text), c.pieces) << c.text;
}

// Our documented rule for bytes that are not UTF-8 (the regex has no say):
// each such byte is one character of class "other".
TEST(PreTokenize, InvalidBytesAreOtherCharacters) {
  EXPECT_EQ(Split("\xFF\xFE" "ab"), (std::vector<std::string>{"\xFF\xFE", "ab"}));
  EXPECT_EQ(Split(" \xFFx"), (std::vector<std::string>{" \xFF", "x"}));
  EXPECT_EQ(Split("ab\xC3"), (std::vector<std::string>{"ab", "\xC3"}));            // truncated
  EXPECT_EQ(Split("ab\xC3 x"), (std::vector<std::string>{"ab", "\xC3", " x"}));
  EXPECT_EQ(Split("\xE2\x82!"), (std::vector<std::string>{"\xE2\x82!"}));          // 2 bytes + '!'
  EXPECT_EQ(Split("\xED\xA0\x80" "a"), (std::vector<std::string>{"\xED\xA0\x80", "a"}));  // surrogate
}

TEST(PreTokenize, NextPieceEndAtOrPastTheEnd) {
  EXPECT_EQ(NextPieceEnd("ab", 2), 2u);
  EXPECT_EQ(NextPieceEnd("ab", 7), 2u);
  EXPECT_EQ(NextPieceEnd("", 0), 0u);
  EXPECT_EQ(NextPieceEnd("ab cd", 2), 5u);
}

TEST(PreTokenize, PiecesAreNonEmptyAndConcatenateToTheInput) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255), len(0, 40), kind(0, 3);
  const std::string common = " \n\t'sa1.";
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    for (int n = len(rng); n > 0; --n) {
      text.push_back(kind(rng) == 0 ? static_cast<char>(byte(rng))
                                    : common[byte(rng) % common.size()]);
    }
    std::string joined;
    for (std::string_view p : SplitPieces(text)) {
      ASSERT_FALSE(p.empty());
      joined.append(p);
    }
    ASSERT_EQ(joined, text);
  }
  for (const auto& v : testing::LoadOracleVectors()) {
    std::string joined;
    for (std::string_view p : SplitPieces(v.text)) joined.append(p);
    ASSERT_EQ(joined, v.text) << v.id;
  }
}

}  // namespace
}  // namespace tw::tokenizer
