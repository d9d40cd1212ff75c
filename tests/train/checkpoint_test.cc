// A trained model's checkpoint loads through model::LoadGpt2 unchanged, and
// the project's inference pass (model::Gpt2Forward) computes the same loss
// from it as the trainer: the cross-entropy of its logits over the same
// windows agrees with Gpt2Trainer<float>::Loss within float rounding
// (1e-5 relative; the two compute layer norm, GELU and attention in
// different float orders).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "cpu/thread_pool.h"
#include "model/forward.h"
#include "model/gpt2.h"
#include "model/kv_cache.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
#include "train/optimizer.h"
#include "train/trainer.h"
#include "train_test_util.h"

namespace tw::train {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/tw_train_test_XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(Checkpoint, RoundTripsThroughLoadGpt2AndMatchesTheInferenceLoss) {
  const model::Gpt2Config c = testing::TinyTrainConfig(2, 4, 32, 97, 40);
  cpu::ThreadPool pool(2);
  std::unique_ptr<Gpt2Trainer<float>> t = testing::NewTrainer<float>(c, 3, 24, 256, &pool);
  ASSERT_TRUE(t);
  const TrainerShape& shape = t->shape();
  testing::RandomizeParams(t->layout(), 9, t->params());
  const std::vector<int32_t> tokens = testing::RandomTokens(72, c.vocab_size, 5);
  const std::vector<int32_t> targets = testing::RandomTokens(72, c.vocab_size, 6);
  double loss = 0;
  ASSERT_TRUE(t->Loss(tokens.data(), targets.data(), 3, &loss).ok());

  TempDir dir;
  CheckpointOptions opt;
  opt.tokenizer_files = false;  // not GPT-2's vocabulary
  opt.metadata = {{"step", "7"}};
  const std::string out = dir.path() + "/model";
  ASSERT_TRUE(WriteCheckpoint(out, c, t->params(), opt).ok());
  ASSERT_TRUE(WriteCheckpoint(out, c, t->params(), opt).ok()) << "rewriting over a checkpoint";
  for (const auto& e : std::filesystem::directory_iterator(out)) {
    EXPECT_EQ(e.path().extension(), e.path().filename() == "config.json" ? ".json" : ".safetensors")
        << e.path() << ": only the two files, no .tmp left";
  }
  std::unique_ptr<model::Gpt2Model> m;
  Status st = model::LoadGpt2(out, &m);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(m->config().n_layer, c.n_layer);
  EXPECT_EQ(m->config().n_embd, c.n_embd);
  EXPECT_EQ(m->config().vocab_size, c.vocab_size);
  EXPECT_EQ(m->config().n_ctx, c.n_ctx);
  // Every tensor byte for byte where the trainer has it.
  const Gpt2Params<const float> p = ParamViews(c, static_cast<const float*>(t->params()));
  const model::Gpt2Weights& w = m->weights();
  const size_t C = c.n_embd;
  EXPECT_EQ(0, std::memcmp(w.wte, p.wte, sizeof(float) * c.vocab_size * C));
  EXPECT_EQ(0, std::memcmp(w.wpe, p.wpe, sizeof(float) * c.n_ctx * C));
  EXPECT_EQ(0, std::memcmp(w.layers[1].fc_w, p.layers[1].fc_w, sizeof(float) * C * 4 * C));
  EXPECT_EQ(0, std::memcmp(w.layers[0].attn_proj_b, p.layers[0].attn_proj_b, sizeof(float) * C));
  EXPECT_EQ(0, std::memcmp(w.ln_f_b, p.ln_f_b, sizeof(float) * C));

