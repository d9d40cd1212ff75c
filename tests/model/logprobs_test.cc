// Log-probabilities (engine::SampledToken, model::ComputeLogprobs) against
// float64 references: on the golden model, the CPU runner's log-probabilities
// of each golden prompt's next token (the sampled one and the top 20) equal
// log softmax(logits / T) computed here in double from the golden logits
// (tests/data/golden, written by an independent float64 PyTorch
// implementation), within 3e-4 / T (the logits agree within 1e-4, and a
// log-probability moves by at most twice a logit's error divided by T); and
// ComputeLogprobs on chosen logits (ties, NaN, -inf, k = 0 and 20, greedy)
// equals a brute-force double computation. The prompt's log-probabilities
// (SeqView::prompt_logprobs) at every position of every golden prompt
// against the same reference, independent of chunking, and equal to the
// next-token log-probabilities of the prompt cut there.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "json/json.h"
#include "model/cpu_runner.h"
#include "model/gpt2.h"
#include "model/sampling.h"
#include "support/chunking.h"

namespace tw::model {
namespace {

// log softmax(logits / T) in double (T <= 0 means 1); NaN is -inf.
std::vector<double> RefLogSoftmax(const float* logits, int V, double T) {
  if (!(T > 0)) T = 1;
  std::vector<double> z(V);
  double mx = -INFINITY;
  for (int i = 0; i < V; i++) {
    z[i] = std::isnan(logits[i]) ? -INFINITY : static_cast<double>(logits[i]) / T;
    mx = std::max(mx, z[i]);
  }
  double sum = 0;
  for (int i = 0; i < V; i++) sum += std::exp(z[i] - mx);
  for (int i = 0; i < V; i++) z[i] = std::max(z[i] - mx - std::log(sum), engine::kMinLogprob);
  return z;
}

// Ids by reference log-probability, larger first, then lower id.
std::vector<int32_t> RefOrder(const std::vector<double>& lp) {
  std::vector<int32_t> ids(lp.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return lp[a] > lp[b]; });
  return ids;
}

TEST(ComputeLogprobs, EqualsBruteForceWithTiesNanAndInfinities) {
  const int V = 300;
  std::vector<float> logits(V);
  for (int i = 0; i < V; i++) logits[i] = static_cast<float>(std::sin(i * 0.37) * 4.0);
  logits[7] = logits[8] = logits[9] = 9.0f;  // a three-way tie at the top
  logits[20] = NAN;
  logits[21] = -INFINITY;
  for (float T : {0.0f, 0.5f, 1.0f, 1.7f}) {
    const std::vector<double> ref = RefLogSoftmax(logits.data(), V, T);
    for (int k : {0, 1, 3, 20}) {
      engine::SampledToken out;
      out.id = 42;
      ComputeLogprobs(logits.data(), V, T, k, &out);
      const std::string where = "T=" + std::to_string(T) + " k=" + std::to_string(k);
      EXPECT_TRUE(out.has_logprobs);
      EXPECT_NEAR(out.logprob, ref[42], 1e-12) << where;
      ASSERT_EQ(out.top_count, k) << where;
      for (int j = 0; j < k; j++) {
        EXPECT_NEAR(out.top_logprobs[j], ref[out.top_ids[j]], 1e-12) << where << " rank " << j;
        if (j > 0) {
          EXPECT_GE(out.top_logprobs[j - 1], out.top_logprobs[j]) << where << " rank " << j;
        }
      }
      if (k >= 3) {
        // Ties break toward the lower id, like every cut the sampler takes.
        EXPECT_EQ(out.top_ids[0], 7);
        EXPECT_EQ(out.top_ids[1], 8);
        EXPECT_EQ(out.top_ids[2], 9);
      }
      for (int j = 0; j < k; j++) EXPECT_NE(out.top_ids[j], 20) << "a NaN logit is never an alternative";
    }
  }
  // The probabilities of a temperature-1 row sum to 1.
  const std::vector<double> ref = RefLogSoftmax(logits.data(), V, 1.0);
  double total = 0;
  for (int i = 0; i < V; i++) {
    engine::SampledToken out;
    out.id = i;
    ComputeLogprobs(logits.data(), V, 1.0f, 0, &out);
    total += std::exp(out.logprob);
  }
  EXPECT_NEAR(total, 1.0, 1e-9);
  // -inf and NaN ids have probability 0, reported at the floor.
  engine::SampledToken out;
  out.id = 21;
  ComputeLogprobs(logits.data(), V, 1.0f, 0, &out);
  EXPECT_EQ(out.logprob, engine::kMinLogprob);
  out.id = 20;
  ComputeLogprobs(logits.data(), V, 1.0f, 0, &out);
  EXPECT_EQ(out.logprob, engine::kMinLogprob);
}

// The rank counts the ids strictly more likely (vLLM's): ties share a
// rank, NaN logits are never above, a NaN chosen logit counts as -inf.
TEST(ComputeLogprobs, RankCountsTheStrictlyMoreLikelyIds) {
  const float logits[6] = {1.0f, 3.0f, 3.0f, 2.0f, NAN, -INFINITY};
  const int32_t want[6] = {4, 1, 1, 3, 5, 5};
  for (int32_t id = 0; id < 6; id++) {
    for (float T : {0.0f, 0.5f, 2.0f}) {
      engine::SampledToken o;
      o.id = id;
      ComputeLogprobs(logits, 6, T, 2, &o);
      EXPECT_EQ(o.rank, want[id]) << "id " << id << " T " << T;
    }
  }
}

TEST(ComputeLogprobs, TemperatureScalesTheDistributionAndGreedyReportsTemperatureOne) {
  const float logits[4] = {2.0f, 1.0f, 0.0f, -1.0f};
  engine::SampledToken hot, one, greedy;
  hot.id = one.id = greedy.id = 0;
  ComputeLogprobs(logits, 4, 2.0f, 4, &hot);
  ComputeLogprobs(logits, 4, 1.0f, 4, &one);
  ComputeLogprobs(logits, 4, 0.0f, 4, &greedy);
  const double z1 = std::exp(2.0) + std::exp(1.0) + 1 + std::exp(-1.0);
  const double z2 = std::exp(1.0) + std::exp(0.5) + 1 + std::exp(-0.5);
  EXPECT_NEAR(one.logprob, 2.0 - std::log(z1), 1e-12);
  EXPECT_NEAR(hot.logprob, 1.0 - std::log(z2), 1e-12);
  EXPECT_EQ(greedy.logprob, one.logprob);
  EXPECT_EQ(greedy.top_count, 4);
  for (int j = 0; j < 4; j++) EXPECT_EQ(greedy.top_ids[j], j);
}

class GoldenLogprobsTest : public ::testing::Test {
 protected:
  struct Case {
    std::vector<int32_t> prompt;
    std::vector<float> last_logits;    // (V) the golden logits after the prompt
    std::vector<float> prompt_logits;  // (T, V) the golden logits at every prompt position
  };
  static void SetUpTestSuite() {
    std::unique_ptr<Gpt2Model> m;
    Status s = LoadGpt2(testing::DataPath("golden/tiny-gpt2"), &m);
    ASSERT_TRUE(s.ok()) << s.message();
    model_ = std::shared_ptr<const Gpt2Model>(std::move(m));
    bool ok = false;
    std::string text = testing::ReadFile(testing::DataPath("golden/tiny-gpt2.golden.json"), &ok);
    ASSERT_TRUE(ok);
    json::Value doc;
    ASSERT_TRUE(json::Parse(text, &doc).ok());
    const int V = model_->config().vocab_size;
    cases_ = new std::vector<Case>();
    for (const json::Value& c : doc.Find("cases")->items()) {
      Case g;
      for (const json::Value& t : c.Find("prompt_tokens")->items()) g.prompt.push_back(static_cast<int32_t>(t.as_int()));
      std::string raw = testing::ReadFile(
          testing::DataPath("golden/tiny-gpt2-logits/" + c.Find("prompt_logits_file")->as_string()), &ok);
      ASSERT_TRUE(ok);
      ASSERT_EQ(raw.size(), g.prompt.size() * V * sizeof(float));
      g.last_logits.resize(V);
      std::memcpy(g.last_logits.data(), raw.data() + (g.prompt.size() - 1) * V * sizeof(float), V * sizeof(float));
      g.prompt_logits.resize(g.prompt.size() * V);
      std::memcpy(g.prompt_logits.data(), raw.data(), raw.size());
      cases_->push_back(std::move(g));
    }
    ASSERT_EQ(cases_->size(), 4u);
  }
  static void TearDownTestSuite() {
    delete cases_;
    cases_ = nullptr;
    model_.reset();
  }
  static std::shared_ptr<const Gpt2Model> model_;
  static std::vector<Case>* cases_;
};
std::shared_ptr<const Gpt2Model> GoldenLogprobsTest::model_;
std::vector<GoldenLogprobsTest::Case>* GoldenLogprobsTest::cases_ = nullptr;

TEST_F(GoldenLogprobsTest, RunnerLogprobsEqualTheFloat64Reference) {
  const int V = model_->config().vocab_size;
  engine::RunnerLimits limits;
  limits.max_batch = 4;
  limits.num_kv_blocks = 64;
  limits.block_size_tokens = 16;
  limits.max_step_tokens = 64;
  limits.threads = 2;
  std::unique_ptr<CpuRunner> runner;
  Status s = CpuRunner::Create(model_, limits, &runner);
  ASSERT_TRUE(s.ok()) << s.message();
  for (float T : {0.0f, 0.7f, 1.0f, 1.5f}) {
    const double tol = 3e-4 / (T > 0 ? std::min(T, 1.0f) : 1.0f);
    // Every case in one step, each asking for the top 20, and the
    // same rows again without logprobs: the draws must not change.
    std::vector<std::vector<int32_t>> tables(cases_->size());
    std::vector<engine::SeqView> views, plain;
    for (size_t c = 0; c < cases_->size(); c++) {
      for (int b = 0; b < 4; b++) tables[c].push_back(static_cast<int32_t>(c * 4 + b));
      engine::SeqView v;
      v.block_table = tables[c].data();
      v.num_blocks = 4;
      v.tokens = (*cases_)[c].prompt.data();
      v.n = static_cast<int>((*cases_)[c].prompt.size());
      v.sampling.temperature = T;
      v.sampling.seed = 1234 + c;
      v.sampling.logprobs = 20;
      views.push_back(v);
      v.sampling.logprobs = -1;
      plain.push_back(v);
    }
    std::vector<engine::SampledToken> out(views.size()), base(views.size());
    ASSERT_TRUE(runner->Step(views.data(), static_cast<int>(views.size()), out.data()).ok());
    ASSERT_TRUE(runner->Step(plain.data(), static_cast<int>(plain.size()), base.data()).ok());
    for (size_t c = 0; c < cases_->size(); c++) {
      const std::string where = "T=" + std::to_string(T) + " case " + std::to_string(c);
      const std::vector<double> ref = RefLogSoftmax((*cases_)[c].last_logits.data(), V, T);
      const std::vector<int32_t> order = RefOrder(ref);
      const engine::SampledToken& o = out[c];
      EXPECT_EQ(o.id, base[c].id) << where << ": asking for logprobs changed the draw";
      EXPECT_FALSE(base[c].has_logprobs) << where;
      ASSERT_TRUE(o.has_logprobs) << where;
      EXPECT_NEAR(o.logprob, ref[o.id], tol) << where << " sampled id " << o.id;
      ASSERT_EQ(o.top_count, 20) << where;
      for (int j = 0; j < 20; j++) {
        EXPECT_NEAR(o.top_logprobs[j], ref[o.top_ids[j]], tol) << where << " rank " << j;
        // The j-th reference value, whichever id holds it at a near tie.
        EXPECT_NEAR(o.top_logprobs[j], ref[order[j]], tol) << where << " rank " << j;
      }
      if (T == 0.0f) {
        EXPECT_EQ(o.id, o.top_ids[0]) << where << ": greedy draws the most likely";
      }
    }
  }
}

// A runner over the golden model.
std::unique_ptr<CpuRunner> GoldenRunner(std::shared_ptr<const Gpt2Model> model, int max_batch, int max_step) {
  engine::RunnerLimits limits;
  limits.max_batch = max_batch;
  limits.num_kv_blocks = 64;
  limits.block_size_tokens = 16;
  limits.max_step_tokens = max_step;
  limits.threads = 2;
  std::unique_ptr<CpuRunner> runner;
  Status s = CpuRunner::Create(std::move(model), limits, &runner);
  EXPECT_TRUE(s.ok()) << s.message();
  return runner;
}

// One sequence's prefill of `prompt` into blocks 0..3 (the runner's cache is
// simply overwritten by the next call), at T = 1 with `logprobs`; with
// prompt_k >= 0 its prompt's log-probabilities go to *prompt_out.
Status PrefillOne(CpuRunner* runner, const std::vector<int32_t>& prompt, int logprobs, int prompt_k,
                  std::vector<engine::SampledToken>* prompt_out, engine::SampledToken* out) {
  static const int32_t kTable[4] = {0, 1, 2, 3};
  engine::SeqView v;
  v.block_table = kTable;
  v.num_blocks = 4;
  v.tokens = prompt.data();
  v.n = static_cast<int>(prompt.size());
  v.sampling.temperature = 1.0f;
  v.sampling.seed = 99;
  v.sampling.logprobs = logprobs;
  if (prompt_k >= 0) {
    prompt_out->assign(prompt.size() - 1, engine::SampledToken());
    v.prompt_logprobs = prompt_k;
    v.prompt_out = prompt_out->data();
  }
  return runner->Step(&v, 1, out);
}

bool SameEntry(const engine::SampledToken& a, const engine::SampledToken& b) {
  if (a.id != b.id || a.rank != b.rank || a.top_count != b.top_count) return false;
  if (std::memcmp(&a.logprob, &b.logprob, sizeof(double)) != 0) return false;
  for (int j = 0; j < a.top_count; j++) {
    if (a.top_ids[j] != b.top_ids[j]) return false;
    if (std::memcmp(&a.top_logprobs[j], &b.top_logprobs[j], sizeof(double)) != 0) return false;
  }
  return true;
}

// Prompt log-probabilities (SeqView::prompt_logprobs): at every position of
// every golden prompt, the next prompt token's log-probability, its rank and
// the top 20 equal log softmax of the golden float64 logits within 3e-4 (the
// rank within the ids whose reference lies that close); asking for them
// does not change the drawn token.
TEST_F(GoldenLogprobsTest, PromptLogprobsEqualTheFloat64Reference) {
  const int V = model_->config().vocab_size;
  constexpr double tol = 3e-4;
  std::unique_ptr<CpuRunner> runner = GoldenRunner(model_, 4, 64);
  ASSERT_TRUE(runner);
  for (size_t c = 0; c < cases_->size(); c++) {
    const Case& g = (*cases_)[c];
    std::vector<engine::SampledToken> prompt;
    engine::SampledToken out, plain;
    ASSERT_TRUE(PrefillOne(runner.get(), g.prompt, -1, 20, &prompt, &out).ok());
    ASSERT_TRUE(PrefillOne(runner.get(), g.prompt, -1, -1, nullptr, &plain).ok());
    EXPECT_EQ(out.id, plain.id) << "case " << c << ": asking for the prompt's changed the draw";
    ASSERT_EQ(prompt.size(), g.prompt.size() - 1);
    for (size_t j = 0; j + 1 < g.prompt.size(); j++) {
      const std::string where = "case " + std::to_string(c) + " position " + std::to_string(j);
      const std::vector<double> ref = RefLogSoftmax(g.prompt_logits.data() + j * V, V, 1.0);
      const std::vector<int32_t> order = RefOrder(ref);
      const engine::SampledToken& o = prompt[j];
      const int32_t id = g.prompt[j + 1];
      ASSERT_EQ(o.id, id) << where;
      ASSERT_TRUE(o.has_logprobs) << where;
      EXPECT_NEAR(o.logprob, ref[id], tol) << where;
      int above_far = 0, above_near = 0;  // ids surely above, and those possibly above
      for (int i = 0; i < V; i++) {
        above_far += ref[i] > ref[id] + tol;
        above_near += ref[i] > ref[id] - tol && i != id;
      }
      EXPECT_GE(o.rank, above_far + 1) << where;
      EXPECT_LE(o.rank, above_near + 1) << where;
      ASSERT_EQ(o.top_count, 20) << where;
      for (int t = 0; t < 20; t++) {
        EXPECT_NEAR(o.top_logprobs[t], ref[o.top_ids[t]], tol) << where << " top " << t;
        EXPECT_NEAR(o.top_logprobs[t], ref[order[t]], tol) << where << " top " << t;
      }
    }
  }
}

// The prompt's entries are bitwise the same however the prompt is chunked
// and however many rows of logits the runner computes at once, and each
// equals the log-probabilities a prefill of the prompt cut before that
// token reports for its own next token (the same logits, the same code).
TEST_F(GoldenLogprobsTest, PromptLogprobsDoNotDependOnChunkingAndEqualTheNextTokensOfCutPrompts) {
  std::unique_ptr<CpuRunner> wide = GoldenRunner(model_, 4, 64);
  std::unique_ptr<CpuRunner> narrow = GoldenRunner(model_, 3, 5);
  ASSERT_TRUE(wide && narrow);
  const Case& g = (*cases_)[2];
  std::vector<engine::SampledToken> a, b;
  engine::SampledToken out_a, out_b;
  ASSERT_TRUE(PrefillOne(wide.get(), g.prompt, -1, 7, &a, &out_a).ok());
  ASSERT_TRUE(PrefillOne(narrow.get(), g.prompt, -1, 7, &b, &out_b).ok());
  EXPECT_EQ(out_a.id, out_b.id);
  ASSERT_EQ(a.size(), b.size());
  for (size_t j = 0; j < a.size(); j++) EXPECT_TRUE(SameEntry(a[j], b[j])) << "position " << j;
  for (size_t cut = 1; cut < g.prompt.size(); cut += 3) {
    const std::vector<int32_t> head(g.prompt.begin(), g.prompt.begin() + static_cast<long>(cut));
    engine::SampledToken next;
    ASSERT_TRUE(PrefillOne(wide.get(), head, 7, -1, nullptr, &next).ok());
    ASSERT_EQ(next.top_count, a[cut - 1].top_count) << "cut " << cut;
    for (int t = 0; t < next.top_count; t++) {
      EXPECT_EQ(next.top_ids[t], a[cut - 1].top_ids[t]) << "cut " << cut << " top " << t;
      EXPECT_EQ(std::memcmp(&next.top_logprobs[t], &a[cut - 1].top_logprobs[t], sizeof(double)), 0)
          << "cut " << cut << " top " << t;
    }
  }
}

// A row asking for its prompt's log-probabilities has its output, asks for
// at most 20 alternatives and, when its chunk does not sample, names the
// token after it; anything else is refused before the cache is touched.
// Such a row may share a step with others and its prompt may be split over
// steps: its entries are bitwise those of the prompt alone in one call.
TEST_F(GoldenLogprobsTest, PromptLogprobsRowsAreCheckedAndMayBeChunkedBesideOthers) {
  std::unique_ptr<CpuRunner> runner = GoldenRunner(model_, 4, 64);
  ASSERT_TRUE(runner);
  const std::vector<int32_t>& p = (*cases_)[0].prompt;
  const int n = static_cast<int>(p.size());
  ASSERT_GE(n, 4);
  std::vector<engine::SampledToken> alone;
  engine::SampledToken alone_out;
  ASSERT_TRUE(PrefillOne(runner.get(), p, -1, 3, &alone, &alone_out).ok());
  std::vector<engine::SampledToken> entries(p.size() - 1);
  const int32_t t0[4] = {0, 1, 2, 3}, t1[4] = {4, 5, 6, 7};
  engine::SeqView v[2];
  for (int i = 0; i < 2; i++) {
    v[i].block_table = i == 0 ? t0 : t1;
    v[i].num_blocks = 4;
    v[i].tokens = p.data();
    v[i].n = n;
    v[i].sampling.temperature = 1.0f;  // as PrefillOne draws
    v[i].sampling.seed = 99;
  }
  v[0].prompt_logprobs = 3;
  engine::SampledToken out[2];
  EXPECT_FALSE(runner->Step(v, 2, out).ok());  // no output
  v[0].prompt_out = entries.data();
  v[0].prompt_logprobs = 21;
  EXPECT_FALSE(runner->Step(v, 1, out).ok());  // too many alternatives
  v[0].prompt_logprobs = 3;
  v[0].n = n / 2;
  v[0].sample = false;
  EXPECT_FALSE(runner->Step(v, 1, out).ok());  // a chunk that does not sample, without the token after it
  // The first half beside another sequence's whole prompt, not sampling;
  // then the second half alone.
  v[0].next_token = p[static_cast<size_t>(n / 2)];
  ASSERT_TRUE(runner->Step(v, 2, out).ok());
  engine::SeqView rest = v[0];
  rest.cached = n / 2;
  rest.tokens = p.data() + n / 2;
  rest.n = n - n / 2;
  rest.sample = true;
  rest.next_token = -1;
  rest.prompt_out = entries.data() + n / 2;
  ASSERT_TRUE(runner->Step(&rest, 1, out).ok());
  EXPECT_EQ(out[0].id, alone_out.id);
  for (size_t j = 0; j < entries.size(); j++) EXPECT_TRUE(SameEntry(entries[j], alone[j])) << "position " << j;
  EXPECT_EQ(out[1].id, alone_out.id) << "the other row drew as it would alone (same prompt, same seed)";
}

}  // namespace
}  // namespace tw::model
