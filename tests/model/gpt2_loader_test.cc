#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "model/gpt2.h"
#include "model/model_test_util.h"
#include "support/chunking.h"

namespace tw::model {
namespace {

using testing::BuildFile;
using testing::HeaderJson;
using testing::RawTensor;
using testing::TempDir;
using testing::TinyConfigJson;
using testing::TinyTensors;
using testing::WriteTinyModel;

// The float at data-section byte `off` of a file, read straight from its bytes.
float FloatAt(const std::string& file, size_t data_offset, size_t off) {
  float f;
  std::memcpy(&f, file.data() + data_offset + off, 4);
  return f;
}

// Loads `dir`; returns "" on success or the error message.
std::string LoadError(const std::string& dir, std::unique_ptr<Gpt2Model>* out = nullptr) {
  std::unique_ptr<Gpt2Model> m;
  Status st = LoadGpt2(dir, &m);
  if (out) *out = std::move(m);
  return st.ok() ? "" : st.message();
}

#define EXPECT_ERROR_HAS(msg, ...)                                      \
  do {                                                                  \
    const std::string m_ = (msg);                                       \
    EXPECT_FALSE(m_.empty()) << "expected an error";                    \
    for (const char* w_ : {__VA_ARGS__}) {                              \
      EXPECT_NE(m_.find(w_), std::string::npos) << "'" << w_ << "' not in: " << m_; \
    }                                                                   \
  } while (0)

// ---- the golden checkpoint (Hugging Face layout, with attn.bias buffers) ----

// Offsets below were read from the file's header with Python's json module
// (independent of our parser): header length 2480, so data starts at 2488.
constexpr size_t kGoldenData = 8 + 2480;

TEST(LoadGpt2, GoldenCheckpointLoads) {
  const std::string dir = testing::DataPath("golden/tiny-gpt2");
  std::unique_ptr<Gpt2Model> m;
  ASSERT_EQ(LoadError(dir, &m), "");
  const Gpt2Config& c = m->config();
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_head, 4);
  EXPECT_EQ(c.n_embd, 64);
  EXPECT_EQ(c.n_ctx, 128);
  EXPECT_EQ(c.vocab_size, 50257);
  EXPECT_FLOAT_EQ(c.layer_norm_epsilon, 1e-5f);
  EXPECT_EQ(c.eos_token_id, 50256);
  // All parameters, without the two (1,1,128,128) F32 mask buffers.
  EXPECT_EQ(m->parameter_bytes(), 13430016u - 2u * 65536u);

