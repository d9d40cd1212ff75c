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
  if (l.max_batch < 1 || l.num_kv_blocks < 1 || l.block_size_tokens < 1 || l.max_step_tokens < 1) {
    return Status::Error("cpu runner: max_batch, num_kv_blocks, block_size_tokens and max_step_tokens "
                         "must be >= 1, got " + std::to_string(l.max_batch) + ", " +
                         std::to_string(l.num_kv_blocks) + ", " + std::to_string(l.block_size_tokens) +
                         ", " + std::to_string(l.max_step_tokens));
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
  fl.max_pass_tokens = l.max_step_tokens;
  fl.weights = weights;
  if (Status s = Gpt2Forward::Create(*r->model_, r->kv_.get(), r->pool_.get(), fl, &r->forward_); !s.ok()) {
    return Status::Error("cpu runner: " + s.message());
  }
  for (int w = 0; w < r->pool_->threads(); w++) r->samplers_.push_back(std::make_unique<Sampler>(c.vocab_size));
  r->logits_.assign(static_cast<size_t>(l.max_batch) * c.vocab_size, 0.0f);
  r->sampling_rows_.assign(static_cast<size_t>(l.max_batch), 0);
  *out = std::move(r);
  return Status::Ok();
}

engine::ModelShape CpuRunner::shape() const {
  const Gpt2Config& c = model_->config();
  return engine::ModelShape{c.n_ctx, c.vocab_size, c.eos_token_id};
}

// A prompt's log-probabilities, pass by pass: the rows of a row that asks
// whose next token is known, max_batch rows of logits at a time (logits_,
// free until the pass's sampling rows are computed), each row's
// ComputeLogprobs on the pool.
class CpuRunner::PromptLogprobs : public PassObserver {
 public:
  PromptLogprobs(CpuRunner* r, const engine::SeqView* seqs) : r_(r), seqs_(seqs) {}

  void OnRows(Gpt2Forward& forward, int seq, int start, int row, int rows) override {
    const engine::SeqView& v = seqs_[seq];
    if (v.prompt_logprobs < 0) return;
    const int V = r_->model_->config().vocab_size;
    const int entries = v.sample ? v.n - 1 : v.n;  // a sampling row's last position draws
    const int end = std::min(start + rows, entries);
    for (int first = start; first < end; first += r_->limits_.max_batch) {
      const int count = std::min(r_->limits_.max_batch, end - first);
      forward.PassLogits(row + first - start, count, r_->logits_.data());
      auto one = [&](int i, int) {
        const int j = first + i;
        engine::SampledToken& o = v.prompt_out[j];
        o = engine::SampledToken();
        o.id = j + 1 < v.n ? v.tokens[j + 1] : v.next_token;
        ComputeLogprobs(r_->logits_.data() + static_cast<size_t>(i) * V, V, 1.0f, v.prompt_logprobs, &o);
      };
      r_->pool_->ParallelFor(count, one);
    }
  }

 private:
  CpuRunner* r_;
  const engine::SeqView* seqs_;
};

// The views go to the forward pass as they are: it reads each block table
// in place (no copy per step).
Status CpuRunner::Step(const engine::SeqView* seqs, int count, engine::SampledToken* out) {
  if (Status s = engine::CheckStepRows(seqs, count, limits_, "cpu runner"); !s.ok()) return s;
  PromptLogprobs prompt(this, seqs);
  bool asks = false;
  for (int i = 0; i < count; i++) asks = asks || seqs[i].prompt_logprobs >= 0;
  Status st = count == 1 ? forward_->Prefill(seqs[0], seqs[0].sample ? logits_.data() : nullptr, nullptr,
                                             asks ? &prompt : nullptr)
                         : forward_->Batch(seqs, count, logits_.data(), asks ? &prompt : nullptr);
  if (!st.ok()) return st;
  SampleRows(seqs, count, out);
  return Status::Ok();
}

void CpuRunner::SampleRows(const engine::SeqView* seqs, int count, engine::SampledToken* out) {
  const size_t V = static_cast<size_t>(model_->config().vocab_size);
  int k = 0;
  for (int i = 0; i < count; i++) {
    if (seqs[i].sample) sampling_rows_[static_cast<size_t>(k++)] = i;
  }
  auto draw = [&](int j, int worker) {
    const int i = sampling_rows_[static_cast<size_t>(j)];
    const engine::SamplingRow& r = seqs[i].sampling;
    SamplingParams p{r.temperature, r.top_k, r.top_p, r.min_p};
    float* row = logits_.data() + j * V;
    if (r.mask != nullptr) ApplyTokenMask(row, static_cast<int>(V), r.mask);
    for (int e = 0; e < r.num_edits; e++) {
      const LogitEdit& edit = r.edits[e];
      if (edit.id >= 0 && static_cast<size_t>(edit.id) < V) row[edit.id] = ApplyLogitEdit(row[edit.id], edit);
    }
    engine::SampledToken& o = out[i];
    o.id = samplers_[worker]->Sample(row, p, CounterUniform(r.seed, r.counter));
    o.has_logprobs = false;
    o.top_count = 0;
    if (r.logprobs >= 0) ComputeLogprobs(row, static_cast<int>(V), r.temperature, r.logprobs, &o);
  };
  if (k > 1) {
    pool_->ParallelFor(k, draw);
  } else if (k == 1) {
    draw(0, 0);
  }
}

}  // namespace tw::model
