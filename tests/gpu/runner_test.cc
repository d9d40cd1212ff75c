// The CUDA runner end to end (make test-gpu; skipped without a GPU):
//   - the golden tiny GPT-2 (tests/data/golden, an independent float64
//     reference): the last prompt position's logits within 1e-4 (fp32;
//     3xTF32 within 2e-4), all 40 greedy tokens identical, each decode
//     step's top-5 within the same tolerance — each case alone and all four
//     in one batch, where every row's logits must be bitwise the solo ones;
//   - CPU vs CUDA on a GPT-2-small-shaped random model: last-position logits
//     within 2e-3 of the CPU runner's, greedy tokens equal over 64 steps (a
//     difference is accepted only at a near tie of the CPU's logits, where
//     the comparison then stops);
//   - batch invariance of decode across buckets (a row alone, with 2, 7 and
//     31 companions: identical bits).
// The engine's suites run against this runner too: make test-gpu runs
// build/cuda/tests/engine_tests with TW_TEST_RUNNER=cuda.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "app/backends.h"
#include "cuda/cuda_runner.h"
#include "engine/block_allocator.h"
#include "gpu/gpu_test_util.h"
#include "json/json.h"
#include "cpu/thread_pool.h"
#include "model/forward.h"
#include "support/seq_state.h"
#include "model/kv_cache.h"
#include "model/gpt2.h"
#include "model/random_weights.h"
#include "model/sampling.h"
#include "support/chunking.h"
#include "support/numeric.h"

#if defined(TW_CUDA_EMULATOR)
#include <cuda_runtime.h>  // the emulator's counters (tests/cudaemu)
#endif

