#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "backend/events.h"
#include "backend/text_assembler.h"
#include "json/json.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_stream.h"

namespace tw::engine {

namespace {

double SecondsSince(stream::Clock::time_point t0) {
  return std::chrono::duration<double>(stream::Clock::now() - t0).count();
}

const std::vector<double> kStepBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                          0.025,  0.05,    0.1,    0.25,  0.5,    1.0,   2.5};
const std::vector<double> kWaitBuckets = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                          0.5,   1.0,   2.5,  5.0,   10.0, 30.0};
std::vector<double> BatchBuckets(int max_batch) {
  std::vector<double> b;
  for (int v = 1; v < max_batch; v *= 2) b.push_back(v);
  b.push_back(max_batch);
  return b;
}

}  // namespace

struct Engine::Sequence {
  std::string id;
  std::shared_ptr<stream::Stream> stream;
  backend::GenerationRequest request;
  std::vector<int32_t> model_prompt;  // what is prefilled ([eos] for an empty prompt)
  model::Rng rng;
  model::SamplingParams params;
  model::SeqState kv;
  int blocks_needed = 0;
  bool admitted = false;   // blocks reserved, prefill started
  bool released = false;   // blocks returned (exactly once)
  bool paused = false;
  bool done = false;       // stream finished; removed from the lists at Compact()
  int produced = 0;
  int32_t last_token = 0;
  tokenizer::Utf8StreamDecoder utf8;
  backend::TextAssembler text;

  Sequence(std::shared_ptr<stream::Stream> s, backend::GenerationRequest r, uint64_t seed)
      : id(s->id()),
        stream(std::move(s)),
        request(std::move(r)),
        rng(seed),
        text(request.stop) {
    params.temperature = request.temperature;
    params.top_k = request.top_k;
    params.top_p = request.top_p;
  }
};

Status Engine::Create(std::shared_ptr<const model::Gpt2Model> model,
                      const tokenizer::Tokenizer* tokenizer, const EngineOptions& options,
                      std::unique_ptr<Engine>* out) {
  if (!model) return Status::Error("engine: no model");
  if (tokenizer == nullptr) return Status::Error("engine: no tokenizer");
  const model::Gpt2Config& c = model->config();
  EngineOptions o = options;
  if (o.max_batch < 1) return Status::Error("engine: max_batch must be >= 1, got " + std::to_string(o.max_batch));
  if (o.block_size_tokens < 1) {
    return Status::Error("engine: block_size_tokens must be >= 1, got " + std::to_string(o.block_size_tokens));
  }
  if (o.max_waiting < 0) return Status::Error("engine: max_waiting must be >= 0");
  if (o.num_kv_blocks == 0) o.num_kv_blocks = o.max_batch * model::BlocksFor(c.n_ctx, o.block_size_tokens);
  if (o.num_kv_blocks < 1) return Status::Error("engine: num_kv_blocks must be >= 1");
  if (o.threads < 1) o.threads = 1;
  if (o.eos_token_id < 0) o.eos_token_id = c.eos_token_id;

  std::unique_ptr<Engine> e(new Engine(std::move(model), tokenizer, o));
  e->pool_ = std::make_unique<cpu::ThreadPool>(o.threads);
  model::KvCacheConfig kc;
  kc.num_blocks = o.num_kv_blocks;
  kc.block_size_tokens = o.block_size_tokens;
  if (Status s = model::KvPool::Create(c, kc, &e->kv_); !s.ok()) return Status::Error("engine: " + s.message());
  e->alloc_ = std::make_unique<model::BlockAllocator>(o.num_kv_blocks);
  model::ForwardLimits fl;
  fl.max_batch = o.max_batch;
  fl.max_prefill_chunk_tokens = std::max(1, o.max_prefill_chunk_tokens);
  if (Status s = model::Gpt2Forward::Create(*e->model_, e->kv_.get(), e->pool_.get(), fl, &e->forward_);
      !s.ok()) {
    return Status::Error("engine: " + s.message());
  }
  for (int w = 0; w < e->pool_->threads(); w++) e->samplers_.push_back(std::make_unique<model::Sampler>(c.vocab_size));
  e->logits_.assign(static_cast<size_t>(o.max_batch) * c.vocab_size, 0.0f);
  e->tokens_.assign(static_cast<size_t>(o.max_batch), 0);
  StepScratch& sc = e->scratch_;
  sc.admitted.reserve(o.max_batch);
  sc.batch.reserve(o.max_batch);
  sc.states.reserve(o.max_batch);
  sc.prompts.reserve(o.max_batch);
  sc.lens.reserve(o.max_batch);
  sc.tokens.reserve(o.max_batch);
  e->eos_ = o.eos_token_id;
  e->counters_.kv_blocks_total = o.num_kv_blocks;
  e->counters_.kv_blocks_free = o.num_kv_blocks;
  e->published_ = e->counters_;

  if (o.metrics != nullptr) {
    Metrics* r = o.metrics;
    e->m_.step_seconds = r->AddHistogram("engine_step_seconds",
                                         "Time of one engine step (admission, prefills, one decode).",
                                         kStepBuckets);
    e->m_.batch_size = r->AddHistogram("engine_batch_size", "Sequences in one batched decode.",
                                       BatchBuckets(o.max_batch));
    e->m_.prefill_seconds = r->AddHistogram("engine_prefill_seconds",
                                            "Time of one prefill pass (one prompt, or several sharing the pass).",
                                            kStepBuckets);
    e->m_.queue_wait_seconds = r->AddHistogram(
        "request_queue_time_seconds", "Time from arrival to admission (KV blocks reserved).", kWaitBuckets);
    e->m_.kv_blocks_used = r->AddGauge("kv_blocks_used", "KV cache blocks reserved by sequences.");
    e->m_.kv_blocks_free = r->AddGauge("kv_blocks_free", "KV cache blocks free.");
    e->m_.running = r->AddGauge("engine_running", "Sequences admitted and not finished.");
    e->m_.waiting = r->AddGauge("engine_waiting", "Requests waiting for a batch slot or KV blocks.");
    e->m_.double_releases = r->AddCounter("kv_double_releases_total",
                                          "Detected second releases of a sequence's KV blocks (a bug).");
    if (e->m_.kv_blocks_free) e->m_.kv_blocks_free->Set(o.num_kv_blocks);
  }
  e->thread_ = std::thread([p = e.get()] { p->Run(); });
  *out = std::move(e);
  return Status::Ok();
}

