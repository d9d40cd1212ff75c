// The trainer against PyTorch's autograd (tests/train/torch_train_step.py,
// float64): a tiny GPT-2 (2 layers, 2 heads, C = 16, vocab 64, T = 8, B =
// 2) and one batch from tests/data/train/step_input.safetensors; the loss,
// every parameter's gradient, the global gradient norm and the parameters
// after the norm clip (which this step exercises: norm 3.84 > clip 0.5)
// and one AdamW step (lr 1e-2, weight decay 0.1 on the rank-2 tensors)
// from tests/data/train/step_golden.safetensors. make test reads the
// committed files; torch is needed only to regenerate them (make
// train-golden).
//
// Tolerances:
// - double path: loss and norm within 1e-12 relative, each gradient within
//   1e-10 of its tensor's largest |gradient| (measured 2.5e-12), the
//   updated parameters within 1e-10 (measured 5e-12, at the key biases:
//   their gradient is zero in exact arithmetic, since a key bias adds one
//   constant to a query's every score, so theirs is rounding noise, which
//   AdamW divides by its eps).
// - float path: loss and norm within 1e-6 relative, gradients within 1e-5
//   of the tensor's largest (measured 8e-7), the updated parameters within
//   5e-7 (measured 5e-8) wherever |gradient| >= 1e-3 of the tensor's
//   largest. AdamW's first step moves each parameter by about lr g / |g|,
//   so where a gradient is near zero float rounding can change that step
//   entirely; the double path checks those elements.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/safetensors.h"
#include "train/optimizer.h"
#include "train/trainer.h"

namespace tw::train {
namespace {

const std::string kData = std::string(TW_SOURCE_DIR) + "/tests/data/train/";

// Every tensor of a file as doubles (F32, F64 or I32), and its metadata.
struct File {
  std::map<std::string, std::vector<double>> tensors;
  std::map<std::string, std::string> meta;
  double Meta(const std::string& key) const { return std::stod(meta.at(key)); }
};

File Read(const std::string& path) {
  std::unique_ptr<model::SafetensorsFile> f;
  Status st = model::SafetensorsFile::Open(path, &f);
  EXPECT_TRUE(st.ok()) << st.message();
  File out;
  if (!st.ok()) return out;
  for (const auto& [k, v] : f->header().metadata) out.meta[k] = v;
  for (const model::TensorInfo& t : f->header().tensors) {
    const auto bytes = f->TensorData(t);
    std::vector<double>& v = out.tensors[t.name];
    v.resize(t.numel);
    for (size_t i = 0; i < t.numel; ++i) {
      if (t.dtype == model::Dtype::kF64) {
        std::memcpy(&v[i], bytes.data() + 8 * i, 8);
      } else if (t.dtype == model::Dtype::kF32) {
        float x;
        std::memcpy(&x, bytes.data() + 4 * i, 4);
        v[i] = x;
      } else {
        int32_t x;
        std::memcpy(&x, bytes.data() + 4 * i, 4);
        v[i] = x;
      }
    }
  }
  return out;
}

class TorchGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    in_ = Read(kData + "step_input.safetensors");
    gold_ = Read(kData + "step_golden.safetensors");
    ASSERT_FALSE(in_.tensors.empty());
    ASSERT_FALSE(gold_.tensors.empty());
    config_.n_layer = static_cast<int>(in_.Meta("n_layer"));
    config_.n_head = static_cast<int>(in_.Meta("n_head"));
    config_.n_embd = static_cast<int>(in_.Meta("n_embd"));
    config_.n_ctx = static_cast<int>(in_.Meta("n_ctx"));
    config_.vocab_size = static_cast<int>(in_.Meta("vocab_size"));
    config_.layer_norm_epsilon = static_cast<float>(in_.Meta("layer_norm_epsilon"));
    shape_.max_batch = static_cast<int>(in_.Meta("batch"));
    shape_.seq = static_cast<int>(in_.Meta("seq"));
    shape_.head_rows = 5;
    for (double t : in_.tensors.at("tokens")) tokens_.push_back(static_cast<int32_t>(t));
    for (double t : in_.tensors.at("targets")) targets_.push_back(static_cast<int32_t>(t));
    adam_.weight_decay = in_.Meta("weight_decay");
    adam_.beta1 = in_.Meta("beta1");
    adam_.beta2 = in_.Meta("beta2");
    adam_.eps = in_.Meta("eps");
  }

