// Gpt2Trainer: GPT-2's forward and backward pass over a batch of token
// windows on the CPU, in llm.c's manner: every layer a forward / backward
// pair over flat arrays, the activations of the whole batch kept for the
// backward pass, the parameters and their gradients in one slab each
// (params.h). The optimizer is optimizer.h's; the loop that feeds batches,
// data.h's windows and checkpoints is train_loop.h's.
//
// T = float is the training path: the matmuls run through cpu::Matmul on
// the ThreadPool (each step repacks the weights into the kernels' panel
// layout: forward y = x @ W, backward dX = dY @ W^T through a transposed
// pack, dW = X^T @ dY by packing dY as the weight and transposing X);
// attention runs one task per (sequence, head), each with cpu::Matmul on
// its own rows; layer norm, GELU and the cross-entropy run per row in
// parallel. T = double is the reference for the gradient checks: the same
// row math (layers.h) with plain-loop matmuls and attention.
//
// The LM head (tied to wte) runs in chunks of TrainerShape::head_rows rows:
// logits (head_rows, V), the cross-entropy and its gradient in place, then
// (when training) the chunk's contribution to the final layer norm's
// output gradient and to wte's gradient. No (B*T, V) logits array exists.
//
// Determinism: every reduction has a fixed order that does not depend on
// the thread split (each matmul output is one FMA chain over k, cpu/
// kernels.h; bias and layer-norm gradients are summed over rows in row
// order per column; the embedding gradients are added in row order;
// element-wise code uses libm's scalar exp / log / sqrt, never the SIMD
// kernels' approximations). So the loss and the gradients are bitwise the
// same for any thread count, and at kernel levels avx2 and avx512 (their
// float32 Matmul gives identical bits: tests/train/determinism_test.cc). The
// scalar level (a CPU without AVX2 + FMA) rounds its matmuls differently;
// glibc picks its exp / log by CPU feature too (FMA or not), so "any
// machine" means any x86-64 with AVX2 and FMA.
//
// Memory: allocated once in Create(), for shape.max_batch windows of
// shape.seq tokens (activation_bytes() says how much); nothing per call.
// Threading: one thread calls a trainer at a time; the work is spread over
// the pool (may be null: the calling thread alone). Never: allocates per
// call, throws, or reads a token outside [0, vocab).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "cpu/aligned.h"
#include "cpu/kernels.h"
#include "cpu/thread_pool.h"
#include "model/gpt2.h"
#include "train/params.h"

namespace tw::train {

struct TrainerShape {
  int max_batch = 8;   // B: windows per call, at most
  int seq = 256;       // T: tokens per window (<= n_ctx)
  int head_rows = 256; // rows per LM-head chunk: logits scratch is (head_rows, V)
};

// A buffer of n T's, 64-byte aligned for float (cpu::AllocAligned).
template <typename T>
class TrainBuffer;

template <typename T>
class Gpt2Trainer {
 public:
  // Validates the config and shape, allocates everything. Parameters start
  // at zero: call InitGpt2Params(config, seed, params()) or fill params().
  static Status Create(const model::Gpt2Config& config, const TrainerShape& shape, cpu::ThreadPool* pool,
                       std::unique_ptr<Gpt2Trainer>* out);
  ~Gpt2Trainer();

  const model::Gpt2Config& config() const { return config_; }
  const TrainerShape& shape() const { return shape_; }
  const std::vector<ParamTensor>& layout() const { return layout_; }
  size_t num_params() const { return num_params_; }
  T* params() { return params_; }
  const T* params() const { return params_; }
  T* grads() { return grads_; }
  const T* grads() const { return grads_; }
  // Bytes of activations and scratch (everything but params and grads).
  size_t activation_bytes() const { return activation_bytes_; }

  // tokens, targets: (batch, seq) ids in [0, vocab), 1 <= batch <=
  // max_batch; position t of window b predicts targets[b][t] from
  // tokens[b][0..t]. *loss: the mean cross-entropy over batch * seq
  // positions.
  Status Loss(const int32_t* tokens, const int32_t* targets, int batch, double* loss);
  // The same loss, and d(loss)/d(params) in grads() (overwritten).
  Status LossAndGradients(const int32_t* tokens, const int32_t* targets, int batch, double* loss);