Engine::Engine(std::shared_ptr<const model::Gpt2Model> model, const tokenizer::Tokenizer* tokenizer,
               const EngineOptions& options)
    : model_(std::move(model)), tokenizer_(tokenizer), options_(options) {}

Engine::~Engine() { Shutdown(); }

int Engine::BlocksNeeded(int prompt_tokens, int max_new_tokens) const {
  // K/V is stored for the prompt and for every generated token but the last
  // (which is never fed back).
  int positions = std::max(prompt_tokens, 1) + std::max(max_new_tokens, 1) - 1;
  return model::BlocksFor(positions, options_.block_size_tokens);
}

bool Engine::Submit(std::shared_ptr<stream::Stream> stream, backend::GenerationRequest request,
                    backend::SubmitRefusal* refusal) {
  auto refuse = [&](int status, const char* type, std::string message) {
    if (refusal) {
      refusal->http_status = status;
      refusal->type = type;
      refusal->message = std::move(message);
      refusal->retry_after_ms = options_.retry_after_ms;
    }
    std::lock_guard<std::mutex> lock(mu_);
    refused_++;
    return false;
  };
  if (!stream) return refuse(500, "internal", "engine: Submit without a stream");
  const model::Gpt2Config& c = model_->config();
  const int prompt = static_cast<int>(request.prompt_tokens.size());
  for (size_t i = 0; i < request.prompt_tokens.size(); i++) {
    int32_t t = request.prompt_tokens[i];
    if (t < 0 || t >= c.vocab_size) {
      return refuse(400, "invalid_request",
                    "prompt token " + std::to_string(i) + " is " + std::to_string(t) +
                        ", outside the vocabulary [0, " + std::to_string(c.vocab_size) + ")");
    }
  }
  const int positions = std::max(prompt, 1) + std::max(request.max_new_tokens, 1) - 1;
  if (positions > c.n_ctx) {
    return refuse(400, "invalid_request",
                  "prompt (" + std::to_string(prompt) + " tokens) + max_new_tokens (" +
                      std::to_string(request.max_new_tokens) + ") exceed the context length " +
                      std::to_string(c.n_ctx));
  }
  const int need = BlocksNeeded(prompt, request.max_new_tokens);
  if (need > options_.num_kv_blocks) {
    return refuse(400, "invalid_request",
                  "the request needs " + std::to_string(need) + " KV blocks, the cache has " +
                      std::to_string(options_.num_kv_blocks) + " (--kv-blocks)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) {
    if (refusal) {
      refusal->http_status = 503;
      refusal->type = "shutting_down";
      refusal->message = "the server is shutting down";
      refusal->retry_after_ms = options_.retry_after_ms;
    }
    return false;
  }
  if (pending_waiting_ >= options_.max_waiting) {
    if (refusal) {
      refusal->http_status = 503;
      refusal->type = "overloaded";
      refusal->message = std::to_string(pending_waiting_) +
                         " requests are already waiting for a slot (--max-waiting " +
                         std::to_string(options_.max_waiting) + ")";
      refusal->retry_after_ms = options_.retry_after_ms;
    }
    refused_++;
    return false;
  }
  uint64_t seed = request.has_seed ? request.seed : options_.unseeded_base + next_unseeded_++;
  auto seq = std::make_unique<Sequence>(std::move(stream), std::move(request), seed);
  seq->model_prompt = seq->request.prompt_tokens;
  if (seq->model_prompt.empty()) seq->model_prompt.push_back(eos_);  // GPT-2's <|endoftext|> as BOS
  seq->blocks_needed = need;
  std::string id = seq->id;
  inbox_.push_back(Command{Command::Kind::kSubmit, std::move(id), std::move(seq)});
  pending_waiting_++;
  submitted_++;
  cv_.notify_one();
  return true;
}

void Engine::Cancel(const std::string& stream_id) {
  std::lock_guard<std::mutex> lock(mu_);
  inbox_.push_back(Command{Command::Kind::kCancel, stream_id, nullptr});
  cv_.notify_one();
}

void Engine::SetPaused(const std::string& stream_id, bool paused) {
  std::lock_guard<std::mutex> lock(mu_);
  inbox_.push_back(Command{paused ? Command::Kind::kPause : Command::Kind::kResume, stream_id, nullptr});
  cv_.notify_one();
}

void Engine::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  EngineStats s = published_;
  s.waiting = pending_waiting_;
  s.submitted = submitted_;
  s.refused = refused_;
  return s;
}

