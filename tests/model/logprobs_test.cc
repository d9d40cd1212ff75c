// Log-probabilities (engine::SampledToken, model::ComputeLogprobs) against
// float64 references: on the golden model, the CPU runner's log-probabilities
// of each golden prompt's next token (the sampled one and the top 20) equal
// log softmax(logits / T) computed here in double from the golden logits
// (tests/data/golden, written by an independent float64 PyTorch
// implementation), within 3e-4 / T (the logits agree within 1e-4, and a
// log-probability moves by at most twice a logit's error divided by T); and
// ComputeLogprobs on chosen logits (ties, NaN, -inf, k = 0 and 20, greedy)
// equals a brute-force double computation.
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
    std::vector<float> last_logits;  // (V) the golden logits after the prompt
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
  limits.max_prefill_tokens = 64;
  limits.threads = 2;
  std::unique_ptr<CpuRunner> runner;
  Status s = CpuRunner::Create(model_, limits, &runner);
  ASSERT_TRUE(s.ok()) << s.message();
  for (float T : {0.0f, 0.7f, 1.0f, 1.5f}) {
    const double tol = 3e-4 / (T > 0 ? std::min(T, 1.0f) : 1.0f);
    // Every case in one prefill pass, each asking for the top 20, and the
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
    ASSERT_TRUE(runner->Prefill(views.data(), static_cast<int>(views.size()), out.data()).ok());
    ASSERT_TRUE(runner->Prefill(plain.data(), static_cast<int>(plain.size()), base.data()).ok());
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

}  // namespace
}  // namespace tw::model
