// The corpus: documents (fortune separators, blank ones dropped), the
// end-of-text joins, the validation split, the windows; and the loader's
// errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "train/corpus.h"

namespace tw::train {
namespace {

const tokenizer::Tokenizer& Tok() {
  static const tokenizer::Tokenizer* tok = [] {
    auto* t = new tokenizer::Tokenizer();
    EXPECT_TRUE(tokenizer::Tokenizer::LoadEmbedded(t).ok());
    return t;
  }();
  return *tok;
}

std::vector<int32_t> Concat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(Corpus, FortunesAreDocumentsJoinedByEndOfTextAndTheLastOnesValidate) {
  const std::string text = "A stitch in time.\n%\nSaves nine.\r\n%\r\n%\n  \n%\nThe end.\n";
  Corpus c;
  ASSERT_TRUE(SplitCorpus(text, Tok(), &c).ok());
  EXPECT_TRUE(c.fortune);
  EXPECT_EQ(c.documents, 3);  // the blank one dropped
  EXPECT_EQ(c.val_documents, 1);
  const int32_t eot = Tok().end_of_text_id();
  EXPECT_EQ(eot, 50256);
  EXPECT_EQ(c.train, Concat({Tok().Encode("A stitch in time.\n"), {eot}, Tok().Encode("Saves nine.\r\n")}));
  EXPECT_EQ(c.val, Tok().Encode("The end.\n"));
  EXPECT_EQ(c.bytes, text.size());
}

TEST(Corpus, EveryTwentiethDocumentValidates) {
  std::string text;
  for (int i = 0; i < 101; ++i) text += "fortune " + std::to_string(i) + "\n%\n";
  Corpus c;
  ASSERT_TRUE(SplitCorpus(text, Tok(), &c).ok());
  EXPECT_EQ(c.documents, 101);
  EXPECT_EQ(c.val_documents, 5);  // the 20th, 40th, 60th, 80th and 100th
  EXPECT_EQ(c.val, Concat({Tok().Encode("fortune 19\n"), {50256}, Tok().Encode("fortune 39\n"), {50256},
                           Tok().Encode("fortune 59\n"), {50256}, Tok().Encode("fortune 79\n"), {50256},
                           Tok().Encode("fortune 99\n")}));
  // The training part: the others in order, fortune 18 then fortune 20.
  const std::vector<int32_t> around = Concat({Tok().Encode("fortune 18\n"), {50256}, Tok().Encode("fortune 20\n")});
  EXPECT_NE(std::search(c.train.begin(), c.train.end(), around.begin(), around.end()), c.train.end());
  EXPECT_EQ(c.train.back(), Tok().Encode("fortune 100\n").back());
}

TEST(Corpus, APlainTextIsOneDocumentWhoseLastTokensValidate) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "Line " + std::to_string(i) + " of a text with 50% less %s.\n";
  Corpus c;
  ASSERT_TRUE(SplitCorpus(text, Tok(), &c).ok());
  EXPECT_FALSE(c.fortune);
  EXPECT_EQ(c.documents, 1);
  EXPECT_EQ(c.val_documents, 0);
  const std::vector<int32_t> all = Tok().Encode(text);
  const size_t val = (all.size() * 5 + 99) / 100;
  EXPECT_EQ(c.val.size(), val);
  EXPECT_EQ(Concat({c.train, c.val}), all);
}

TEST(Corpus, WindowsAreSeededAndTargetsAreTheNextTokens) {
  std::vector<int32_t> tokens(50);
  for (int i = 0; i < 50; ++i) tokens[i] = 1000 + i;
  WindowSampler a(tokens, 8, 42), b(tokens, 8, 42), other(tokens, 8, 43);
  std::set<int32_t> starts;
  bool differs = false;
  for (int n = 0; n < 200; ++n) {
    int32_t in[8], tgt[8], in2[8], tgt2[8], in3[8], tgt3[8];
    a.Next(in, tgt);
    b.Next(in2, tgt2);
    other.Next(in3, tgt3);
    for (int i = 0; i < 8; ++i) {
      ASSERT_EQ(in[i], in2[i]);
      ASSERT_EQ(tgt[i], in[i] + 1);
      ASSERT_EQ(in[i], in[0] + i);
    }
    differs |= in3[0] != in[0];
    starts.insert(in[0] - 1000);
  }
  EXPECT_TRUE(differs) << "another seed, other windows";
  EXPECT_EQ(*starts.begin(), 0);
  EXPECT_EQ(*starts.rbegin(), 41);  // the last start whose target fits: 50 - 8 - 1
  EXPECT_EQ(starts.size(), 42u);    // every start drawn in 200 tries
  EXPECT_EQ(EvenWindowStarts(50, 8, 3), (std::vector<size_t>{0, 20, 41}));
  EXPECT_EQ(EvenWindowStarts(50, 8, 1), (std::vector<size_t>{0}));
}

TEST(Corpus, LoaderErrorsNameTheFile) {
  Corpus c;
  Status st = LoadCorpus("/nonexistent/corpus.txt", Tok(), &c);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/nonexistent/corpus.txt"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("No such file"), std::string::npos) << st.message();
  st = LoadCorpus("/tmp", Tok(), &c);
  EXPECT_NE(st.message().find("not a regular file"), std::string::npos) << st.message();
  const std::string empty = "/tmp/tw_corpus_test_empty_" + std::to_string(::getpid());
  for (const char* body : {"", " \n\t\n", "%\n%\n"}) {
    std::ofstream(empty) << body;
    st = LoadCorpus(empty, Tok(), &c);
    EXPECT_FALSE(st.ok()) << "'" << body << "'";
    EXPECT_NE(st.message().find("empty or blank"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(empty), std::string::npos) << st.message();
  }
  std::remove(empty.c_str());
}

}  // namespace
}  // namespace tw::train
