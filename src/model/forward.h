// Gpt2Forward: the GPT-2 forward pass on the CPU over a paged KV cache.
//
// Prefill appends a prompt to one sequence and returns the logits of its last
// position (optionally of every position). Batch runs ONE pass over the
// rows of B sequences of different lengths — an engine step: decoding
// sequences' single tokens and prompt chunks side by side — where every
// matmul runs over all the rows together (one read of the weights per step)
// and attention runs per sequence through its block table, reading K/V in
// place. DecodeBatch is Batch with one token per sequence.
//
// Weights: at Create() the four matrices of every layer and the tied LM head
// (wte^T) are repacked into one 64-byte-aligned slab in the kernels' panel
// layout (cpu/kernels.h), in the format ForwardLimits::weights names: f32
// (the exact reference; about the size of the model's float32 parameters),
// bf16 (half) or q8 (~0.28x). Embedding lookups, layer norms, biases,
// activations and the KV cache stay float32 in every format. Embeddings, biases and layer-norm parameters are read from the
// Gpt2Model, which must outlive this object, as must the KvPool and the
// ThreadPool.
//
// Bounds: scratch for max_rows() = max(max_batch, max_pass_tokens) rows of
// activations, plus n_ctx attention scores per thread, allocated once in
// Create(); a longer lone prompt is prefilled in chunks of max_pass_tokens.
// Nothing is allocated per call.
//
// Threading: one thread calls Prefill / Batch / DecodeBatch at a time; the work is
// spread over the ThreadPool. At a given kernel level (cpu::ActiveIsa()),
// results do not depend on the thread count, on the batch composition, on
// the block size or on the prefill chunking: every row's arithmetic is the
// same sequence of float operations, so the logits are bitwise equal
// (tests/model/ checks each, in every weight format). Different levels
// differ by rounding only.
// Never: allocates per call, throws, or touches K/V outside the block tables
// it is given.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "cpu/aligned.h"
#include "cpu/kernels.h"
#include "cpu/thread_pool.h"
#include "engine/runner.h"
#include "model/gpt2.h"
#include "model/kv_cache.h"

namespace tw::model {

struct ForwardLimits {
  int max_batch = 32;          // sequences per DecodeBatch
  int max_pass_tokens = 256;   // rows one pass computes (a Batch's tokens; a longer lone prompt is chunked)
  // How the packed matrices are stored (--weights): f32 is the exact
  // reference; bf16 / q8 round them at load (cpu::WeightFormat).
  cpu::WeightFormat weights = cpu::WeightFormat::kF32;
};

class Gpt2Forward;

// Sees each pass of a Prefill or Batch after its rows have run through the
// layers (e.g. to compute some rows' logits with Gpt2Forward::PassLogits).
class PassObserver {
 public:
  virtual ~PassObserver() = default;
  // Sequence `seq` (its index in the call) has its new tokens [start,
  // start + rows) at the pass's rows [row, row + rows).
  virtual void OnRows(Gpt2Forward& forward, int seq, int start, int row, int rows) = 0;
};

class Gpt2Forward {
 public:
  // Validates the shapes (model vs pool vs limits), packs the weights and
  // allocates the scratch. `pool` may be null (single-threaded).
  static Status Create(const Gpt2Model& model, KvPool* kv, cpu::ThreadPool* pool,
                       const ForwardLimits& limits, std::unique_ptr<Gpt2Forward>* out);

  // The sequences are the engine's views (engine::SeqView): a block table,
  // the `cached` tokens already in it, and the `n` tokens to append at
  // positions [cached, cached + n). Only block_table, num_blocks, cached,
  // tokens and n are read; the caller advances its own length afterwards.
  // A table must hold BlocksFor(cached + n) blocks.

  // Appends seq's n >= 1 tokens, in chunks of max_pass_tokens.
  // last_logits (V), may be null: the logits of the last new position.
  // all_logits (n, V), may be null: the logits of every new position.
  // observer, may be null: called after each chunk's layers (seq 0).
  Status Prefill(const engine::SeqView& seq, float* last_logits, float* all_logits = nullptr,
                 PassObserver* observer = nullptr);
  // In PassObserver::OnRows only: logits (count, V) of the pass's rows
  // [row, row + count), bitwise those Prefill returns for them.
  void PassLogits(int row, int count, float* logits) { Logits(row, count, logits); }

