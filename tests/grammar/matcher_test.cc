// The token matcher (grammar/matcher.h) against the Earley reference
// (tests/grammar/recognizer.h): a token is allowed exactly when the text so
// far followed by its bytes is a prefix of some string of the grammar, and
// end-of-text exactly when the text so far is a whole string of it.
#include "grammar/matcher.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "grammar/json_schema.h"
#include "json/json.h"
#include "support/recognizer.h"
#include "support/grammars.h"
#include "tokenizer/tokenizer.h"

namespace tw::grammar {
namespace {

using testing::Gpt2Vocabulary;
using testing::JsonGrammar;
using testing::SmallVocabulary;

bool Bit(const std::vector<uint64_t>& mask, int32_t id) { return (mask[id >> 6] >> (id & 63)) & 1; }

std::shared_ptr<TokenGrammar> CompileOrDie(const Grammar& g, std::shared_ptr<const Vocabulary> v,
                                           MatcherLimits limits = {}) {
  std::shared_ptr<TokenGrammar> tg;
  Status st = TokenGrammar::Compile(g, std::move(v), limits, &tg);
  EXPECT_TRUE(st.ok()) << st.message();
  return tg;
}

// `walks` random walks of up to `steps` tokens, each drawn by `pick` from
// the mask's ids (end-of-text aside): at every step FillMask (the tables)
// must equal WalkMask (the plain trie walk). Returns the masks compared;
// a difference is a test failure naming the walk and step.
int MasksEqualThePlainWalks(const std::shared_ptr<TokenGrammar>& tg, int walks, int steps,
                            const std::function<int32_t(const std::vector<int32_t>&)>& pick) {
  const Vocabulary& v = tg->vocab();
  std::vector<uint64_t> a(v.mask_words()), b(v.mask_words());
  int masks = 0;
  for (int walk = 0; walk < walks; ++walk) {
    Matcher m(tg);
    for (int step = 0; step < steps; ++step) {
      if (!m.FillMask(a.data()).ok() || !tg->WalkMask(m.state(), b.data()).ok() || a != b) {
        ADD_FAILURE() << "walk " << walk << " step " << step << ": the masks differ or failed";
        return masks;
      }
      ++masks;
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < v.size(); ++id) {
        if (Bit(a, id) && id != v.eos()) allowed.push_back(id);
      }
      if (allowed.empty()) break;
      const int32_t id = pick(allowed);
      if (Status st = m.Accept(id); !st.ok()) {
        ADD_FAILURE() << "walk " << walk << " step " << step << ": " << st.message();
        return masks;
      }
    }
  }
  return masks;
}

TEST(Vocabulary, TheTrieHoldsEveryTokenWithBytesOnce) {
  auto v = Gpt2Vocabulary();
  ASSERT_EQ(v->size(), 50257);
  EXPECT_EQ(v->eos(), 50256);
  EXPECT_EQ(v->mask_words(), 786);
  // Every token is spelled by some trie path; a grammar of any bytes allows
  // them all (FillMask walks every node).
  // them all: the plain walk visits every node, and the tables take the
  // trie whole (no byte leaves the grammar's one state) from the root's
  // children down.
  auto tg = CompileOrDie(testing::AnyBytesGrammar(), v);
  std::vector<uint64_t> walked(v->mask_words()), mask(v->mask_words());
  ASSERT_TRUE(tg->WalkMask(tg->initial_state(), walked.data()).ok());
  for (int32_t id = 0; id < v->size(); ++id) ASSERT_TRUE(Bit(walked, id)) << id;
  EXPECT_EQ(tg->stats().trie_nodes_visited, v->trie_nodes() - 1);
  EXPECT_LT(v->trie_nodes(), 50257 * 8);
  ASSERT_TRUE(tg->FillMask(tg->initial_state(), mask.data()).ok());
  EXPECT_EQ(mask, walked);
  const MatcherStats s = tg->stats();
  EXPECT_LT(s.trie_nodes_visited - (v->trie_nodes() - 1), v->trie_nodes() / 50);
  EXPECT_GT(s.subtrees_taken_whole, 0);
}

// Random walks through the grammar: at every step each of the small
// vocabulary's 1,110 tokens is checked against the reference.
TEST(Matcher, EveryTokenOfASmallVocabularyIsAllowedExactlyWhenTheReferenceSaysSo) {
  const Grammar g = JsonGrammar(2);
  auto v = SmallVocabulary("{}[]\":,a1 ");
  auto tg = CompileOrDie(g, v);
  std::mt19937 rng(7);
  std::vector<uint64_t> mask(v->mask_words());
  int checked = 0;
  for (int walk = 0; walk < 40 && checked < 40000; ++walk) {
    Matcher m(tg);
    std::string text;
    for (int step = 0; step < 12; ++step) {
      ASSERT_TRUE(m.FillMask(mask.data()).ok());
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < v->size(); ++id) {
        const bool want = id == v->eos() ? testing::Accepts(g, text) : testing::Viable(g, text + std::string(v->bytes(id)));
        ASSERT_EQ(Bit(mask, id), want) << "after '" << text << "', token '" << v->bytes(id) << "'";
        if (want && id != v->eos()) allowed.push_back(id);
        ++checked;
      }
      if (allowed.empty()) break;
      const int32_t pick = allowed[rng() % allowed.size()];
      ASSERT_TRUE(m.Accept(pick).ok());
      text += v->bytes(pick);
      EXPECT_EQ(m.IsComplete(), testing::Accepts(g, text)) << text;
    }
  }
  EXPECT_GT(checked, 40000);
}

