// The grammar compiler's cache and bounds (grammar/compiler.h; the server's
// --grammar-* flags fill CompilerOptions): a repeated source is one compiled
// grammar, the least recently used is evicted, a refusal is not cached, and
// each bound passed is an error naming its flag.
#include "grammar/compiler.h"

#include <gtest/gtest.h>

#include "support/grammars.h"

namespace tw::grammar {
namespace {

GrammarSpec Regex(const std::string& pattern) {
  GrammarSpec s;
  s.kind = GrammarKind::kRegex;
  s.source = pattern;
  return s;
}

TEST(Compiler, ARepeatedSourceIsOneCompiledGrammarAndTheLeastRecentlyUsedGoes) {
  CompilerOptions o;
  o.cache_entries = 2;
  Compiler c(testing::Gpt2Vocabulary(), o);
  std::shared_ptr<TokenGrammar> a1, a2, b, cc, a3;
  ASSERT_TRUE(c.Compile(Regex("a+"), &a1).ok());
  ASSERT_TRUE(c.Compile(Regex("a+"), &a2).ok());
  EXPECT_EQ(a1, a2);
  ASSERT_TRUE(c.Compile(Regex("b+"), &b).ok());
  ASSERT_TRUE(c.Compile(Regex("c+"), &cc).ok());  // evicts a+ (b+ is newer)
  EXPECT_EQ(c.stats().entries, 2);
  ASSERT_TRUE(c.Compile(Regex("a+"), &a3).ok());
  EXPECT_NE(a1, a3) << "a+ was evicted and compiled again";
  EXPECT_EQ(c.stats().hits, 1);
  EXPECT_EQ(c.stats().misses, 4);
  // A refusal is not cached: asked twice, compiled (and refused) twice.
  std::shared_ptr<TokenGrammar> bad;
  EXPECT_FALSE(c.Compile(Regex("a("), &bad).ok());
  EXPECT_FALSE(c.Compile(Regex("a("), &bad).ok());
  EXPECT_EQ(c.stats().refused, 2);
  // The same text as another kind is another grammar.
  GrammarSpec gbnf;
  gbnf.kind = GrammarKind::kGbnf;
  gbnf.source = "a+";
  EXPECT_FALSE(c.Compile(gbnf, &bad).ok());
}

TEST(Compiler, EachBoundPassedNamesItsFlag) {
  std::shared_ptr<TokenGrammar> g;
  {
    CompilerOptions o;
    o.max_source_bytes = 8;
    Compiler c(testing::Gpt2Vocabulary(), o);
    EXPECT_EQ(c.Compile(Regex("abcdefghij"), &g).message(), "regex: 10 bytes (at most 8: --grammar-max-bytes)");
    GrammarSpec choice;
    choice.kind = GrammarKind::kChoice;
    choice.choices = {"abcde", "fghij"};
    EXPECT_EQ(c.Compile(choice, &g).message(), "choice: 10 bytes (at most 8: --grammar-max-bytes)");
  }
  {
    CompilerOptions o;
    o.grammar.max_elements = 1000;
    Compiler c(testing::Gpt2Vocabulary(), o);
    const Status st = c.Compile(Regex("a{2000}"), &g);
    EXPECT_NE(st.message().find("1000 elements"), std::string::npos) << st.message();
  }
  {
    // 100,000 elements x 2 and their first mask take well over a millisecond.
    CompilerOptions o;
    o.grammar.max_elements = 1 << 20;
    o.max_compile_ms = 1;
    Compiler c(testing::Gpt2Vocabulary(), o);
    const Status st = c.Compile(Regex("[a-z]{100000}[0-9]{100000}"), &g);
    EXPECT_NE(st.message().find("(at most 1: --grammar-max-compile-ms)"), std::string::npos) << st.message();
  }
}

TEST(Compiler, MasksAreCachedUpToTheirBound) {
  for (int cached : {0, 256}) {
    CompilerOptions o;
    o.matcher.max_cached_masks = cached;
    Compiler c(testing::Gpt2Vocabulary(), o);
    std::shared_ptr<TokenGrammar> g;
    ASSERT_TRUE(c.Compile(Regex("[ab]+"), &g).ok());
    std::vector<uint64_t> mask(static_cast<size_t>(g->vocab().mask_words()));
    for (int i = 0; i < 3; i++) ASSERT_TRUE(g->FillMask(g->initial_state(), mask.data()).ok());
    EXPECT_EQ(g->stats().mask_cache_hits, cached == 0 ? 0 : 3) << cached;  // (the compile made the first)
  }
}

}  // namespace
}  // namespace tw::grammar