namespace tw::testing {
namespace {

struct Golden {
  std::vector<int32_t> prompt;
  std::vector<float> last_logits;  // (V) the last prompt position
  std::vector<float> prompt_logits;  // (T, V) every prompt position
  std::vector<int32_t> greedy;     // (40)
  std::vector<std::vector<std::pair<int32_t, double>>> top5;
};

std::shared_ptr<const model::Gpt2Model> LoadTiny() {
  std::unique_ptr<model::Gpt2Model> m;
  Status s = model::LoadGpt2(DataPath("golden/tiny-gpt2"), &m);
  EXPECT_TRUE(s.ok()) << s.message();
  return std::shared_ptr<const model::Gpt2Model>(std::move(m));
}

std::vector<Golden> LoadGolden(int V) {
  std::vector<Golden> out;
  bool ok = false;
  std::string text = ReadFile(DataPath("golden/tiny-gpt2.golden.json"), &ok);
  EXPECT_TRUE(ok);
  json::Value doc;
  EXPECT_TRUE(json::Parse(text, &doc).ok());
  for (const json::Value& c : doc.Find("cases")->items()) {
    Golden g;
    for (const json::Value& t : c.Find("prompt_tokens")->items()) g.prompt.push_back(static_cast<int32_t>(t.as_int()));
    std::string raw = ReadFile(DataPath("golden/tiny-gpt2-logits/" + c.Find("prompt_logits_file")->as_string()), &ok);
    EXPECT_EQ(raw.size(), g.prompt.size() * V * sizeof(float));
    g.last_logits.resize(V);
    std::memcpy(g.last_logits.data(), raw.data() + (g.prompt.size() - 1) * V * sizeof(float), V * sizeof(float));
    g.prompt_logits.resize(g.prompt.size() * V);
    std::memcpy(g.prompt_logits.data(), raw.data(), raw.size());
    for (const json::Value& t : c.Find("greedy_tokens")->items()) g.greedy.push_back(static_cast<int32_t>(t.as_int()));
    for (const json::Value& step : c.Find("greedy_steps_top5")->items()) {
      std::vector<std::pair<int32_t, double>> top;
      for (const json::Value& p : step.items()) top.emplace_back(static_cast<int32_t>(p.items()[0].as_int()), p.items()[1].as_double());
      g.top5.push_back(top);
    }
    out.push_back(std::move(g));
  }
  return out;
}

// One sequence as the engine would hold it: its blocks and what is cached.
struct Seq {
  std::vector<int32_t> table;
  std::vector<int32_t> prompt;
  int cached = 0;
  int32_t last = 0;
  int produced = 0;
  engine::SeqView Prefill() const {
    engine::SeqView v;
    v.block_table = table.data();
    v.num_blocks = static_cast<int>(table.size());
    v.cached = 0;
    v.tokens = prompt.data();
    v.n = static_cast<int>(prompt.size());
    return v;  // greedy, counter 0
  }
  engine::SeqView Decode() const {
    engine::SeqView v;
    v.block_table = table.data();
    v.num_blocks = static_cast<int>(table.size());
    v.cached = cached;
    v.tokens = &last;
    v.n = 1;
    v.sampling.counter = static_cast<uint64_t>(produced);
    return v;
  }
};

engine::RunnerLimits Limits(int max_batch, int blocks) {
  engine::RunnerLimits l;
  l.max_batch = max_batch;
  l.num_kv_blocks = blocks;
  l.block_size_tokens = 16;
  l.max_step_tokens = 256;
  return l;
}

std::vector<int32_t> TopK(const float* logits, int V, int k) { return TopIds(logits, V, k); }

// A row that asks for log-probabilities: its logits come to the host and go
// through the CPU's model::ComputeLogprobs, so the result equals that
// function on the step's logits (CudaLastLogits) exactly, and the golden
// float64 log-softmax within 3e-4; a row that does not ask gets none, and
// its draw is the same either way.
TEST(CudaRunner, LogprobsOfTheRowsThatAskEqualTheCpuCodeOnTheSameLogits) {
  TW_REQUIRE_GPU();
  auto model = LoadTiny();
  const int V = model->config().vocab_size;
  std::vector<Golden> cases = LoadGolden(V);
  std::unique_ptr<engine::ModelRunner> r;
  TW_ASSERT_OK(cuda::MakeCudaRunner(model, Limits(4, 64), cuda::CudaRunnerOptions{}, &r));
  std::vector<Seq> seqs(cases.size());
  std::vector<engine::SeqView> views;
  for (size_t c = 0; c < cases.size(); c++) {
    seqs[c].prompt = cases[c].prompt;
    for (int b = 0; b < 4; b++) seqs[c].table.push_back(static_cast<int32_t>(c * 4 + b));
    engine::SeqView v = seqs[c].Prefill();
    v.sampling.temperature = c == 0 ? 0.0f : 0.8f;
    v.sampling.seed = 7 + c;
    v.sampling.logprobs = c == 3 ? -1 : static_cast<int>(5 * c);
    views.push_back(v);
  }
  std::vector<engine::SampledToken> out(views.size());
  TW_ASSERT_OK(r->Step(views.data(), static_cast<int>(views.size()), out.data()));
  std::vector<float> logits;
  TW_ASSERT_OK(cuda::CudaLastLogits(r.get(), static_cast<int>(views.size()), &logits));
  for (size_t c = 0; c < cases.size(); c++) {
    if (views[c].sampling.logprobs < 0) {
      EXPECT_FALSE(out[c].has_logprobs);
      continue;
    }
    engine::SampledToken want;
    want.id = out[c].id;
    model::ComputeLogprobs(logits.data() + c * V, V, views[c].sampling.temperature, views[c].sampling.logprobs, &want);
    ASSERT_TRUE(out[c].has_logprobs) << c;
    EXPECT_EQ(out[c].logprob, want.logprob) << c;
    ASSERT_EQ(out[c].top_count, want.top_count) << c;
    for (int j = 0; j < want.top_count; j++) {
      EXPECT_EQ(out[c].top_ids[j], want.top_ids[j]) << c << " rank " << j;
      EXPECT_EQ(out[c].top_logprobs[j], want.top_logprobs[j]) << c << " rank " << j;
    }
    // Against the golden logits' log-softmax (float64), the sampled token's.
    engine::SampledToken golden;
    golden.id = out[c].id;
    model::ComputeLogprobs(cases[c].last_logits.data(), V, views[c].sampling.temperature, 0, &golden);
    EXPECT_NEAR(out[c].logprob, golden.logprob, 3e-4 / 0.8) << c;
  }
}

// A prompt's log-probabilities (SeqView::prompt_logprobs): the head over
// every prompt row on the device, ComputeLogprobs on the host. At every
// position of every golden prompt the next prompt token's log-probability
// and the top 5 equal log softmax of the golden float64 logits within 5e-4
// (twice the 3xTF32 logit tolerance), the rank within the ids that close;
// a runner that chunks the prompt in 5-token passes and computes 3 rows of
// logits at a time gives the same bits; the drawn token is unchanged.
TEST(CudaRunner, PromptLogprobsEqualTheFloat64ReferenceHoweverChunked) {
  TW_REQUIRE_GPU();
  auto model = LoadTiny();
  const int V = model->config().vocab_size;
  std::vector<Golden> cases = LoadGolden(V);
  std::unique_ptr<engine::ModelRunner> wide, narrow;
  TW_ASSERT_OK(cuda::MakeCudaRunner(model, Limits(4, 64), cuda::CudaRunnerOptions{}, &wide));
  engine::RunnerLimits small = Limits(3, 64);
  small.max_step_tokens = 5;
  TW_ASSERT_OK(cuda::MakeCudaRunner(model, small, cuda::CudaRunnerOptions{}, &narrow));
  constexpr double tol = 5e-4;
  for (size_t c = 0; c < cases.size(); c++) {
    Seq seq;
    seq.prompt = cases[c].prompt;
    for (int b = 0; b < 4; b++) seq.table.push_back(static_cast<int32_t>(b));
    const size_t T = seq.prompt.size();
    std::vector<engine::SampledToken> a(T - 1), b(T - 1);
    engine::SeqView v = seq.Prefill();
    engine::SampledToken plain, out_a, out_b;
    TW_ASSERT_OK(wide->Step(&v, 1, &plain));
    v.prompt_logprobs = 5;
    v.prompt_out = a.data();
    TW_ASSERT_OK(wide->Step(&v, 1, &out_a));
    v.prompt_out = b.data();
    TW_ASSERT_OK(narrow->Step(&v, 1, &out_b));
    EXPECT_EQ(out_a.id, plain.id) << c;
    EXPECT_EQ(out_b.id, plain.id) << c;
    for (size_t j = 0; j + 1 < T; j++) {
      const std::string where = "case " + std::to_string(c) + " position " + std::to_string(j);
      engine::SampledToken ref;
      ref.id = seq.prompt[j + 1];
      model::ComputeLogprobs(cases[c].prompt_logits.data() + j * V, V, 1.0f, 5, &ref);
      ASSERT_EQ(a[j].id, ref.id) << where;
      EXPECT_NEAR(a[j].logprob, ref.logprob, tol) << where;
      ASSERT_EQ(a[j].top_count, 5) << where;
      for (int t = 0; t < 5; t++) EXPECT_NEAR(a[j].top_logprobs[t], ref.top_logprobs[t], tol) << where << " top " << t;
      const float* g = cases[c].prompt_logits.data() + j * V;
      int far = 0, near = 0;
      for (int i = 0; i < V; i++) {
        far += g[i] > g[ref.id] + 4.5e-4f;  // two logits, each within 2e-4 (3xTF32)
        near += g[i] > g[ref.id] - 4.5e-4f && i != ref.id;
      }
      EXPECT_GE(a[j].rank, far + 1) << where;
      EXPECT_LE(a[j].rank, near + 1) << where;
      EXPECT_EQ(std::memcmp(&a[j].logprob, &b[j].logprob, sizeof(double)), 0) << where;
      EXPECT_EQ(a[j].rank, b[j].rank) << where;
      for (int t = 0; t < 5; t++) EXPECT_EQ(a[j].top_ids[t], b[j].top_ids[t]) << where << " top " << t;
    }
  }
}

class CudaRunnerGolden : public ::testing::TestWithParam<bool> {};

TEST_P(CudaRunnerGolden, MatchesTheFloat64ReferenceAloneAndInOneBatch) {
  TW_REQUIRE_GPU();
  const bool tf32 = GetParam();
  const double tol = tf32 ? 2e-4 : 1e-4;
  auto model = LoadTiny();
  const int V = model->config().vocab_size;
  std::vector<Golden> cases = LoadGolden(V);
  ASSERT_EQ(cases.size(), 4u);
  cuda::CudaRunnerOptions o;
  o.tf32x3 = tf32;
  std::unique_ptr<engine::ModelRunner> r;
  TW_ASSERT_OK(cuda::MakeCudaRunner(model, Limits(4, 64), o, &r));
  engine::BlockAllocator alloc(64);
  // Each case alone; its per-step logits are kept to compare with the batch.
  std::vector<std::vector<std::vector<float>>> solo(cases.size());
  for (size_t c = 0; c < cases.size(); c++) {
    const Golden& g = cases[c];
    Seq s;
    s.prompt = g.prompt;
    ASSERT_TRUE(alloc.Alloc(engine::BlocksFor(static_cast<int>(g.prompt.size() + g.greedy.size()), 16), &s.table));
    engine::SeqView v = s.Prefill();
    engine::SampledToken out;
    TW_ASSERT_OK(r->Step(&v, 1, &out));
    int32_t tok = out.id;
    std::vector<float> logits;
    TW_ASSERT_OK(cuda::CudaLastLogits(r.get(), 1, &logits));
    EXPECT_TRUE(AllClose(logits, g.last_logits, static_cast<float>(tol), 0.0f)) << "case " << c;
    solo[c].push_back(logits);
    s.cached = static_cast<int>(g.prompt.size());
    for (size_t step = 0; step < g.greedy.size(); step++) {
      ASSERT_EQ(tok, g.greedy[step]) << "case " << c << " step " << step;
      if (step > 0) {
        std::vector<int32_t> top = TopK(logits.data(), V, 5);
        for (size_t k = 0; k < 5; k++) {
          EXPECT_EQ(top[k], g.top5[step][k].first) << "case " << c << " step " << step;
          EXPECT_NEAR(logits[g.top5[step][k].first], g.top5[step][k].second, tol);
        }
      }
      if (step + 1 == g.greedy.size()) break;
      s.last = tok;
      s.produced = static_cast<int>(step) + 1;
      engine::SeqView d = s.Decode();
      TW_ASSERT_OK(r->Step(&d, 1, &out));
      tok = out.id;
      s.cached++;
      TW_ASSERT_OK(cuda::CudaLastLogits(r.get(), 1, &logits));
      solo[c].push_back(logits);
    }
    TW_ASSERT_OK(alloc.Free(s.table));
  }
  // All four together: the same tokens, and every row's logits bitwise the
  // solo ones (the kernels compute a row from that row alone).
  std::vector<Seq> seqs(cases.size());
  std::vector<engine::SeqView> views;
  for (size_t c = 0; c < cases.size(); c++) {
    seqs[c].prompt = cases[c].prompt;
    ASSERT_TRUE(alloc.Alloc(engine::BlocksFor(static_cast<int>(cases[c].prompt.size() + 40), 16), &seqs[c].table));
    views.push_back(seqs[c].Prefill());
  }
  std::vector<engine::SampledToken> toks(cases.size());
  TW_ASSERT_OK(r->Step(views.data(), 4, toks.data()));
  for (size_t step = 0; step < 40; step++) {
    std::vector<float> logits;
    TW_ASSERT_OK(cuda::CudaLastLogits(r.get(), 4, &logits));
    for (size_t c = 0; c < cases.size(); c++) {
      ASSERT_EQ(toks[c].id, cases[c].greedy[step]) << "batch, case " << c << " step " << step;
      EXPECT_EQ(0, std::memcmp(logits.data() + c * V, solo[c][step].data(), V * sizeof(float)))
          << "case " << c << " step " << step << ": batch logits differ from solo";
    }
    if (step + 1 == 40) break;
    views.clear();
    for (size_t c = 0; c < cases.size(); c++) {
      Seq& s = seqs[c];
      if (step == 0) s.cached = static_cast<int>(s.prompt.size());
      s.last = toks[c].id;
      s.produced = static_cast<int>(step) + 1;
      views.push_back(s.Decode());
    }
    TW_ASSERT_OK(r->Step(views.data(), 4, toks.data()));
    for (Seq& s : seqs) s.cached++;
  }
}

// One engine step in one call: two sequences' decode rows beside a prompt
// chunk that does not end its prompt (no logits, no draw) and a whole
// prompt. The sampled rows' logits (compact: the decodes, then the whole
// prompt) are bitwise each row's alone, and the chunked prompt, finished in
// the next step beside a decode, ends with the logits of its prefill alone.
TEST(CudaRunner, AMixedStepOfDecodesAndPromptChunksEqualsEachRowAlone) {
  TW_REQUIRE_GPU();
  auto model = LoadTiny();
  const int V = model->config().vocab_size;
  std::vector<Golden> cases = LoadGolden(V);
  ASSERT_GE(cases.size(), 4u);
  std::unique_ptr<engine::ModelRunner> solo, mixed;
  TW_ASSERT_OK(cuda::MakeCudaRunner(model, Limits(4, 64), cuda::CudaRunnerOptions{}, &solo));
  TW_ASSERT_OK(cuda::MakeCudaRunner(model, Limits(4, 64), cuda::CudaRunnerOptions{}, &mixed));
  auto make = [&](int c) {
    Seq s;
    s.prompt = cases[static_cast<size_t>(c)].prompt;
    for (int b = 0; b < 8; b++) s.table.push_back(c * 8 + b);
    return s;
  };
  // Prefills s alone on r; then, for a decoder, feeds back its first token.
  auto prefill = [&](engine::ModelRunner* r, Seq* s, bool decoder) -> Status {
    engine::SeqView v = s->Prefill();
    engine::SampledToken t;
    if (Status st = r->Step(&v, 1, &t); !st.ok()) return st;
    if (decoder) {
      s->cached = static_cast<int>(s->prompt.size());
      s->last = t.id;
      s->produced = 1;
    }
    return Status::Ok();
  };
  std::vector<std::vector<float>> want(4);
  for (int c = 0; c < 4; c++) {
    Seq s = make(c);
    TW_ASSERT_OK(prefill(solo.get(), &s, c < 2));
    if (c < 2) {
      engine::SeqView d = s.Decode();
      engine::SampledToken t;
      TW_ASSERT_OK(solo->Step(&d, 1, &t));
    }
    TW_ASSERT_OK(cuda::CudaLastLogits(solo.get(), 1, &want[static_cast<size_t>(c)]));
  }
  Seq m[4] = {make(0), make(1), make(2), make(3)};
  TW_ASSERT_OK(prefill(mixed.get(), &m[0], true));
  TW_ASSERT_OK(prefill(mixed.get(), &m[1], true));
  const int half = static_cast<int>(m[2].prompt.size()) / 2;
  ASSERT_GE(half, 1);
  engine::SeqView views[4] = {m[0].Decode(), m[1].Decode(), m[2].Prefill(), m[3].Prefill()};
  views[2].n = half;
  views[2].sample = false;
  engine::SampledToken out[4];
  out[2].id = -7;
  TW_ASSERT_OK(mixed->Step(views, 4, out));
  EXPECT_EQ(out[2].id, -7) << "a chunk that does not sample draws nothing";
  std::vector<float> got;
  TW_ASSERT_OK(cuda::CudaLastLogits(mixed.get(), 3, &got));
  EXPECT_FALSE(cuda::CudaLastLogits(mixed.get(), 4, &got).ok()) << "three rows sampled";
  TW_ASSERT_OK(cuda::CudaLastLogits(mixed.get(), 3, &got));
  const int want_of_row[3] = {0, 1, 3};
  for (int k = 0; k < 3; k++) {
    EXPECT_EQ(0, std::memcmp(got.data() + static_cast<size_t>(k) * V, want[static_cast<size_t>(want_of_row[k])].data(),
                             V * sizeof(float)))
        << "sampled row " << k << " (case " << want_of_row[k] << ")";
  }
  // Case 2's rest beside case 3's first decode.
  m[3].cached = static_cast<int>(m[3].prompt.size());
  m[3].last = out[3].id;
  m[3].produced = 1;
  engine::SeqView rest = m[2].Prefill();
  rest.cached = half;
  rest.tokens = m[2].prompt.data() + half;
  rest.n = static_cast<int>(m[2].prompt.size()) - half;
  engine::SeqView views2[2] = {m[3].Decode(), rest};
  TW_ASSERT_OK(mixed->Step(views2, 2, out));
  TW_ASSERT_OK(cuda::CudaLastLogits(mixed.get(), 2, &got));
  EXPECT_EQ(0, std::memcmp(got.data() + V, want[2].data(), V * sizeof(float))) << "case 2's prompt over two steps";
}

INSTANTIATE_TEST_SUITE_P(Precisions, CudaRunnerGolden, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "tf32x3" : "fp32"; });

// A GPT-2-small-shaped random model, written once into a temporary folder;
// with CI shapes 2 layers of 4 heads, 256 wide (GPT-2's head size, context
// and vocabulary).
std::shared_ptr<const model::Gpt2Model> LoadSmall() {
  char dir[] = "/tmp/tw_gpu_small_XXXXXX";
  EXPECT_NE(::mkdtemp(dir), nullptr);
  model::RandomGpt2Options ro;
  model::NamedGpt2Shape("gpt2", &ro.config);
  if (CiShapes()) {
    ro.config.n_layer = 2;
    ro.config.n_head = 4;
    ro.config.n_embd = 256;
  }
  ro.seed = 3;
  EXPECT_TRUE(model::WriteRandomGpt2(dir, ro).ok());
  std::unique_ptr<model::Gpt2Model> m;
  Status s = model::LoadGpt2(dir, &m);
  EXPECT_TRUE(s.ok()) << s.message();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);  // the weights are in memory now
  return std::shared_ptr<const model::Gpt2Model>(std::move(m));
}

