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
  *out = std::move(r);
  return Status::Ok();
}

engine::ModelShape CpuRunner::shape() const {
  const Gpt2Config& c = model_->config();
  return engine::ModelShape{c.n_ctx, c.vocab_size, c.eos_token_id};
}

Status CpuRunner::CheckCount(const engine::SeqView* seqs, int count) const {
  if (seqs == nullptr || count < 1 || count > limits_.max_batch) {
    return Status::Error("cpu runner: " + std::to_string(count) + " sequences in one step (1.." +
                         std::to_string(limits_.max_batch) + ")");
  }
  return Status::Ok();
}

// A prompt's log-probabilities, chunk by chunk: the rows whose next token
// is in the prompt, max_batch rows of logits at a time (logits_), each row's
// ComputeLogprobs on the pool.
class CpuRunner::PromptLogprobs : public PrefillObserver {
 public:
  PromptLogprobs(CpuRunner* r, const engine::SeqView& seq) : r_(r), seq_(seq) {}

  void OnChunk(Gpt2Forward& forward, int start, int rows) override {
    const int V = r_->model_->config().vocab_size;
    const int end = std::min(start + rows, seq_.n - 1);  // the last row draws the next token
    for (int first = start; first < end; first += r_->limits_.max_batch) {
      const int count = std::min(r_->limits_.max_batch, end - first);
      forward.ChunkLogits(first - start, count, r_->logits_.data());
      auto one = [&](int i, int) {
        engine::SampledToken& o = seq_.prompt_out[first + i];
        o = engine::SampledToken();
        o.id = seq_.tokens[first + i + 1];
        ComputeLogprobs(r_->logits_.data() + static_cast<size_t>(i) * V, V, 1.0f, seq_.prompt_logprobs, &o);
      };
      r_->pool_->ParallelFor(count, one);
    }
  }

 private:
  CpuRunner* r_;
  const engine::SeqView& seq_;
};

// The views go to the forward pass as they are: it reads each block table
// in place (no copy per step).
Status CpuRunner::Prefill(const engine::SeqView* seqs, int count, engine::SampledToken* out) {
  if (Status s = CheckCount(seqs, count); !s.ok()) return s;
  if (Status s = engine::CheckPromptLogprobsRows(seqs, count, "cpu runner"); !s.ok()) return s;
  PromptLogprobs prompt(this, seqs[0]);
  Status st = count == 1 ? forward_->Prefill(seqs[0], logits_.data(), nullptr,
                                             seqs[0].prompt_logprobs >= 0 ? &prompt : nullptr)
                         : forward_->PrefillBatch(seqs, count, logits_.data());
  if (!st.ok()) return st;
  SampleRows(seqs, count, out);
  return Status::Ok();
}

Status CpuRunner::Decode(const engine::SeqView* seqs, int count, engine::SampledToken* out) {
  if (Status s = CheckCount(seqs, count); !s.ok()) return s;
  for (int i = 0; i < count; i++) {
    if (seqs[i].n != 1) return Status::Error("cpu runner: a decode row has " + std::to_string(seqs[i].n) + " tokens");
  }
  if (Status s = forward_->DecodeBatch(seqs, count, logits_.data()); !s.ok()) return s;
  SampleRows(seqs, count, out);
  return Status::Ok();
}

void CpuRunner::SampleRows(const engine::SeqView* seqs, int count, engine::SampledToken* out) {
  const size_t V = static_cast<size_t>(model_->config().vocab_size);
  auto draw = [&](int i, int worker) {
    const engine::SamplingRow& r = seqs[i].sampling;
    SamplingParams p{r.temperature, r.top_k, r.top_p, r.min_p};
    float* row = logits_.data() + i * V;
    for (int j = 0; j < r.num_edits; j++) {
      const LogitEdit& e = r.edits[j];
      if (e.id >= 0 && static_cast<size_t>(e.id) < V) row[e.id] = ApplyLogitEdit(row[e.id], e);
    }
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
