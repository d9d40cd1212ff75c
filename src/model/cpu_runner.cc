#include "model/cpu_runner.h"

#include <algorithm>
#include <string>

#include "common/counter_rng.h"

namespace tw::model {

CpuRunner::CpuRunner(std::shared_ptr<const Gpt2Model> model, const engine::RunnerLimits& limits)
    : model_(std::move(model)), limits_(limits) {}

Status CpuRunner::Create(std::shared_ptr<const Gpt2Model> model, const engine::RunnerLimits& limits,
                         std::unique_ptr<CpuRunner>* out, cpu::WeightFormat weights) {
  if (!model) return Status::Error("cpu runner: no model");
  engine::RunnerLimits l = limits;
  if (l.max_batch < 1 || l.num_kv_blocks < 1 || l.block_size_tokens < 1 || l.max_prefill_tokens < 1) {
    return Status::Error("cpu runner: max_batch, num_kv_blocks, block_size_tokens and max_prefill_tokens "
                         "must be >= 1, got " + std::to_string(l.max_batch) + ", " +
                         std::to_string(l.num_kv_blocks) + ", " + std::to_string(l.block_size_tokens) +
                         ", " + std::to_string(l.max_prefill_tokens));
  }
  l.threads = std::max(l.threads, 1);
  const Gpt2Config& c = model->config();
  std::unique_ptr<CpuRunner> r(new CpuRunner(model, l));
  r->pool_ = std::make_unique<cpu::ThreadPool>(l.threads);
  KvCacheConfig kc;
  kc.num_blocks = l.num_kv_blocks;
  kc.block_size_tokens = l.block_size_tokens;
  if (Status s = KvPool::Create(c, kc, &r->kv_); !s.ok()) return Status::Error("cpu runner: " + s.message());
  ForwardLimits fl;
  fl.max_batch = l.max_batch;
  fl.max_prefill_chunk_tokens = l.max_prefill_tokens;
  fl.weights = weights;
  if (Status s = Gpt2Forward::Create(*r->model_, r->kv_.get(), r->pool_.get(), fl, &r->forward_); !s.ok()) {
    return Status::Error("cpu runner: " + s.message());
  }
  for (int w = 0; w < r->pool_->threads(); w++) r->samplers_.push_back(std::make_unique<Sampler>(c.vocab_size));
  r->logits_.assign(static_cast<size_t>(l.max_batch) * c.vocab_size, 0.0f);
  r->states_.resize(static_cast<size_t>(l.max_batch));
  r->state_ptrs_.reserve(static_cast<size_t>(l.max_batch));
  r->prompts_.reserve(static_cast<size_t>(l.max_batch));
  r->lens_.reserve(static_cast<size_t>(l.max_batch));
  r->tokens_.reserve(static_cast<size_t>(l.max_batch));
  *out = std::move(r);
  return Status::Ok();
}

engine::ModelShape CpuRunner::shape() const {
  const Gpt2Config& c = model_->config();
  return engine::ModelShape{c.n_ctx, c.vocab_size, c.eos_token_id};
}

Status CpuRunner::Load(const engine::SeqView* seqs, int count) {
  if (count < 1 || count > limits_.max_batch) {
    return Status::Error("cpu runner: " + std::to_string(count) + " sequences in one step (1.." +
                         std::to_string(limits_.max_batch) + ")");
  }
  state_ptrs_.clear();
  for (int i = 0; i < count; i++) {
    SeqState& st = states_[static_cast<size_t>(i)];
    st.block_table.assign(seqs[i].block_table, seqs[i].block_table + seqs[i].num_blocks);
    st.length = seqs[i].cached;
    state_ptrs_.push_back(&st);
  }
  return Status::Ok();
}

Status CpuRunner::Prefill(const engine::SeqView* seqs, int count, engine::SampledToken* out) {
  if (Status s = Load(seqs, count); !s.ok()) return s;
  Status st;
  if (count == 1) {
    st = forward_->Prefill(state_ptrs_[0], seqs[0].tokens, seqs[0].n, logits_.data());
  } else {
    prompts_.clear();
    lens_.clear();
    for (int i = 0; i < count; i++) {
      prompts_.push_back(seqs[i].tokens);
      lens_.push_back(seqs[i].n);
    }
    st = forward_->PrefillBatch(state_ptrs_.data(), prompts_.data(), lens_.data(), count, logits_.data());
  }
  if (!st.ok()) return st;
  SampleRows(seqs, count, out);
  return Status::Ok();
}

Status CpuRunner::Decode(const engine::SeqView* seqs, int count, engine::SampledToken* out) {
  if (Status s = Load(seqs, count); !s.ok()) return s;
  tokens_.clear();
  for (int i = 0; i < count; i++) {
    if (seqs[i].n != 1) return Status::Error("cpu runner: a decode row has " + std::to_string(seqs[i].n) + " tokens");
    tokens_.push_back(seqs[i].tokens[0]);
  }
  if (Status s = forward_->DecodeBatch(state_ptrs_.data(), tokens_.data(), count, logits_.data()); !s.ok()) {
    return s;
  }
  SampleRows(seqs, count, out);
  return Status::Ok();
}

void CpuRunner::SampleRows(const engine::SeqView* seqs, int count, engine::SampledToken* out) {
  const size_t V = static_cast<size_t>(model_->config().vocab_size);
  auto draw = [&](int i, int worker) {
    const engine::SamplingRow& r = seqs[i].sampling;
    SamplingParams p{r.temperature, r.top_k, r.top_p};
    const float* row = logits_.data() + i * V;
    engine::SampledToken& o = out[i];
    o.id = samplers_[worker]->Sample(row, p, CounterUniform(r.seed, r.counter));
    o.has_logprobs = false;
    o.top_count = 0;
    if (r.logprobs >= 0) ComputeLogprobs(row, static_cast<int>(V), r.temperature, r.logprobs, &o);
  };
  if (count > 1) {
    pool_->ParallelFor(count, draw);
  } else if (count == 1) {
    draw(0, 0);
  }
}

}  // namespace tw::model