TEST(CudaRunner, AgreesWithTheCpuForwardPassOnAGpt2SmallShapedModel) {
  TW_REQUIRE_GPU();
  auto model = LoadSmall();
  const int V = model->config().vocab_size;
  const float tol = 2e-3f;  // fp32 logits, different summation orders
  // The CPU reference: Gpt2Forward over its own KV pool (logits exposed).
  cpu::ThreadPool pool(8);
  std::unique_ptr<model::KvPool> kv;
  TW_ASSERT_OK(model::KvPool::Create(model->config(), model::KvCacheConfig{16, 16}, &kv));
  std::unique_ptr<model::Gpt2Forward> fwd;
  TW_ASSERT_OK(model::Gpt2Forward::Create(*model, kv.get(), &pool, model::ForwardLimits{8, 256}, &fwd));
  std::unique_ptr<engine::ModelRunner> gpu;
  TW_ASSERT_OK(cuda::MakeCudaRunner(model, Limits(8, 64), cuda::CudaRunnerOptions{}, &gpu));
  model::SeqState cs;
  cs.block_table = {0, 1, 2, 3, 4, 5};
  Seq g;
  for (int i = 0; i < 20; i++) g.prompt.push_back((i * 7919 + 13) % V);
  g.table = {8, 9, 10, 11, 12, 13};
  std::vector<float> want(V), got;
  TW_ASSERT_OK(model::Prefill(*fwd, &cs, g.prompt.data(), 20, want.data()));
  engine::SeqView v = g.Prefill();
  engine::SampledToken out;
  TW_ASSERT_OK(gpu->Step(&v, 1, &out));
  int32_t tok = out.id;
  g.cached = 20;
  const int max_steps = CiShapes() ? 24 : 64;
  int steps = 0;
  float worst = 0;
  for (; steps < max_steps; steps++) {
    TW_ASSERT_OK(cuda::CudaLastLogits(gpu.get(), 1, &got));
    for (int i = 0; i < V; i++) worst = std::max(worst, std::fabs(got[i] - want[i]));
    EXPECT_TRUE(AllClose(got, want, tol, 0.0f)) << "step " << steps;
    const int32_t cpu_tok = TopK(want.data(), V, 1)[0];
    if (cpu_tok != tok) {
      // Allowed only at a near tie of the reference; the sequences part here.
      EXPECT_LT(std::fabs(want[cpu_tok] - want[tok]), tol)
          << "CPU and GPU greedy tokens differ at step " << steps << " without a near tie";
      break;
    }
    g.last = tok;
    g.produced = steps + 1;
    engine::SeqView d = g.Decode();
    TW_ASSERT_OK(gpu->Step(&d, 1, &out));
    tok = out.id;
    g.cached++;
    model::SeqState* one = &cs;
    TW_ASSERT_OK(model::DecodeBatch(*fwd, &one, &g.last, 1, want.data()));
  }
  std::printf("CPU and CUDA greedy tokens agreed for %d of %d steps; max |logit diff| %.3g\n", steps, max_steps, worst);
}

