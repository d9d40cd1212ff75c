// The engine against the model-runner seam alone (engine/runner.h): a fake
// runner that checks every step's SeqViews against the contract and answers
// with tokens it can recompute. The engine must run to completion on it,
// make each step ONE call within its token budget (decode rows first, then
// prompt chunks, each prompt's chunks contiguous and only the last one
// sampling), feed back each sequence's last token, advance `cached` by
// what it appended, number each draw by its token index, hand a step block
// tables that cover what is appended and never share a block that is
// written (a shared prefix block lies wholly below `cached`), and release
// every block;
// a row's log-probabilities (asked for per request) reach its token events,
// typed, with each token's bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

#include "engine/engine.h"
#include "engine/engine_test_util.h"

namespace tw::testing {
namespace {

class FakeRunner : public engine::ModelRunner {
 public:
  explicit FakeRunner(engine::RunnerLimits limits) : limits_(limits) {}

  const char* kind() const override { return "fake"; }
  engine::ModelShape shape() const override { return {128, 50257, 50256}; }
  engine::RunnerLimits limits() const override { return limits_; }

  // The token a sequence (keyed by its seed) draws at index `counter`.
  static int32_t TokenFor(uint64_t seed, uint64_t counter) {
    return static_cast<int32_t>(1 + (seed * 7919 + counter * 104729) % 50000);
  }

  Status Step(const engine::SeqView* seqs, int count, engine::SampledToken* out) override {
    {
      // Held (HoldFirstStep) until Release: the requests submitted
      // meanwhile reach the engine's next step together, whatever the
      // machine's load.
      std::unique_lock<std::mutex> lock(hold_mu_);
      hold_cv_.wait(lock, [&] { return !hold_; });
    }
    std::lock_guard<std::mutex> lock(mu_);
    Check(seqs, count);
    EXPECT_LE(count, limits_.max_batch);
    int tokens = 0, decodes = 0, chunks = 0;
    for (int i = 0; i < count; i++) {
      const engine::SeqView& v = seqs[i];
      tokens += v.n;
      auto it = state_.find(v.sampling.seed);
      if (it != state_.end() && it->second.prompt > 0) {  // a decode row
        EXPECT_EQ(chunks, 0) << "decode rows come before prompt chunks";
        decodes++;
        State& st = it->second;
        EXPECT_EQ(v.n, 1);
        EXPECT_TRUE(v.sample);
        EXPECT_EQ(v.tokens[0], st.last) << "the engine feeds back the last token";
        const uint64_t k = static_cast<uint64_t>(v.cached - st.prompt + 1);
        EXPECT_EQ(v.sampling.counter, k) << "draw k after k tokens";
        st.last = out[i].id = TokenFor(v.sampling.seed, k);
        FillLogprobs(v.sampling, &out[i]);
        continue;
      }
      chunks++;
      State& st = state_[v.sampling.seed];
      if (st.fed == 0) {
        EXPECT_EQ(v.cached % limits_.block_size_tokens, 0) << "a prompt is prefilled from a block boundary";
      } else {
        EXPECT_EQ(v.cached, st.fed) << "a prompt's chunks follow each other";
      }
      st.fed = v.cached + v.n;
      prefilled_tokens_ += v.n;
      if (!v.sample) continue;  // the prompt goes on in a later step
      EXPECT_EQ(v.sampling.counter, 0u) << "the first draw is draw 0";
      st.prompt = v.cached + v.n;
      st.last = out[i].id = TokenFor(v.sampling.seed, 0);
      FillLogprobs(v.sampling, &out[i]);
    }
    EXPECT_TRUE(count == 1 || tokens <= limits_.max_step_tokens) << tokens << " tokens in one step";
    steps_++;
    if (chunks > 0) chunk_steps_++;
    if (chunks > 0 && decodes > 0) mixed_steps_++;
    return Status::Ok();
  }

  // A row that asks gets k alternatives: ids id, id+1, …; log P = -0.25 - j.
  static void FillLogprobs(const engine::SamplingRow& r, engine::SampledToken* o) {
    o->has_logprobs = r.logprobs >= 0;
    o->top_count = std::max(0, r.logprobs);
    o->logprob = -0.25;
    for (int j = 0; j < o->top_count; j++) {
      o->top_ids[j] = o->id + j;
      o->top_logprobs[j] = -0.25 - j;
    }
  }