  bool ok = false;
  const std::string file = testing::ReadFile(dir + "/model.safetensors", &ok);
  ASSERT_TRUE(ok);
  const Gpt2Weights& w = m->weights();
  ASSERT_EQ(w.layers.size(), 2u);
  // wte [564224, 13430016): first, last, and a middle element.
  EXPECT_EQ(w.wte[0], FloatAt(file, kGoldenData, 564224));
  EXPECT_EQ(w.wte[50257 * 64 - 1], FloatAt(file, kGoldenData, 13430016 - 4));
  EXPECT_EQ(w.wte[31373 * 64 + 7], FloatAt(file, kGoldenData, 564224 + (31373 * 64 + 7) * 4));
  // wpe [531456, 564224)
  EXPECT_EQ(w.wpe[5 * 64 + 3], FloatAt(file, kGoldenData, 531456 + (5 * 64 + 3) * 4));
  // h.0.attn.c_attn.bias [65536, 66304): right after the skipped h.0.attn.bias.
  EXPECT_EQ(w.layers[0].attn_b[0], FloatAt(file, kGoldenData, 65536));
  EXPECT_EQ(w.layers[0].attn_b[191], FloatAt(file, kGoldenData, 66304 - 4));
  // h.1.mlp.c_proj.bias [465152, 465408), h.1.ln_2.bias [398080, 398336),
  // h.1.ln_2.weight [398336, 398592)
  EXPECT_EQ(w.layers[1].proj_b[63], FloatAt(file, kGoldenData, 465408 - 4));
  EXPECT_EQ(w.layers[1].ln_2_b[10], FloatAt(file, kGoldenData, 398080 + 40));
  EXPECT_EQ(w.layers[1].ln_2_w[10], FloatAt(file, kGoldenData, 398336 + 40));
  // h.1.attn.c_attn.weight [331776, 380928)
  EXPECT_EQ(w.layers[1].attn_w[64 * 192 - 1], FloatAt(file, kGoldenData, 380928 - 4));
  // ln_f.weight [531200, 531456), ln_f.bias [530944, 531200)
  EXPECT_EQ(w.ln_f_w[0], FloatAt(file, kGoldenData, 531200));
  EXPECT_EQ(w.ln_f_b[63], FloatAt(file, kGoldenData, 531200 - 4));
  // Layer norms are random, not 1/0: a skipped parameter would show.
  EXPECT_NE(w.layers[0].ln_1_w[0], 1.0f);
  EXPECT_NE(w.layers[0].ln_1_b[0], 0.0f);
}

TEST(LoadGpt2, GoldenWeightsPointIntoTheMappingAndSkipMaskBuffers) {
  std::unique_ptr<Gpt2Model> m;
  ASSERT_EQ(LoadError(testing::DataPath("golden/tiny-gpt2"), &m), "");
  // Zero copy: wte and h.0.attn.c_attn.bias lie at their file distance apart.
  const Gpt2Weights& w = m->weights();
  const char* wte = reinterpret_cast<const char*>(w.wte);
  const char* b0 = reinterpret_cast<const char*>(w.layers[0].attn_b);
  EXPECT_EQ(wte - b0, 564224 - 65536);
  // No pointer is inside a mask buffer: [0, 65536) and [265472, 331008).
  const char* data0 = b0 - 65536;
  auto outside_masks = [&](const float* p) {
    const std::ptrdiff_t off = reinterpret_cast<const char*>(p) - data0;
    return !(off >= 0 && off < 65536) && !(off >= 265472 && off < 331008);
  };
  for (const Gpt2Layer& L : w.layers) {
    for (const float* p : {L.ln_1_w, L.ln_1_b, L.attn_w, L.attn_b, L.attn_proj_w, L.attn_proj_b,
                           L.ln_2_w, L.ln_2_b, L.fc_w, L.fc_b, L.proj_w, L.proj_b}) {
      EXPECT_TRUE(outside_masks(p));
    }
  }
}

// ---- a tiny hand-built checkpoint whose every float is known ----

// Checks that each pointer reads the tensor numbered k (see TinyTensors).
void ExpectTinyWeights(const Gpt2Model& m) {
  const Gpt2Weights& w = m.weights();
  auto is = [](const float* p, int k, int n) {
    for (int i = 0; i < n; i++) {
      if (p[i] != static_cast<float>(k * 1000 + i)) return false;
    }
    return true;
  };
  const int C = testing::kTinyC;
  EXPECT_TRUE(is(w.wte, 0, testing::kTinyV * C));
  EXPECT_TRUE(is(w.wpe, 1, testing::kTinyT * C));
  ASSERT_EQ(w.layers.size(), 1u);
  const Gpt2Layer& L = w.layers[0];
  EXPECT_TRUE(is(L.ln_1_w, 2, C));
  EXPECT_TRUE(is(L.ln_1_b, 3, C));
  EXPECT_TRUE(is(L.attn_w, 4, C * 3 * C));
  EXPECT_TRUE(is(L.attn_b, 5, 3 * C));
  EXPECT_TRUE(is(L.attn_proj_w, 6, C * C));
  EXPECT_TRUE(is(L.attn_proj_b, 7, C));
  EXPECT_TRUE(is(L.ln_2_w, 8, C));
  EXPECT_TRUE(is(L.ln_2_b, 9, C));
  EXPECT_TRUE(is(L.fc_w, 10, C * 4 * C));
  EXPECT_TRUE(is(L.fc_b, 11, 4 * C));
  EXPECT_TRUE(is(L.proj_w, 12, 4 * C * C));
  EXPECT_TRUE(is(L.proj_b, 13, C));
  EXPECT_TRUE(is(w.ln_f_w, 14, C));
  EXPECT_TRUE(is(w.ln_f_b, 15, C));
}

TEST(LoadGpt2, TinyModelLoadsEveryTensorInItsPlace) {
  TempDir dir;
  ASSERT_TRUE(WriteTinyModel(dir.path(), TinyConfigJson(), BuildFile(TinyTensors())));
  std::unique_ptr<Gpt2Model> m;
  ASSERT_EQ(LoadError(dir.path(), &m), "");
  EXPECT_EQ(m->config().n_layer, 1);
  EXPECT_EQ(m->config().n_ctx, 8);
  EXPECT_EQ(m->config().vocab_size, 10);
  EXPECT_EQ(m->config().eos_token_id, 9);
  ExpectTinyWeights(*m);
}

TEST(LoadGpt2, AcceptsTransformerPrefix) {
  TempDir dir;
  ASSERT_TRUE(
      WriteTinyModel(dir.path(), TinyConfigJson(), BuildFile(TinyTensors("transformer."))));
  std::unique_ptr<Gpt2Model> m;
  ASSERT_EQ(LoadError(dir.path(), &m), "");
  ExpectTinyWeights(*m);
}

TEST(LoadGpt2, SkipsMaskedBiasOfAnyDtype) {
  TempDir dir;
  std::vector<RawTensor> t = TinyTensors();
  t.push_back({"h.0.attn.masked_bias", "F64", {}, std::string(8, '\0')});
  t[0].dtype = "BOOL";  // h.0.attn.bias: not a parameter, its dtype does not matter
  t[0].data = std::string(64, '\1');
  ASSERT_TRUE(WriteTinyModel(dir.path(), TinyConfigJson(), BuildFile(t)));
  std::unique_ptr<Gpt2Model> m;
  ASSERT_EQ(LoadError(dir.path(), &m), "");
  ExpectTinyWeights(*m);
}

TEST(LoadGpt2, TiedLmHeadIsIgnoredUntiedIsAnError) {
  TempDir dir;
  std::vector<RawTensor> t = TinyTensors();
  RawTensor head = t[1];  // wte
  ASSERT_EQ(head.name, "wte.weight");
  head.name = "lm_head.weight";
  t.push_back(head);
  ASSERT_TRUE(WriteTinyModel(dir.path(), TinyConfigJson(), BuildFile(t)));
  std::unique_ptr<Gpt2Model> m;
  ASSERT_EQ(LoadError(dir.path(), &m), "");
  ExpectTinyWeights(*m);

  t.back().data[5] ^= 1;
  ASSERT_TRUE(WriteTinyModel(dir.path(), TinyConfigJson(), BuildFile(t)));
  EXPECT_ERROR_HAS(LoadError(dir.path()), "lm_head.weight", "untied");
}

TEST(LoadGpt2, UnalignedDataIsCopiedIntoOneAlignedSlab) {
  TempDir dir;
  std::vector<RawTensor> t = TinyTensors();
  const std::string header = HeaderJson(t);
  size_t pad = 0;
  while ((8 + header.size() + pad) % 4 != 1) pad++;  // data section at 1 mod 4
  ASSERT_TRUE(WriteTinyModel(dir.path(), TinyConfigJson(), BuildFile(header, t, pad)));
  std::unique_ptr<Gpt2Model> m;
  ASSERT_EQ(LoadError(dir.path(), &m), "");
  ExpectTinyWeights(*m);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m->weights().wte) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m->weights().layers[0].proj_b) % 64, 0u);
}