TEST(CudaRunner, DecodeIsBitwiseTheSameInEveryBucket) {
  TW_REQUIRE_GPU();
  auto model = LoadTiny();
  const int V = model->config().vocab_size;
  std::unique_ptr<engine::ModelRunner> r;
  TW_ASSERT_OK(cuda::MakeCudaRunner(model, Limits(32, 256), cuda::CudaRunnerOptions{}, &r));
  // 32 sequences with different prompts, prefilled; then the same decode
  // step for row 0 alone and with 2, 7 and 31 companions (buckets 1, 4, 8,
  // 32), each from the same cached state (position rewritten each time).
  std::vector<Seq> seqs(32);
  for (int i = 0; i < 32; i++) {
    for (int k = 0; k < 5 + i % 7; k++) seqs[i].prompt.push_back((i * 104729 + k * 7919) % V);
    for (int b = 0; b < 4; b++) seqs[i].table.push_back(i * 4 + b);
    engine::SeqView v = seqs[i].Prefill();
    engine::SampledToken t;
    TW_ASSERT_OK(r->Step(&v, 1, &t));
    seqs[i].cached = static_cast<int>(seqs[i].prompt.size());
    seqs[i].last = t.id;
    seqs[i].produced = 1;
  }
  std::vector<float> first;
  for (int companions : {0, 2, 7, 31}) {
    std::vector<engine::SeqView> views;
    for (int i = 0; i <= companions; i++) views.push_back(seqs[i].Decode());
    std::vector<engine::SampledToken> toks(views.size());
    TW_ASSERT_OK(r->Step(views.data(), static_cast<int>(views.size()), toks.data()));
    std::vector<float> logits;
    TW_ASSERT_OK(cuda::CudaLastLogits(r.get(), 1, &logits));
    if (first.empty()) {
      first = logits;
    } else {
      EXPECT_EQ(0, std::memcmp(first.data(), logits.data(), V * sizeof(float)))
          << "row 0's logits changed with " << companions << " companions";
    }
  }
}