  // Loads the input's parameters, runs one step (loss and gradients, the
  // clip, AdamW) and compares each result with the golden file.
  template <typename T>
  void Step(double loss_tol, double grad_tol, double after_tol, double after_min_grad) {
    std::unique_ptr<Gpt2Trainer<T>> t;
    ASSERT_TRUE(Gpt2Trainer<T>::Create(config_, shape_, nullptr, &t).ok());
    for (const ParamTensor& p : t->layout()) {
      const std::vector<double>& v = in_.tensors.at(p.name);
      ASSERT_EQ(v.size(), p.numel) << p.name;
      for (size_t i = 0; i < p.numel; ++i) t->params()[p.offset + i] = static_cast<T>(v[i]);
    }
    double loss = 0;
    ASSERT_TRUE(t->LossAndGradients(tokens_.data(), targets_.data(), shape_.max_batch, &loss).ok());
    const double gold_loss = gold_.tensors.at("loss")[0];
    EXPECT_NEAR(loss, gold_loss, loss_tol * gold_loss);
    std::vector<double> grads(t->grads(), t->grads() + t->num_params());
    double worst_grad = 0;
    for (const ParamTensor& p : t->layout()) {
      const std::vector<double>& g = gold_.tensors.at("grad." + p.name);
      double gmax = 0, err = 0;
      for (size_t i = 0; i < p.numel; ++i) {
        gmax = std::max(gmax, std::fabs(g[i]));
        err = std::max(err, std::fabs(g[i] - grads[p.offset + i]));
      }
      EXPECT_LE(err, grad_tol * gmax) << p.name << " (largest |gradient| " << gmax << ")";
      if (gmax > 0) worst_grad = std::max(worst_grad, err / gmax);
    }
    const double norm = ClipGradNorm(t->grads(), t->num_params(), in_.Meta("clip"), nullptr);
    const double gold_norm = gold_.tensors.at("grad_norm")[0];
    EXPECT_NEAR(norm, gold_norm, loss_tol * gold_norm);
    std::unique_ptr<AdamW<T>> opt;
    ASSERT_TRUE(AdamW<T>::Create(t->layout(), adam_, &opt).ok());
    opt->Update(t->params(), t->grads(), in_.Meta("lr"), nullptr);
    double worst_after = 0;
    size_t compared = 0;
    for (const ParamTensor& p : t->layout()) {
      const std::vector<double>& after = gold_.tensors.at("after." + p.name);
      const std::vector<double>& g = gold_.tensors.at("grad." + p.name);
      double gmax = 0;
      for (size_t i = 0; i < p.numel; ++i) gmax = std::max(gmax, std::fabs(g[i]));
      for (size_t i = 0; i < p.numel; ++i) {
        if (std::fabs(g[i]) < after_min_grad * gmax) continue;
        compared++;
        const double err = std::fabs(after[i] - static_cast<double>(t->params()[p.offset + i]));
        EXPECT_LE(err, after_tol) << p.name << "[" << i << "] after the step";
        worst_after = std::max(worst_after, err);
      }
    }
    EXPECT_GT(compared, t->num_params() * 9 / 10);
    std::printf("loss %.12f (torch %.12f); worst gradient error / tensor max %.2g; worst parameter error after "
                "the step %.2g over %zu of %zu\n",
                loss, gold_loss, worst_grad, worst_after, compared, t->num_params());
  }

  File in_, gold_;
  model::Gpt2Config config_;
  TrainerShape shape_;
  AdamWConfig adam_;
  std::vector<int32_t> tokens_, targets_;
};

TEST_F(TorchGolden, TheDoublePathMatchesAutogradAndTorchAdamW) { Step<double>(1e-12, 1e-10, 1e-10, 0.0); }

TEST_F(TorchGolden, TheFloatPathMatchesWithinFloatRounding) { Step<float>(1e-6, 1e-5, 5e-7, 1e-3); }

}  // namespace
}  // namespace tw::train