void Engine::WriteStats(json::Writer* w) const {
  EngineStats s = stats();
  auto field = [w](const char* k, int64_t v) {
    w->Key(k);
    w->Int(v);
  };
  field("running", s.running);
  field("waiting", s.waiting);
  field("kv_blocks_total", s.kv_blocks_total);
  field("kv_blocks_free", s.kv_blocks_free);
  field("releases", static_cast<int64_t>(s.releases));
  field("double_releases", static_cast<int64_t>(s.double_releases));
  field("submitted", static_cast<int64_t>(s.submitted));
  field("admitted", static_cast<int64_t>(s.admitted));
  field("finished", static_cast<int64_t>(s.finished));
  field("queue_timeouts", static_cast<int64_t>(s.queue_timeouts));
  field("refused", static_cast<int64_t>(s.refused));
  field("steps", static_cast<int64_t>(s.steps));
  field("prefill_passes", static_cast<int64_t>(s.prefill_passes));
  field("tokens_generated", static_cast<int64_t>(s.tokens_generated));
  field("reader_waits", static_cast<int64_t>(s.reader_waits));
  field("max_batch", options_.max_batch);
  field("prefill_batch_tokens", options_.prefill_batch_tokens);
  field("block_size", options_.block_size_tokens);
}

// ---- engine thread ---------------------------------------------------------