  // The inference pass over the same windows.
  std::unique_ptr<model::KvPool> kv;
  ASSERT_TRUE(model::KvPool::Create(m->config(), model::KvCacheConfig{16, 16}, &kv).ok());
  std::unique_ptr<model::Gpt2Forward> fwd;
  ASSERT_TRUE(model::Gpt2Forward::Create(*m, kv.get(), &pool, model::ForwardLimits(), &fwd).ok());
  std::vector<float> logits(static_cast<size_t>(shape.seq) * c.vocab_size);
  const int32_t table[] = {0, 1};
  double total = 0;
  for (int b = 0; b < 3; ++b) {
    engine::SeqView seq;
    seq.block_table = table;
    seq.num_blocks = 2;
    seq.tokens = tokens.data() + b * shape.seq;
    seq.n = shape.seq;
    ASSERT_TRUE(fwd->Prefill(seq, nullptr, logits.data()).ok());
    for (int i = 0; i < shape.seq; ++i) {
      const float* l = logits.data() + static_cast<size_t>(i) * c.vocab_size;
      double mx = l[0], sum = 0;
      for (int v = 1; v < c.vocab_size; ++v) mx = std::max(mx, static_cast<double>(l[v]));
      for (int v = 0; v < c.vocab_size; ++v) sum += std::exp(l[v] - mx);
      total += std::log(sum) + mx - l[targets[b * shape.seq + i]];
    }
  }
  const double inference_loss = total / 72;
  EXPECT_NEAR(loss, inference_loss, 1e-6 * inference_loss);
  std::printf("trainer loss %.9f, inference pass %.9f\n", loss, inference_loss);
}

// --dtype bf16: half the file, every tensor BF16, and what LoadGpt2 widens
// is each parameter rounded to nearest even (cpu::Bf16FromFloat), checked
// against the rounding rule written out here on the float's bits.
TEST(Checkpoint, Bf16CheckpointsHoldEachParameterRoundedToNearestEven) {
  const model::Gpt2Config c = testing::TinyTrainConfig(2, 4, 32, 97, 40);
  std::vector<float> params(ParamCount(ParamLayout(c)));
  InitGpt2Params(c, 3, params.data());
  params[0] = 1.0f + 0x1p-8f;              // a tie: rounds to the even 1.0
  params[1] = 1.0f + 0x1p-8f + 0x1p-20f;   // just past it: up to 1 + 2^-7
  TempDir dir;
  CheckpointOptions f32, bf16;
  f32.tokenizer_files = bf16.tokenizer_files = false;
  bf16.bf16 = true;
  ASSERT_TRUE(WriteCheckpoint(dir.path() + "/f32", c, params.data(), f32).ok());
  ASSERT_TRUE(WriteCheckpoint(dir.path() + "/bf16", c, params.data(), bf16).ok());
  const auto f32_bytes = std::filesystem::file_size(dir.path() + "/f32/model.safetensors");
  const auto bf16_bytes = std::filesystem::file_size(dir.path() + "/bf16/model.safetensors");
  EXPECT_LT(bf16_bytes, f32_bytes / 2 + 4096) << "the header aside, half";
  std::unique_ptr<model::Gpt2Model> m;
  Status st = model::LoadGpt2(dir.path() + "/bf16", &m);
  ASSERT_TRUE(st.ok()) << st.message();
  const Gpt2Params<const float> p = ParamViews(c, static_cast<const float*>(params.data()));
  auto rounded = [](float f) {  // round to nearest even on the top 16 bits
    uint32_t b;
    std::memcpy(&b, &f, 4);
    b = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(&f, &b, 4);
    return f;
  };
  const model::Gpt2Weights& w = m->weights();
  EXPECT_EQ(w.wte[0], 1.0f);
  EXPECT_EQ(w.wte[1], 1.0f + 0x1p-7f);
  for (size_t i = 0; i < static_cast<size_t>(c.vocab_size) * c.n_embd; ++i) {
    ASSERT_EQ(w.wte[i], rounded(p.wte[i])) << i;
  }
  for (size_t i = 0; i < static_cast<size_t>(c.n_embd) * 4 * c.n_embd; ++i) {
    ASSERT_EQ(w.layers[1].fc_w[i], rounded(p.layers[1].fc_w[i])) << i;
  }
  for (int i = 0; i < c.n_embd; ++i) ASSERT_EQ(w.ln_f_w[i], rounded(p.ln_f_w[i])) << i;
}

TEST(Checkpoint, AGpt2VocabularyModelCarriesTheTokenizerFiles) {
  const model::Gpt2Config c = testing::TinyTrainConfig(1, 1, 8, 50257, 16);
  std::vector<float> params(ParamCount(ParamLayout(c)));
  InitGpt2Params(c, 1, params.data());
  TempDir dir;
  ASSERT_TRUE(WriteCheckpoint(dir.path(), c, params.data(), CheckpointOptions()).ok());
  std::unique_ptr<model::Gpt2Model> m;
  ASSERT_TRUE(model::LoadGpt2(dir.path(), &m).ok());
  tokenizer::Tokenizer tok;
  std::string source;
  ASSERT_TRUE(tokenizer::Tokenizer::LoadFromDirOrEmbedded(dir.path(), &tok, &source).ok());
  EXPECT_EQ(source, dir.path()) << "the folder's own vocab.json and merges.txt";
  EXPECT_EQ(tok.vocab_size(), 50257u);

  // A small vocabulary cannot carry GPT-2's tokenizer.
  const model::Gpt2Config small = testing::TinyTrainConfig(1, 1, 8, 100, 16);
  Status st = WriteCheckpoint(dir.path() + "/small", small, params.data(), CheckpointOptions());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("50257"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tw::train