  // One pass over B distinct sequences: their rows (sequence b's n tokens at
  // positions [cached, cached + n)) run side by side through every matmul
  // (one read of the weights for all of them). For each sequence whose
  // SeqView::sample is set, the logits of its last position go to
  // logits + k * V, k counting the sampling sequences before it (compact:
  // the logits of a chunk that does not sample are never computed). The
  // total of their n must be <= max_pass_tokens (use Prefill for a longer
  // lone prompt). Each sequence's logits are bitwise equal to its own
  // Prefill's. observer, may be null: called once per sequence after the
  // layers. On error nothing is written to the cache.
  Status Batch(const engine::SeqView* seqs, int B, float* logits, PassObserver* observer = nullptr);

  // One step for B sequences (1 <= B <= max_batch, all distinct, each n = 1):
  // appends each token and writes that position's logits to logits + b * V.
  // On error nothing is written to the cache.
  Status DecodeBatch(const engine::SeqView* seqs, int B, float* logits);

  const Gpt2Config& config() const { return cfg_; }
  int max_rows() const { return max_rows_; }
  size_t packed_weight_bytes() const { return packed_bytes_; }
  cpu::WeightFormat weight_format() const { return limits_.weights; }

 private:
  struct PackedLayer {
    cpu::PackedWeight attn;       // (C, 3C)
    cpu::PackedWeight attn_proj;  // (C, C)
    cpu::PackedWeight fc;         // (C, 4C)
    cpu::PackedWeight proj;       // (4C, C)
  };

  Gpt2Forward(const Gpt2Model& model, KvPool* kv, cpu::ThreadPool* pool, const ForwardLimits& limits);
  // Checks that `seq` can take `n` more tokens.
  Status CheckSeq(const engine::SeqView& seq, const char* what) const;
  // Checks that tokens[0..n) are vocabulary ids.
  Status CheckTokens(const int32_t* tokens, int n, const char* what) const;
  // Runs `rows` rows (row r: token tokens[r] at position row_pos_[r] of
  // row_seq_[r]) through all layers, writing their K/V into the cache, and
  // leaves the final residual stream in x_.
  void RunRows(int rows, const int32_t* tokens);
  // RunRows' attention for layer l: append the rows' K/V, attend.
  void AttendLayer(int l, int rows, const float* qkv, float* att);
  // logits (count, V) for rows [first, first+count) of x_.
  void Logits(int first, int count, float* logits);

  const Gpt2Model& model_;
  const Gpt2Config cfg_;
  KvPool* kv_;
  cpu::ThreadPool* pool_;
  ForwardLimits limits_;
  int max_rows_ = 0;

  cpu::AlignedFloats packed_;  // one slab: every layer's matrices, then the LM head (limits_.weights' format)
  size_t packed_bytes_ = 0;
  std::vector<PackedLayer> layers_;
  cpu::PackedWeight lm_head_;  // (C, V) = wte^T

  // Scratch, R = max_rows_ rows.
  cpu::AlignedFloats x_;       // (R, C)  residual stream
  cpu::AlignedFloats ln_;      // (R, C)  layer-norm output
  cpu::AlignedFloats qkv_;     // (R, 3C)
  cpu::AlignedFloats att_;     // (R, C)  attention output, heads side by side
  cpu::AlignedFloats fc_;      // (R, 4C) MLP hidden
  int scores_rows_ = 0;         // max(kAttendRowsPerGroup, n_head): score rows per worker
  cpu::AlignedFloats scores_;  // (threads, scores_rows_, n_ctx) attention scores per worker
  cpu::AlignedFloats matmul_scratch_;  // (threads, kMatmulScratchFloats) bf16 / q8 widening; null for f32
  std::vector<const engine::SeqView*> row_seq_;  // (R) which sequence each row belongs to
  std::vector<int> row_pos_;              // (R) the row's position in its sequence
  std::vector<int> row_prior_;            // (R) its sequence's tokens cached before this pass
  std::vector<int> group_begin_;          // (R + 1) RunRows' attention groups: first row of each
  std::vector<int32_t> pass_tokens_;      // (R) the pass's tokens, side by side
};

}  // namespace tw::model