void Engine::Apply(Command& c) {
  if (c.kind == Command::Kind::kSubmit) {
    Sequence* s = c.seq.get();
    by_id_[s->id] = s;
    if (s->stream->waits_for_readers()) {
      // Cleared in Retire (which waits out a call in progress), so the
      // listener never outlives this engine's sequences.
      s->stream->SetDeliveryListener([this] { OnReadersProgress(); });
    }
    waiting_.push_back(std::move(c.seq));
    if (s->request.max_new_tokens <= 0) {
      Retire(*s, stream::EventType::kDone,
             backend::DoneEventData("length", static_cast<int>(s->request.prompt_tokens.size()), 0));
    }
    return;
  }
  auto it = by_id_.find(c.id);
  if (it == by_id_.end()) return;  // unknown, or already finished: ignored
  Sequence& s = *it->second;
  switch (c.kind) {
    case Command::Kind::kCancel:
      Retire(s, stream::EventType::kDone,
             backend::DoneEventData("cancelled", static_cast<int>(s.request.prompt_tokens.size()),
                                    s.produced));
      break;
    case Command::Kind::kPause:
      s.paused = true;
      break;
    case Command::Kind::kResume:
      s.paused = false;
      break;
    case Command::Kind::kSubmit:
      break;
  }
}

void Engine::Retire(Sequence& s, stream::EventType type, std::string data) {
  if (s.done) return;  // the stream is finished once; see ReleaseBlocks for the blocks
  s.done = true;
  if (s.admitted) ReleaseBlocks(s);
  if (s.stream->waits_for_readers()) s.stream->SetDeliveryListener(nullptr);
  s.stream->Finish(type, std::move(data));
  by_id_.erase(s.id);
  counters_.finished++;
  if (!s.admitted) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_waiting_--;
  }
}

void Engine::ReleaseBlocks(Sequence& s) {
  if (s.released) {
    counters_.double_releases++;
    if (m_.double_releases) m_.double_releases->Inc();
    std::fprintf(stderr, "engine: BUG: second release of the KV blocks of %s\n", s.id.c_str());
    return;
  }
  s.released = true;
  Status st = alloc_->Free(s.kv.block_table);
  if (!st.ok()) {
    counters_.double_releases++;
    if (m_.double_releases) m_.double_releases->Inc();
    std::fprintf(stderr, "engine: BUG: releasing the KV blocks of %s: %s\n", s.id.c_str(),
                 st.message().c_str());
  }
  counters_.releases++;
  s.kv.block_table.clear();
  s.kv.length = 0;
}

void Engine::ExpireWaiting(stream::Clock::time_point now) {
  for (auto& p : waiting_) {
    if (!p || p->done || p->request.queue_timeout_ms <= 0) continue;
    auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - p->request.arrival);
    if (waited.count() < p->request.queue_timeout_ms) continue;
    counters_.queue_timeouts++;
    Retire(*p, stream::EventType::kError,
           backend::ErrorEventData("queue_timeout",
                                   "no batch slot or KV blocks within queue_timeout_ms (" +
                                       std::to_string(p->request.queue_timeout_ms) + " ms)",
                                   true));
  }
}

void Engine::Admit() {
  // Admission first (strict arrival order, as many as fit), then the
  // admitted prompts' prefills in passes of up to prefill_batch_tokens
  // tokens, in the same order.
  std::vector<Sequence*>& admitted = scratch_.admitted;
  admitted.clear();
  int live = 0;
  for (auto& r : running_) live += r->done ? 0 : 1;
  for (auto& p : waiting_) {
    if (!p || p->done || p->paused) continue;
    if (live >= options_.max_batch) break;
    Sequence& s = *p;
    if (!alloc_->Alloc(s.blocks_needed, &s.kv.block_table)) break;  // strict arrival order
    s.admitted = true;
    live++;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_waiting_--;
    }
    counters_.admitted++;
    if (m_.queue_wait_seconds) m_.queue_wait_seconds->Observe(SecondsSince(s.request.arrival));
    admitted.push_back(&s);
    running_.push_back(std::move(p));  // leaves a null in waiting_, removed by Compact()
  }
  const int budget = std::max(1, std::min(options_.prefill_batch_tokens, options_.max_prefill_chunk_tokens));
  for (size_t i = 0; i < admitted.size();) {
    size_t j = i;
    int tokens = 0;
    while (j < admitted.size() && (j == i || tokens + PromptLen(*admitted[j]) <= budget)) {
      tokens += PromptLen(*admitted[j]);
      j++;
    }
    Prefill(admitted.data() + i, static_cast<int>(j - i));
    i = j;
  }
}

int Engine::PromptLen(const Sequence& s) { return static_cast<int>(s.model_prompt.size()); }