 private:
  struct LayerActs;
  struct Packs;
  Gpt2Trainer(const model::Gpt2Config& config, const TrainerShape& shape, cpu::ThreadPool* pool);
  Status Run(const int32_t* tokens, const int32_t* targets, int batch, bool grad, double* loss);
  void Forward(const int32_t* tokens, int rows);
  double Head(const int32_t* targets, int rows, bool grad);
  void Backward(const int32_t* tokens, int rows);
  // y (rows, out) = x (rows, in) @ W (in, out) + b  [y += ... with accumulate]
  void LinearForward(const T* x, int rows, int in, int out, const T* w, const cpu::PackedWeight* wp,
                     const T* b, T* y, bool accumulate);
  // dx (rows, in) = dy @ W^T (when dx is not null); dw = x^T @ dy; db = column sums of dy.
  void LinearBackward(const T* x, const T* dy, int rows, int in, int out, const T* w,
                      const cpu::PackedWeight* wtp, T* dx, T* dw, T* db);
  // The double path's matmuls, in plain loops: d (m, n) = [d +] [bias +]
  // sum_q a(i, q) b(q, j) for q in [0, k), a(i, q) at a[i * a_row + q *
  // a_col], b(q, j) at b[q * b_row + j * b_col]: one helper for x @ W,
  // dY @ W^T, X^T @ dY and the head's three (strides pick the transposes).
  void PlainMatmul(const T* a, size_t a_row, size_t a_col, const T* b, size_t b_row, size_t b_col, int m, int k,
                   int n, const T* bias, bool accumulate, T* d);
  void AttentionForward(int batch, const T* qkv, T* att, T* atty);
  void AttentionBackward(int batch, const T* qkv, const T* att, const T* datty, T* dqkv);
  void LayerNormForward(const T* x, int rows, const T* w, const T* b, T* out, T* mean, T* rstd);
  // dx += the input gradient; dw, db += the parameter gradients.
  void LayerNormBackward(const T* dout, const T* x, const T* mean, const T* rstd, int rows, const T* w, T* dx,
                         T* dw, T* db);
  // Repacks the forward matrices (and with `backward` the transposed ones)
  // from params_ (float path; nothing for double).
  void PackWeights(bool backward);
  // fn(r0, r1, worker) over [0, rows) in pieces of rows_per_task, on the pool.
  template <typename Fn>
  void ForRows(int rows, int rows_per_task, const Fn& fn);
  // fn(b, h, worker) for every (window, head) of `batch` windows, one pool task each.
  template <typename Fn>
  void ForHeads(int batch, const Fn& fn);

  const model::Gpt2Config config_;
  const TrainerShape shape_;
  cpu::ThreadPool* const pool_;
  const std::vector<ParamTensor> layout_;
  size_t num_params_ = 0;
  size_t activation_bytes_ = 0;

  std::vector<std::unique_ptr<TrainBuffer<T>>> buffers_;  // owns every array below
  T* Alloc(size_t n);

  T* params_ = nullptr;  // (num_params) in layout_'s order
  T* grads_ = nullptr;   // (num_params)
  Gpt2Params<T> p_;      // views of params_
  Gpt2Params<T> g_;      // views of grads_

  // Activations, N = max_batch * seq rows.
  T* encoded_ = nullptr;  // (N, C) wte[token] + wpe[pos]: layer 0's input
  std::vector<LayerActs> acts_;
  T* lnf_ = nullptr;       // (N, C)
  T* lnf_mean_ = nullptr;  // (N)
  T* lnf_rstd_ = nullptr;  // (N)
  T* losses_ = nullptr;    // (N) each position's cross-entropy
  T* logits_ = nullptr;    // (head_rows, V) one chunk's logits, then their gradient
  // Backward scratch.
  T* dres_ = nullptr;   // (N, C) the residual stream's gradient
  T* dln_ = nullptr;    // (N, C) a layer norm's output gradient
  T* dfch_ = nullptr;   // (N, 4C) the MLP hidden layer's gradient
  T* dqkv_ = nullptr;   // (N, 3C)
  T* datty_ = nullptr;  // (N, C)
  T* datt_ = nullptr;   // (threads, T) the double path's attention scratch
  // The float path's packed weights and matmul scratch (null for double).
  std::unique_ptr<Packs> packs_;
};

extern template class Gpt2Trainer<float>;
extern template class Gpt2Trainer<double>;

}  // namespace tw::train