// GPT-2's tokens along a real document: at each step the document's own
// next token is allowed, and 400 random tokens (80 under AddressSanitizer,
// where the Earley reference is 10x slower) agree with the reference.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kProbes = 80;
#else
constexpr int kProbes = 400;
#endif
TEST(Matcher, Gpt2MasksAgreeWithTheReferenceAlongADocument) {
  const Grammar g = JsonGrammar(4);
  auto v = Gpt2Vocabulary();
  auto tg = CompileOrDie(g, v);
  tokenizer::Tokenizer tok;
  ASSERT_TRUE(tokenizer::Tokenizer::LoadEmbedded(&tok).ok());
  const std::string doc =
      "{\"name\": \"Ada Lovelace\", \"born\": 1815, \"tags\": [\"math\", \"poetry\\n\", \"\\u00e9t\xC3\xA9\"],\n"
      "  \"ratio\": -0.5e+3, \"alive\": false, \"notes\": null, \"nested\": {\"a\": [[], {}]}}";
  const std::vector<int32_t> ids = tok.Encode(doc);
  std::mt19937 rng(11);
  std::vector<uint64_t> mask(v->mask_words());
  Matcher m(tg);
  std::string text;
  for (int32_t id : ids) {
    ASSERT_TRUE(m.FillMask(mask.data()).ok());
    ASSERT_TRUE(Bit(mask, id)) << "after '" << text << "'";
    EXPECT_EQ(Bit(mask, v->eos()), testing::Accepts(g, text));
    for (int k = 0; k < kProbes; ++k) {
      const int32_t probe = static_cast<int32_t>(rng() % (v->size() - 1));
      ASSERT_EQ(Bit(mask, probe), testing::Viable(g, text + std::string(v->bytes(probe))))
          << "after '" << text << "', token " << probe << " '" << v->bytes(probe) << "'";
    }
    ASSERT_TRUE(m.Accept(id).ok());
    text += v->bytes(id);
  }
  EXPECT_EQ(text, doc);
  EXPECT_TRUE(m.IsComplete());
  ASSERT_TRUE(m.FillMask(mask.data()).ok());
  EXPECT_TRUE(Bit(mask, v->eos()));
  EXPECT_TRUE(m.Accept(v->eos()).ok());
}