// Greedy decoding of `prompts` (one sequence each, blocks 8 apart) for
// `steps` tokens on `r`: alone (one sequence a step) or all in one batch.
std::vector<std::vector<int32_t>> Greedy(engine::ModelRunner* r, const std::vector<std::vector<int32_t>>& prompts,
                                         int steps, bool batch) {
  std::vector<Seq> seqs(prompts.size());
  for (size_t i = 0; i < prompts.size(); i++) {
    seqs[i].prompt = prompts[i];
    for (int b = 0; b < 8; b++) seqs[i].table.push_back(static_cast<int32_t>(i * 8 + b));
  }
  std::vector<std::vector<int32_t>> out(prompts.size());
  auto run = [&](std::vector<Seq*> group) {
    std::vector<engine::SeqView> views;
    for (Seq* s : group) views.push_back(s->Prefill());
    std::vector<engine::SampledToken> toks(group.size());
    Status st = r->Step(views.data(), static_cast<int>(views.size()), toks.data());
    EXPECT_TRUE(st.ok()) << st.message();
    for (int step = 0; st.ok(); step++) {
      for (size_t g = 0; g < group.size(); g++) out[static_cast<size_t>(group[g] - seqs.data())].push_back(toks[g].id);
      if (step + 1 == steps) break;
      views.clear();
      for (size_t g = 0; g < group.size(); g++) {
        Seq& s = *group[g];
        s.cached = static_cast<int>(s.prompt.size()) + step;
        s.last = toks[g].id;
        s.produced = step + 1;
        views.push_back(s.Decode());
      }
      st = r->Step(views.data(), static_cast<int>(views.size()), toks.data());
      EXPECT_TRUE(st.ok()) << st.message();
    }
  };
  if (batch) {
    std::vector<Seq*> all;
    for (Seq& s : seqs) all.push_back(&s);
    run(all);
  } else {
    for (Seq& s : seqs) run({&s});
  }
  return out;
}

