// The forward pass on a small random model (vocab 1000: a ragged last
// panel; 2 layers, 4 heads, 64 wide): against a naive float64 reference
// forward (full recomputation, no cache), and the invariances the engine
// relies on, which hold bitwise because every row's float operations are the
// same sequence whatever else is computed with it:
//   batched decode of sequences of different lengths == each alone,
//   chunked prefill == whole prefill == prefill of one token + decodes,
//   1 thread == 3 threads.
// Plus argument checking and the KV block allocator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "cpu/thread_pool.h"
#include "random_gpt2.h"
#include "engine/block_allocator.h"
#include "model/forward.h"
#include "support/seq_state.h"
#include "model/kv_cache.h"

namespace tw::model {
namespace {

using testing::RandomGpt2Model;
using testing::SmallConfig;

// Naive float64 GPT-2: logits (T, V) for tokens[0..T), full recomputation.
std::vector<double> ReferenceForward(const Gpt2Model& m, const std::vector<int32_t>& tokens) {
  const Gpt2Config& c = m.config();
  const Gpt2Weights& w = m.weights();
  const int T = static_cast<int>(tokens.size()), C = c.n_embd, H = c.n_head, hd = C / H, V = c.vocab_size;
  std::vector<double> x(static_cast<size_t>(T) * C);
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < C; ++i)
      x[t * C + i] = double(w.wte[static_cast<size_t>(tokens[t]) * C + i]) + w.wpe[static_cast<size_t>(t) * C + i];
  auto layernorm = [&](const std::vector<double>& in, const float* g, const float* b) {
    std::vector<double> out(in.size());
    for (int t = 0; t < T; ++t) {
      double mean = 0, var = 0;
      for (int i = 0; i < C; ++i) mean += in[t * C + i];
      mean /= C;
      for (int i = 0; i < C; ++i) var += (in[t * C + i] - mean) * (in[t * C + i] - mean);
      var /= C;
      for (int i = 0; i < C; ++i) out[t * C + i] = (in[t * C + i] - mean) / std::sqrt(var + c.layer_norm_epsilon) * g[i] + b[i];
    }
    return out;
  };
  auto linear = [&](const std::vector<double>& in, int K, const float* W, const float* b, int N) {
    std::vector<double> out(static_cast<size_t>(T) * N);
    for (int t = 0; t < T; ++t)
      for (int n = 0; n < N; ++n) {
        double s = b[n];
        for (int k = 0; k < K; ++k) s += in[static_cast<size_t>(t) * K + k] * W[static_cast<size_t>(k) * N + n];
        out[static_cast<size_t>(t) * N + n] = s;
      }
    return out;
  };
  for (const Gpt2Layer& l : w.layers) {
    std::vector<double> qkv = linear(layernorm(x, l.ln_1_w, l.ln_1_b), C, l.attn_w, l.attn_b, 3 * C);
    std::vector<double> y(static_cast<size_t>(T) * C);
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < T; ++t) {
        std::vector<double> s(t + 1);
        double mx = -1e300, sum = 0;
        for (int j = 0; j <= t; ++j) {
          double d = 0;
          for (int i = 0; i < hd; ++i) d += qkv[t * 3 * C + h * hd + i] * qkv[j * 3 * C + C + h * hd + i];
          s[j] = d / std::sqrt(double(hd));
          mx = std::max(mx, s[j]);
        }
        for (int j = 0; j <= t; ++j) sum += std::exp(s[j] - mx);
        for (int i = 0; i < hd; ++i) {
          double o = 0;
          for (int j = 0; j <= t; ++j) o += std::exp(s[j] - mx) / sum * qkv[j * 3 * C + 2 * C + h * hd + i];
          y[t * C + h * hd + i] = o;
        }
      }
    std::vector<double> proj = linear(y, C, l.attn_proj_w, l.attn_proj_b, C);
    for (size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
    std::vector<double> fc = linear(layernorm(x, l.ln_2_w, l.ln_2_b), C, l.fc_w, l.fc_b, 4 * C);
    for (double& v : fc) v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    std::vector<double> out = linear(fc, 4 * C, l.proj_w, l.proj_b, C);
    for (size_t i = 0; i < x.size(); ++i) x[i] += out[i];
  }
  std::vector<double> xf = layernorm(x, w.ln_f_w, w.ln_f_b);
  std::vector<double> logits(static_cast<size_t>(T) * V);
  for (int t = 0; t < T; ++t)
    for (int v = 0; v < V; ++v) {
      double s = 0;
      for (int i = 0; i < C; ++i) s += xf[t * C + i] * w.wte[static_cast<size_t>(v) * C + i];
      logits[static_cast<size_t>(t) * V + v] = s;
    }
  return logits;
}

// Every weight format: the invariances below hold bitwise within each.
constexpr cpu::WeightFormat kFormats[] = {cpu::WeightFormat::kF32, cpu::WeightFormat::kBf16,
                                          cpu::WeightFormat::kQ8};

ForwardLimits Limits(int max_batch, int chunk, cpu::WeightFormat f) {
  ForwardLimits l{max_batch, chunk};
  l.weights = f;
  return l;
}

std::vector<int32_t> RandomTokens(int n, int vocab, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> d(0, vocab - 1);
  std::vector<int32_t> t(n);
  for (int32_t& x : t) x = d(gen);
  return t;
}

// A model, a pool, an allocator and a forward pass, ready to use.
struct Rig {
  Rig(const Gpt2Model& m, int block_size, ForwardLimits limits, cpu::ThreadPool* threads, int blocks = 256) {
    Status s = KvPool::Create(m.config(), KvCacheConfig{blocks, block_size}, &kv);
    EXPECT_TRUE(s.ok()) << s.message();
    alloc = std::make_unique<engine::BlockAllocator>(blocks);
    s = Gpt2Forward::Create(m, kv.get(), threads, limits, &fwd);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  SeqState NewSeq(int tokens) {
    SeqState seq;
    EXPECT_TRUE(alloc->Alloc(BlocksFor(tokens, kv->block_size()), &seq.block_table));
    return seq;
  }
  std::unique_ptr<KvPool> kv;
  std::unique_ptr<engine::BlockAllocator> alloc;
  std::unique_ptr<Gpt2Forward> fwd;
};

class ForwardTest : public ::testing::Test {
 protected:
  RandomGpt2Model model_{SmallConfig(), 42};
  const int V = SmallConfig().vocab_size;
};

TEST_F(ForwardTest, MatchesNaiveFloat64ReferenceAtEveryPosition) {
  cpu::ThreadPool threads(2);
  Rig rig(model_, 4, ForwardLimits{4, 16}, &threads);
  const std::vector<int32_t> tokens = RandomTokens(37, V, 1);  // 3 prefill chunks
  std::vector<double> ref = ReferenceForward(model_, tokens);
  SeqState seq = rig.NewSeq(37);
  std::vector<float> logits(37 * static_cast<size_t>(V), NAN);
  ASSERT_TRUE(model::Prefill(*rig.fwd, &seq, tokens.data(), 30, nullptr, logits.data()).ok());
  SeqState* one = &seq;
  for (int t = 30; t < 37; ++t) {
    ASSERT_TRUE(model::DecodeBatch(*rig.fwd, &one, &tokens[t], 1, logits.data() + static_cast<size_t>(t) * V).ok());
  }
  double worst = 0, biggest = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    worst = std::max(worst, std::fabs(logits[i] - ref[i]));
    biggest = std::max(biggest, std::fabs(ref[i]));
  }
  EXPECT_LE(worst, 1e-4);
  EXPECT_GT(biggest, 0.5);  // the logits are not trivially small
}

// Batched decode of sequences of different lengths == each alone, bitwise.
void ExpectBatchedDecodeEqualsEachAlone(const Gpt2Model& model, int V, cpu::WeightFormat format) {
  cpu::ThreadPool threads(2);
  const std::vector<int> lengths = {1, 4, 9, 17, 30};
  const int B = static_cast<int>(lengths.size()), steps = 6;
  // Solo: each sequence in its own rig, decoded with batch 1.
  std::vector<std::vector<float>> solo(B);
  for (int b = 0; b < B; ++b) {
    Rig rig(model, 16, Limits(1, 64, format), &threads);
    std::vector<int32_t> toks = RandomTokens(lengths[b] + steps, V, 100 + b);
    SeqState seq = rig.NewSeq(lengths[b] + steps);
    ASSERT_TRUE(model::Prefill(*rig.fwd, &seq, toks.data(), lengths[b], nullptr).ok());
    solo[b].assign(static_cast<size_t>(steps) * V, NAN);
    SeqState* one = &seq;
    for (int s = 0; s < steps; ++s) {
      ASSERT_TRUE(model::DecodeBatch(*rig.fwd, &one, &toks[lengths[b] + s], 1, solo[b].data() + static_cast<size_t>(s) * V).ok());
    }
  }
  // Batched: all in one pool (block size 3, interleaved blocks), one DecodeBatch per step.
  Rig rig(model, 3, Limits(B, 64, format), &threads);
  std::vector<SeqState> seqs(B);
  std::vector<SeqState*> ptrs;
  std::vector<std::vector<int32_t>> toks(B);
  for (int b = 0; b < B; ++b) {
    toks[b] = RandomTokens(lengths[b] + steps, V, 100 + b);
    ptrs.push_back(&seqs[b]);
  }
  for (int blk = 0; blk < 20; ++blk) {  // round-robin block allocation
    for (int b = 0; b < B; ++b) {
      if (static_cast<int>(seqs[b].block_table.size()) < BlocksFor(lengths[b] + steps, 3)) {
        ASSERT_TRUE(rig.alloc->Alloc(1, &seqs[b].block_table));
      }
    }
  }
  for (int b = 0; b < B; ++b) ASSERT_TRUE(model::Prefill(*rig.fwd, &seqs[b], toks[b].data(), lengths[b], nullptr).ok());
  std::vector<float> out(static_cast<size_t>(B) * V);
  for (int s = 0; s < steps; ++s) {
    std::vector<int32_t> step_tokens(B);
    for (int b = 0; b < B; ++b) step_tokens[b] = toks[b][lengths[b] + s];
    std::fill(out.begin(), out.end(), NAN);
    ASSERT_TRUE(model::DecodeBatch(*rig.fwd, ptrs.data(), step_tokens.data(), B, out.data()).ok());
    for (int b = 0; b < B; ++b) {
      EXPECT_EQ(0, std::memcmp(out.data() + static_cast<size_t>(b) * V, solo[b].data() + static_cast<size_t>(s) * V,
                               sizeof(float) * V))
          << "sequence " << b << " step " << s;
      EXPECT_EQ(seqs[b].length, lengths[b] + s + 1);
    }
  }
}

TEST_F(ForwardTest, BatchedDecodeOfDifferentLengthsEqualsEachAloneBitwise) {
  for (cpu::WeightFormat f : kFormats) {
    SCOPED_TRACE(cpu::WeightFormatName(f));
    ExpectBatchedDecodeEqualsEachAlone(model_, V, f);
  }
}

// Prefill in one pass, in chunks of 7 (its attention groups of up to four
// rows cut differently), on 3 threads, and one token at a time through the
// decode path: the same bits. Also with GPT-2's head size (64), where the
// vector levels attend a group of rows in one walk over the K/V blocks
// (cpu::AttendRows) and a single row on its own path.
void ExpectPrefillPathsAgree(const Gpt2Model& model, int V, cpu::WeightFormat format) {
  const int T = 20;
  const std::vector<int32_t> toks = RandomTokens(T, V, 7);
  auto run = [&](int chunk, int threads, bool decode_after_first) {
    cpu::ThreadPool pool(threads);
    Rig rig(model, 5, Limits(2, chunk, format), &pool);
    SeqState seq = rig.NewSeq(T);
    std::vector<float> out(static_cast<size_t>(T) * V, NAN);
    if (decode_after_first) {
      EXPECT_TRUE(model::Prefill(*rig.fwd, &seq, toks.data(), 1, nullptr, out.data()).ok());
      SeqState* one = &seq;
      for (int t = 1; t < T; ++t) EXPECT_TRUE(model::DecodeBatch(*rig.fwd, &one, &toks[t], 1, out.data() + static_cast<size_t>(t) * V).ok());
    } else {
      std::vector<float> last(V, NAN);
      EXPECT_TRUE(model::Prefill(*rig.fwd, &seq, toks.data(), T, last.data(), out.data()).ok());
      EXPECT_EQ(0, std::memcmp(last.data(), out.data() + static_cast<size_t>(T - 1) * V, sizeof(float) * V));
    }
    EXPECT_EQ(seq.length, T);
    return out;
  };
  std::vector<float> whole = run(64, 1, false);
  for (float v : whole) ASSERT_FALSE(std::isnan(v));
  EXPECT_EQ(0, std::memcmp(whole.data(), run(7, 1, false).data(), whole.size() * sizeof(float))) << "chunk 7";
  EXPECT_EQ(0, std::memcmp(whole.data(), run(64, 3, false).data(), whole.size() * sizeof(float))) << "3 threads";
  EXPECT_EQ(0, std::memcmp(whole.data(), run(64, 2, true).data(), whole.size() * sizeof(float))) << "decode path";
}

TEST_F(ForwardTest, PrefillChunkingAndThreadCountDoNotChangeLogits) {
  model::Gpt2Config c = SmallConfig();
  c.n_embd = 128;
  c.n_head = 2;  // head size 64
  RandomGpt2Model wide(c, 43);
  for (cpu::WeightFormat f : kFormats) {
    SCOPED_TRACE(cpu::WeightFormatName(f));
    ExpectPrefillPathsAgree(model_, V, f);
    ExpectPrefillPathsAgree(wide, c.vocab_size, f);
  }
}

// Several prompts in one Batch pass: each sequence's last logits, and
// what it decodes afterwards, are bitwise those of its own Prefill (prompts
// of different lengths, sequences that already hold tokens, scattered
// blocks, 1 and 3 threads); the reference forward agrees within tolerance.
TEST_F(ForwardTest, BatchEqualsEachPrefillAlone) {
  const std::vector<int> lengths = {5, 1, 13, 7, 2, 9};
  const int B = static_cast<int>(lengths.size());
  std::vector<std::vector<int32_t>> toks;
  for (int b = 0; b < B; ++b) toks.push_back(RandomTokens(lengths[b] + 4, V, 50 + b));
  cpu::ThreadPool three(3);
  for (cpu::WeightFormat format : kFormats)
  for (cpu::ThreadPool* pool : {static_cast<cpu::ThreadPool*>(nullptr), &three}) {
    SCOPED_TRACE(cpu::WeightFormatName(format));
    Rig rig(model_, 4, Limits(8, 40, format), pool);
    // Alone: a 4-token head start, then the prompt, then one decode step.
    std::vector<std::vector<float>> alone(B, std::vector<float>(V)), alone_next(B, std::vector<float>(V));
    for (int b = 0; b < B; ++b) {
      SeqState s = rig.NewSeq(lengths[b] + 5);
      ASSERT_TRUE(model::Prefill(*rig.fwd, &s, toks[b].data(), 4, nullptr).ok());
      ASSERT_TRUE(model::Prefill(*rig.fwd, &s, toks[b].data() + 4, lengths[b], alone[b].data()).ok());
      SeqState* one = &s;
      int32_t next = 7;
      ASSERT_TRUE(model::DecodeBatch(*rig.fwd, &one, &next, 1, alone_next[b].data()).ok());
    }
    // Together, in blocks taken in a scrambled order.
    std::vector<SeqState> seqs(B);
    for (int b = B - 1; b >= 0; --b) {
      seqs[b] = rig.NewSeq(lengths[b] + 5);
      std::reverse(seqs[b].block_table.begin(), seqs[b].block_table.end());
      ASSERT_TRUE(model::Prefill(*rig.fwd, &seqs[b], toks[b].data(), 4, nullptr).ok());
    }
    std::vector<SeqState*> ptrs;
    std::vector<const int32_t*> tp;
    for (int b = 0; b < B; ++b) {
      ptrs.push_back(&seqs[b]);
      tp.push_back(toks[b].data() + 4);
    }
    std::vector<float> logits(static_cast<size_t>(B) * V), next_logits(static_cast<size_t>(B) * V);
    ASSERT_TRUE(model::Batch(*rig.fwd, ptrs.data(), tp.data(), lengths.data(), B, logits.data()).ok());
    std::vector<int32_t> next(B, 7);
    ASSERT_TRUE(model::DecodeBatch(*rig.fwd, ptrs.data(), next.data(), B, next_logits.data()).ok());
    for (int b = 0; b < B; ++b) {
      EXPECT_EQ(seqs[b].length, lengths[b] + 5);
      EXPECT_EQ(0, std::memcmp(alone[b].data(), logits.data() + static_cast<size_t>(b) * V, V * sizeof(float)))
          << "sequence " << b;
      EXPECT_EQ(0, std::memcmp(alone_next[b].data(), next_logits.data() + static_cast<size_t>(b) * V,
                               V * sizeof(float)))
          << "decode after the batched prefill, sequence " << b;
    }
    if (format != cpu::WeightFormat::kF32) continue;  // their drift: weight_formats_test.cc
    std::vector<int32_t> full(toks[2].begin(), toks[2].begin() + 4 + lengths[2]);
    std::vector<double> ref = ReferenceForward(model_, full);
    for (int v = 0; v < V; ++v) {
      ASSERT_NEAR(logits[2 * static_cast<size_t>(V) + v], ref[(full.size() - 1) * V + v], 2e-4) << v;
    }
  }
}

// An engine step's pass: decode rows (one token each) beside prompt chunks,
// one chunk ending its prompt and one not. Only the sampling rows get
// logits, compact in row order, each bitwise its sequence's alone; the
// chunk that did not sample goes on in the next pass and ends with the
// logits of its whole prompt prefilled alone (1 and 3 threads, every
// format).
TEST_F(ForwardTest, BatchOfDecodesAndChunksGivesLogitsOnlyToTheRowsThatSample) {
  const std::vector<int32_t> pa = RandomTokens(6, V, 61), pb = RandomTokens(11, V, 62), pc = RandomTokens(3, V, 63),
                             pd = RandomTokens(5, V, 64);
  const int32_t ta = 17, tc = 23;  // the decoders' next tokens
  cpu::ThreadPool three(3);
  for (cpu::WeightFormat format : kFormats)
  for (cpu::ThreadPool* pool : {static_cast<cpu::ThreadPool*>(nullptr), &three}) {
    SCOPED_TRACE(cpu::WeightFormatName(format));
    Rig rig(model_, 4, Limits(8, 24, format), pool);
    // Alone: a and c prefill their prompts then decode one token; b and d prefill theirs.
    std::vector<float> want_a(V), want_c(V), want_b(V), want_d(V), scratch(V);
    {
      SeqState a = rig.NewSeq(8), b = rig.NewSeq(12), c = rig.NewSeq(8), d = rig.NewSeq(8);
      ASSERT_TRUE(model::Prefill(*rig.fwd, &a, pa.data(), 6, scratch.data()).ok());
      SeqState* one = &a;
      ASSERT_TRUE(model::DecodeBatch(*rig.fwd, &one, &ta, 1, want_a.data()).ok());
      ASSERT_TRUE(model::Prefill(*rig.fwd, &c, pc.data(), 3, scratch.data()).ok());
      one = &c;
      ASSERT_TRUE(model::DecodeBatch(*rig.fwd, &one, &tc, 1, want_c.data()).ok());
      ASSERT_TRUE(model::Prefill(*rig.fwd, &b, pb.data(), 11, want_b.data()).ok());
      ASSERT_TRUE(model::Prefill(*rig.fwd, &d, pd.data(), 5, want_d.data()).ok());
    }
    SeqState a = rig.NewSeq(8), b = rig.NewSeq(12), c = rig.NewSeq(8), d = rig.NewSeq(8);
    ASSERT_TRUE(model::Prefill(*rig.fwd, &a, pa.data(), 6, scratch.data()).ok());
    ASSERT_TRUE(model::Prefill(*rig.fwd, &c, pc.data(), 3, scratch.data()).ok());
    // The step: a's and c's decodes, b's first 7 tokens (no draw), d's whole prompt.
    SeqState* rows[4] = {&a, &c, &b, &d};
    const int32_t* tp[4] = {&ta, &tc, pb.data(), pd.data()};
    int n[4] = {1, 1, 7, 5};
    bool sample[4] = {true, true, false, true};
    std::vector<float> logits(4 * static_cast<size_t>(V), -1.0f);
    ASSERT_TRUE(model::Batch(*rig.fwd, rows, tp, n, 4, logits.data(), sample).ok());
    auto row = [&](int k) { return logits.data() + static_cast<size_t>(k) * V; };
    EXPECT_EQ(0, std::memcmp(want_a.data(), row(0), V * sizeof(float))) << "a's decode";
    EXPECT_EQ(0, std::memcmp(want_c.data(), row(1), V * sizeof(float))) << "c's decode";
    EXPECT_EQ(0, std::memcmp(want_d.data(), row(2), V * sizeof(float))) << "d's prompt, the third sampling row";
    EXPECT_EQ(row(3)[0], -1.0f) << "three rows sampled: the fourth is never written";
    // b's last 4 tokens in the next pass, beside d's first decode.
    SeqState* rows2[2] = {&d, &b};
    const int32_t td = 5;
    const int32_t* tp2[2] = {&td, pb.data() + 7};
    int n2[2] = {1, 4};
    ASSERT_TRUE(model::Batch(*rig.fwd, rows2, tp2, n2, 2, logits.data()).ok());
    EXPECT_EQ(0, std::memcmp(want_b.data(), row(1), V * sizeof(float))) << "b's prompt over two passes";
    EXPECT_EQ(b.length, 11);
  }
}

TEST_F(ForwardTest, BatchRejectsBadArgumentsAndLeavesStateUnchanged) {
  Rig rig(model_, 4, ForwardLimits{4, 10}, nullptr, 64);
  std::vector<float> logits(3 * static_cast<size_t>(V));
  SeqState a = rig.NewSeq(12), b = rig.NewSeq(12), c = rig.NewSeq(4);
  const std::vector<int32_t> toks = RandomTokens(12, V, 5);
  auto check = [&](std::vector<SeqState*> seqs, std::vector<int> n, const char* want) {
    std::vector<const int32_t*> tp(seqs.size(), toks.data());
    Status s = model::Batch(*rig.fwd, seqs.data(), tp.data(), n.data(), static_cast<int>(seqs.size()), logits.data());
    EXPECT_FALSE(s.ok()) << want;
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
    EXPECT_EQ(a.length, 0);
    EXPECT_EQ(b.length, 0);
    EXPECT_EQ(c.length, 0);
  };
  check({&a, &b}, {6, 5}, "exceed the pass limit of 10");   // 11 tokens in one pass
  check({&a, &a}, {2, 2}, "are the same");
  check({&a, &c}, {2, 5}, "block table");                    // c holds 4 positions
  check({&a, &b}, {2, 0}, "n >= 1");
  std::vector<SeqState*> none;
  check(none, {}, "B >= 1");
  int32_t bad[2] = {1, V};
  SeqState* ab[2] = {&a, &b};
  const int32_t* badp[2] = {toks.data(), bad};
  int n2[2] = {2, 2};
  Status s = model::Batch(*rig.fwd, ab, badp, n2, 2, logits.data());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("outside [0, 1000)"), std::string::npos) << s.message();
  EXPECT_EQ(b.length, 0);
  const int32_t* okp[2] = {toks.data(), toks.data()};
  int n3[2] = {5, 5};
  ASSERT_TRUE(model::Batch(*rig.fwd, ab, okp, n3, 2, logits.data()).ok());  // exactly the limit
  EXPECT_EQ(a.length, 5);
  EXPECT_EQ(b.length, 5);
}