// The position tables (accepted + uncertain tokens per grammar position,
// the uncertain ones checked against the real stack) give exactly the plain
// trie walk's masks, state after state, along random walks of GPT-2 tokens
// drawn from the masks: JSON, and a grammar whose rules end mid-token a lot.
TEST(Matcher, PositionTablesGiveThePlainWalksMasks) {
  auto v = Gpt2Vocabulary();
  Grammar words;
  {
    // root ::= (word " ")* word "." ; word ::= [a-z]{1,6} | "the"
    words.root = words.AddRule("root");
    const int word = words.AddRule("word");
    words.AddAlt(word, {Repeat(&words, {Element::Bytes(ByteSet::Range('a', 'z'))}, 1, 6, "letters")});
    Sequence the;
    AppendLiteral("the", &the);
    words.AddAlt(word, the);
    const Element more = Repeat(&words, {Element::Ref(word), Element::Byte(' ')}, 0, kUnbounded, "more");
    words.AddAlt(words.root, {more, Element::Ref(word), Element::Byte('.')});
  }
  for (const Grammar& g : {JsonGrammar(3), words}) {
    auto tg = CompileOrDie(g, v);
    std::mt19937 rng(3);
    const int masks = MasksEqualThePlainWalks(tg, 6, 40, [&](const std::vector<int32_t>& allowed) {
      return allowed[rng() % allowed.size()];
    });
    EXPECT_GT(masks, 30);
    EXPECT_GT(tg->stats().positions, 5);
  }
}

// Counted repetitions share tables between counts no token can tell apart
// (matcher.h, Chain): long strings, digits, items, whitespace, a nullable
// unit, a repetition inside another's unit, a minimum past the horizon.
// Along random walks the masks equal the plain trie walk's, and some
// tables were shared.
TEST(Matcher, CountsPastTheHorizonShareATableAndGiveThePlainWalksMasks) {
  auto v = Gpt2Vocabulary();
  std::vector<Grammar> grammars;
  for (const char* text : {
           R"({"type": "object", "properties": {"a": {"type": "string", "maxLength": 60},
               "b": {"type": "string", "minLength": 25, "maxLength": 45}, "c": {"type": "integer"},
               "d": {"type": "number"}, "e": {"type": "array", "items": {"type": "integer"}, "minItems": 20,
               "maxItems": 30}}, "required": ["a", "b", "c", "d", "e"]})",
           R"({"type": "array", "items": {"type": "string", "maxLength": 30}, "maxItems": 40})",
       }) {
    json::Value schema;
    ASSERT_TRUE(json::Parse(text, &schema).ok());
    Grammar g;
    ASSERT_TRUE(JsonSchemaGrammar(schema, JsonSchemaOptions(), GrammarLimits(), &g).ok());
    grammars.push_back(std::move(g));
  }
  {
    // root ::= ( [a-z ]? ){0,50} "." ( "x" [0-9]{2,30} ){0,25} ";"
    Grammar g;
    g.root = g.AddRule("root");
    const Element opt = Group(&g, {{Element::Bytes(ByteSet::Range('a', 'z'))}, {Element::Byte(' ')}, {}}, "opt");
    const Element letters = Repeat(&g, {opt}, 0, 50, "letters");
    const Element digits = Repeat(&g, {Element::Bytes(ByteSet::Range('0', '9'))}, 2, 30, "digits");
    const Element xs = Repeat(&g, {Element::Byte('x'), digits}, 0, 25, "xs");
    g.AddAlt(g.root, {letters, Element::Byte('.'), xs, Element::Byte(';')});
    grammars.push_back(std::move(g));
  }
  int64_t shared = 0;
  for (size_t gi = 0; gi < grammars.size(); ++gi) {
    ASSERT_FALSE(grammars[gi].counted.empty()) << gi;
    auto tg = CompileOrDie(grammars[gi], v);
    std::mt19937 rng(11 + static_cast<unsigned>(gi));
    // Short tokens half the time, so that walks reach the low counts.
    const int masks = MasksEqualThePlainWalks(tg, 8, 60, [&](const std::vector<int32_t>& allowed) {
      int32_t pick = allowed[rng() % allowed.size()];
      for (int tries = 0; tries < 8 && (rng() & 1) && v->bytes(pick).size() > 2; ++tries) {
        pick = allowed[rng() % allowed.size()];
      }
      return pick;
    });
    EXPECT_GT(masks, 40) << gi;
    shared += tg->stats().tables_shared;
  }
  EXPECT_GT(shared, 0);
}