// ---- every failure names what failed ----

class LoadGpt2Errors : public ::testing::Test {
 protected:
  std::string LoadWith(const std::string& config, const std::string& safetensors) {
    EXPECT_TRUE(WriteTinyModel(dir_.path(), config, safetensors));
    return LoadError(dir_.path());
  }
  std::string LoadWith(const std::vector<RawTensor>& t) {
    return LoadWith(TinyConfigJson(), BuildFile(t));
  }
  RawTensor* Named(std::vector<RawTensor>* t, const std::string& name) {
    for (RawTensor& r : *t) {
      if (r.name == name) return &r;
    }
    ADD_FAILURE() << name;
    return &t->front();
  }
  TempDir dir_;
};

TEST_F(LoadGpt2Errors, MissingTensor) {
  std::vector<RawTensor> t = TinyTensors();
  t.erase(t.begin() + 5);  // h.0.attn.c_attn.weight
  EXPECT_ERROR_HAS(LoadWith(t), "model.safetensors", "missing tensor 'h.0.attn.c_attn.weight'",
                   "F32 [4, 12]");
}

TEST_F(LoadGpt2Errors, WrongShape) {
  std::vector<RawTensor> t = TinyTensors();
  RawTensor* r = Named(&t, "h.0.mlp.c_fc.weight");
  r->shape = {16, 4};  // transposed: same bytes, wrong layout
  EXPECT_ERROR_HAS(LoadWith(t), "'h.0.mlp.c_fc.weight'", "expected shape [4, 16]",
                   "found [16, 4]");
  t = TinyTensors();
  r = Named(&t, "wpe.weight");
  r->shape = {4, 4};
  r->data.resize(64);
  EXPECT_ERROR_HAS(LoadWith(t), "'wpe.weight'", "expected shape [8, 4]", "found [4, 4]");
}