TEST_F(ForwardTest, RejectsBadArgumentsAndLeavesStateUnchanged) {
  Rig rig(model_, 4, ForwardLimits{2, 8}, nullptr, 64);
  std::vector<float> logits(2 * static_cast<size_t>(V));
  SeqState a = rig.NewSeq(8), b = rig.NewSeq(8);
  const std::vector<int32_t> toks = RandomTokens(12, V, 3);
  // Block table too short for 12 tokens (holds 8).
  Status s = model::Prefill(*rig.fwd, &a, toks.data(), 12, logits.data());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("block table"), std::string::npos) << s.message();
  EXPECT_EQ(a.length, 0);
  // Token out of range, n = 0.
  int32_t bad = V;
  EXPECT_FALSE(model::Prefill(*rig.fwd, &a, &bad, 1, logits.data()).ok());
  EXPECT_FALSE(model::Prefill(*rig.fwd, &a, toks.data(), 0, logits.data()).ok());
  ASSERT_TRUE(model::Prefill(*rig.fwd, &a, toks.data(), 3, logits.data()).ok());
  ASSERT_TRUE(model::Prefill(*rig.fwd, &b, toks.data(), 5, logits.data()).ok());
  // Batch too large, same sequence twice, a bad token in row 1, a block id out of range.
  SeqState* three[3] = {&a, &b, &a};
  int32_t t3[3] = {1, 2, 3};
  EXPECT_FALSE(model::DecodeBatch(*rig.fwd, three, t3, 3, logits.data()).ok());
  SeqState* dup[2] = {&a, &a};
  s = model::DecodeBatch(*rig.fwd, dup, t3, 2, logits.data());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("same sequence"), std::string::npos) << s.message();
  SeqState* pair[2] = {&a, &b};
  int32_t badrow[2] = {1, -1};
  EXPECT_FALSE(model::DecodeBatch(*rig.fwd, pair, badrow, 2, logits.data()).ok());
  SeqState broken = b;
  broken.block_table[1] = 64;
  SeqState* withbroken[2] = {&a, &broken};
  s = model::DecodeBatch(*rig.fwd, withbroken, t3, 2, logits.data());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("outside [0, 64)"), std::string::npos) << s.message();
  EXPECT_EQ(a.length, 3);
  EXPECT_EQ(b.length, 5);
  // Context window: n_ctx = 96.
  SeqState big;
  ASSERT_TRUE(rig.alloc->Alloc(BlocksFor(97, 4), &big.block_table));
  std::vector<int32_t> many = RandomTokens(97, V, 4);
  s = model::Prefill(*rig.fwd, &big, many.data(), 97, nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("n_ctx=96"), std::string::npos) << s.message();
  ASSERT_TRUE(model::Prefill(*rig.fwd, &big, many.data(), 96, nullptr).ok());
  SeqState* full = &big;
  EXPECT_FALSE(model::DecodeBatch(*rig.fwd, &full, t3, 1, logits.data()).ok());
}

