// backend::TokenEmitter: the token-emit rules the engine and the mock share
// (src/backend/token_emitter.h), on GPT-2's vocabulary.
#include "backend/token_emitter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fuzz/embedded_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace tw::backend {
namespace {

const tokenizer::Tokenizer& Tok() { return fuzz::EmbeddedTokenizer(); }

// The id of the token whose bytes are exactly `bytes`.
int32_t IdOf(std::string_view bytes) {
  for (int32_t id = 0; id < static_cast<int32_t>(Tok().vocab_size()); id++) {
    if (Tok().TokenBytes(id) == bytes) return id;
  }
  ADD_FAILURE() << "no token for these bytes";
  return 0;
}

constexpr int32_t kEos = 50256;

TEST(TokenEmitter, EachTokenCarriesItsTextAndTheLastEndsByLength) {
  const std::vector<int32_t> ids = {IdOf("He"), IdOf("llo"), IdOf(" world")};
  TokenEmitter e(&Tok(), {}, 3, kEos);
  const char* want[] = {"He", "llo", " world"};
  for (int i = 0; i < 3; i++) {
    TokenEmitter::Emit out = e.Push(ids[i]);
    EXPECT_EQ(out.index, i);
    EXPECT_EQ(out.text, want[i]);
    EXPECT_EQ(out.done, i == 2);
  }
  EXPECT_EQ(e.produced(), 3);
}

TEST(TokenEmitter, APartialCharacterIsHeldUntilItCompletes) {
  // "é" is C3 A9: one byte per token here.
  TokenEmitter e(&Tok(), {}, 5, kEos);
  TokenEmitter::Emit a = e.Push(IdOf("\xC3"));
  EXPECT_EQ(a.text, "");
  EXPECT_FALSE(a.done);
  TokenEmitter::Emit b = e.Push(IdOf("\xA9"));
  EXPECT_EQ(b.text, "\xC3\xA9");
  EXPECT_EQ(b.index, 1);
}

TEST(TokenEmitter, TheLastTokenCarriesWhatIsHeldBack) {
  // Ends by length in the middle of a character and of a stop-string prefix.
  TokenEmitter e(&Tok(), {"lo w"}, 2, kEos);
  EXPECT_EQ(e.Push(IdOf("llo")).text, "l");  // "lo" may start the stop string
  TokenEmitter::Emit last = e.Push(IdOf("\xC3"));
  EXPECT_TRUE(last.done);
  EXPECT_EQ(last.reason, stream::FinishReason::kLength);
  ASSERT_GE(last.text.size(), 2u);
  EXPECT_EQ(last.text.substr(0, 2), "lo");
  EXPECT_GT(last.text.size(), 2u) << "the partial character was dropped";
}

TEST(TokenEmitter, AStopStringAcrossTokensEndsWithoutItsText) {
  TokenEmitter e(&Tok(), {"lo w"}, 10, kEos);
  EXPECT_EQ(e.Push(IdOf("He")).text, "He");
  EXPECT_EQ(e.Push(IdOf("llo")).text, "l");
  TokenEmitter::Emit s = e.Push(IdOf(" wor"));
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.reason, stream::FinishReason::kStop);
  EXPECT_EQ(s.text, "");
  EXPECT_EQ(s.index, 2);
}

TEST(TokenEmitter, EndOfTextEndsWithTheHeldBackTextOnly) {
  TokenEmitter e(&Tok(), {"lo w"}, 10, kEos);
  EXPECT_EQ(e.Push(IdOf("llo")).text, "l");
  TokenEmitter::Emit end = e.Push(kEos);
  EXPECT_TRUE(end.done);
  EXPECT_EQ(end.reason, stream::FinishReason::kEos);
  EXPECT_EQ(end.text, "lo");
  EXPECT_EQ(e.produced(), 2);
}

TEST(TokenEmitter, WithoutAnEndOfTextIdThatTokenIsOrdinary) {
  // The mock (eos -1): <|endoftext|>'s id is just another token.
  TokenEmitter e(&Tok(), {}, 10, -1);
  TokenEmitter::Emit t = e.Push(kEos);
  EXPECT_FALSE(t.done);
  EXPECT_EQ(t.text, std::string(Tok().TokenBytes(kEos)));
}

}  // namespace
}  // namespace tw::backend