// The golden prompts and a 90-token one (more than the step buffer below).
std::vector<std::vector<int32_t>> GoldenPrompts(int V) {
  std::vector<std::vector<int32_t>> prompts;
  for (const Golden& g : LoadGolden(V)) prompts.push_back(g.prompt);
  std::vector<int32_t> longer;
  for (int i = 0; i < 90; i++) longer.push_back((i * 7919 + 101) % V);
  prompts.push_back(longer);
  return prompts;
}

// The CPU backend's runner and the CUDA runner on the golden tiny GPT-2: the
// same greedy tokens, for every prompt alone and for all in one batch.
TEST(CudaRunner, GreedyTokensEqualTheCpuRunnersAloneAndInABatch) {
  TW_REQUIRE_GPU();
  auto model = LoadTiny();
  const std::vector<std::vector<int32_t>> prompts = GoldenPrompts(model->config().vocab_size);
  engine::RunnerLimits l = Limits(8, 64);
  std::unique_ptr<engine::ModelRunner> cpu, gpu;
  TW_ASSERT_OK(app::MakeRunner("cpu", model, l, app::RunnerOptions(), &cpu));
  TW_ASSERT_OK(app::MakeRunner("cuda", model, l, app::RunnerOptions(), &gpu));
  ASSERT_STREQ(gpu->kind(), "cuda");
  const int kSteps = CiShapes() ? 12 : 24;
  const std::vector<std::vector<int32_t>> want = Greedy(cpu.get(), prompts, kSteps, /*batch=*/false);
  EXPECT_EQ(Greedy(gpu.get(), prompts, kSteps, /*batch=*/false), want) << "alone";
  EXPECT_EQ(Greedy(gpu.get(), prompts, kSteps, /*batch=*/true), want) << "in one batch";
}