TEST(KvCacheTest, PoolShapeAndBadConfig) {
  Gpt2Config c = SmallConfig();
  std::unique_ptr<KvPool> kv;
  ASSERT_TRUE(KvPool::Create(c, KvCacheConfig{10, 16}, &kv).ok());
  EXPECT_EQ(kv->FloatsPerBlock(), static_cast<size_t>(2 * 2 * 64 * 16));
  EXPECT_EQ(kv->bytes(), 10 * kv->FloatsPerBlock() * sizeof(float));
  EXPECT_EQ(kv->Offset(1, 1, 3), static_cast<size_t>(((1 * 2 + 1) * 4 + 3) * 16 * 16));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(kv->data()) % 64, 0u);
  EXPECT_FALSE(KvPool::Create(c, KvCacheConfig{0, 16}, &kv).ok());
  EXPECT_FALSE(KvPool::Create(c, KvCacheConfig{4, 0}, &kv).ok());
  c.n_head = 5;  // 64 % 5 != 0
  EXPECT_FALSE(KvPool::Create(c, KvCacheConfig{4, 16}, &kv).ok());
  EXPECT_EQ(BlocksFor(0, 16), 0);
  EXPECT_EQ(BlocksFor(16, 16), 1);
  EXPECT_EQ(BlocksFor(17, 16), 2);
}

