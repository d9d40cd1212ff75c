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

GenerationRequest Rules(int max_new_tokens) {
  GenerationRequest r;
  r.max_new_tokens = max_new_tokens;
  return r;
}

TEST(TokenEmitter, AStopTokenIdEndsWithStopAndWithoutItsText) {
  GenerationRequest r = Rules(10);
  r.stop_token_ids = {IdOf(" world")};
  TokenEmitter e(&Tok(), r, kEos);
  EXPECT_EQ(e.Push(IdOf("He")).text, "He");
  TokenEmitter::Emit out = e.Push(IdOf(" world"));
  EXPECT_TRUE(out.done);
  EXPECT_EQ(out.reason, stream::FinishReason::kStop);
  EXPECT_EQ(out.text, "");
}

TEST(TokenEmitter, MinTokensHoldsEveryEndButLengthUntilReached) {
  GenerationRequest r = Rules(10);
  r.min_tokens = 3;
  r.stop_token_ids = {IdOf(" world")};
  r.stop = {"llo"};
  TokenEmitter e(&Tok(), r, kEos);
  TokenEmitter::Emit a = e.Push(kEos);           // token 1 of 3: not an end
  EXPECT_FALSE(a.done);
  EXPECT_EQ(a.text, "");                         // a special token: no text
  EXPECT_FALSE(e.Push(IdOf(" world")).done);     // token 2: not an end either
  TokenEmitter::Emit c = e.Push(IdOf("He"));     // token 3: min_tokens reached
  EXPECT_FALSE(c.done);
  TokenEmitter::Emit d = e.Push(IdOf("llo"));    // a stop string may end now
  EXPECT_TRUE(d.done);
  EXPECT_EQ(d.reason, stream::FinishReason::kStop);
}

TEST(TokenEmitter, AStopStringEndingBeforeMinTokensIsText) {
  GenerationRequest r = Rules(10);
  r.min_tokens = 2;
  r.stop = {"He"};
  TokenEmitter e(&Tok(), r, kEos);
  TokenEmitter::Emit a = e.Push(IdOf("He"));  // ends in token 1 of 2
  EXPECT_FALSE(a.done);
  EXPECT_EQ(a.text, "He");
  EXPECT_TRUE(e.Push(IdOf("He")).done);      // token 2: it ends the generation
}

TEST(TokenEmitter, IgnoreEosGoesOnAndTheEndOfTextAddsNoText) {
  GenerationRequest r = Rules(3);
  r.ignore_eos = true;
  TokenEmitter e(&Tok(), r, kEos);
  EXPECT_EQ(e.Push(IdOf("He")).text, "He");
  TokenEmitter::Emit b = e.Push(kEos);
  EXPECT_FALSE(b.done);
  EXPECT_EQ(b.text, "");
  TokenEmitter::Emit c = e.Push(IdOf("llo"));
  EXPECT_TRUE(c.done);
  EXPECT_EQ(c.reason, stream::FinishReason::kLength);
  EXPECT_EQ(c.text, "llo");
}

}  // namespace
}  // namespace tw::backend
