#include "model/random_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "model/model_test_util.h"
#include "model/safetensors.h"
#include "support/chunking.h"

namespace tw::model {
namespace {

using testing::TempDir;

RandomGpt2Options Tiny(uint64_t seed) {
  RandomGpt2Options o;
  EXPECT_TRUE(NamedGpt2Shape("tiny", &o.config));
  o.seed = seed;
  return o;
}

TEST(RandomGpt2, NamedShapes) {
  Gpt2Config c;
  ASSERT_TRUE(NamedGpt2Shape("tiny", &c));
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_head, 4);
  EXPECT_EQ(c.n_embd, 64);
  EXPECT_EQ(c.n_ctx, 1024);  // GPT-2's context: the server's default model takes real prompts
  EXPECT_EQ(c.vocab_size, 50257);
  ASSERT_TRUE(NamedGpt2Shape("gpt2", &c));
  EXPECT_EQ(c.n_layer, 12);
  EXPECT_EQ(c.n_head, 12);
  EXPECT_EQ(c.n_embd, 768);
  EXPECT_EQ(c.n_ctx, 1024);
  EXPECT_EQ(c.vocab_size, 50257);
  EXPECT_FALSE(NamedGpt2Shape("gpt3", &c));
}

TEST(RandomGpt2, TinyIsDeterministicAndLoads) {
  TempDir a, b, d;
  uint64_t last_done = 0, last_total = 0;
  int calls = 0;
  // The golden checkpoint's shape: tiny with 128 positions.
  RandomGpt2Options o = Tiny(7);
  o.config.n_ctx = 128;
  o.chunk_bytes = 64 << 10;
  o.progress = [&](uint64_t done, uint64_t total) {
    EXPECT_GT(done, last_done);
    last_done = done;
    last_total = total;
    calls++;
  };
  Status st = WriteRandomGpt2(a.Sub("m"), o);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_GT(calls, 100);  // ~13 MB in 64 KiB chunks
  EXPECT_EQ(last_done, last_total);
  RandomGpt2Options ob = Tiny(7), od = Tiny(8);
  ob.config.n_ctx = od.config.n_ctx = 128;
  ASSERT_TRUE(WriteRandomGpt2(b.Sub("m"), ob).ok());  // other chunk size, same bytes
  ASSERT_TRUE(WriteRandomGpt2(d.Sub("m"), od).ok());

  bool ok1 = false, ok2 = false, ok3 = false;
  const std::string m1 = testing::ReadFile(a.Sub("m/model.safetensors"), &ok1);
  const std::string m2 = testing::ReadFile(b.Sub("m/model.safetensors"), &ok2);
  const std::string m3 = testing::ReadFile(d.Sub("m/model.safetensors"), &ok3);
  ASSERT_TRUE(ok1 && ok2 && ok3);
  EXPECT_TRUE(m1 == m2) << "same seed must give byte-identical files";
  EXPECT_FALSE(m1 == m3) << "another seed must give other weights";
  EXPECT_EQ(testing::ReadFile(a.Sub("m/config.json")), testing::ReadFile(b.Sub("m/config.json")));
  EXPECT_FALSE(std::filesystem::exists(a.Sub("m/model.safetensors.tmp")));

  std::unique_ptr<Gpt2Model> m;
  st = LoadGpt2(a.Sub("m"), &m);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(m->config().n_layer, 2);
  EXPECT_EQ(m->config().n_embd, 64);
  EXPECT_EQ(m->config().n_ctx, 128);
  EXPECT_EQ(m->config().vocab_size, 50257);
  EXPECT_EQ(m->config().eos_token_id, 50256);
  EXPECT_FLOAT_EQ(m->config().layer_norm_epsilon, 1e-5f);

  // Same file size as the golden checkpoint of the same shape (same tensors,
  // same dtypes; only the header text may differ in length).
  bool okg = false;
  const std::string golden =
      testing::ReadFile(testing::DataPath("golden/tiny-gpt2/model.safetensors"), &okg);
  ASSERT_TRUE(okg);
  SafetensorsHeader hg, hr;
  ASSERT_TRUE(ParseSafetensors(golden, "golden", &hg).ok());
  ASSERT_TRUE(ParseSafetensors(m1, "random", &hr).ok());
  EXPECT_EQ(hr.data_bytes, hg.data_bytes);
  ASSERT_EQ(hr.tensors.size(), hg.tensors.size());
  for (size_t i = 0; i < hr.tensors.size(); i++) {
    // Same names in the same (sorted) order, same shapes and offsets.
    EXPECT_EQ(hr.tensors[i].name, hg.tensors[i].name);
    EXPECT_EQ(hr.tensors[i].shape, hg.tensors[i].shape);
    EXPECT_EQ(hr.tensors[i].data_begin, hg.tensors[i].data_begin);
  }
  EXPECT_EQ(hr.data_offset % 8, 0u);
}

TEST(RandomGpt2, ValuesHaveTheDocumentedDistributions) {
  TempDir dir;
  ASSERT_TRUE(WriteRandomGpt2(dir.path(), Tiny(1)).ok());
  std::unique_ptr<SafetensorsFile> f;
  ASSERT_TRUE(SafetensorsFile::Open(dir.Sub("model.safetensors"), &f).ok());
  auto floats = [&](const std::string& name) {
    const TensorInfo* t = f->header().Find(name);
    EXPECT_NE(t, nullptr) << name;
    std::vector<float> v(t ? t->numel : 0);
    if (t) std::memcpy(v.data(), f->TensorData(*t).data(), v.size() * 4);
    return v;
  };
  auto mean_std = [](const std::vector<float>& v, double* mean, double* sd) {
    double s = 0, s2 = 0;
    for (float x : v) s += x;
    *mean = s / v.size();
    for (float x : v) s2 += (x - *mean) * (x - *mean);
    *sd = std::sqrt(s2 / v.size());
  };
  double mean, sd;
  // wte: 3.2M samples of N(0, 0.02).
  mean_std(floats("wte.weight"), &mean, &sd);
  EXPECT_NEAR(mean, 0.0, 1e-4);
  EXPECT_NEAR(sd, 0.02, 2e-4);
  // Residual projection: N(0, 0.02 / sqrt(2 * 2)) = N(0, 0.01).
  mean_std(floats("h.1.mlp.c_proj.weight"), &mean, &sd);
  EXPECT_NEAR(sd, 0.01, 3e-4);
  // Layer-norm gain ~ 1, biases small and never exactly 0.
  mean_std(floats("h.0.ln_1.weight"), &mean, &sd);
  EXPECT_NEAR(mean, 1.0, 0.01);
  EXPECT_GT(sd, 0.005);
  for (float x : floats("h.0.attn.c_attn.bias")) EXPECT_NE(x, 0.0f);
  mean_std(floats("ln_f.bias"), &mean, &sd);
  EXPECT_NEAR(sd, 0.01, 0.004);
  // The position table and the mask buffer have GPT-2's 1024 positions; the
  // mask is the causal (lower-triangular) one, like the real file's.
  EXPECT_EQ(floats("wpe.weight").size(), 1024u * 64u);
  std::vector<float> mask = floats("h.1.attn.bias");
  ASSERT_EQ(mask.size(), 1024u * 1024u);
  for (int r = 0; r < 1024; r++) {
    for (int c = 0; c < 1024; c++) {
      ASSERT_EQ(mask[r * 1024 + c], c <= r ? 1.0f : 0.0f) << r << "," << c;
    }
  }
}

TEST(RandomGpt2, Errors) {
  TempDir dir;
  ASSERT_TRUE(testing::WriteBytes(dir.Sub("file"), "x"));
  Status st = WriteRandomGpt2(dir.Sub("file"), Tiny(1));
  EXPECT_NE(st.message().find("not a directory"), std::string::npos) << st.message();
  st = WriteRandomGpt2(dir.Sub("file/sub"), Tiny(1));
  EXPECT_NE(st.message().find("mkdir"), std::string::npos) << st.message();
  RandomGpt2Options o = Tiny(1);
  o.config.n_head = 5;  // 64 % 5 != 0: refused before anything is written
  st = WriteRandomGpt2(dir.Sub("bad"), o);
  EXPECT_NE(st.message().find("not a multiple of n_head"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("bad")));
}

}  // namespace
}  // namespace tw::model