// A prompt longer than the step buffer's rows is prefilled in chunks, each
// reading the earlier chunks' keys from the pool: the same logits, bit for
// bit, as one pass over the whole prompt, and the same tokens after.
TEST(CudaRunner, APromptLongerThanTheStepBufferMatchesOnePassBitwise) {
  TW_REQUIRE_GPU();
  auto model = LoadTiny();
  const int V = model->config().vocab_size;
  const std::vector<int32_t> prompt = GoldenPrompts(V).back();  // 90 tokens
  engine::RunnerLimits one_pass = Limits(4, 64), chunked = Limits(4, 64);
  one_pass.max_step_tokens = 128;
  chunked.max_step_tokens = 16;  // 6 chunks of at most 16 rows
  std::unique_ptr<engine::ModelRunner> a, b;
  TW_ASSERT_OK(cuda::MakeCudaRunner(model, one_pass, cuda::CudaRunnerOptions{}, &a));
  TW_ASSERT_OK(cuda::MakeCudaRunner(model, chunked, cuda::CudaRunnerOptions{}, &b));
  std::vector<float> la, lb;
  for (engine::ModelRunner* r : {a.get(), b.get()}) {
    Seq s;
    s.prompt = prompt;
    for (int i = 0; i < 8; i++) s.table.push_back(i);
    engine::SeqView v = s.Prefill();
    engine::SampledToken t;
    TW_ASSERT_OK(r->Step(&v, 1, &t));
    TW_ASSERT_OK(cuda::CudaLastLogits(r, 1, r == a.get() ? &la : &lb));
  }
  EXPECT_EQ(0, std::memcmp(la.data(), lb.data(), V * sizeof(float))) << "the last position's logits";
  EXPECT_EQ(Greedy(b.get(), {prompt}, 8, false), Greedy(a.get(), {prompt}, 8, false));
}