TEST_F(LoadGpt2Errors, WrongDtype) {
  std::vector<RawTensor> t = TinyTensors();
  RawTensor* r = Named(&t, "ln_f.bias");
  r->dtype = "F64";
  r->data.resize(32);
  EXPECT_ERROR_HAS(LoadWith(t), "'ln_f.bias'", "unsupported dtype F64", "expected F32, BF16 or F16");
  t = TinyTensors();
  r = Named(&t, "wte.weight");
  r->dtype = "I8";
  r->data.resize(r->data.size() / 4);
  EXPECT_ERROR_HAS(LoadWith(t), "'wte.weight'", "unsupported dtype I8");
}

// Little-endian 16-bit words as a tensor's bytes.
std::string HalfWords(const std::vector<uint16_t>& v) {
  std::string s(v.size() * 2, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

// BF16 and F16 parameters load, widened exactly to float32. The expected
// floats are the formats' definitions (IEEE 754 binary16: 1 sign, 5 exponent
// bits biased by 15, 10 mantissa bits; bfloat16: float32's top half), written
// out by hand, not computed by the loader's code.
TEST_F(LoadGpt2Errors, Bf16AndF16TensorsWidenExactly) {
  std::vector<RawTensor> t = TinyTensors();
  RawTensor* ln = Named(&t, "ln_f.weight");  // 4 elements
  ln->dtype = "F16";
  // 1.0, -2.0, 65504 (the largest half), 2^-24 (the smallest subnormal)
  ln->data = HalfWords({0x3C00, 0xC000, 0x7BFF, 0x0001});
  RawTensor* lb = Named(&t, "ln_f.bias");
  lb->dtype = "BF16";
  // 1.0, 3.140625, -0.0, 1.5 x 2^-126 (float32 bits 0x00C00000: the smallest exponent)
  lb->data = HalfWords({0x3F80, 0x4049, 0x8000, 0x00C0});
  RawTensor* bias = Named(&t, "h.0.ln_1.bias");
  bias->dtype = "F16";
  // 0.5, 0x0200 = 2^-15 (subnormal: 512 x 2^-24), 0x03FF = 1023 x 2^-24, -1.5
  bias->data = HalfWords({0x3800, 0x0200, 0x03FF, 0xBE00});
  EXPECT_EQ(LoadWith(t), "");
  std::unique_ptr<Gpt2Model> m;
  ASSERT_EQ(LoadError(dir_.path(), &m), "");
  const Gpt2Weights& w = m->weights();
  EXPECT_EQ(w.ln_f_w[0], 1.0f);
  EXPECT_EQ(w.ln_f_w[1], -2.0f);
  EXPECT_EQ(w.ln_f_w[2], 65504.0f);
  EXPECT_EQ(w.ln_f_w[3], std::ldexp(1.0f, -24));
  EXPECT_EQ(w.ln_f_b[0], 1.0f);
  EXPECT_EQ(w.ln_f_b[1], 3.140625f);
  EXPECT_EQ(w.ln_f_b[2], 0.0f);
  EXPECT_TRUE(std::signbit(w.ln_f_b[2]));
  EXPECT_EQ(w.ln_f_b[3], std::ldexp(1.5f, -126));
  EXPECT_EQ(w.layers[0].ln_1_b[0], 0.5f);
  EXPECT_EQ(w.layers[0].ln_1_b[1], std::ldexp(1.0f, -15));
  EXPECT_EQ(w.layers[0].ln_1_b[2], std::ldexp(1023.0f, -24));
  EXPECT_EQ(w.layers[0].ln_1_b[3], -1.5f);
  // The F32 tensors beside them are the file's values (TinyTensors: k*1000 + i).
  EXPECT_EQ(w.wte[5], 5.0f);
  // parameter_bytes counts float32 bytes, whatever the file's dtype.
  std::unique_ptr<Gpt2Model> f32;
  ASSERT_EQ(LoadWith(TinyTensors()), "");
  ASSERT_EQ(LoadError(dir_.path(), &f32), "");
  EXPECT_EQ(m->parameter_bytes(), f32->parameter_bytes());
}

TEST_F(LoadGpt2Errors, UnknownTensor) {
  std::vector<RawTensor> t = TinyTensors();
  t.push_back({"h.1.ln_1.weight", "F32", {4}, testing::FloatBytes({1, 1, 1, 1})});
  EXPECT_ERROR_HAS(LoadWith(t), "'h.1.ln_1.weight'", "not a GPT-2 parameter", "n_layer 1");
}

TEST_F(LoadGpt2Errors, SameParameterTwice) {
  std::vector<RawTensor> t = TinyTensors();
  RawTensor dup = *Named(&t, "ln_f.bias");
  dup.name = "transformer.ln_f.bias";
  t.push_back(dup);
  EXPECT_ERROR_HAS(LoadWith(t), "ln_f.bias", "same parameter");
}

TEST_F(LoadGpt2Errors, BrokenSafetensorsFiles) {
  const std::string good = BuildFile(TinyTensors());
  // Truncated in the data section.
  EXPECT_ERROR_HAS(LoadWith(TinyConfigJson(), good.substr(0, good.size() - 10)),
                   "model.safetensors", "tensor '", "out of range");
  // Truncated inside the header.
  EXPECT_ERROR_HAS(LoadWith(TinyConfigJson(), good.substr(0, 100)), "model.safetensors",
                   "past the end of the file");
  // Header not JSON.
  std::string bad = good;
  bad[8 + 3] = '\x01';
  EXPECT_ERROR_HAS(LoadWith(TinyConfigJson(), bad), "model.safetensors", "not valid JSON");
  // Missing file.
  std::filesystem::remove(dir_.Sub("model.safetensors"));
  EXPECT_TRUE(testing::WriteBytes(dir_.Sub("config.json"), TinyConfigJson()));
  EXPECT_ERROR_HAS(LoadError(dir_.path()), "model.safetensors", "No such file");
}

TEST_F(LoadGpt2Errors, BadConfig) {
  const std::string st = BuildFile(TinyTensors());
  std::string c = TinyConfigJson();
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = c;
    size_t p = s.find(from);
    EXPECT_NE(p, std::string::npos) << from;
    return s.replace(p, from.size(), to);
  };
  EXPECT_ERROR_HAS(LoadWith("{\"n_layer\":1,", st), "config.json", "not valid JSON");
  EXPECT_ERROR_HAS(LoadWith("[1]", st), "config.json", "not a JSON object");
  EXPECT_ERROR_HAS(LoadWith(replace("\"n_layer\":1,", ""), st), "config.json",
                   "missing required integer 'n_layer'");
  EXPECT_ERROR_HAS(LoadWith(replace("\"n_head\":2", "\"n_head\":3"), st),
                   "n_embd 4 is not a multiple of n_head 3");
  EXPECT_ERROR_HAS(LoadWith(replace("\"n_embd\":4", "\"n_embd\":0"), st), "'n_embd'",
                   "[1, 65536]", "found 0");
  EXPECT_ERROR_HAS(LoadWith(replace("\"n_embd\":4", "\"n_embd\":4.5"), st), "'n_embd'",
                   "non-integer");
  EXPECT_ERROR_HAS(LoadWith(replace("\"vocab_size\":10", "\"vocab_size\":\"10\""), st),
                   "'vocab_size'");
  EXPECT_ERROR_HAS(LoadWith(replace("\"eos_token_id\":9", "\"eos_token_id\":10"), st),
                   "'eos_token_id' 10", "outside the vocabulary");
  EXPECT_ERROR_HAS(LoadWith(replace("\"eos_token_id\":9", "\"bos_token_id\":9"), st),
                   "no 'eos_token_id'", "50256");
  EXPECT_ERROR_HAS(LoadWith(replace("\"n_positions\":8,\"n_ctx\":8,", ""), st),
                   "missing 'n_positions' (or 'n_ctx')");
  EXPECT_ERROR_HAS(LoadWith(replace("gelu_new", "relu"), st), "'activation_function'");
  EXPECT_ERROR_HAS(LoadWith(replace("1e-05", "-1"), st), "'layer_norm_epsilon'");
  EXPECT_ERROR_HAS(
      LoadWith(replace("\"model_type\":\"gpt2\"", "\"model_type\":\"llama\""), st),
      "'model_type'");
  // A config that disagrees with the weights: the shape error names the tensor.
  EXPECT_ERROR_HAS(LoadWith(replace("\"n_positions\":8", "\"n_positions\":16"), st),
                   "'wpe.weight'", "expected shape [16, 4]", "found [8, 4]");
  // n_ctx alone is accepted (legacy configs), and n_positions wins over it.
  std::unique_ptr<Gpt2Model> m;
  EXPECT_TRUE(WriteTinyModel(dir_.path(), replace("\"n_positions\":8,", ""), st));
  EXPECT_EQ(LoadError(dir_.path(), &m), "");
  EXPECT_TRUE(WriteTinyModel(dir_.path(), replace("\"n_ctx\":8", "\"n_ctx\":1024"), st));
  EXPECT_EQ(LoadError(dir_.path(), &m), "");
  EXPECT_EQ(m->config().n_ctx, 8);
  // Missing config.json.
  std::filesystem::remove(dir_.Sub("config.json"));
  EXPECT_ERROR_HAS(LoadError(dir_.path()), "config.json", "No such file");
}

TEST(Gpt2ParameterSpecs, Gpt2SmallHas124MParameters) {
  Gpt2Config c;  // defaults are gpt2 (124M)
  uint64_t n = 0;
  std::vector<Gpt2TensorSpec> specs = Gpt2ParameterSpecs(c);
  EXPECT_EQ(specs.size(), 2u + 12u * 12u + 2u);
  for (const Gpt2TensorSpec& s : specs) {
    uint64_t k = 1;
    for (int64_t d : s.shape) k *= static_cast<uint64_t>(d);
    n += k;
  }
  EXPECT_EQ(n, 124439808u);  // Hugging Face's count for "gpt2"
}

}  // namespace
}  // namespace tw::model