void Engine::Prefill(Sequence* const* group, int n) {
  auto t0 = stream::Clock::now();
  Status st;
  if (n == 1) {
    st = forward_->Prefill(&group[0]->kv, group[0]->model_prompt.data(), PromptLen(*group[0]), logits_.data());
    if (!st.ok()) {
      Retire(*group[0], stream::EventType::kError,
             backend::ErrorEventData("internal", "prefill: " + st.message(), false));
      return;
    }
  } else {
    StepScratch& sc = scratch_;
    sc.states.clear();
    sc.prompts.clear();
    sc.lens.clear();
    for (int i = 0; i < n; i++) {
      sc.states.push_back(&group[i]->kv);
      sc.prompts.push_back(group[i]->model_prompt.data());
      sc.lens.push_back(PromptLen(*group[i]));
    }
    st = forward_->PrefillBatch(sc.states.data(), sc.prompts.data(), sc.lens.data(), n, logits_.data());
    if (!st.ok()) {
      // Nothing changed: prefill them one by one, so that only a bad prompt fails.
      for (int i = 0; i < n; i++) Prefill(group + i, 1);
      return;
    }
  }
  if (m_.prefill_seconds) m_.prefill_seconds->Observe(SecondsSince(t0));
  counters_.prefill_passes++;
  // First tokens: out as soon as this pass ends, before the next pass.
  SampleRows(group, n);
  for (int i = 0; i < n; i++) EmitToken(*group[i], tokens_[i]);
}

void Engine::Decode() {
  std::vector<Sequence*>& batch = scratch_.batch;
  std::vector<model::SeqState*>& states = scratch_.states;
  std::vector<int32_t>& tokens = scratch_.tokens;
  batch.clear();
  states.clear();
  tokens.clear();
  for (auto& p : running_) {
    if (p->done || p->paused) continue;
    batch.push_back(p.get());
    states.push_back(&p->kv);
    tokens.push_back(p->last_token);
  }
  if (batch.empty()) return;
  const int B = static_cast<int>(batch.size());
  if (m_.batch_size) m_.batch_size->Observe(B);
  counters_.max_batch_seen = std::max<int64_t>(counters_.max_batch_seen, B);
  Status st = forward_->DecodeBatch(states.data(), tokens.data(), B, logits_.data());
  if (!st.ok()) {
    for (Sequence* s : batch) {
      Retire(*s, stream::EventType::kError, backend::ErrorEventData("internal", "decode: " + st.message(), false));
    }
    return;
  }
  SampleRows(batch.data(), B);
  for (int b = 0; b < B; b++) EmitToken(*batch[b], tokens_[b]);
}

void Engine::SampleRows(Sequence* const* seqs, int n) {
  const size_t V = static_cast<size_t>(model_->config().vocab_size);
  auto draw = [&](int i, int worker) {
    tokens_[i] = samplers_[worker]->Sample(logits_.data() + i * V, seqs[i]->params, &seqs[i]->rng);
  };
  if (n > 1) pool_->ParallelFor(n, draw);
  else if (n == 1) draw(0, 0);
}

bool Engine::EmitToken(Sequence& s, int32_t tok) {
  const int index = s.produced++;
  const int prompt = static_cast<int>(s.request.prompt_tokens.size());
  s.last_token = tok;
  counters_.tokens_generated++;
  if (tok == eos_) {
    // The eos token is reported with only the held-back text.
    std::string tail = s.text.Push(s.utf8.Flush()).text;
    tail += s.text.Flush();
    s.stream->Append(stream::EventType::kToken, backend::TokenEventData(index, tok, tail));
    Retire(s, stream::EventType::kDone, backend::DoneEventData("eos", prompt, s.produced));
    return true;
  }
  backend::TextAssembler::Step step = s.text.Push(s.utf8.Push(tokenizer_->TokenBytes(tok)));
  if (step.stopped) {
    s.stream->Append(stream::EventType::kToken, backend::TokenEventData(index, tok, step.text));
    Retire(s, stream::EventType::kDone, backend::DoneEventData("stop", prompt, s.produced));
    return true;
  }
  if (s.produced >= s.request.max_new_tokens) {
    // Last token: carry everything held back (partial character, possible
    // stop-string prefix) in its text.
    std::string tail = step.text + s.text.Push(s.utf8.Flush()).text;
    tail += s.text.Flush();
    s.stream->Append(stream::EventType::kToken, backend::TokenEventData(index, tok, tail));
    Retire(s, stream::EventType::kDone, backend::DoneEventData("length", prompt, s.produced));
    return true;
  }
  s.stream->Append(stream::EventType::kToken, backend::TokenEventData(index, tok, step.text));
  return false;
}

