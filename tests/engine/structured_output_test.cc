// Structured output in the engine (the row's grammar mask, docs/
// structured-output.md), on the runner TW_TEST_RUNNER names: the output
// follows the grammar; a grammar that allows everything changes nothing; a
// constrained stream's tokens do not depend on the batch; end-of-text and
// the stop tokens only where the grammar may end; log-probabilities of the
// masked distribution.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "engine/engine_test_util.h"
#include "grammar/matcher.h"
#include "json/json.h"
#include "support/grammars.h"
#include "support/recognizer.h"

namespace tw::testing {
namespace {

using engine::EngineOptions;

std::shared_ptr<grammar::TokenGrammar> Compiled(const grammar::Grammar& g) {
  const TinyModel& m = TinyModel::Get();
  std::shared_ptr<grammar::TokenGrammar> tg;
  Status st = grammar::TokenGrammar::Compile(
      g, grammar::testing::VocabularyOf(m.tokenizer, m.model->config().vocab_size), {}, &tg);
  EXPECT_TRUE(st.ok()) << st.message();
  return tg;
}

backend::GenerationRequest Request(int i, bool sampled, int max_new_tokens) {
  std::mt19937 g(500 + i);
  backend::GenerationRequest r;
  const int prompt = 1 + static_cast<int>(g() % 12);
  for (int k = 0; k < prompt; k++) r.prompt_tokens.push_back(static_cast<int32_t>(g() % 50000));
  r.max_new_tokens = max_new_tokens;
  if (sampled) {
    r.temperature = 1.0f;
    r.top_k = i % 2 ? 50 : 0;
    r.seed = 9 + static_cast<uint64_t>(i);
    r.has_seed = true;
  }
  return r;
}

std::vector<Outcome> RunAll(const std::vector<backend::GenerationRequest>& reqs, int max_batch) {
  EngineOptions o;
  o.max_batch = max_batch;
  o.threads = 2;
  auto e = MakeEngine(o);
  std::vector<std::shared_ptr<stream::Stream>> streams;
  for (size_t i = 0; i < reqs.size(); i++) {
    streams.push_back(NewStream("g" + std::to_string(i)));
    EXPECT_TRUE(e->Submit(streams[i], reqs[i], nullptr));
  }
  std::vector<Outcome> out;
  for (auto& s : streams) out.push_back(WaitAndRead(*s));
  ExpectClean(*e);
  e->Shutdown();
  return out;
}

TEST(StructuredOutput, AChoiceGrammarGivesOneOfTheChoicesAndEndsThere) {
  const std::vector<std::string> choices = {"yes", "no", "maybe so", "It depends on the weather"};
  auto tg = Compiled(grammar::testing::ChoiceGrammar(choices));
  std::vector<backend::GenerationRequest> reqs;
  for (int i = 0; i < 12; i++) {
    reqs.push_back(Request(i, i % 3 != 0, 40));
    reqs.back().grammar = tg;
  }
  std::set<std::string> seen;
  for (const Outcome& o : RunAll(reqs, 4)) {
    EXPECT_EQ(o.finish_reason, "stop");
    EXPECT_NE(std::find(choices.begin(), choices.end(), o.text), choices.end()) << o.text;
    seen.insert(o.text);
  }
  EXPECT_GE(seen.size(), 2u);  // the random model's draws differ
}

// A grammar that allows every token leaves every draw as it was: greedy,
// seeded, and with every sampling control on.
TEST(StructuredOutput, AGrammarAllowingEveryTokenChangesNothing) {
  auto tg = Compiled(grammar::testing::AnyBytesGrammar());
  std::vector<backend::GenerationRequest> plain, masked;
  for (int i = 0; i < 6; i++) {
    plain.push_back(Request(i, i % 2 == 1, 12));
    if (i >= 4) {
      plain.back().repetition_penalty = 1.3f;
      plain.back().logit_bias = {{11, 3.0f}};
      plain.back().top_p = 0.9f;
      plain.back().min_p = 0.01f;
      plain.back().logprobs = 3;
    }
    masked.push_back(plain.back());
    masked.back().grammar = tg;
  }
  const std::vector<Outcome> a = RunAll(plain, 8), b = RunAll(masked, 8);
  for (size_t i = 0; i < a.size(); i++) {
    EXPECT_EQ(a[i].tokens, b[i].tokens) << i;
    EXPECT_EQ(a[i].text, b[i].text) << i;
    EXPECT_EQ(b[i].finish_reason, "length");
  }
}

// JSON out of a random model: every output that ends is a JSON document;
// one cut by max_new_tokens is a prefix of one. Constrained rows among
// unconstrained ones draw what they draw alone.
TEST(StructuredOutput, JsonOutputParsesAndDoesNotDependOnTheBatch) {
  auto tg = Compiled(grammar::testing::JsonGrammar(1));
  std::vector<backend::GenerationRequest> reqs;
  for (int i = 0; i < 16; i++) {
    reqs.push_back(Request(i, i % 4 != 0, 48));
    if (i % 4 != 3) reqs.back().grammar = tg;  // one row in four unconstrained
  }
  std::vector<Outcome> solo;
  for (const auto& r : reqs) solo.push_back(RunAll({r}, 1)[0]);
  const std::vector<Outcome> batch = RunAll(reqs, 16);
  const grammar::Grammar json = grammar::testing::JsonGrammar(1);
  int complete = 0;
  for (size_t i = 0; i < reqs.size(); i++) {
    EXPECT_EQ(batch[i].tokens, solo[i].tokens) << i;
    if (!reqs[i].grammar) continue;
    if (batch[i].finish_reason == "length") {
      // Cut short: still a prefix of some JSON document (the Earley reference).
      EXPECT_TRUE(grammar::testing::Viable(json, batch[i].text)) << i << ": " << batch[i].text;
      continue;
    }
    // "eos" drawn where the document may end, or "stop": the document can
    // take nothing more (its trailing whitespace is used up).
    EXPECT_TRUE(batch[i].finish_reason == "eos" || batch[i].finish_reason == "stop") << batch[i].finish_reason;
    json::Value v;
    EXPECT_TRUE(json::Parse(batch[i].text, &v).ok()) << i << ": " << batch[i].text;
    complete++;
  }
  EXPECT_GE(complete, 1);  // (the random model's strings are long)
}

// ignore_eos: the grammar's end is still the end (the choice grammar can
// take nothing more); stop_token_ids are drawn only where it may end.
TEST(StructuredOutput, EndOfTextAndStopTokensOnlyWhereTheGrammarMayEnd) {
  const TinyModel& m = TinyModel::Get();
  const int32_t yes = m.tokenizer.Encode("yes")[0];
  auto tg = Compiled(grammar::testing::ChoiceGrammar({"yes", "yes yes", "yes yes yes"}));
  backend::GenerationRequest r = Request(1, false, 20);
  r.grammar = tg;
  r.ignore_eos = true;
  // +100 on "yes": every draw that may be "yes" is; after "yes yes yes"
  // nothing may follow.
  r.logit_bias = {{yes, 100.0f}};
  Outcome o = RunAll({r}, 1)[0];
  EXPECT_EQ(o.text, "yes yes yes");
  EXPECT_EQ(o.finish_reason, "stop");
  // A stop token ends a complete output, never a partial one: " yes" (its
  // own id) can follow "yes" as text or stop there.
  r.ignore_eos = false;
  const int32_t space_yes = m.tokenizer.Encode(" yes")[0];
  r.logit_bias = {{space_yes, 100.0f}};
  r.stop_token_ids = {space_yes};
  o = RunAll({r}, 1)[0];
  EXPECT_EQ(o.finish_reason, "stop");
  EXPECT_TRUE(o.text == "yes" || o.text == "yes yes") << o.text;
  EXPECT_EQ(o.tokens.back(), space_yes);
}

TEST(StructuredOutput, LogprobsAreThoseOfTheMaskedDistribution) {
  auto tg = Compiled(grammar::testing::ChoiceGrammar({"red", "green", "blue"}));
  backend::GenerationRequest r = Request(3, true, 10);
  r.grammar = tg;
  r.logprobs = 20;
  EngineOptions o;
  auto e = MakeEngine(o);
  auto s = NewStream("lp");
  ASSERT_TRUE(e->Submit(s, r, nullptr));
  ASSERT_TRUE(WaitFor([&] { return s->producer_exited(); }));
  std::vector<stream::EventPtr> evs;
  ASSERT_TRUE(s->ReadFrom(1, 1 << 20, &evs));
  int tokens = 0;
  for (auto& ev : evs) {
    if (ev->type != stream::EventType::kToken) continue;
    ASSERT_TRUE(ev->logprobs != nullptr);
    tokens++;
    double mass = 0;
    for (const auto& t : ev->logprobs->top) {
      if (t.logprob > engine::kMinLogprob) mass += std::exp(t.logprob);
    }
    // The allowed ids carry the whole mass (fewer than 20 of them at any
    // step of these three words), the rest are reported at the floor.
    EXPECT_NEAR(mass, 1.0, 1e-6);
    EXPECT_GT(ev->logprobs->sampled.logprob, engine::kMinLogprob);
  }
  EXPECT_GE(tokens, 1);
  e->Shutdown();
}

}  // namespace
}  // namespace tw::testing