  void HoldFirstStep() {
    std::lock_guard<std::mutex> lock(hold_mu_);
    hold_ = true;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(hold_mu_);
    hold_ = false;
    hold_cv_.notify_all();
  }

  int steps() {
    std::lock_guard<std::mutex> lock(mu_);
    return steps_;
  }
  int chunk_steps() {
    std::lock_guard<std::mutex> lock(mu_);
    return chunk_steps_;
  }
  int mixed_steps() {
    std::lock_guard<std::mutex> lock(mu_);
    return mixed_steps_;
  }
  int prefilled_tokens() {
    std::lock_guard<std::mutex> lock(mu_);
    return prefilled_tokens_;
  }

 private:
  struct State {
    int fed = 0;     // prompt tokens fed so far
    int prompt = 0;  // the prompt's length, once its last chunk has run
    int32_t last = -1;
  };
  void Check(const engine::SeqView* seqs, int count) {
    // Blocks wholly below `cached` are read only and may be shared; every
    // other block of a table is the sequence's own.
    std::set<int32_t> shared, own;
    for (int i = 0; i < count; i++) {
      const engine::SeqView& v = seqs[i];
      EXPECT_GE(v.n, 1);
      EXPECT_GE(static_cast<int64_t>(v.num_blocks) * limits_.block_size_tokens, v.cached + v.n)
          << "the table covers every position written";
      for (int b = 0; b < v.num_blocks; b++) {
        const int32_t id = v.block_table[b];
        EXPECT_GE(id, 0);
        EXPECT_LT(id, limits_.num_kv_blocks);
        if ((b + 1) * limits_.block_size_tokens <= v.cached) {
          shared.insert(id);
        } else {
          EXPECT_TRUE(own.insert(id).second) << "block " << id << " written through two tables";
        }
      }
    }
    for (int32_t id : own) EXPECT_EQ(shared.count(id), 0u) << "block " << id << " is read by one and written by another";
  }
  const engine::RunnerLimits limits_;
  std::mutex mu_;
  std::mutex hold_mu_;
  std::condition_variable hold_cv_;
  bool hold_ = false;
  std::map<uint64_t, State> state_;  // by seed (each request here has its own)
  int steps_ = 0, chunk_steps_ = 0, mixed_steps_ = 0;
  int prefilled_tokens_ = 0;
};

class RunnerSeam : public ::testing::TestWithParam<bool> {};

TEST_P(RunnerSeam, TheEngineRunsOnAnyRunnerThatKeepsTheContract) {
  engine::EngineOptions o;
  o.prefix_cache = GetParam();
  o.max_batch = 4;
  o.block_size_tokens = 8;
  o.num_kv_blocks = 40;
  o.max_num_batched_tokens = 8;  // prompts of up to 11 tokens: several go over more than one step
  engine::RunnerLimits limits = engine::RunnerLimitsFor(o, 128);
  auto runner = std::make_unique<FakeRunner>(limits);
  runner->HoldFirstStep();
  FakeRunner* fake = runner.get();
  std::unique_ptr<engine::Engine> e;
  ASSERT_TRUE(engine::Engine::Create(std::move(runner), &TinyModel::Get().tokenizer, o, &e).ok());
  EXPECT_STREQ(e->kind(), "fake");
  const int kRequests = 9;
  std::vector<std::shared_ptr<stream::Stream>> streams;
  for (int i = 0; i < kRequests; i++) {
    backend::GenerationRequest r;
    for (int k = 0; k < 3 + i; k++) r.prompt_tokens.push_back(100 + k);
    r.max_new_tokens = 5 + 3 * i;
    r.temperature = 1.0f;
    r.seed = 1000 + i;
    r.has_seed = true;
    streams.push_back(NewStream("s" + std::to_string(i)));
    ASSERT_TRUE(e->Submit(streams.back(), r, nullptr));
  }
  fake->Release();
  for (int i = 0; i < kRequests; i++) {
    Outcome out = WaitAndRead(*streams[i]);
    EXPECT_EQ(out.finish_reason, "length");
    ASSERT_EQ(out.tokens.size(), static_cast<size_t>(5 + 3 * i));
    for (size_t k = 0; k < out.tokens.size(); k++) {
      EXPECT_EQ(out.tokens[k], FakeRunner::TokenFor(1000 + i, k)) << "request " << i << " token " << k;
    }
  }
  engine::EngineStats st = WaitQuiet(*e);
  EXPECT_EQ(st.releases, static_cast<uint64_t>(kRequests));
  EXPECT_EQ(st.double_releases, 0u);
  // One runner call per step that had work; steps with prompt chunks are
  // the engine's prefill passes, and some of them carried decodes too.
  EXPECT_LE(static_cast<uint64_t>(fake->steps()), st.steps);
  EXPECT_EQ(static_cast<uint64_t>(fake->chunk_steps()), st.prefill_passes);
  EXPECT_GT(fake->mixed_steps(), 0) << "prompt chunks ran beside decodes";
  EXPECT_GT(st.prefill_chunks, 0u) << "some prompt was spread over steps";
  // The prompts are 100, 101, ... of lengths 3..11: with the cache, those
  // longer than one block (8) share the first block of the first such one.
  int prompt_tokens = 0;
  for (int i = 0; i < kRequests; i++) prompt_tokens += 3 + i;
  const int shared = GetParam() ? 8 * 3 : 0;  // prompts of 9, 10 and 11 tokens
  EXPECT_EQ(fake->prefilled_tokens(), prompt_tokens - shared);
  EXPECT_EQ(st.prefix_cache_queries, GetParam() ? static_cast<uint64_t>(prompt_tokens) : 0u);
  EXPECT_EQ(st.prefix_cache_hits, static_cast<uint64_t>(shared));
}

INSTANTIATE_TEST_SUITE_P(PrefixCache, RunnerSeam, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "On" : "Off"; });

TEST(RunnerSeamLogprobs, LogprobsAskedForReachTheTokenEventsTyped) {
  engine::EngineOptions o;
  o.max_batch = 4;
  o.block_size_tokens = 8;
  o.num_kv_blocks = 40;
  engine::RunnerLimits limits = engine::RunnerLimitsFor(o, 128);
  std::unique_ptr<engine::Engine> e;
  ASSERT_TRUE(engine::Engine::Create(std::make_unique<FakeRunner>(limits), &TinyModel::Get().tokenizer, o, &e).ok());
  const int kAsk[] = {-1, 0, 3, 20};
  std::vector<std::shared_ptr<stream::Stream>> streams;
  for (int i = 0; i < 4; i++) {
    backend::GenerationRequest r;
    r.prompt_tokens = {100, 101};
    r.max_new_tokens = 4;
    r.temperature = 1.0f;
    r.seed = 2000 + i;
    r.has_seed = true;
    r.logprobs = kAsk[i];
    streams.push_back(NewStream("lp" + std::to_string(i)));
    ASSERT_TRUE(e->Submit(streams.back(), r, nullptr));
  }
  for (int i = 0; i < 4; i++) {
    ASSERT_EQ(WaitAndRead(*streams[i]).finish_reason, "length");
    std::vector<stream::EventPtr> evs;
    ASSERT_TRUE(streams[i]->ReadFrom(1, 1 << 20, &evs));
    int tokens = 0;
    for (const auto& ev : evs) {
      if (ev->type != stream::EventType::kToken) continue;
      tokens++;
      if (kAsk[i] < 0) {
        EXPECT_EQ(ev->logprobs, nullptr) << "request " << i << " did not ask";
        continue;
      }
      ASSERT_NE(ev->logprobs, nullptr) << "request " << i;
      const stream::TokenLogprobs& lp = *ev->logprobs;
      EXPECT_EQ(lp.sampled.id, ev->token);
      EXPECT_EQ(lp.sampled.logprob, -0.25);
      EXPECT_EQ(lp.sampled.bytes, TinyModel::Get().tokenizer.TokenBytes(ev->token));
      ASSERT_EQ(lp.top.size(), static_cast<size_t>(kAsk[i]));
      for (int j = 0; j < kAsk[i]; j++) {
        EXPECT_EQ(lp.top[j].id, ev->token + j);
        EXPECT_EQ(lp.top[j].logprob, -0.25 - j);
        EXPECT_EQ(lp.top[j].bytes, TinyModel::Get().tokenizer.TokenBytes(ev->token + j));
      }
    }
    EXPECT_EQ(tokens, 4);
  }
}

}  // namespace
}  // namespace tw::testing
