// The scheduler (issue 33): optimistic admission, preemption by recompute,
// priorities with aging. Every engine here checks its invariants after each
// step (EngineOptions::check_invariants: each sequence where its state
// says, block references equal the tables holding them, one release per
// admission, the bounds), and every test ends with none broken. The
// reference for each stream is its solo run on a fresh engine with room to
// spare: preempted, paused, re-ordered or not, a stream's tokens must equal
// it bitwise (greedy and seeded; the prefix cache on and off).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/engine_test_util.h"

namespace tw::testing {
namespace {

using engine::AdmissionMode;
using engine::EngineOptions;
using engine::EngineStats;
using engine::SchedulingPolicy;

backend::GenerationRequest Req(int seed, int prompt, int max_new, bool sampled, int priority = 0) {
  std::mt19937 g(static_cast<uint32_t>(7000 + seed));
  backend::GenerationRequest r;
  for (int k = 0; k < prompt; k++) r.prompt_tokens.push_back(static_cast<int32_t>(g() % 50000));
  r.max_new_tokens = max_new;
  r.priority = priority;
  if (sampled) {
    r.temperature = 0.9f;
    r.top_k = 40;
    r.seed = 100 + static_cast<uint64_t>(seed);
    r.has_seed = true;
  }
  return r;
}

// The request alone on a fresh engine with blocks to spare.
Outcome SoloOf(backend::GenerationRequest r) {
  r.priority = 0;  // the default engine is fcfs
  auto e = MakeEngine(EngineOptions());
  auto s = NewStream("solo");
  EXPECT_TRUE(e->Submit(s, r, nullptr));
  Outcome out = WaitAndRead(*s);
  e->Shutdown();
  return out;
}

EngineOptions Checked(int blocks, int max_batch) {
  EngineOptions o;
  o.block_size_tokens = 16;
  o.num_kv_blocks = blocks;
  o.max_batch = max_batch;
  o.threads = 2;
  o.check_invariants = true;
  return o;
}

void ExpectSound(const engine::Engine& e) {
  ExpectClean(e);
  EXPECT_EQ(e.stats().invariant_violations, 0u);
}

// The parameter: bit 0 seeded (else greedy), bit 1 the prefix cache on.
class Preemption : public ::testing::TestWithParam<int> {};

// Eight requests of 8-token prompts and 100 new tokens (107 positions, 7
// blocks each) on 12 blocks: optimistic admission takes all eight (1 block
// each, with one more and the watermark free), and as they grow the latest
// admitted are preempted, readmitted when blocks free, preempted again
// (some request at least twice). Every stream equals its solo run, its
// events contiguous.
TEST_P(Preemption, PreemptedStreamsEqualTheirSoloRuns) {
  const bool seeded = GetParam() & 1, cache = GetParam() & 2;
  std::vector<backend::GenerationRequest> reqs;
  std::vector<Outcome> solo;
  for (int i = 0; i < 8; i++) {
    reqs.push_back(Req(i, 8, 100, seeded));
    solo.push_back(SoloOf(reqs.back()));
  }
  EngineOptions o = Checked(12, 8);
  o.prefix_cache = cache;
  auto e = MakeEngine(o);
  std::vector<std::shared_ptr<stream::Stream>> streams;
  for (size_t i = 0; i < reqs.size(); i++) {
    streams.push_back(NewStream("p" + std::to_string(i)));
    ASSERT_TRUE(e->Submit(streams.back(), reqs[i], nullptr));
  }
  for (size_t i = 0; i < reqs.size(); i++) {
    Outcome got = WaitAndRead(*streams[i]);  // Read checks the indexes are 0, 1, 2, ...
    EXPECT_EQ(got.tokens, solo[i].tokens) << "request " << i;
    EXPECT_EQ(got.text, solo[i].text) << "request " << i;
    EXPECT_EQ(got.finish_reason, "length");
    EXPECT_EQ(got.completion_tokens, 100);
    EXPECT_EQ(got.terminal_events, 1);
  }
  ExpectSound(*e);
  const EngineStats st = e->stats();
  EXPECT_GE(st.most_preemptions, 2) << "no request was preempted twice: too weak a test";
  EXPECT_EQ(st.admitted, reqs.size() + st.preemptions);  // one readmission per preemption
}

INSTANTIATE_TEST_SUITE_P(GreedySeededCacheOffOn, Preemption, ::testing::Values(0, 1, 2, 3));

// Preemption on a runner, small enough for the CUDA runner on the CPU
// emulator: two requests of 40 tokens admitted in one step on 5 blocks
// (one held by a ticker until then); the second is preempted when both need
// their third block, and readmitted when the first ends. Its
// recompute is a prefill of what it decoded (the whole of it with the
// prefix cache off, its last partial block with it on): its tokens must be
// those of its solo run, so the runner's prefill and decode agree bitwise.
class PreemptionOnTheRunner : public ::testing::TestWithParam<bool> {};

TEST_P(PreemptionOnTheRunner, APreemptedStreamEqualsItsSoloRun) {
  {
    const bool cache = GetParam();
    std::vector<backend::GenerationRequest> reqs = {Req(30, 8, 40, !cache), Req(31, 8, 40, !cache)};
    std::vector<Outcome> solo = {SoloOf(reqs[0]), SoloOf(reqs[1])};
    EngineOptions o = Checked(5, 3);
    o.prefix_cache = cache;
    auto e = MakeEngine(o);
    // A gated ticker (1 block, one token left) holds the loop until both
    // are waiting, so they are admitted in one step and grow in lockstep.
    auto ticker = NewGatedStream("ticker");
    ASSERT_TRUE(e->Submit(ticker, Req(29, 1, 3, false), nullptr));
    ASSERT_TRUE(WaitFor([&] { return TokenCount(*ticker) >= 1; }));
    std::vector<std::shared_ptr<stream::Stream>> streams = {NewStream("a"), NewStream("b")};
    for (size_t i = 0; i < 2; i++) ASSERT_TRUE(e->Submit(streams[i], reqs[i], nullptr));
    ASSERT_TRUE(WaitFor([&] { return e->stats().waiting == 2; }));
    OpenGate(*ticker);
    for (size_t i = 0; i < 2; i++) EXPECT_EQ(WaitAndRead(*streams[i]).tokens, solo[i].tokens) << i << " cache " << cache;
    WaitAndRead(*ticker);
    ExpectSound(*e);
    EXPECT_EQ(e->stats().preemptions, 1u) << "cache " << cache;
  }
}

INSTANTIATE_TEST_SUITE_P(CacheOffOn, PreemptionOnTheRunner, ::testing::Bool());

// Chunked prefill (--max-num-batched-tokens 12, one decoder): a 60-token
// prompt arriving while a stream decodes is computed 11 tokens a step (what
// the decode row leaves), so its first token comes after ceil(60 / 11) = 6
// steps, and the decoder draws a token at every one of them. The decoder is
// a gated (lab `naive`) stream, so the test counts steps instead of timing
// them. Both streams equal their solo runs (one unchunked prefill), greedy
// and seeded, the prefix cache off and on; chunk ends fall mid-block.
class ChunkedPrefill : public ::testing::TestWithParam<int> {};

TEST_P(ChunkedPrefill, ALongPromptIsSpreadOverStepsWhileAnotherDecodesAtEach) {
  const bool seeded = GetParam() & 1, cache = GetParam() & 2;
  const backend::GenerationRequest dr = Req(70, 4, 30, seeded), lr = Req(71, 60, 4, seeded);
  const Outcome d_solo = SoloOf(dr), l_solo = SoloOf(lr);
  EngineOptions o = Checked(64, 4);
  o.max_num_batched_tokens = 12;
  o.prefix_cache = cache;
  auto e = MakeEngine(o);
  auto d = NewGatedStream("d");
  ASSERT_TRUE(e->Submit(d, dr, nullptr));
  // Its first step: the prefill's token; then the loop waits at the gate.
  ASSERT_TRUE(WaitFor([&] { return TokenCount(*d) >= 1; }));
  auto l = NewStream("l");
  ASSERT_TRUE(e->Submit(l, lr, nullptr));
  const size_t d0 = TokenCount(*d);
  int steps = 0;
  while (TokenCount(*l) == 0 && steps < 20) {
    ASSERT_TRUE(StepGatedWhole(*e, *d));  // l's token comes after d's in its step
    steps++;
  }
  EXPECT_EQ(steps, 6) << "steps until the long prompt's first token";
  EXPECT_EQ(TokenCount(*d), d0 + static_cast<size_t>(steps)) << "the decoder missed a step";
  EXPECT_EQ(e->stats().prefill_chunks, 5u);
  OpenGate(*d);
  EXPECT_EQ(WaitAndRead(*l).tokens, l_solo.tokens);
  EXPECT_EQ(WaitAndRead(*d).tokens, d_solo.tokens);
  ExpectSound(*e);
}

INSTANTIATE_TEST_SUITE_P(GreedySeededCacheOffOn, ChunkedPrefill, ::testing::Values(0, 1, 2, 3));

// The prompt log-probabilities a stream's first token event carries.
std::shared_ptr<const stream::PromptLogprobs> FirstPromptLogprobs(const stream::Stream& s) {
  std::vector<stream::EventPtr> evs;
  EXPECT_TRUE(s.ReadFrom(1, 1 << 20, &evs));
  for (const stream::EventPtr& ev : evs) {
    if (ev->type == stream::EventType::kToken) return ev->prompt_logprobs;
  }
  return nullptr;
}

// Three identical 60-token prompts admitted together under a 12-token
// budget: the first computes the shared blocks chunk by chunk, the others
// wait for them (their shared blocks are not ready while its prefill runs)
// and then prefill only their last, partial block; a 40-token prompt asking
// for its log-probabilities is chunked too, and its entries are bitwise
// those of its prefill in one pass alone. Every stream equals its solo run.
TEST(Scheduler, SharersWaitForAChunkedPrefixAndPromptLogprobsAreChunkedToo) {
  const std::vector<int32_t> prompt = Req(80, 60, 1, false).prompt_tokens;
  std::vector<backend::GenerationRequest> reqs;
  for (int i = 0; i < 3; i++) {
    backend::GenerationRequest r = Req(81 + i, 0, 6, i > 0);
    r.prompt_tokens = prompt;
    reqs.push_back(r);
  }
  backend::GenerationRequest scored = Req(90, 40, 3, false);
  scored.prompt_logprobs = 2;
  reqs.push_back(scored);
  std::vector<Outcome> solo;
  for (auto& r : reqs) solo.push_back(SoloOf(r));
  std::shared_ptr<const stream::PromptLogprobs> scored_solo;
  {
    auto alone = MakeEngine(EngineOptions());  // a 512-token budget: one pass
    auto s = NewStream("scored");
    ASSERT_TRUE(alone->Submit(s, scored, nullptr));
    WaitAndRead(*s);
    scored_solo = FirstPromptLogprobs(*s);
    EXPECT_EQ(alone->stats().prefill_chunks, 0u);
  }
  EngineOptions o = Checked(64, 4);
  o.max_num_batched_tokens = 12;
  auto e = MakeEngine(o);
  std::vector<std::shared_ptr<stream::Stream>> streams;
  for (size_t i = 0; i < reqs.size(); i++) {
    streams.push_back(NewStream("s" + std::to_string(i)));
    ASSERT_TRUE(e->Submit(streams.back(), reqs[i], nullptr));
  }
  for (size_t i = 0; i < reqs.size(); i++) EXPECT_EQ(WaitAndRead(*streams[i]).tokens, solo[i].tokens) << i;
  std::shared_ptr<const stream::PromptLogprobs> got = FirstPromptLogprobs(*streams[3]);
  ASSERT_NE(got, nullptr);
  ASSERT_NE(scored_solo, nullptr);
  ASSERT_EQ(got->size(), 40u);
  ASSERT_EQ(scored_solo->size(), 40u);
  for (size_t j = 0; j < got->size(); j++) {
    const stream::TokenLogprobs &a = (*got)[j], &b = (*scored_solo)[j];
    EXPECT_EQ(a.none, b.none) << j;
    EXPECT_EQ(a.sampled.id, b.sampled.id) << j;
    EXPECT_EQ(std::memcmp(&a.sampled.logprob, &b.sampled.logprob, sizeof(double)), 0) << "position " << j;
    EXPECT_EQ(a.sampled.rank, b.sampled.rank) << j;
    ASSERT_EQ(a.top.size(), b.top.size()) << j;
    for (size_t t = 0; t < a.top.size(); t++) {
      EXPECT_EQ(a.top[t].id, b.top[t].id) << j << " top " << t;
      EXPECT_EQ(std::memcmp(&a.top[t].logprob, &b.top[t].logprob, sizeof(double)), 0) << j << " top " << t;
    }
  }
  ExpectSound(*e);
  const EngineStats st = e->stats();
  EXPECT_EQ(st.prefix_cache_hits, 2u * 48) << "the two sharers' three whole blocks";
  EXPECT_GE(st.prefill_chunks, 4u + 3u) << "the shared prompt's and the scored one's";
}

// The owner of a prefix cancelled in the middle of its chunked prefill: the
// blocks it had not written leave the prefix cache, and the request waiting
// to share them is sent back to wait and computes them itself; a later
// request of the same prompt finds nothing unwritten. Steps are counted
// with a gated ticker.
TEST(Scheduler, AnOwnerCancelledMidPrefillLeavesItsSharerToComputeThePrefix) {
  const std::vector<int32_t> prompt = Req(95, 60, 1, false).prompt_tokens;
  backend::GenerationRequest owner = Req(96, 0, 4, false), sharer = Req(97, 0, 5, true), later = Req(98, 0, 3, false);
  owner.prompt_tokens = sharer.prompt_tokens = later.prompt_tokens = prompt;
  const Outcome sharer_solo = SoloOf(sharer), later_solo = SoloOf(later);
  EngineOptions o = Checked(64, 4);
  o.max_num_batched_tokens = 12;
  auto e = MakeEngine(o);
  auto ticker = NewGatedStream("ticker");
  ASSERT_TRUE(e->Submit(ticker, Req(94, 1, 60, false), nullptr));
  ASSERT_TRUE(WaitFor([&] { return TokenCount(*ticker) >= 1; }));
  auto A = NewStream("A"), B = NewStream("B");
  ASSERT_TRUE(e->Submit(A, owner, nullptr));
  ASSERT_TRUE(e->Submit(B, sharer, nullptr));
  ASSERT_TRUE(WaitFor([&] { return e->stats().waiting == 2; }));
  ASSERT_TRUE(StepGated(*ticker));  // A and B admitted, A's first chunk; B waits for A's blocks
  // The ticker's token comes before the same step counts A's chunk (decode
  // rows first); the next step waits at the ticker's gate, so the count
  // stops at 1 until the gate moves.
  EXPECT_TRUE(WaitFor([&] { return e->stats().prefill_chunks == 1u; })) << e->stats().prefill_chunks;
  e->Cancel("A");
  ASSERT_TRUE(StepGated(*ticker));  // A retired mid-prefill; B sent back to wait
  OpenGate(*ticker);
  EXPECT_EQ(WaitAndRead(*A).finish_reason, "cancelled");
  EXPECT_EQ(TokenCount(*A), 0u);
  EXPECT_EQ(WaitAndRead(*B).tokens, sharer_solo.tokens);
  auto C = NewStream("C");
  ASSERT_TRUE(e->Submit(C, later, nullptr));
  EXPECT_EQ(WaitAndRead(*C).tokens, later_solo.tokens);
  e->Cancel("ticker");
  WaitAndRead(*ticker);
  ExpectSound(*e);
  EXPECT_GE(e->stats().preemptions, 1u) << "the sharer was not sent back";
}

// --max-num-batched-tokens below --max-batch is refused at start-up.
TEST(Scheduler, TheBudgetCoversEveryDecodeRow) {
  const TinyModel& m = TinyModel::Get();
  EngineOptions o = Checked(64, 8);
  o.max_num_batched_tokens = 7;
  std::unique_ptr<engine::ModelRunner> runner;
  ASSERT_TRUE(app::MakeRunner(TestRunnerKind(), m.model, engine::RunnerLimitsFor(o, m.model->config().n_ctx),
                              app::RunnerOptions(), &runner)
                  .ok());
  std::unique_ptr<engine::Engine> e;
  Status s = engine::Engine::Create(std::move(runner), &m.tokenizer, o, &e);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--max-num-batched-tokens"), std::string::npos) << s.message();
}

// A chat-like load (max_new_tokens far above what is generated, here all
// 100 of it, on 16 blocks): reservation runs two at a time (7 blocks
// each); optimistic admission runs all four, preempting as they grow; the
// tokens are the same either way.
TEST(Scheduler, OptimisticAdmissionRunsWhatReservationQueues) {
  std::vector<backend::GenerationRequest> reqs;
  std::vector<Outcome> solo;
  for (int i = 0; i < 4; i++) {
    reqs.push_back(Req(20 + i, 8, 100, i % 2 == 1));
    solo.push_back(SoloOf(reqs.back()));
  }
  for (AdmissionMode mode : {AdmissionMode::kReserve, AdmissionMode::kOptimistic}) {
    EngineOptions o = Checked(16, 4);
    o.admission = mode;
    auto e = MakeEngine(o);
    ASSERT_EQ(e->BlocksNeeded(8, 100), 7);
    std::vector<std::shared_ptr<stream::Stream>> streams;
    for (size_t i = 0; i < reqs.size(); i++) {
      streams.push_back(NewStream("c" + std::to_string(i)));
      ASSERT_TRUE(e->Submit(streams.back(), reqs[i], nullptr));
    }
    for (size_t i = 0; i < reqs.size(); i++) EXPECT_EQ(WaitAndRead(*streams[i]).tokens, solo[i].tokens) << i;
    ExpectSound(*e);
    const EngineStats st = e->stats();
    if (mode == AdmissionMode::kReserve) {
      EXPECT_EQ(st.max_batch_seen, 2);
      EXPECT_EQ(st.preemptions, 0u);
    } else {
      EXPECT_EQ(st.max_batch_seen, 4);
    }
  }
}

// The watermark: optimistic admission keeps kv_watermark of the pool free.
// A gated ticker (1 block) holds the step loop while six 1-block requests
// arrive; when its gate opens they are admitted in one step while their
// block, one more and the watermark are free: with none, all six (2 <= 15
// .. 10 free); with 0.75 of 16 (12 blocks), two (14 <= 15, 14; not 13).
TEST(Scheduler, TheWatermarkKeepsBlocksFreeAtAdmission) {
  std::vector<backend::GenerationRequest> reqs;
  for (int i = 0; i < 6; i++) reqs.push_back(Req(40 + i, 4, 10, false));
  for (double w : {0.0, 0.75}) {
    EngineOptions o = Checked(16, 8);
    o.kv_watermark = w;
    auto e = MakeEngine(o);
    auto ticker = NewGatedStream("ticker");
    ASSERT_TRUE(e->Submit(ticker, Req(39, 1, 14, false), nullptr));
    ASSERT_TRUE(WaitFor([&] { return TokenCount(*ticker) >= 1; }));
    std::vector<std::shared_ptr<stream::Stream>> streams;
    for (size_t i = 0; i < reqs.size(); i++) {
      streams.push_back(NewStream("w" + std::to_string(i)));
      ASSERT_TRUE(e->Submit(streams.back(), reqs[i], nullptr));
    }
    ASSERT_TRUE(WaitFor([&] { return e->stats().waiting == 6; }));
    OpenGate(*ticker);
    for (auto& s : streams) EXPECT_EQ(WaitAndRead(*s).finish_reason, "length");
    WaitAndRead(*ticker);
    ExpectSound(*e);
    EXPECT_EQ(e->stats().max_batch_seen, w == 0.0 ? 7 : 3) << "watermark " << w;
  }
}

// A request with a priority other than 0 is refused under fcfs, naming the flag.
TEST(Scheduler, FcfsRefusesAPriority) {
  auto e = MakeEngine(Checked(64, 4));
  ApiError err;
  EXPECT_FALSE(e->Submit(NewStream("x"), Req(1, 4, 4, false, 3), &err));
  EXPECT_NE(err.message.find("--scheduling-policy priority"), std::string::npos) << err.message;
  EXPECT_TRUE(e->Submit(NewStream("y"), Req(1, 4, 4, false, 0), &err));
  ExpectSound(*e);
}

// Priority: one batch slot, A (priority 5) running; B (5), C (1), D (9)
// arrive together. C preempts A at once and runs alone; then A (same
// priority as B, earlier) resumes; then B; D last. Counted by events: when
// C ends, B and D have no token; when A ends, D has none (B, long, is still
// running then, and D cannot start before it ends). Every stream equals its
// solo run, A's across its preemption.
TEST(Scheduler, PriorityOrdersAdmissionAndPreemptsWorsePriorities) {
  EngineOptions o = Checked(64, 1);
  o.scheduling = SchedulingPolicy::kPriority;
  o.priority_aging_ms = 0;
  auto e = MakeEngine(o);
  const backend::GenerationRequest a = Req(50, 10, 80, true, 5), b = Req(51, 10, 110, false, 5),
                                   c = Req(52, 10, 12, true, 1), d = Req(53, 10, 12, false, 9);
  auto A = NewStream("A"), B = NewStream("B"), C = NewStream("C"), D = NewStream("D");
  ASSERT_TRUE(e->Submit(A, a, nullptr));
  ASSERT_TRUE(WaitFor([&] { return TokenCount(*A) >= 1; }));
  ASSERT_TRUE(e->Submit(B, b, nullptr));
  ASSERT_TRUE(e->Submit(C, c, nullptr));
  ASSERT_TRUE(e->Submit(D, d, nullptr));
  ASSERT_TRUE(WaitFor([&] { return C->producer_exited(); }));
  EXPECT_EQ(TokenCount(*B), 0u);
  EXPECT_EQ(TokenCount(*D), 0u);
  EXPECT_FALSE(A->finished());
  ASSERT_TRUE(WaitFor([&] { return A->producer_exited(); }));
  EXPECT_EQ(TokenCount(*D), 0u) << "priority 9 ran before priority 5";
  EXPECT_FALSE(B->finished());
  for (auto [s, r] : {std::pair{A, a}, {B, b}, {C, c}, {D, d}}) {
    EXPECT_EQ(WaitAndRead(*s).tokens, SoloOf(r).tokens) << s->id();
  }
  ExpectSound(*e);
  EXPECT_EQ(e->stats().preemptions, 1u);
}

// Fairness: with aging, a low-priority request is admitted while
// high-priority requests keep arriving; without aging it is not. One batch
// slot; high-priority requests of 20 tokens are topped up so that three
// always wait (the engine would need 60 steps to drain them between two
// looks of this thread). Without aging, 40 of them finish while the low one
// (priority 30) has no token (counted, not timed); with aging (one step of
// priority per ms waited) it runs once it has waited some 30 ms longer than
// the ones it competes with.
TEST(Scheduler, AgingAdmitsALowPriorityRequestBehindAStreamOfHighOnes) {
  for (int64_t aging : {int64_t{0}, int64_t{1}}) {
    EngineOptions o = Checked(64, 1);
    o.scheduling = SchedulingPolicy::kPriority;
    o.priority_aging_ms = aging;
    auto e = MakeEngine(o);
    auto low = NewStream("low");
    std::vector<std::shared_ptr<stream::Stream>> highs;
    auto submit_high = [&] {
      highs.push_back(NewStream("h" + std::to_string(highs.size())));
      ASSERT_TRUE(e->Submit(highs.back(), Req(60 + static_cast<int>(highs.size()), 4, 20, false, 0), nullptr));
    };
    for (int i = 0; i < 4; i++) submit_high();  // one running, three waiting
    ASSERT_TRUE(e->Submit(low, Req(59, 4, 3, false, 30), nullptr));
    size_t finished = 0;
    const size_t limit = aging == 0 ? 40 : 4000;
    while (finished < limit && !low->producer_exited()) {
      ASSERT_TRUE(WaitFor([&] { return highs[finished]->producer_exited() || low->producer_exited(); }));
      if (!highs[finished]->producer_exited()) break;
      finished++;
      submit_high();
    }
    if (aging == 0) {
      EXPECT_EQ(TokenCount(*low), 0u) << "admitted without aging";
      e->Cancel("low");
    } else {
      EXPECT_TRUE(low->producer_exited()) << "not admitted after " << finished << " high-priority requests";
      EXPECT_EQ(Read(*low).finish_reason, "length");
    }
    for (auto& h : highs) e->Cancel(h->id());
    ExpectSound(*e);
  }
}

// Random arrivals, cancels (a client leaving), pauses and resumes, and
// priorities, on a small pool under optimistic admission and the priority
// policy: the invariants hold after every step, every stream ends exactly
// once, the blocks all come back, and every stream never cancelled equals
// its solo run.
TEST(Scheduler, RandomArrivalsCancelsPausesAndPrioritiesKeepEveryInvariant) {
  EngineOptions o = Checked(12, 4);
  o.scheduling = SchedulingPolicy::kPriority;
  o.priority_aging_ms = 20;
  o.max_waiting = 256;
  auto e = MakeEngine(o);
  std::mt19937 g(424242);
  struct Live {
    std::shared_ptr<stream::Stream> s;
    backend::GenerationRequest r;
    bool cancelled = false;
    bool paused = false;
  };
  std::vector<Live> all;
  for (int op = 0; op < 300; op++) {
    const int kind = static_cast<int>(g() % 10);
    if (kind < 5 || all.empty()) {
      Live l;
      l.r = Req(1000 + op, 1 + static_cast<int>(g() % 40), 1 + static_cast<int>(g() % 40), g() % 2 == 0,
                static_cast<int>(g() % 4));
      l.s = NewStream("r" + std::to_string(op));
      ASSERT_TRUE(e->Submit(l.s, l.r, nullptr));
      all.push_back(std::move(l));
    } else {
      Live& l = all[g() % all.size()];
      if (kind < 7) {
        e->Cancel(l.s->id());
        l.cancelled = true;
      } else if (kind < 9) {
        e->SetPaused(l.s->id(), true);
        l.paused = true;
      } else {
        e->SetPaused(l.s->id(), false);
        l.paused = false;
      }
    }
    if (op % 10 == 9) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // let steps interleave
  }
  for (Live& l : all) {
    if (l.paused) e->SetPaused(l.s->id(), false);
  }
  int compared = 0;
  for (Live& l : all) {
    Outcome got = WaitAndRead(*l.s);
    EXPECT_EQ(got.terminal_events, 1) << l.s->id();
    if (l.cancelled) continue;
    EXPECT_EQ(got.tokens, SoloOf(l.r).tokens) << l.s->id();
    compared++;
  }
  ExpectSound(*e);
  EXPECT_GT(compared, 50);
  EXPECT_GT(e->stats().preemptions, 0u) << "no preemption: the pool is too large to test it";
}

}  // namespace
}  // namespace tw::testing