TEST(KvCacheTest, BlockAllocatorIsAllOrNothingAndCatchesBadFrees) {
  engine::BlockAllocator a(5);
  EXPECT_EQ(a.num_free(), 5);
  std::vector<int32_t> x, y;
  ASSERT_TRUE(a.Alloc(3, &x));
  EXPECT_EQ(x, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_FALSE(a.Alloc(3, &y));  // only 2 left: takes nothing
  EXPECT_TRUE(y.empty());
  EXPECT_EQ(a.num_free(), 2);
  ASSERT_TRUE(a.Alloc(2, &y));
  EXPECT_EQ(a.num_free(), 0);
  EXPECT_FALSE(a.Alloc(1, &y));
  // Bad frees change nothing.
  EXPECT_FALSE(a.Free({5}).ok());
  EXPECT_FALSE(a.Free({-1}).ok());
  EXPECT_FALSE(a.Free({0, 0}).ok());
  EXPECT_EQ(a.num_free(), 0);
  ASSERT_TRUE(a.Free(x).ok());
  EXPECT_EQ(a.num_free(), 3);
  Status s = a.Free({4, 1});  // 4 is in use, 1 is already free
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("block 1 at index 1"), std::string::npos) << s.message();
  EXPECT_EQ(a.num_free(), 3);  // 4 was not freed either
  ASSERT_TRUE(a.Free(y).ok());
  EXPECT_EQ(a.num_free(), 5);
  std::vector<int32_t> all;
  ASSERT_TRUE(a.Alloc(5, &all));
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int32_t>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace tw::model
