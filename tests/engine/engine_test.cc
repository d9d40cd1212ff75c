// Engine tests on the tiny golden GPT-2: isolation (concurrent == solo, for
// greedy and seeded sampling, and greedy == the float64 reference), joiners,
// finishing reasons, cancels, pause/resume, admission by blocks and by batch
// slots, refusals, queue timeout, shutdown, and many threads at once. Every
// test ends by checking the KV accounting: all blocks free, one release per
// admitted sequence, no double release.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include "engine/engine_test_util.h"

namespace tw::testing {
namespace {

using engine::Engine;
using engine::EngineOptions;
using engine::EngineStats;

// Every sampling control a client can send (docs/openai.md), on: the row's
// logit edits and min_p must leave a stream's tokens what they are alone.
void AddControls(backend::GenerationRequest* r, int i) {
  r->min_p = (i % 2) ? 0.05f : 0.0f;
  r->repetition_penalty = 1.0f + 0.1f * static_cast<float>(i % 4);
  r->presence_penalty = 0.5f * static_cast<float>(i % 3 - 1);
  r->frequency_penalty = 0.25f * static_cast<float>(i % 5) - 0.5f;
  // Ids i*37 and i*101+7 differ mod 50000 (their difference 64i+7 is odd).
  const int32_t boosted = (i * 37) % 50000, banned = (i * 101 + 7) % 50000;
  r->logit_bias = {{boosted, 2.0f}, {banned, -100.0f}};
  r->min_tokens = 3;
  r->stop_token_ids = {banned};  // never drawn (biased away): the rules run, the length stays
}

backend::GenerationRequest MakeRequest(int i, bool sampled) {
  std::mt19937 g(1000 + i);
  backend::GenerationRequest r;
  int prompt = 1 + static_cast<int>(g() % 20);
  for (int k = 0; k < prompt; k++) r.prompt_tokens.push_back(static_cast<int32_t>(g() % 50000));
  r.max_new_tokens = 8 + static_cast<int>(g() % 33);
  if (sampled) {
    r.temperature = 0.9f;
    r.top_k = (i % 3 == 0) ? 0 : 40;
    // (top_p without top_k sorts most of a near-flat vocabulary: slow, and
    // the sampler's own tests cover it.)
    r.top_p = (i % 2 == 0 || r.top_k == 0) ? 1.0f : 0.9f;
    r.seed = 77 + static_cast<uint64_t>(i);
    r.has_seed = true;
  }
  return r;
}

// The request run alone on a fresh engine.
Outcome Solo(const backend::GenerationRequest& r, const EngineOptions& o = EngineOptions()) {
  auto e = MakeEngine(o);
  auto s = NewStream("solo");
  EXPECT_TRUE(e->Submit(s, r, nullptr));
  Outcome out = WaitAndRead(*s);
  e->Shutdown();
  return out;
}

// The parameter: bit 0 seeded sampling (else greedy), bit 1 every sampling
// control on (AddControls).
class Isolation : public ::testing::TestWithParam<int> {};

TEST_P(Isolation, ConcurrentEqualsSolo) {
  const bool sampled = GetParam() & 1, controls = GetParam() & 2;
  constexpr int kMax = 32;
  std::vector<backend::GenerationRequest> reqs;
  std::vector<Outcome> solo;
  {
    // Solo references: one request at a time on one engine.
    auto e = MakeEngine(EngineOptions());
    for (int i = 0; i < kMax; i++) {
      reqs.push_back(MakeRequest(i, sampled));
      if (controls) AddControls(&reqs.back(), i);
      auto s = NewStream("solo" + std::to_string(i));
      ASSERT_TRUE(e->Submit(s, reqs[i], nullptr));
      solo.push_back(WaitAndRead(*s));
      ASSERT_EQ(solo[i].finish_reason, "length");
      ASSERT_EQ(static_cast<int>(solo[i].tokens.size()), reqs[i].max_new_tokens);
    }
    ExpectClean(*e);
  }
  for (int n : {1, 2, 4, 8, 16, 32}) {
    EngineOptions o;
    o.max_batch = 32;
    o.threads = 2;
    auto e = MakeEngine(o);
    std::vector<std::shared_ptr<stream::Stream>> streams;
    for (int i = 0; i < n; i++) {
      streams.push_back(NewStream("c" + std::to_string(i)));
      ASSERT_TRUE(e->Submit(streams[i], reqs[i], nullptr));
      // Staggered arrivals: later requests join a running batch.
      std::this_thread::sleep_for(std::chrono::microseconds(300 * (i % 4)));
    }
    for (int i = 0; i < n; i++) {
      Outcome got = WaitAndRead(*streams[i]);
      EXPECT_EQ(got.tokens, solo[i].tokens) << "n=" << n << " request " << i;
      EXPECT_EQ(got.text, solo[i].text) << "n=" << n << " request " << i;
      EXPECT_EQ(got.finish_reason, "length");
      EXPECT_EQ(got.terminal_events, 1);
    }
    ExpectClean(*e);
  }
}

INSTANTIATE_TEST_SUITE_P(GreedyAndSeeded, Isolation, ::testing::Values(0, 1, 2, 3), [](const auto& info) {
  return std::string(info.param & 1 ? "Seeded" : "Greedy") + (info.param & 2 ? "WithEveryControl" : "");
});

// Greedy tokens equal the float64 reference's (tests/data/golden, written by
// an independent implementation).
TEST(Engine, GreedyMatchesGoldenReference) {
  bool ok = false;
  std::string text = ReadFile(DataPath("golden/tiny-gpt2.golden.json"), &ok);
  ASSERT_TRUE(ok);
  json::Value g;
  json::ParseLimits lim;
  lim.max_bytes = text.size() + 1;
  ASSERT_TRUE(json::Parse(text, &g, lim).ok());
  auto e = MakeEngine(EngineOptions());
  int cases = 0;
  for (const json::Value& c : g.Find("cases")->items()) {
    backend::GenerationRequest r;
    for (const json::Value& t : c.Find("prompt_tokens")->items()) r.prompt_tokens.push_back(static_cast<int32_t>(t.as_int()));
    std::vector<int32_t> want;
    for (const json::Value& t : c.Find("greedy_tokens")->items()) want.push_back(static_cast<int32_t>(t.as_int()));
    r.max_new_tokens = static_cast<int>(want.size());
    auto s = NewStream("g" + std::to_string(cases++));
    ASSERT_TRUE(e->Submit(s, r, nullptr));
    Outcome o = WaitAndRead(*s);
    EXPECT_EQ(o.tokens, want) << "case " << cases - 1;
  }
  EXPECT_GT(cases, 0);
  ExpectClean(*e);
}

TEST(Engine, LateJoinerGetsFirstTokenWhileOthersRun) {
  backend::GenerationRequest longr = MakeRequest(1, false);
  longr.max_new_tokens = 100;
  backend::GenerationRequest joiner = MakeRequest(2, true);
  Outcome long_solo = Solo(longr), joiner_solo = Solo(joiner);

  auto e = MakeEngine(EngineOptions());
  // The long stream is gated: the engine steps only as the test lets it, so
  // "while others run" does not depend on how fast the runner is.
  auto a = NewGatedStream("long");
  ASSERT_TRUE(e->Submit(a, longr, nullptr));
  while (TokenCount(*a) < 10) ASSERT_TRUE(StepGated(*a));
  auto b = NewStream("joiner");
  ASSERT_TRUE(e->Submit(b, joiner, nullptr));
  int steps = 0;
  for (; TokenCount(*b) < 1 && steps < 20; ++steps) ASSERT_TRUE(StepGated(*a));
  EXPECT_GE(TokenCount(*b), 1u) << "no first token for the joiner in 20 steps of the long stream";
  EXPECT_FALSE(a->finished()) << "the joiner's first token waited for the long stream";
  OpenGate(*a);
  EXPECT_EQ(WaitAndRead(*a).tokens, long_solo.tokens);
  EXPECT_EQ(WaitAndRead(*b).tokens, joiner_solo.tokens);
  EXPECT_GE(e->stats().max_batch_seen, 2);
  ExpectClean(*e);
}

TEST(Engine, SingleTokenRequests) {
  auto e = MakeEngine(EngineOptions());
  std::vector<std::shared_ptr<stream::Stream>> ss;
  std::vector<backend::GenerationRequest> rs;
  for (int i = 0; i < 5; i++) {
    rs.push_back(MakeRequest(i, i % 2 == 1));
    rs.back().max_new_tokens = 1;
    ss.push_back(NewStream("one" + std::to_string(i)));
    ASSERT_TRUE(e->Submit(ss.back(), rs.back(), nullptr));
  }
  for (int i = 0; i < 5; i++) {
    Outcome o = WaitAndRead(*ss[i]);
    ASSERT_EQ(o.tokens.size(), 1u);
    EXPECT_EQ(o.finish_reason, "length");
    EXPECT_EQ(o.completion_tokens, 1);
    backend::GenerationRequest longer = rs[i];
    longer.max_new_tokens = 3;
    EXPECT_EQ(o.tokens[0], Solo(longer).tokens[0]);
  }
  ExpectClean(*e);
}

TEST(Engine, EmptyPromptStartsFromEndOfText) {
  backend::GenerationRequest r;
  r.max_new_tokens = 5;
  backend::GenerationRequest bos = r;
  bos.prompt_tokens = {50256};
  Outcome a = Solo(r), b = Solo(bos);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.tokens.size(), 5u);
}

TEST(Engine, EosEndsTheStreamAndIsReported) {
  backend::GenerationRequest r = MakeRequest(3, false);
  r.max_new_tokens = 30;
  Outcome solo = Solo(r);
  // Declare as eos a token the greedy run produces first at index k > 0.
  size_t k = 0;
  for (size_t i = 1; i < solo.tokens.size() && k == 0; i++) {
    bool seen = false;
    for (size_t j = 0; j < i; j++) seen |= solo.tokens[j] == solo.tokens[i];
    if (!seen) k = i;
  }
  ASSERT_GT(k, 0u) << "the greedy run repeats one token; pick another request";
  EngineOptions o;
  o.eos_token_id = solo.tokens[k];
  auto e = MakeEngine(o);
  auto s = NewStream("eos");
  ASSERT_TRUE(e->Submit(s, r, nullptr));
  Outcome got = WaitAndRead(*s);
  EXPECT_EQ(got.finish_reason, "eos");
  std::vector<int32_t> want(solo.tokens.begin(), solo.tokens.begin() + k + 1);
  EXPECT_EQ(got.tokens, want);
  EXPECT_EQ(got.completion_tokens, static_cast<int64_t>(k + 1));
  ExpectClean(*e);
}

TEST(Engine, StopStringEndsTheStreamWithoutEmittingIt) {
  backend::GenerationRequest r = MakeRequest(4, false);
  r.max_new_tokens = 30;
  Outcome solo = Solo(r);
  ASSERT_GT(solo.text.size(), 12u);
  // A stop string from the middle of the text (ASCII-safe: cut on bytes < 0x80).
  size_t at = solo.text.size() / 2;
  while (at < solo.text.size() && static_cast<unsigned char>(solo.text[at]) >= 0x80) at++;
  ASSERT_LT(at + 2, solo.text.size());
  std::string stop = solo.text.substr(at, 2);
  size_t first = solo.text.find(stop);
  r.stop = {stop};
  auto e = MakeEngine(EngineOptions());
  auto s = NewStream("stop");
  ASSERT_TRUE(e->Submit(s, r, nullptr));
  Outcome got = WaitAndRead(*s);
  EXPECT_EQ(got.finish_reason, "stop");
  EXPECT_EQ(got.text, solo.text.substr(0, first));
  ASSERT_LE(got.tokens.size(), solo.tokens.size());
  EXPECT_TRUE(std::equal(got.tokens.begin(), got.tokens.end(), solo.tokens.begin()));
  EXPECT_LT(got.tokens.size(), solo.tokens.size());
  ExpectClean(*e);
}

// A greedy run of 30 tokens alone, and the index k > 0 of its first token
// that did not occur before it (0 if none), so that declaring that token a
// stop or end-of-text id ends the run there.
struct GreedyRun {
  backend::GenerationRequest request;
  Outcome solo;
  size_t k = 0;
  int32_t token() const { return solo.tokens[k]; }
};

GreedyRun GreedyRunWithANewToken() {
  GreedyRun g;
  g.request = MakeRequest(3, false);
  g.request.max_new_tokens = 30;
  g.solo = Solo(g.request);
  const auto& t = g.solo.tokens;
  for (size_t i = 1; i < t.size() && g.k == 0; i++) {
    if (std::find(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(i), t[i]) == t.begin() + static_cast<std::ptrdiff_t>(i)) g.k = i;
  }
  EXPECT_GT(g.k, 0u) << "the greedy run repeats one token; pick another request";
  return g;
}

TEST(Engine, LogitBiasOfPlus100ForcesItsIdGreedyAndSampled) {
  for (bool sampled : {false, true}) {
    backend::GenerationRequest r = MakeRequest(4, sampled);
    r.top_k = 0;
    r.top_p = 1.0f;
    r.max_new_tokens = 6;
    r.logit_bias = {{4242, 100.0f}};
    Outcome got = Solo(r);
    EXPECT_EQ(got.tokens, std::vector<int32_t>(6, 4242)) << (sampled ? "sampled" : "greedy");
    // -100 on what greedy draws first: it is never drawn.
    r = MakeRequest(4, false);
    r.max_new_tokens = 6;
    const int32_t first = Solo(r).tokens[0];
    r.logit_bias = {{first, -100.0f}};
    got = Solo(r);
    EXPECT_EQ(std::count(got.tokens.begin(), got.tokens.end(), first), 0);
  }
}

TEST(Engine, StopTokenIdsEndTheStreamWithStopAndWithoutTheirText) {
  GreedyRun g = GreedyRunWithANewToken();
  ASSERT_GT(g.k, 0u);
  backend::GenerationRequest r = g.request;
  const Outcome& solo = g.solo;
  const size_t k = g.k;
  r.stop_token_ids = {g.token()};
  Outcome got = Solo(r);
  EXPECT_EQ(got.finish_reason, "stop");
  EXPECT_EQ(got.tokens, std::vector<int32_t>(solo.tokens.begin(), solo.tokens.begin() + static_cast<std::ptrdiff_t>(k) + 1));
  // The text of the tokens before it, all of it (what it held back included).
  r.max_new_tokens = static_cast<int>(k);
  r.stop_token_ids.clear();
  EXPECT_EQ(got.text, Solo(r).text);
}

TEST(Engine, MinTokensHoldsBackEndOfTextAndStopIdsUntilReached) {
  GreedyRun g = GreedyRunWithANewToken();
  ASSERT_GT(g.k, 0u);
  const size_t k = g.k;
  const int32_t id = g.token();
  for (bool as_eos : {true, false}) {
    EngineOptions o;
    backend::GenerationRequest m = g.request;
    if (as_eos) o.eos_token_id = id;
    else m.stop_token_ids = {id};
    m.min_tokens = static_cast<int>(k) + 4;
    Outcome got = Solo(m, o);
    // The first min_tokens tokens never hold the id (it was the greedy
    // choice at k: masked, another id is drawn there).
    ASSERT_GE(got.tokens.size(), static_cast<size_t>(m.min_tokens)) << got.finish_reason;
    EXPECT_EQ(std::count(got.tokens.begin(), got.tokens.begin() + m.min_tokens, id), 0);
    EXPECT_NE(got.tokens[k], id);
    EXPECT_TRUE(std::equal(got.tokens.begin(), got.tokens.begin() + static_cast<std::ptrdiff_t>(k), g.solo.tokens.begin()));
    // Once reached, the id ends the stream again if drawn.
    const auto at = std::find(got.tokens.begin(), got.tokens.end(), id);
    if (at != got.tokens.end()) {
      EXPECT_EQ(at + 1, got.tokens.end());
      EXPECT_EQ(got.finish_reason, as_eos ? "eos" : "stop");
    } else {
      EXPECT_EQ(got.finish_reason, "length");
    }
  }
}

TEST(Engine, IgnoreEosGoesOnPastEndOfTextWithoutItsText) {
  GreedyRun g = GreedyRunWithANewToken();
  ASSERT_GT(g.k, 0u);
  EngineOptions o;
  o.eos_token_id = g.token();
  backend::GenerationRequest r = g.request;
  r.ignore_eos = true;
  Outcome got = Solo(r, o);
  EXPECT_EQ(got.finish_reason, "length");
  EXPECT_EQ(got.tokens, g.solo.tokens);  // nothing masked: the same greedy run
  EXPECT_LT(got.text.size(), g.solo.text.size());
}

TEST(Engine, NamedIdsAreBoundedAndMustBeInTheVocabulary) {
  // logit_bias and stop_token_ids name at most kMaxNamedIds - 1 ids together
  // (the API's flags keep a request under it; the engine checks anyway).
  auto e = MakeEngine(EngineOptions());
  backend::GenerationRequest r = MakeRequest(1, false);
  for (int32_t id = 0; id < engine::kMaxNamedIds - 1; id++) {
    if (id % 2) r.stop_token_ids.push_back(id);
    else r.logit_bias.emplace_back(id, 1.0f);
  }
  ApiError why;
  EXPECT_TRUE(e->Submit(NewStream("fits"), r, &why)) << why.message;
  r.stop_token_ids.push_back(engine::kMaxNamedIds);
  EXPECT_FALSE(e->Submit(NewStream("over"), r, &why));
  EXPECT_EQ(why.message, "logit_bias and stop_token_ids name 1024 ids; at most 1023 together");
  r = MakeRequest(1, false);
  r.logit_bias = {{50257, 1.0f}};
  EXPECT_FALSE(e->Submit(NewStream("outside"), r, &why));
  EXPECT_EQ(why.message, "logit_bias names token 50257, outside the vocabulary [0, 50257)");
  e->Shutdown();
}

TEST(Engine, RepetitionPenaltyChangesAGreedyRunThatRepeats) {
  // A greedy run that repeats a token; a strong repetition penalty must
  // change it, and a penalty of 1 must not.
  backend::GenerationRequest r;
  size_t k = 0;
  Outcome solo;
  for (int i = 0; i < 16 && k == 0; i++) {
    r = MakeRequest(i, false);
    r.max_new_tokens = 40;
    solo = Solo(r);
    for (size_t a = 0; a < solo.tokens.size() && k == 0; a++) {
      for (size_t b = a + 1; b < solo.tokens.size(); b++) {
        if (solo.tokens[a] == solo.tokens[b]) {
          k = b;
          break;
        }
      }
    }
  }
  ASSERT_GT(k, 0u) << "no greedy run of the first 16 requests repeats a token";
  r.repetition_penalty = 1.0f;
  EXPECT_EQ(Solo(r).tokens, solo.tokens);
  r.repetition_penalty = 5.0f;
  EXPECT_NE(Solo(r).tokens, solo.tokens);
  r.repetition_penalty = 1.0f;
  r.frequency_penalty = 2.0f;
  r.presence_penalty = 2.0f;
  EXPECT_NE(Solo(r).tokens, solo.tokens);
}

// The first token event of a finished stream.
stream::EventPtr FirstToken(const stream::Stream& s) {
  std::vector<stream::EventPtr> evs;
  EXPECT_TRUE(s.ReadFrom(1, 1 << 20, &evs));
  for (auto& e : evs) {
    if (e->type == stream::EventType::kToken) return e;
  }
  return nullptr;
}

// Prompt log-probabilities: the first token event carries one entry per
// prompt token, the first with none; every later entry's alternatives are
// bitwise those a request of the prompt cut before that token reports for
// its own first token (at temperature 1: a greedy row's); asking changes
// no token; a prompt whose blocks are cached is computed whole (no prefix
// hits), and the result is the same when it runs among other requests.
TEST(Engine, PromptLogprobsComeWithTheFirstTokenAndReadNoCachedPrefix) {
  backend::GenerationRequest r;
  std::mt19937 g(5150);
  for (int k = 0; k < 40; k++) r.prompt_tokens.push_back(static_cast<int32_t>(g() % 50000));
  r.max_new_tokens = 4;
  EngineOptions o;
  o.max_batch = 8;
  o.threads = 2;
  auto e = MakeEngine(o);
  auto run = [&](const backend::GenerationRequest& req, const std::string& id) {
    auto s = NewStream(id);
    EXPECT_TRUE(e->Submit(s, req, nullptr));
    Outcome out = WaitAndRead(*s);
    return std::make_pair(out, FirstToken(*s));
  };
  const auto [plain, plain_first] = run(r, "plain");
  ASSERT_EQ(plain.finish_reason, "length");
  EXPECT_EQ(plain_first->prompt_logprobs, nullptr);
  const uint64_t hits = e->stats().prefix_cache_hits;
  backend::GenerationRequest asks = r;
  asks.prompt_logprobs = 3;
  const auto [with, first] = run(asks, "asks");
  EXPECT_EQ(with.tokens, plain.tokens);
  EXPECT_EQ(e->stats().prefix_cache_hits, hits) << "a cached prefix was read";
  ASSERT_NE(first, nullptr);
  ASSERT_NE(first->prompt_logprobs, nullptr);
  const stream::PromptLogprobs& lp = *first->prompt_logprobs;
  ASSERT_EQ(lp.size(), r.prompt_tokens.size());
  EXPECT_TRUE(lp[0].none);
  for (size_t j = 0; j < lp.size(); j++) {
    EXPECT_EQ(lp[j].sampled.id, r.prompt_tokens[j]) << j;
    EXPECT_EQ(lp[j].none, j == 0) << j;
    if (j == 0) continue;
    EXPECT_GE(lp[j].sampled.rank, 1) << j;
    ASSERT_EQ(lp[j].top.size(), 3u) << j;
    for (size_t t = 0; t < 3; t++) EXPECT_EQ(lp[j].top[t].rank, static_cast<int32_t>(t + 1));
    EXPECT_LE(lp[j].sampled.logprob, lp[j].top[0].logprob) << j;
  }
  for (size_t cut : {1u, 7u, 16u, 17u, 39u}) {
    backend::GenerationRequest c;
    c.prompt_tokens.assign(r.prompt_tokens.begin(), r.prompt_tokens.begin() + static_cast<long>(cut));
    c.max_new_tokens = 1;
    c.logprobs = 3;
    const auto [cut_out, cut_first] = run(c, "cut" + std::to_string(cut));
    ASSERT_NE(cut_first, nullptr);
    ASSERT_NE(cut_first->logprobs, nullptr);
    const std::vector<stream::TokenLogprob>& want = cut_first->logprobs->top;
    ASSERT_EQ(want.size(), 3u);
    for (size_t t = 0; t < 3; t++) {
      EXPECT_EQ(lp[cut].top[t].id, want[t].id) << "cut " << cut;
      EXPECT_EQ(std::memcmp(&lp[cut].top[t].logprob, &want[t].logprob, sizeof(double)), 0) << "cut " << cut;
    }
  }
  // Among others: submitted together with three plain requests.
  std::vector<std::shared_ptr<stream::Stream>> streams;
  for (int i = 0; i < 4; i++) {
    streams.push_back(NewStream("mix" + std::to_string(i)));
    backend::GenerationRequest other = MakeRequest(i, true);
    other.max_new_tokens = 4;
    ASSERT_TRUE(e->Submit(streams.back(), i == 2 ? asks : other, nullptr));
  }
  for (auto& s : streams) WaitAndRead(*s);
  stream::EventPtr mixed = FirstToken(*streams[2]);
  EXPECT_EQ(Read(*streams[2]).tokens, plain.tokens);
  ASSERT_NE(mixed->prompt_logprobs, nullptr);
  ASSERT_EQ(mixed->prompt_logprobs->size(), lp.size());
  for (size_t j = 1; j < lp.size(); j++) {
    const stream::TokenLogprobs& a = (*mixed->prompt_logprobs)[j];
    EXPECT_EQ(std::memcmp(&a.sampled.logprob, &lp[j].sampled.logprob, sizeof(double)), 0) << j;
    EXPECT_EQ(a.sampled.rank, lp[j].sampled.rank) << j;
  }
  e->Shutdown();
  ExpectClean(*e);
}

// prompt_logprobs above 20 alternatives is refused at Submit.
TEST(Engine, PromptLogprobsAreBounded) {
  auto e = MakeEngine(EngineOptions());
  backend::GenerationRequest r = MakeRequest(0, false);
  r.prompt_logprobs = engine::kMaxTopLogprobs + 1;
  ApiError err;
  EXPECT_FALSE(e->Submit(NewStream("x"), r, &err));
  EXPECT_NE(err.message.find("prompt_logprobs"), std::string::npos) << err.message;
  e->Shutdown();
}

TEST(Engine, CancelWaitingRequestNeverReachesTheModel) {
  EngineOptions o;
  o.max_batch = 1;
  auto e = MakeEngine(o);
  backend::GenerationRequest longr = MakeRequest(5, false);
  longr.prompt_tokens.resize(1);
  longr.max_new_tokens = 120;
  auto a = NewGatedStream("a");  // holds the one slot until cancelled, however fast the runner
  auto b = NewStream("b");
  ASSERT_TRUE(e->Submit(a, longr, nullptr));
  ASSERT_TRUE(e->Submit(b, MakeRequest(6, false), nullptr));
  e->Cancel("b");
  Outcome ob = WaitAndRead(*b);
  EXPECT_EQ(ob.finish_reason, "cancelled");
  EXPECT_TRUE(ob.tokens.empty());
  EXPECT_FALSE(a->finished()) << "the long request finished before the cancel: test too weak";
  e->Cancel("a");
  WaitAndRead(*a);
  ExpectClean(*e);
  EXPECT_EQ(e->stats().admitted, 1u);
  EXPECT_EQ(e->stats().releases, 1u);
}

TEST(Engine, CancelRunningDoubleAndLateCancels) {
  backend::GenerationRequest r = MakeRequest(7, true);
  r.prompt_tokens.resize(2);
  r.max_new_tokens = 120;
  Outcome solo = Solo(r);
  auto e = MakeEngine(EngineOptions());
  auto s = NewGatedStream("run");  // 5 tokens, then held: the cancel lands mid-stream however fast the runner
  ASSERT_TRUE(e->Submit(s, r, nullptr));
  while (TokenCount(*s) < 5) ASSERT_TRUE(StepGated(*s));
  e->Cancel("run");
  e->Cancel("run");  // double cancel
  Outcome o = WaitAndRead(*s);
  EXPECT_EQ(o.finish_reason, "cancelled");
  EXPECT_EQ(o.terminal_events, 1);
  EXPECT_GE(o.tokens.size(), 5u);
  EXPECT_LT(o.tokens.size(), solo.tokens.size());
  EXPECT_TRUE(std::equal(o.tokens.begin(), o.tokens.end(), solo.tokens.begin()));
  EXPECT_EQ(o.completion_tokens, static_cast<int64_t>(o.tokens.size()));
  ExpectClean(*e);
  uint64_t head = s->head_seq();
  e->Cancel("run");      // late cancel
  e->Cancel("nobody");   // unknown id
  e->SetPaused("run", true);
  auto probe = NewStream("probe");  // the engine is still alive and consistent
  backend::GenerationRequest pr = MakeRequest(8, false);
  ASSERT_TRUE(e->Submit(probe, pr, nullptr));
  WaitAndRead(*probe);
  EXPECT_EQ(s->head_seq(), head);
  EngineStats st = WaitQuiet(*e);
  EXPECT_EQ(st.releases, 2u);
  EXPECT_EQ(st.double_releases, 0u);
}

TEST(Engine, PauseKeepsBlocksAndResumeContinuesIdentically) {
  backend::GenerationRequest r = MakeRequest(9, true);
  r.max_new_tokens = 60;
  Outcome solo = Solo(r);
  EngineOptions ro;
  ro.admission = engine::AdmissionMode::kReserve;  // every block a sequence may need is held from admission
  auto e = MakeEngine(ro);
  // A second stream, gated, steps the engine one step at a time, so "N
  // steps after the pause wish" is counted, not timed.
  backend::GenerationRequest tick = MakeRequest(10, false);
  tick.prompt_tokens.resize(1);
  tick.max_new_tokens = 120;
  auto ticker = NewGatedStream("ticker");
  auto s = NewStream("p");
  ASSERT_TRUE(e->Submit(ticker, tick, nullptr));
  ASSERT_TRUE(e->Submit(s, r, nullptr));
  while (TokenCount(*s) < 3) ASSERT_TRUE(StepGated(*ticker));
  e->SetPaused("p", true);
  for (int i = 0; i < 3; i++) ASSERT_TRUE(StepGated(*ticker));  // the wish is applied
  size_t at_pause = TokenCount(*s);
  for (int i = 0; i < 20; i++) ASSERT_TRUE(StepGated(*ticker));
  EXPECT_EQ(TokenCount(*s), at_pause) << "a paused sequence kept generating";
  ASSERT_LT(at_pause, 60u) << "finished before the pause: test too weak";
  EngineStats st = e->stats();
  EXPECT_EQ(st.running, 2);
  EXPECT_LE(st.kv_blocks_free, st.kv_blocks_total - e->BlocksNeeded(1, 120) -
                                   e->BlocksNeeded(static_cast<int>(r.prompt_tokens.size()), 60))
      << "a paused sequence keeps its blocks";
  e->SetPaused("p", false);
  OpenGate(*ticker);
  Outcome o = WaitAndRead(*s);
  EXPECT_EQ(o.tokens, solo.tokens);
  EXPECT_EQ(o.finish_reason, "length");
  e->Cancel("ticker");
  WaitAndRead(*ticker);
  ExpectClean(*e);
}

TEST(Engine, BlockLimitedAdmissionInArrivalOrder) {
  EngineOptions o;
  o.admission = engine::AdmissionMode::kReserve;  // reservations decide (optimistic: below)
  o.block_size_tokens = 16;
  o.num_kv_blocks = 4;
  auto e = MakeEngine(o);
  backend::GenerationRequest a = MakeRequest(10, false), b = MakeRequest(11, false),
                             c = MakeRequest(12, false);
  a.prompt_tokens.resize(1);
  a.max_new_tokens = 48;  // 48 positions: 3 blocks
  b.prompt_tokens.resize(1);
  b.max_new_tokens = 32;  // 2 blocks: must wait for a
  c.prompt_tokens.resize(1);
  c.max_new_tokens = 8;   // 1 block: would fit now, but must not overtake b
  ASSERT_EQ(e->BlocksNeeded(1, 48), 3);
  ASSERT_EQ(e->BlocksNeeded(1, 32), 2);
  ASSERT_EQ(e->BlocksNeeded(1, 8), 1);
  Outcome sa = Solo(a), sb = Solo(b), sc = Solo(c);
  auto A = NewStream("A"), B = NewStream("B"), C = NewStream("C");
  ASSERT_TRUE(e->Submit(A, a, nullptr));
  ASSERT_TRUE(WaitFor([&] { return TokenCount(*A) >= 1; }));
  ASSERT_TRUE(e->Submit(B, b, nullptr));
  ASSERT_TRUE(e->Submit(C, c, nullptr));
  ASSERT_TRUE(WaitFor([&] { return TokenCount(*A) >= 20; }));
  ASSERT_FALSE(A->finished()) << "test too weak";
  EXPECT_EQ(TokenCount(*B), 0u);
  EXPECT_EQ(TokenCount(*C), 0u) << "a later request overtook the head of the queue";
  EXPECT_EQ(e->stats().waiting, 2);
  EXPECT_EQ(WaitAndRead(*A).tokens, sa.tokens);
  EXPECT_EQ(WaitAndRead(*B).tokens, sb.tokens);
  EXPECT_EQ(WaitAndRead(*C).tokens, sc.tokens);
  ExpectClean(*e);
}

// Prompts admitted in the same step share its pass within the step's token
// budget (max_num_batched_tokens), in admission order, after the decode
// rows; a prompt that does not fit goes on in the next step. Six requests
// wait for blocks held by a paused one; cancelling it admits all six in one
// step. With a budget of 16: step 1 takes [5, 5, 6 of 20]; step 2 decodes
// two and takes the 20's last 14; step 3 decodes three and takes [5, 5, 3
// of 5]; step 4 decodes five and takes the last 2. Every stream equals its
// solo run.
TEST(Engine, PromptsAdmittedTogetherShareTheStepsTokenBudget) {
  EngineOptions o;
  o.admission = engine::AdmissionMode::kReserve;  // the paused holder holds every block
  o.block_size_tokens = 16;
  o.num_kv_blocks = 8;
  o.max_batch = 8;
  o.max_num_batched_tokens = 16;
  auto e = MakeEngine(o);
  backend::GenerationRequest hold = MakeRequest(20, false);
  hold.prompt_tokens.resize(1);
  hold.max_new_tokens = 120;  // 120 positions: all 8 blocks
  ASSERT_EQ(e->BlocksNeeded(1, 120), 8);
  auto H = NewStream("hold");
  ASSERT_TRUE(e->Submit(H, hold, nullptr));
  ASSERT_TRUE(WaitFor([&] { return TokenCount(*H) >= 1 && e->stats().prefill_passes == 1; }));
  e->SetPaused("hold", true);
  const std::vector<int> prompts = {5, 5, 20, 5, 5, 5};
  std::vector<backend::GenerationRequest> reqs;
  std::vector<std::shared_ptr<stream::Stream>> streams;
  for (size_t i = 0; i < prompts.size(); i++) {
    backend::GenerationRequest r = MakeRequest(30 + static_cast<int>(i), i % 2 == 1);
    r.prompt_tokens.resize(prompts[i], 1234 + static_cast<int32_t>(i));
    r.max_new_tokens = 8;
    reqs.push_back(r);
    streams.push_back(NewStream("w" + std::to_string(i)));
    ASSERT_TRUE(e->Submit(streams[i], r, nullptr));
  }
  // The cancel is applied after the six submissions (one inbox, in order),
  // so all six are waiting when the held blocks come free.
  e->Cancel("hold");
  for (size_t i = 0; i < prompts.size(); i++) {
    Outcome got = WaitAndRead(*streams[i]);
    EXPECT_EQ(got.tokens, Solo(reqs[i], o).tokens) << "request " << i;
    EXPECT_EQ(got.finish_reason, "length");
  }
  EXPECT_TRUE(WaitFor([&] { return e->stats().prefill_passes == 1 + 4; })) << e->stats().prefill_passes;
  EXPECT_EQ(e->stats().prefill_chunks, 2u) << "the 20-token prompt in step 1, the last 5-token one in step 3";
  EXPECT_EQ(WaitAndRead(*H).finish_reason, "cancelled");
  ExpectClean(*e);
}

TEST(Engine, BatchLimit) {
  EngineOptions o;
  o.max_batch = 2;
  auto e = MakeEngine(o);
  std::vector<std::shared_ptr<stream::Stream>> ss;
  std::vector<backend::GenerationRequest> rs;
  for (int i = 0; i < 6; i++) {
    rs.push_back(MakeRequest(20 + i, i % 2 == 0));
    rs.back().max_new_tokens = 60;  // long enough that the six overlap
    ss.push_back(NewStream("b" + std::to_string(i)));
    ASSERT_TRUE(e->Submit(ss[i], rs[i], nullptr));
  }
  int64_t max_running = 0;
  WaitFor([&] {
    EngineStats st = e->stats();
    max_running = std::max(max_running, st.running);
    int live = 0;
    for (auto& s : ss) live += (TokenCount(*s) > 0 && !s->finished()) ? 1 : 0;
    EXPECT_LE(live, 2);
    return st.finished == 6;
  });
  EXPECT_LE(max_running, 2);
  EXPECT_EQ(e->stats().max_batch_seen, 2);
  for (int i = 0; i < 6; i++) EXPECT_EQ(WaitAndRead(*ss[i]).tokens, Solo(rs[i]).tokens) << i;
  ExpectClean(*e);
}

TEST(Engine, RefusesWhenTheWaitingListIsFullAndRequestsThatCanNeverRun) {
  EngineOptions o;
  o.max_batch = 1;
  o.max_waiting = 2;
  o.num_kv_blocks = 8;
  o.retry_after_ms = 1500;
  auto e = MakeEngine(o);
  backend::GenerationRequest longr = MakeRequest(30, false);
  longr.prompt_tokens.resize(1);
  longr.max_new_tokens = 120;
  // `a` holds the one slot until cancelled, however fast the runner: its
  // reader takes nothing (the lab gate), so after its first step the engine
  // waits for it and `a` cannot finish.
  auto a = NewGatedStream("a");
  ASSERT_TRUE(e->Submit(a, longr, nullptr));
  ASSERT_TRUE(WaitFor([&] { return TokenCount(*a) >= 1; }));
  auto b = NewStream("b"), c = NewStream("c"), d = NewStream("d");
  backend::GenerationRequest small = MakeRequest(31, false);
  ASSERT_TRUE(e->Submit(b, small, nullptr));
  ASSERT_TRUE(e->Submit(c, small, nullptr));
  ApiError ref;
  EXPECT_FALSE(e->Submit(d, small, &ref));
  EXPECT_EQ(ref.http_status, 503);
  EXPECT_EQ(ref.code, ErrorCode::kOverloaded);
  EXPECT_EQ(ref.retry_after_ms, 1500);
  EXPECT_EQ(d->head_seq(), 0u) << "a refused stream must stay untouched";
  // Longer than the context, and more blocks than the cache holds.
  backend::GenerationRequest too_long = small;
  too_long.max_new_tokens = 200;
  EXPECT_FALSE(e->Submit(NewStream("x"), too_long, &ref));
  EXPECT_EQ(ref.http_status, 422);
  EXPECT_EQ(ref.code, ErrorCode::kPromptTooLong);
  backend::GenerationRequest too_big = small;
  too_big.prompt_tokens.resize(1);
  too_big.max_new_tokens = 8 * 16 + 1;  // 9 blocks of 16 > 8 (and > n_ctx: either refusal)
  EXPECT_FALSE(e->Submit(NewStream("y"), too_big, &ref));
  EXPECT_TRUE(ref.http_status == 400 || ref.http_status == 422) << ref.http_status;
  backend::GenerationRequest bad_token = small;
  bad_token.prompt_tokens[0] = 60000;
  EXPECT_FALSE(e->Submit(NewStream("z"), bad_token, &ref));
  EXPECT_EQ(ref.http_status, 400);
  for (const char* id : {"a", "b", "c"}) e->Cancel(id);
  for (auto* s : {&a, &b, &c}) EXPECT_EQ(WaitAndRead(**s).finish_reason, "cancelled");
  ExpectClean(*e);
  EXPECT_EQ(e->stats().refused, 4u);
}

TEST(Engine, BlocksBoundAdmissionSmallerThanContext) {
  EngineOptions o;
  o.num_kv_blocks = 3;
  o.block_size_tokens = 16;
  auto e = MakeEngine(o);
  backend::GenerationRequest r = MakeRequest(32, false);
  r.prompt_tokens.resize(1);
  r.max_new_tokens = 49;  // 49 positions: 4 blocks > 3
  ApiError ref;
  EXPECT_FALSE(e->Submit(NewStream("big"), r, &ref));
  EXPECT_EQ(ref.http_status, 400);
  EXPECT_NE(ref.message.find("KV blocks"), std::string::npos) << ref.message;
}

TEST(Engine, QueueTimeoutIsARetryableError) {
  EngineOptions o;
  o.max_batch = 1;
  auto e = MakeEngine(o);
  backend::GenerationRequest longr = MakeRequest(33, false);
  longr.prompt_tokens.resize(1);
  longr.max_new_tokens = 120;
  // Gated as above: on an H200 an ungated `a` ran all its 120 tokens before
  // the 20 ms below had passed, and `b` got the slot.
  auto a = NewGatedStream("a");
  ASSERT_TRUE(e->Submit(a, longr, nullptr));
  ASSERT_TRUE(WaitFor([&] { return TokenCount(*a) >= 1; }));
  backend::GenerationRequest w = MakeRequest(34, false);
  w.queue_timeout_ms = 20;
  w.arrival = stream::Clock::now();
  auto b = NewStream("b");
  ASSERT_TRUE(e->Submit(b, w, nullptr));
  Outcome ob = WaitAndRead(*b);
  EXPECT_EQ(ob.error_type, "queue_timeout");
  EXPECT_TRUE(ob.retryable);
  EXPECT_TRUE(ob.tokens.empty());
  EXPECT_EQ(ob.terminal_events, 1);
  EXPECT_FALSE(a->finished()) << "test too weak";
  e->Cancel("a");
  WaitAndRead(*a);
  ExpectClean(*e);
  EXPECT_EQ(e->stats().queue_timeouts, 1u);
  EXPECT_EQ(e->stats().admitted, 1u);
}

TEST(Engine, ShutdownFinishesEverythingOnce) {
  EngineOptions o;
  o.max_batch = 2;
  auto e = MakeEngine(o);
  std::vector<std::shared_ptr<stream::Stream>> ss;
  for (int i = 0; i < 6; i++) {
    backend::GenerationRequest r = MakeRequest(40 + i, false);
    r.prompt_tokens.resize(1);
    r.max_new_tokens = 100;
    // The first is gated: once it has a token the engine holds every stream
    // where it is, so none can finish before the shutdown, however fast the runner.
    ss.push_back(i == 0 ? NewGatedStream("s0") : NewStream("s" + std::to_string(i)));
    ASSERT_TRUE(e->Submit(ss[i], r, nullptr));
  }
  while (TokenCount(*ss[0]) < 2) ASSERT_TRUE(StepGated(*ss[0]));
  e->Shutdown();
  for (auto& s : ss) {
    ASSERT_TRUE(s->producer_exited());
    Outcome out = Read(*s);
    EXPECT_EQ(out.terminal_events, 1);
    EXPECT_EQ(out.finish_reason, "cancelled");
  }
  EngineStats st = e->stats();
  EXPECT_EQ(st.kv_blocks_free, st.kv_blocks_total);
  EXPECT_EQ(st.releases, st.admitted);
  EXPECT_EQ(st.double_releases, 0u);
  EXPECT_EQ(st.finished, 6u);
  ApiError ref;
  EXPECT_FALSE(e->Submit(NewStream("late"), MakeRequest(1, false), &ref));
  EXPECT_EQ(ref.code, ErrorCode::kShuttingDown);
}

// Many threads submitting, cancelling (waiting and running, twice, late),
// pausing and resuming at once. Run under ThreadSanitizer too.
TEST(Engine, ConcurrentSubmitAndCancelFromManyThreads) {
  EngineOptions o;
  o.max_batch = 4;
  o.max_waiting = 1000;
  o.threads = 2;
  auto e = MakeEngine(o);
  constexpr int kThreads = 8, kPer = 8, kDistinct = 4;
  std::vector<backend::GenerationRequest> reqs;
  std::vector<Outcome> solo;
  for (int i = 0; i < kDistinct; i++) {
    reqs.push_back(MakeRequest(50 + i, i % 2 == 0));
    solo.push_back(Solo(reqs[i]));
  }
  std::vector<std::shared_ptr<stream::Stream>> streams(kThreads * kPer);
  std::vector<int> kind(kThreads * kPer);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      std::mt19937 g(t);
      for (int k = 0; k < kPer; k++) {
        int idx = t * kPer + k;
        std::string id = "t" + std::to_string(t) + "_" + std::to_string(k);
        streams[idx] = NewStream(id);
        kind[idx] = static_cast<int>(g() % 4);  // 0 keep, 1 cancel now, 2 cancel later twice, 3 pause/resume
        ASSERT_TRUE(e->Submit(streams[idx], reqs[idx % kDistinct], nullptr));
        if (kind[idx] == 1) e->Cancel(id);
        if (kind[idx] == 3) e->SetPaused(id, true);
        std::this_thread::sleep_for(std::chrono::microseconds(g() % 2000));
        if (kind[idx] == 2) {
          e->Cancel(id);
          e->Cancel(id);
        }
        if (kind[idx] == 3) e->SetPaused(id, false);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < kThreads * kPer; i++) {
    Outcome out = WaitAndRead(*streams[i]);
    EXPECT_EQ(out.terminal_events, 1) << i;
    const Outcome& want = solo[i % kDistinct];
    ASSERT_LE(out.tokens.size(), want.tokens.size());
    EXPECT_TRUE(std::equal(out.tokens.begin(), out.tokens.end(), want.tokens.begin())) << i;
    if (kind[i] == 0 || kind[i] == 3) {
      EXPECT_EQ(out.tokens, want.tokens) << i;
      EXPECT_EQ(out.finish_reason, "length") << i;
    }
    if (kind[i] == 1) {
      EXPECT_EQ(out.finish_reason, "cancelled");
    }
    e->Cancel(streams[i]->id());  // late cancel
  }
  ExpectClean(*e);
  EXPECT_EQ(e->stats().finished, static_cast<uint64_t>(kThreads * kPer));
  EXPECT_LE(e->stats().max_batch_seen, 4);
}

}  // namespace
}  // namespace tw::testing
