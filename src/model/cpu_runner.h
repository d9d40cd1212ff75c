// CpuRunner: GPT-2 on the CPU behind the engine's model-runner seam
// (engine/runner.h): the `cpu` backend's compute.
//
// It owns what the compute needs and nothing of the scheduling: the thread
// pool, the KV pool's memory (zero-filled at start-up), the forward pass
// over it (model/forward.h: packed weights, scratch), one Sampler per pool
// worker and the logits of one step. A step's sequences arrive as
// engine::SeqViews (block tables owned by the engine), go through one
// Gpt2Forward pass (Batch: decode rows and prompt chunks side by side, one
// read of the weights; a lone long row through Prefill, chunked), and leave
// as one sampled token id per sampling row: each row's uniform is
// CounterUniform(seed, counter), rows sampled in parallel on the pool; a
// row that asks for log-probabilities gets them from ComputeLogprobs on the
// same logits (model/sampling.h). A prompt's log-probabilities (a row with
// prompt_logprobs) are computed after the pass's layers: max_batch rows of
// logits at a time, in the same buffer.
//
// Threads: one caller (the engine thread) at a time; the work spreads over
// the pool. Memory: everything is allocated in Create (the KV pool,
// max_batch rows of logits, scratch); Step allocates nothing.
// Never: keeps a SeqView's pointers after returning.
#pragma once

#include <memory>
#include <vector>

#include "cpu/thread_pool.h"
#include "engine/runner.h"
#include "model/forward.h"
#include "model/gpt2.h"
#include "model/kv_cache.h"
#include "model/sampling.h"

namespace tw::model {

class CpuRunner : public engine::ModelRunner {
 public:
  // Builds the pool (limits.threads), the KV pool (limits.num_kv_blocks x
  // block_size_tokens), the forward pass (its matrices packed in `weights`:
  // --weights) and the samplers. The model is shared (its embeddings, norms
  // and biases are read in place).
  static Status Create(std::shared_ptr<const Gpt2Model> model, const engine::RunnerLimits& limits,
                       std::unique_ptr<CpuRunner>* out, cpu::WeightFormat weights = cpu::WeightFormat::kF32);

  const char* kind() const override { return "cpu"; }
  engine::ModelShape shape() const override;
  engine::RunnerLimits limits() const override { return limits_; }
  Status Step(const engine::SeqView* seqs, int count, engine::SampledToken* out) override;

  size_t packed_weight_bytes() const { return forward_->packed_weight_bytes(); }
  cpu::WeightFormat weight_format() const { return forward_->weight_format(); }

 private:
  CpuRunner(std::shared_ptr<const Gpt2Model> model, const engine::RunnerLimits& limits);
  class PromptLogprobs;
  // Draws out[i] of each sampling row i from logits_ (the k-th sampling
  // row's logits are row k: Gpt2Forward::Batch's order), with its
  // log-probabilities when asked, rows spread over the pool.
  void SampleRows(const engine::SeqView* seqs, int count, engine::SampledToken* out);

  const std::shared_ptr<const Gpt2Model> model_;
  const engine::RunnerLimits limits_;
  std::unique_ptr<cpu::ThreadPool> pool_;
  std::unique_ptr<KvPool> kv_;
  std::unique_ptr<Gpt2Forward> forward_;
  std::vector<std::unique_ptr<Sampler>> samplers_;  // one per pool worker
  std::vector<float> logits_;                       // (max_batch, V)
  std::vector<int> sampling_rows_;                  // (max_batch) SampleRows' rows that sample
};

}  // namespace tw::model