// Every decode bucket's graph is captured when the runner is made, never
// while it serves; each decode step replays one.
TEST(CudaRunner, EveryDecodeBucketIsCapturedAtStartUpAndReplayedAfter) {
  TW_REQUIRE_GPU();
  auto model = LoadTiny();
#if defined(TW_CUDA_EMULATOR)
  const cudaemu::Counters before = cudaemu::GetCounters();
#endif
  std::unique_ptr<engine::ModelRunner> r;
  TW_ASSERT_OK(cuda::MakeCudaRunner(model, Limits(32, 256), cuda::CudaRunnerOptions{}, &r));
  cuda::CudaRunnerStats made;
  TW_ASSERT_OK(cuda::CudaStats(r.get(), &made));
  EXPECT_EQ(made.graphs, 7) << "buckets 1, 2, 4, 8, 16, 24, 32";
  EXPECT_EQ(made.replays, 0);
#if defined(TW_CUDA_EMULATOR)
  const cudaemu::Counters after_make = cudaemu::GetCounters();
  EXPECT_EQ(after_make.captures - before.captures, 7);
  EXPECT_EQ(after_make.live_graph_execs - before.live_graph_execs, 7);
#endif
  std::vector<Seq> seqs(32);
  for (int i = 0; i < 32; i++) {
    seqs[i].prompt = {static_cast<int32_t>(100 + i), 7, 9};
    for (int b = 0; b < 8; b++) seqs[i].table.push_back(i * 8 + b);
    engine::SeqView v = seqs[i].Prefill();
    engine::SampledToken t;
    TW_ASSERT_OK(r->Step(&v, 1, &t));
    seqs[i].cached = 3;
    seqs[i].last = t.id;
    seqs[i].produced = 1;
  }
  int steps = 0;
  for (int batch : {1, 3, 8, 17, 32}) {
    std::vector<engine::SeqView> views;
    for (int i = 0; i < batch; i++) views.push_back(seqs[i].Decode());
    std::vector<engine::SampledToken> toks(views.size());
    TW_ASSERT_OK(r->Step(views.data(), batch, toks.data()));
    steps++;
  }
  cuda::CudaRunnerStats served;
  TW_ASSERT_OK(cuda::CudaStats(r.get(), &served));
  EXPECT_EQ(served.graphs, 7) << "no graph made while serving";
  EXPECT_EQ(served.replays, steps);
#if defined(TW_CUDA_EMULATOR)
  const cudaemu::Counters after = cudaemu::GetCounters();
  EXPECT_EQ(after.captures, after_make.captures);
  EXPECT_EQ(after.graph_launches - after_make.graph_launches, steps);
  r.reset();
  EXPECT_EQ(cudaemu::GetCounters().live_graph_execs, before.live_graph_execs) << "the runner destroys its graphs";
#endif
}

}  // namespace
}  // namespace tw::testing