TEST(Matcher, ATokenTheGrammarRefusesIsAnErrorNamingIt) {
  auto v = Gpt2Vocabulary();
  auto tg = CompileOrDie(JsonGrammar(0), v);
  Matcher m(tg);
  tokenizer::Tokenizer tok;
  ASSERT_TRUE(tokenizer::Tokenizer::LoadEmbedded(&tok).ok());
  const int32_t hello = tok.Encode("hello")[0];
  Status st = m.Accept(hello);
  EXPECT_EQ(st.message(), "grammar: token " + std::to_string(hello) + " (\"hello\") is not allowed here");
  EXPECT_EQ(m.Accept(v->eos()).message(), "grammar: end-of-text before the output is complete");
  EXPECT_TRUE(m.Accept(tok.Encode("{}")[0]).ok() || m.Accept(tok.Encode("{")[0]).ok());
}

TEST(Matcher, RightRecursionKeepsTheStateSpaceConstant) {
  auto v = SmallVocabulary("ab");
  Grammar g;
  g.root = g.AddRule("root");
  Sequence ab;
  AppendLiteral("ab", &ab);
  g.AddAlt(g.root, {Repeat(&g, ab, 0, kUnbounded, "abs"), Element::Byte('b')});
  auto tg = CompileOrDie(g, v);
  Matcher m(tg);
  int32_t ab_id = -1, b_id = -1;
  for (int32_t id = 0; id < v->size(); ++id) {
    if (v->bytes(id) == "ab") ab_id = id;
    if (v->bytes(id) == "b") b_id = id;
  }
  // (ab) x 5,000, then b.
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE(m.Accept(ab_id).ok()) << i;
  EXPECT_FALSE(m.IsComplete());
  ASSERT_TRUE(m.Accept(b_id).ok());
  EXPECT_TRUE(m.IsComplete());
  EXPECT_LT(tg->stats().states, 8);
  EXPECT_LT(tg->stats().stack_nodes, 16);
}

TEST(Matcher, MasksOfRepeatedStatesComeFromTheCache) {
  auto v = Gpt2Vocabulary();
  auto tg = CompileOrDie(JsonGrammar(2), v);
  tokenizer::Tokenizer tok;
  ASSERT_TRUE(tokenizer::Tokenizer::LoadEmbedded(&tok).ok());
  std::vector<uint64_t> mask(v->mask_words());
  for (int round = 0; round < 2; ++round) {
    Matcher m(tg);
    for (int32_t id : tok.Encode("[\"a a a a a a a a a a a a\"]")) {
      ASSERT_TRUE(m.FillMask(mask.data()).ok());
      ASSERT_TRUE(m.Accept(id).ok());
    }
  }
  const MatcherStats s = tg->stats();
  EXPECT_GT(s.mask_cache_hits, s.masks_computed);
}

TEST(Matcher, ItsBoundsAreErrorsNotGrowth) {
  auto v = Gpt2Vocabulary();
  MatcherLimits few;
  few.max_states = 3;
  auto tg = CompileOrDie(JsonGrammar(2), v, few);
  std::vector<uint64_t> mask(v->mask_words());
  Status st = tg->FillMask(tg->initial_state(), mask.data());
  EXPECT_EQ(st.message(), "grammar: more than 3 matcher states (--grammar-max-states)");

  // 1,100 identical alternatives: 1,100 parses at once.
  Grammar g;
  g.root = g.AddRule("root");
  for (int i = 0; i < 1100; ++i) {
    const int r = g.AddRule("x");
    g.AddAlt(r, {Element::Byte('a')});
    g.AddAlt(g.root, {Element::Ref(r)});
  }
  std::shared_ptr<TokenGrammar> amb;
  st = TokenGrammar::Compile(g, v, MatcherLimits{}, &amb);
  EXPECT_EQ(st.message(), "grammar: 1100 parses at once (at most 1024): the grammar is too ambiguous");
}

}  // namespace
}  // namespace tw::grammar