void Engine::Compact() {
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(),
                                [](const std::unique_ptr<Sequence>& p) { return !p || p->done; }),
                 waiting_.end());
  running_.erase(std::remove_if(running_.begin(), running_.end(),
                                [](const std::unique_ptr<Sequence>& p) { return !p || p->done; }),
                 running_.end());
}

void Engine::Publish() {
  counters_.running = static_cast<int64_t>(running_.size());
  counters_.kv_blocks_free = alloc_->num_free();
  counters_.kv_blocks_total = alloc_->num_blocks();
  if (m_.kv_blocks_free) m_.kv_blocks_free->Set(counters_.kv_blocks_free);
  if (m_.kv_blocks_used) m_.kv_blocks_used->Set(counters_.kv_blocks_total - counters_.kv_blocks_free);
  if (m_.running) m_.running->Set(counters_.running);
  std::lock_guard<std::mutex> lock(mu_);
  published_ = counters_;
  if (m_.waiting) m_.waiting->Set(pending_waiting_);
}

bool Engine::ReadersGateClosed() const {
  for (auto& p : running_) {
    if (!p->done && p->stream->waits_for_readers() && !p->stream->ReadersCaughtUp()) return true;
  }
  return false;
}

void Engine::OnReadersProgress() {
  std::lock_guard<std::mutex> lock(mu_);
  readers_progress_ = true;
  cv_.notify_one();
}

bool Engine::HasRunnableWork() const {
  if (ReadersGateClosed()) return false;
  for (auto& p : running_) {
    if (!p->done && !p->paused) return true;
  }
  int live = 0;
  for (auto& r : running_) live += r->done ? 0 : 1;
  if (live >= options_.max_batch) return false;
  for (auto& p : waiting_) {
    if (!p || p->done || p->paused) continue;
    return p->blocks_needed <= alloc_->num_free();  // the head can be admitted
  }
  return false;
}

void Engine::Step() {
  auto t0 = stream::Clock::now();
  ExpireWaiting(t0);
  if (!ReadersGateClosed()) {
    Admit();
    Decode();
  }
  Compact();
  counters_.steps++;
  if (m_.step_seconds) m_.step_seconds->Observe(SecondsSince(t0));
  Publish();
}

void Engine::Run() {
  std::vector<Command> batch;
  for (;;) {
    bool stop = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      readers_progress_ = false;
      if (inbox_.empty() && !stopping_ && !HasRunnableWork()) {
        if (ReadersGateClosed()) counters_.reader_waits++;
        // Idle: sleep until a wish arrives or the earliest queue timeout.
        stream::Clock::time_point deadline = stream::Clock::time_point::max();
        for (auto& p : waiting_) {
          if (p && !p->done && p->request.queue_timeout_ms > 0) {
            deadline = std::min(deadline, p->request.arrival + std::chrono::milliseconds(p->request.queue_timeout_ms));
          }
        }
        auto woken = [&] { return !inbox_.empty() || stopping_ || readers_progress_; };
        if (deadline == stream::Clock::time_point::max()) {
          cv_.wait(lock, woken);
        } else {
          cv_.wait_until(lock, deadline, woken);
        }
      }
      batch.swap(inbox_);
      stop = stopping_;
    }
    for (auto& c : batch) Apply(c);
    batch.clear();
    if (stop) {
      // Shutdown: every accepted request is finished exactly once.
      for (auto& p : waiting_) {
        if (p && !p->done) {
          Retire(*p, stream::EventType::kDone,
                 backend::DoneEventData("cancelled", static_cast<int>(p->request.prompt_tokens.size()),
                                        p->produced));
        }
      }
      for (auto& p : running_) {
        if (!p->done) {
          Retire(*p, stream::EventType::kDone,
                 backend::DoneEventData("cancelled", static_cast<int>(p->request.prompt_tokens.size()),
                                        p->produced));
        }
      }
      Compact();
      Publish();
      return;
    }
    Step();
  }
}

}  // namespace tw::engine
