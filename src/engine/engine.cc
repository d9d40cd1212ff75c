#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "backend/token_emitter.h"
#include "engine/logit_editor.h"
#include "grammar/matcher.h"
#include "tokenizer/tokenizer.h"

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
  // The tokens whose K/V the cache holds or will hold: the prompt ([eos]
  // for an empty one), then each token fed back by a decode.
  std::vector<int32_t> kv_tokens;
  int prompt_len = 0;                 // kv_tokens[0, prompt_len) is what is prefilled
  SamplingRow sampling;               // counter = produced when drawing
  std::vector<int32_t> block_table;   // reserved at admission, released by Retire
  std::vector<uint64_t> block_hashes; // chain hash of each full block so far (BlockPool)
  int shared_blocks = 0;              // block_table[0, shared_blocks) came from the prefix cache
  int pending_end = 0;                // blocks [shared_blocks, pending_end) cached at admission, before the prefill
  int cached = 0;                     // tokens whose K/V the runner holds
  int blocks_needed = 0;
  bool admitted = false;   // blocks taken, prefill started (false again once preempted)
  bool released = false;   // blocks returned (exactly once)
  bool paused = false;
  bool done = false;       // stream finished; removed from the lists at Compact()
  int32_t last_token = 0;
  uint64_t arrival_order = 0;  // Submit's order (fcfs; priority's tie-break)
  uint64_t admit_order = 0;    // the latest admission's order (preemption takes the latest)
  int preemptions = 0;
  backend::TokenEmitter emit;  // the tokens produced so far, their text, the end rules
  LogitEditor edits;           // logit_bias, min_tokens and the penalties, as they stand
  grammar::Matcher matcher;    // structured output: the grammar's state after the tokens so far
  // request.prompt_logprobs >= 0: the runner's entries (during the prefill),
  // then the event's, until the first token carries them.
  std::vector<SampledToken> prompt_out;
  std::shared_ptr<const stream::PromptLogprobs> prompt_logprobs;

  bool wants_prompt_logprobs() const { return request.prompt_logprobs >= 0; }
  // Admitted and its whole prompt computed (decoding; a possible
  // preemption victim): a prefill in chunks has cached < prompt_len.
  bool prefilled() const { return admitted && cached >= prompt_len; }

  Sequence(std::shared_ptr<stream::Stream> s, backend::GenerationRequest r, uint64_t seed,
           const tokenizer::Tokenizer* tokenizer, int32_t eos)
      : id(s->id()),
        stream(std::move(s)),
        request(std::move(r)),
        emit(tokenizer, request, eos),
        edits(request, eos),
        matcher(request.grammar ? grammar::Matcher(request.grammar) : grammar::Matcher()) {
    sampling.temperature = request.temperature;
    sampling.top_k = request.top_k;
    sampling.top_p = request.top_p;
    sampling.min_p = request.min_p;
    sampling.seed = seed;
    sampling.logprobs = std::min(request.logprobs, kMaxTopLogprobs);
  }
};

RunnerLimits RunnerLimitsFor(const EngineOptions& o, int n_ctx) {
  RunnerLimits l;
  l.max_batch = o.max_batch;
  l.block_size_tokens = o.block_size_tokens;
  l.num_kv_blocks = o.num_kv_blocks;
  if (l.num_kv_blocks == 0 && o.block_size_tokens >= 1) {
    l.num_kv_blocks = o.max_batch * BlocksFor(n_ctx, o.block_size_tokens);
  }
  // A step never holds more than max_batch whole contexts.
  l.max_step_tokens = static_cast<int>(
      std::clamp<int64_t>(o.max_num_batched_tokens, 1, static_cast<int64_t>(std::max(1, o.max_batch)) * n_ctx));
  l.threads = std::max(1, o.threads);
  l.max_edits_per_row = n_ctx + kMaxNamedIds;
  return l;
}

Status Engine::Create(std::unique_ptr<ModelRunner> runner, const tokenizer::Tokenizer* tokenizer,
                      const EngineOptions& options, std::unique_ptr<Engine>* out) {
  if (!runner) return Status::Error("engine: no runner");
  if (tokenizer == nullptr) return Status::Error("engine: no tokenizer");
  EngineOptions o = options;
  if (o.max_waiting < 0) return Status::Error("engine: max_waiting must be >= 0");
  if (!(o.kv_watermark >= 0.0 && o.kv_watermark < 1.0)) {
    return Status::Error("engine: kv_watermark must be in [0, 1), got " + std::to_string(o.kv_watermark));
  }
  if (o.priority_aging_ms < 0) return Status::Error("engine: priority_aging_ms must be >= 0");
  // The runner's provisioning is the truth for everything it holds.
  const RunnerLimits rl = runner->limits();
  if (rl.max_batch < 1 || rl.block_size_tokens < 1 || rl.num_kv_blocks < 1) {
    return Status::Error("engine: the runner reports max_batch " + std::to_string(rl.max_batch) +
                         ", block size " + std::to_string(rl.block_size_tokens) + ", " +
                         std::to_string(rl.num_kv_blocks) + " KV blocks (each must be >= 1)");
  }
  o.max_batch = rl.max_batch;
  o.block_size_tokens = rl.block_size_tokens;
  o.num_kv_blocks = rl.num_kv_blocks;
  o.threads = rl.threads;
  o.max_num_batched_tokens = std::min(o.max_num_batched_tokens, rl.max_step_tokens);
  if (o.max_num_batched_tokens < o.max_batch) {
    return Status::Error("engine: --max-num-batched-tokens (" + std::to_string(o.max_num_batched_tokens) +
                         ") must be at least --max-batch (" + std::to_string(o.max_batch) +
                         "): every running sequence decodes a token each step");
  }
  const ModelShape shape = runner->shape();
  if (o.eos_token_id < 0) o.eos_token_id = shape.eos_token_id;

  std::unique_ptr<Engine> e(new Engine(std::move(runner), tokenizer, o));
  e->pool_ = std::make_unique<BlockPool>(o.num_kv_blocks, o.block_size_tokens, o.prefix_cache);
  e->sampled_.assign(static_cast<size_t>(o.max_batch), SampledToken{});
  e->mask_words_ = (e->shape_.vocab_size + 63) / 64;
  StepScratch& sc = e->scratch_;
  sc.rows.reserve(o.max_batch);
  sc.chunks.reserve(o.max_batch);
  sc.grow.reserve(o.max_batch);
  sc.views.reserve(o.max_batch);
  e->eos_ = o.eos_token_id;
  e->watermark_blocks_ = static_cast<int>(std::ceil(o.kv_watermark * o.num_kv_blocks));
  e->counters_.kv_blocks_total = o.num_kv_blocks;
  e->counters_.kv_blocks_free = o.num_kv_blocks;
  {
    MutexLock lock(e->mu_);  // no other thread yet; the analysis asks for it all the same
    e->published_ = e->counters_;
  }

  if (o.metrics != nullptr) {
    Metrics* r = o.metrics;
    e->m_.step_seconds = r->AddHistogram(
        "engine_step_seconds", "Time of one engine step (admission, one runner call over decodes and prompt chunks).",
        kStepBuckets);
    e->m_.batch_size = r->AddHistogram("engine_batch_size", "Sequences decoding in one step.",
                                       BatchBuckets(o.max_batch));
    e->m_.prefill_seconds = r->AddHistogram(
        "engine_prefill_seconds", "Runner time of a step that carried prompt chunks (beside its decodes).",
        kStepBuckets);
    e->m_.queue_wait_seconds = r->AddHistogram(
        "request_queue_time_seconds", "Time from arrival to admission (KV blocks reserved).", kWaitBuckets);
    e->m_.kv_blocks_used = r->AddGauge("kv_blocks_used", "KV cache blocks reserved by sequences.");
    e->m_.kv_blocks_free = r->AddGauge("kv_blocks_free", "KV cache blocks free.");
    e->m_.running = r->AddGauge("engine_running", "Sequences admitted and not finished.");
    e->m_.waiting = r->AddGauge("engine_waiting", "Requests waiting for a batch slot or KV blocks.");
    e->m_.double_releases = r->AddCounter("kv_double_releases_total",
                                          "Detected second releases of a sequence's KV blocks (a bug).");
    e->m_.kv_blocks_cached = r->AddGauge("kv_blocks_cached",
                                         "KV cache blocks holding a cached prefix (shared or evictable).");
    e->m_.prefix_queries = r->AddCounter("prefix_cache_queries_total",
                                         "Prompt tokens looked up in the prefix cache at admission.");
    e->m_.prefix_hits = r->AddCounter("prefix_cache_hits_total",
                                      "Prompt tokens found in the prefix cache at admission (not prefilled again).");
    e->m_.preemptions = r->AddCounter("engine_preemptions_total",
                                      "Sequences preempted for KV blocks or by priority (recomputed when admitted again).");
    if (e->m_.kv_blocks_free) e->m_.kv_blocks_free->Set(o.num_kv_blocks);
  }
  e->thread_ = std::thread([p = e.get()] { p->Run(); });
  *out = std::move(e);
  return Status::Ok();
}

Engine::Engine(std::unique_ptr<ModelRunner> runner, const tokenizer::Tokenizer* tokenizer,
               const EngineOptions& options)
    : runner_(std::move(runner)),
      kind_(runner_->kind()),
      shape_(runner_->shape()),
      tokenizer_(tokenizer),
      options_(options) {}

Engine::~Engine() { Shutdown(); }

int Engine::BlocksNeeded(int prompt_tokens, int max_new_tokens) const {
  // K/V is stored for the prompt and for every generated token but the last
  // (which is never fed back).
  int positions = std::max(prompt_tokens, 1) + std::max(max_new_tokens, 1) - 1;
  return BlocksFor(positions, options_.block_size_tokens);
}

bool Engine::Submit(std::shared_ptr<stream::Stream> stream, backend::GenerationRequest request,
                    ApiError* refusal) {
  auto refuse = [&](ApiError e) {
    if (refusal) *refusal = std::move(e);
    MutexLock lock(mu_);
    refused_++;
    return false;
  };
  if (!stream) return refuse(ApiError::Make(ErrorCode::kInternal, "engine: Submit without a stream"));
  const int prompt = static_cast<int>(request.prompt_tokens.size());
  for (size_t i = 0; i < request.prompt_tokens.size(); i++) {
    int32_t t = request.prompt_tokens[i];
    if (t < 0 || t >= shape_.vocab_size) {
      return refuse(ApiError::Make(ErrorCode::kInvalidRequest,
                                   "prompt token " + std::to_string(i) + " is " + std::to_string(t) +
                                       ", outside the vocabulary [0, " + std::to_string(shape_.vocab_size) + ")"));
    }
  }
  auto named = [&](const char* what, int32_t id) {
    return id >= 0 && id < shape_.vocab_size
               ? std::string()
               : std::string(what) + " names token " + std::to_string(id) + ", outside the vocabulary [0, " +
                     std::to_string(shape_.vocab_size) + ")";
  };
  if (request.logit_bias.size() + request.stop_token_ids.size() + 1 > static_cast<size_t>(kMaxNamedIds)) {
    return refuse(ApiError::Make(ErrorCode::kInvalidRequest,
                                 "logit_bias and stop_token_ids name " +
                                     std::to_string(request.logit_bias.size() + request.stop_token_ids.size()) +
                                     " ids; at most " + std::to_string(kMaxNamedIds - 1) + " together"));
  }
  for (const auto& [id, bias] : request.logit_bias) {
    if (std::string m = named("logit_bias", id); !m.empty()) return refuse(ApiError::Make(ErrorCode::kInvalidRequest, m));
  }
  for (int32_t id : request.stop_token_ids) {
    if (std::string m = named("stop_token_ids", id); !m.empty()) return refuse(ApiError::Make(ErrorCode::kInvalidRequest, m));
  }
  if (request.grammar && request.grammar->vocab().size() != shape_.vocab_size) {
    return refuse(ApiError::Make(ErrorCode::kInternal,
                                 "the grammar was compiled for " + std::to_string(request.grammar->vocab().size()) +
                                     " token ids, the model has " + std::to_string(shape_.vocab_size)));
  }
  auto refuse_param = [&](const char* param, std::string message) {
    ApiError e = ApiError::Make(ErrorCode::kInvalidRequest, std::move(message));
    e.param = param;
    return refuse(std::move(e));
  };
  if (request.priority != 0 && options_.scheduling != SchedulingPolicy::kPriority) {
    return refuse_param("priority", "priority " + std::to_string(request.priority) +
                                        " needs --scheduling-policy priority (this server runs first come, first served)");
  }
  if (request.prompt_logprobs < -1 || request.prompt_logprobs > kMaxTopLogprobs) {
    return refuse_param("prompt_logprobs", "prompt_logprobs is " + std::to_string(request.prompt_logprobs) +
                                               "; at most " + std::to_string(kMaxTopLogprobs) +
                                               " alternatives per prompt token");
  }
  const int positions = std::max(prompt, 1) + std::max(request.max_new_tokens, 1) - 1;
  if (positions > shape_.n_ctx) {
    return refuse(ApiError::Make(ErrorCode::kPromptTooLong,
                                 "prompt (" + std::to_string(prompt) + " tokens) + max_new_tokens (" +
                                     std::to_string(request.max_new_tokens) + ") exceed the context length " +
                                     std::to_string(shape_.n_ctx)));
  }
  const int need = BlocksNeeded(prompt, request.max_new_tokens);
  if (need > options_.num_kv_blocks) {
    return refuse(ApiError::Make(ErrorCode::kInvalidRequest,
                                 "the request needs " + std::to_string(need) + " KV blocks, the cache has " +
                                     std::to_string(options_.num_kv_blocks) + " (--kv-blocks)"));
  }
  MutexLock lock(mu_);
  if (stopping_) {
    if (refusal) {
      *refusal = ApiError::Make(ErrorCode::kShuttingDown, "the server is shutting down");
      refusal->retry_after_ms = options_.retry_after_ms;
    }
    return false;
  }
  if (pending_waiting_ >= options_.max_waiting) {
    if (refusal) {
      *refusal = ApiError::Make(ErrorCode::kOverloaded,
                                std::to_string(pending_waiting_) +
                                    " requests are already waiting for a slot (--max-waiting " +
                                    std::to_string(options_.max_waiting) + ")");
      refusal->retry_after_ms = options_.retry_after_ms;
    }
    refused_++;
    return false;
  }
  uint64_t seed = request.has_seed ? request.seed : options_.unseeded_base + next_unseeded_++;
  auto seq = std::make_unique<Sequence>(std::move(stream), std::move(request), seed, tokenizer_, eos_);
  seq->kv_tokens.reserve(static_cast<size_t>(positions));
  seq->kv_tokens = seq->request.prompt_tokens;
  if (seq->kv_tokens.empty()) seq->kv_tokens.push_back(eos_);  // GPT-2's <|endoftext|> as BOS
  seq->prompt_len = static_cast<int>(seq->kv_tokens.size());
  seq->blocks_needed = need;
  seq->arrival_order = next_arrival_++;
  std::string id = seq->id;
  inbox_.push_back(Command{Command::Kind::kSubmit, std::move(id), std::move(seq)});
  pending_waiting_++;
  submitted_++;
  cv_.notify_one();
  return true;
}

void Engine::Cancel(const std::string& stream_id) {
  MutexLock lock(mu_);
  inbox_.push_back(Command{Command::Kind::kCancel, stream_id, nullptr});
  cv_.notify_one();
}

void Engine::SetPaused(const std::string& stream_id, bool paused) {
  MutexLock lock(mu_);
  inbox_.push_back(Command{paused ? Command::Kind::kPause : Command::Kind::kResume, stream_id, nullptr});
  cv_.notify_one();
}

void Engine::Shutdown() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

EngineStats Engine::stats() const {
  MutexLock lock(mu_);
  EngineStats s = published_;
  s.waiting = pending_waiting_;
  s.submitted = submitted_;
  s.refused = refused_;
  return s;
}

void Engine::Stats(std::vector<backend::StatField>* out) const {
  EngineStats s = stats();
  auto field = [out](const char* k, int64_t v) { out->push_back({k, v}); };
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
  field("kv_blocks_cached", s.kv_blocks_cached);
  field("prefix_cache_queries", static_cast<int64_t>(s.prefix_cache_queries));
  field("prefix_cache_hits", static_cast<int64_t>(s.prefix_cache_hits));
  field("preemptions", static_cast<int64_t>(s.preemptions));
  field("most_preemptions", s.most_preemptions);
  field("prefix_cache", options_.prefix_cache ? 1 : 0);
  field("max_batch", options_.max_batch);
  field("max_num_batched_tokens", options_.max_num_batched_tokens);
  field("prefill_chunks", static_cast<int64_t>(s.prefill_chunks));
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
      naive_live_++;
    }
    waiting_.push_back(std::move(c.seq));
    if (s->request.max_new_tokens <= 0) Retire(*s, DoneOf(*s, stream::FinishReason::kLength));
    return;
  }
  auto it = by_id_.find(c.id);
  if (it == by_id_.end()) return;  // unknown, or already finished: ignored
  Sequence& s = *it->second;
  switch (c.kind) {
    case Command::Kind::kCancel:
      Retire(s, DoneOf(s, stream::FinishReason::kCancelled));
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

stream::Event Engine::DoneOf(const Sequence& s, stream::FinishReason reason) {
  return stream::Event::Done(reason, static_cast<int>(s.request.prompt_tokens.size()), s.emit.produced());
}

void Engine::Retire(Sequence& s, stream::Event terminal) {
  if (s.done) return;  // the stream is finished once; see ReleaseBlocks for the blocks
  s.done = true;
  if (s.admitted) ReleaseBlocks(s);
  if (s.stream->waits_for_readers()) {
    s.stream->SetDeliveryListener(nullptr);
    naive_live_--;
  }
  s.stream->Finish(std::move(terminal));
  by_id_.erase(s.id);
  counters_.finished++;
  if (!s.admitted) {
    MutexLock lock(mu_);
    pending_waiting_--;
  }
}

void Engine::ReportBug(const Sequence& s, const char* what, const std::string& detail) const {
  if (options_.log != nullptr) {
    options_.log->Log(LogLevel::kError, "engine_bug",
                      {{"stream", s.id}, {"what", what}, {"detail", detail.empty() ? nullptr : detail.c_str()}});
    return;
  }
  std::fprintf(stderr, "engine: BUG: %s of %s %s\n", what, s.id.c_str(), detail.c_str());
}

void Engine::ReleaseBlocks(Sequence& s) {
  if (s.released) {
    counters_.double_releases++;
    if (m_.double_releases) m_.double_releases->Inc();
    ReportBug(s, "second release of the KV blocks", "");
    return;
  }
  s.released = true;
  // A prefill that did not finish (cancelled between its chunks, or
  // failed) leaves no unwritten block in the prefix cache (a sharer waiting
  // for one is sent back to wait: Schedule).
  if (!s.prefilled()) {
    for (int k = s.shared_blocks; k < s.pending_end && k < static_cast<int>(s.block_table.size()); k++) {
      if (!pool_->IsReady(s.block_table[k])) pool_->Unregister(s.block_table[k]);
    }
  }
  Status st = pool_->Release(s.block_table);
  if (!st.ok()) {
    counters_.double_releases++;
    if (m_.double_releases) m_.double_releases->Inc();
    ReportBug(s, "releasing the KV blocks failed", st.message());
  }
  counters_.releases++;
  s.block_table.clear();
  s.block_hashes.clear();
  s.cached = 0;
}

void Engine::ExpireWaiting(stream::Clock::time_point now) {
  for (auto& p : waiting_) {
    // A preempted request's stream has started: its queue timeout is spent.
    if (!p || p->done || p->request.queue_timeout_ms <= 0 || p->preemptions > 0) continue;
    auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - p->request.arrival);
    if (waited.count() < p->request.queue_timeout_ms) continue;
    counters_.queue_timeouts++;
    Retire(*p, stream::Event::Error(ApiError::Make(
                   ErrorCode::kQueueTimeout, "no batch slot or KV blocks within queue_timeout_ms (" +
                                                 std::to_string(p->request.queue_timeout_ms) + " ms)")));
  }
}

void Engine::Admit() {
  // Strict admission order, as many as fit; their prefills follow
  // (Schedule, RunRows).
  int live = Live();
  std::vector<Sequence*>& order = scratch_.order;
  AdmissionOrder(&order);
  for (Sequence* p : order) {
    Sequence& s = *p;
    bool fits = live < options_.max_batch && Fits(s, live);
    // Under priority, running sequences of a worse priority make room.
    while (!fits && options_.scheduling == SchedulingPolicy::kPriority) {
      Sequence* v = Victim(&s.request.priority);
      if (v == nullptr) break;
      Preempt(*v);
      live--;
      fits = live < options_.max_batch && Fits(s, live);
    }
    if (!fits) break;  // strict order: no overtaking
    if (!Reserve(s)) break;
    s.admitted = true;
    s.admit_order = next_admit_++;
    live++;
    {
      MutexLock lock(mu_);
      pending_waiting_--;
    }
    counters_.admitted++;
    if (m_.queue_wait_seconds && s.preemptions == 0) m_.queue_wait_seconds->Observe(SecondsSince(s.request.arrival));
    for (auto& w : waiting_) {
      if (w.get() == p) {
        running_.push_back(std::move(w));  // leaves a null in waiting_, removed by Compact()
        break;
      }
    }
  }
}

int Engine::ToPrefill(const Sequence& s) { return s.prompt_len - s.cached; }

int Engine::Live() const {
  int live = 0;
  for (auto& r : running_) live += r && !r->done && r->admitted ? 1 : 0;
  return live;
}

std::pair<int64_t, uint64_t> Engine::AdmissionKey(const Sequence& s, stream::Clock::time_point now) const {
  if (options_.scheduling != SchedulingPolicy::kPriority) return {0, s.arrival_order};
  int64_t p = s.request.priority;
  if (options_.priority_aging_ms > 0) {
    const int64_t waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - s.request.arrival).count();
    p -= std::max<int64_t>(0, waited) / options_.priority_aging_ms;
  }
  return {p, s.arrival_order};
}

void Engine::AdmissionOrder(std::vector<Sequence*>* out) const {
  out->clear();
  for (auto& p : waiting_) {
    if (p && !p->done && !p->paused) out->push_back(p.get());
  }
  const auto now = stream::Clock::now();
  std::sort(out->begin(), out->end(),
            [&](const Sequence* a, const Sequence* b) { return AdmissionKey(*a, now) < AdmissionKey(*b, now); });
}

int Engine::AdmitBlocks(const Sequence& s) const {
  return options_.admission == AdmissionMode::kReserve ? s.blocks_needed
                                                      : BlocksFor(s.prompt_len, options_.block_size_tokens);
}

bool Engine::Fits(const Sequence& s, int live) const {
  int idle = 0;  // shared blocks now evictable: available() counts them, sharing takes them
  const int shared = pool_->PeekPrefix(s.kv_tokens.data(), MaxSharedBlocks(s), &idle);
  const int fresh = AdmitBlocks(s) - shared;
  const int avail = pool_->available() - idle;
  if (options_.admission == AdmissionMode::kReserve || live == 0) return fresh <= avail;
  return fresh + 1 + watermark_blocks_ <= avail;
}

Engine::Sequence* Engine::Victim(const int* below) const {
  const bool by_priority = options_.scheduling == SchedulingPolicy::kPriority;
  Sequence* best = nullptr;
  for (auto& p : running_) {
    if (!p || p->done || !p->admitted || !p->prefilled()) continue;
    if (below != nullptr && p->request.priority <= *below) continue;
    if (best == nullptr) {
      best = p.get();
    } else if (by_priority && p->request.priority != best->request.priority) {
      if (p->request.priority > best->request.priority) best = p.get();
    } else if (p->admit_order > best->admit_order) {
      best = p.get();
    }
  }
  return best;
}

void Engine::Preempt(Sequence& s) {
  const int blocks = static_cast<int>(s.block_table.size());
  const bool decoding = s.prefilled();
  ReleaseBlocks(s);  // its full blocks stay in the prefix cache
  if (decoding) {
    // Every emitted token becomes prompt: the last drawn one (not yet fed)
    // too, so the recompute's prefill draws the token after it.
    s.kv_tokens.push_back(s.last_token);
    s.prompt_len = static_cast<int>(s.kv_tokens.size());
  }
  s.admitted = false;
  s.released = false;
  s.shared_blocks = 0;
  s.pending_end = 0;
  s.preemptions++;
  counters_.preemptions++;
  counters_.most_preemptions = std::max<int64_t>(counters_.most_preemptions, s.preemptions);
  if (m_.preemptions) m_.preemptions->Inc();
  {
    MutexLock lock(mu_);
    pending_waiting_++;
  }
  if (options_.log != nullptr) {
    options_.log->Log(LogLevel::kInfo, "preempt",
                      {{"stream", s.id},
                       {"tokens", static_cast<int64_t>(s.emit.produced())},
                       {"blocks", static_cast<int64_t>(blocks)},
                       {"times", static_cast<int64_t>(s.preemptions)},
                       {"priority", static_cast<int64_t>(s.request.priority)}});
  }
}

void Engine::Grow(std::vector<Sequence*>* batch) {
  if (options_.admission == AdmissionMode::kReserve) return;  // every block was reserved
  const int bs = options_.block_size_tokens;
  // The best priority, earliest admitted first: they keep their blocks.
  std::vector<Sequence*>& rows = scratch_.grow;
  rows.assign(batch->begin(), batch->end());
  const bool by_priority = options_.scheduling == SchedulingPolicy::kPriority;
  std::sort(rows.begin(), rows.end(), [&](const Sequence* a, const Sequence* b) {
    if (by_priority && a->request.priority != b->request.priority) return a->request.priority < b->request.priority;
    return a->admit_order < b->admit_order;
  });
  for (Sequence* s : rows) {
    const size_t need = static_cast<size_t>(BlocksFor(s->cached + 1, bs));
    while (s->admitted && s->block_table.size() < need) {
      if (pool_->Alloc(1, &s->block_table)) break;
      Sequence* v = Victim();  // s itself at worst
      if (v == nullptr) {
        ReportBug(*s, "no block and nothing to preempt", "");
        break;
      }
      Preempt(*v);
    }
  }
  batch->erase(std::remove_if(batch->begin(), batch->end(), [](const Sequence* s) { return !s->admitted; }),
               batch->end());
}

int Engine::MaxSharedBlocks(const Sequence& s) const {
  // Whole blocks only, and never the prompt's last token: its logits are
  // what the prefill is for (and a shared block is never written).
  // A request for its prompt's log-probabilities computes every position.
  if (s.wants_prompt_logprobs()) return 0;
  return options_.prefix_cache ? (s.prompt_len - 1) / options_.block_size_tokens : 0;
}

bool Engine::Reserve(Sequence& s) {
  s.block_table.clear();
  s.block_hashes.clear();
  const int shared = pool_->AcquirePrefix(s.kv_tokens.data(), MaxSharedBlocks(s), &s.block_table, &s.block_hashes);
  if (!pool_->Alloc(AdmitBlocks(s) - shared, &s.block_table)) {
    Status st = pool_->Release(s.block_table);
    if (!st.ok()) ReportBug(s, "returning the shared blocks of an admission that did not fit failed", st.message());
    s.block_table.clear();
    s.block_hashes.clear();
    return false;
  }
  s.shared_blocks = shared;
  s.cached = shared * options_.block_size_tokens;
  if (options_.prefix_cache) {
    counters_.prefix_cache_queries += static_cast<uint64_t>(s.prompt_len);
    counters_.prefix_cache_hits += static_cast<uint64_t>(s.cached);
    if (m_.prefix_queries) m_.prefix_queries->Inc(s.prompt_len);
    if (m_.prefix_hits) m_.prefix_hits->Inc(s.cached);
  }
  // The prompt's own full blocks are cached now, before they are written,
  // so that an identical prefix admitted in this step shares them.
  CacheFullBlocks(s, s.prompt_len / options_.block_size_tokens, /*ready=*/false);
  s.pending_end = std::max(s.shared_blocks, static_cast<int>(s.block_hashes.size()));
  return true;
}

void Engine::CacheFullBlocks(Sequence& s, int full_blocks, bool ready) {
  if (!options_.prefix_cache) return;
  const int bs = options_.block_size_tokens;
  for (int k = static_cast<int>(s.block_hashes.size()); k < full_blocks; k++) {
    const int32_t* tokens = s.kv_tokens.data() + static_cast<size_t>(k) * bs;
    const uint64_t h = pool_->ChainHash(k == 0 ? BlockPool::kRootHash : s.block_hashes[k - 1], tokens);
    s.block_hashes.push_back(h);
    const int32_t own = s.block_table[k];
    const int32_t twin = pool_->Register(own, k == 0 ? -1 : s.block_table[k - 1], h, tokens, ready);
    if (twin == own || !ready || !pool_->IsReady(twin)) continue;
    // The same tokens after the same blocks are cached already (computed by
    // another sequence, bitwise the same K/V): share that block, free ours.
    Status st = pool_->Adopt(own, twin);
    if (!st.ok()) {
      ReportBug(s, "sharing a cached twin block failed", st.message());
      continue;
    }
    s.block_table[k] = twin;
  }
}

bool Engine::SharedReady(const Sequence& s) const {
  for (int k = 0; k < s.shared_blocks; k++) {
    if (!pool_->IsReady(s.block_table[k])) return false;
  }
  return true;
}

SeqView Engine::ViewOf(const Sequence& s, const int32_t* tokens, int n) {
  SeqView v;
  v.block_table = s.block_table.data();
  v.num_blocks = static_cast<int>(s.block_table.size());
  v.cached = s.cached;
  v.tokens = tokens;
  v.n = n;
  v.sampling = s.sampling;
  v.sampling.counter = static_cast<uint64_t>(s.emit.produced());
  v.sampling.edits = s.edits.data();
  v.sampling.num_edits = s.edits.size();
  return v;
}

bool Engine::SharedInProgress(const Sequence& s) const {
  for (int k = 0; k < s.shared_blocks; k++) {
    const int32_t id = s.block_table[k];
    if (pool_->IsReady(id)) continue;
    bool computing = false;  // a live prefill writes it
    for (auto& p : running_) {
      if (!p || p.get() == &s || p->done || !p->admitted || p->prefilled()) continue;
      for (size_t b = static_cast<size_t>(p->shared_blocks); b < p->block_table.size() && !computing; b++) {
        computing = p->block_table[b] == id;
      }
      if (computing) break;
    }
    if (!computing) return false;
  }
  return true;
}

void Engine::Schedule() {
  std::vector<Sequence*>& rows = scratch_.rows;
  std::vector<int>& n = scratch_.chunks;
  rows.clear();
  n.clear();
  // Decode rows first: every running, unpaused, prefilled sequence, each
  // given the block its next position needs (which may preempt).
  for (auto& p : running_) {
    if (p && !p->done && !p->paused && p->prefilled()) rows.push_back(p.get());
  }
  Grow(&rows);
  scratch_.decodes = static_cast<int>(rows.size());
  n.assign(rows.size(), 1);
  // What the decodes leave of the budget goes to prompt chunks, in
  // admission order (max_num_batched_tokens >= max_batch: never below 1
  // while a prompt is left, since it holds a batch slot).
  int budget = options_.max_num_batched_tokens - scratch_.decodes;
  for (auto& p : running_) {
    if (budget <= 0) break;
    if (!p || p->done || !p->admitted || p->prefilled() || p->paused) continue;
    Sequence& s = *p;
    if (!SharedReady(s)) {
      // Its owner is still computing the blocks it shares (they are ready
      // after this step: a step's rows never read what it writes); or it
      // ended first (cancelled, or its prefill failed): then s waits again
      // and computes them itself when readmitted.
      if (!SharedInProgress(s)) Preempt(s);
      continue;
    }
    const int c = std::min(ToPrefill(s), budget);
    budget -= c;
    rows.push_back(&s);
    n.push_back(c);
  }
}

bool Engine::MaskOf(Sequence& s, uint64_t* mask) {
  Status st = s.matcher.FillMask(mask);
  if (st.ok()) {
    // End-of-text and the stop tokens only where the grammar may end (the
    // matcher allows end-of-text exactly there); ignore_eos: never.
    const bool complete = s.matcher.IsComplete();
    auto put = [&](int32_t id, bool on) {
      if (id < 0 || id >= shape_.vocab_size) return;
      const uint64_t bit = uint64_t{1} << (id & 63);
      mask[id >> 6] = on ? (mask[id >> 6] | bit) : (mask[id >> 6] & ~bit);
    };
    for (int32_t id : s.request.stop_token_ids) put(id, complete);
    if (s.request.ignore_eos) put(shape_.eos_token_id, false);
    uint64_t any = 0;
    for (int w = 0; w < mask_words_; w++) any |= mask[w];
    if (any != 0) return true;
    st = Status::Error("grammar: no token of the vocabulary continues the output");
  }
  Retire(s, stream::Event::Error(ApiError::Make(ErrorCode::kInvalidRequest, st.message())));
  return false;
}

void Engine::RunRows(Sequence** rows, int* n, int count, int decodes) {
  if (count == 0) return;
  auto t0 = stream::Clock::now();
  // Structured output: each drawing row's mask first; a row whose grammar
  // fails (a bound passed) ends with that error and leaves the step.
  int kept = 0, kept_decodes = 0;
  for (int i = 0; i < count; i++) {
    Sequence& s = *rows[i];
    const bool draws = i < decodes || s.cached + n[i] >= s.prompt_len;
    if (draws && s.matcher.active()) {
      // max_batch masks, allocated the first time a grammar is used.
      if (scratch_.masks.empty()) {
        scratch_.masks.assign(static_cast<size_t>(options_.max_batch) * static_cast<size_t>(mask_words_), 0);
      }
      if (!MaskOf(s, scratch_.masks.data() + static_cast<size_t>(kept) * static_cast<size_t>(mask_words_))) continue;
    }
    rows[kept] = rows[i];
    n[kept] = n[i];
    kept_decodes += i < decodes;
    kept++;
  }
  count = kept;
  decodes = kept_decodes;
  if (count == 0) return;
  std::vector<SeqView>& views = scratch_.views;
  views.clear();
  for (int i = 0; i < count; i++) {
    Sequence& s = *rows[i];
    const uint64_t* mask = s.matcher.active()
                               ? scratch_.masks.data() + static_cast<size_t>(i) * static_cast<size_t>(mask_words_)
                               : nullptr;
    if (i < decodes) {
      views.push_back(ViewOf(s, &s.last_token, 1));
      views.back().sampling.mask = mask;
      continue;
    }
    views.push_back(ViewOf(s, s.kv_tokens.data() + s.cached, n[i]));
    SeqView& v = views.back();
    const bool ends = s.cached + n[i] >= s.prompt_len;
    v.sample = ends;  // a chunk that does not end the prompt draws nothing
    v.sampling.mask = mask;
    if (s.wants_prompt_logprobs()) {
      // Every position's log-probabilities, chunk by chunk (such a prompt
      // shares no cached prefix: its first chunk starts at 0).
      if (s.cached == 0) s.prompt_out.assign(static_cast<size_t>(std::max(0, s.prompt_len - 1)), SampledToken());
      v.prompt_logprobs = s.request.prompt_logprobs;
      v.prompt_out = s.prompt_out.data() + s.cached;
      if (!ends) v.next_token = s.kv_tokens[static_cast<size_t>(s.cached + n[i])];
    }
  }
  Status st = runner_->Step(views.data(), count, sampled_.data());
  if (!st.ok()) {
    if (count > 1) {
      // Nothing changed: run the rows one by one, so that only a bad one fails.
      for (int i = 0; i < count; i++) RunRows(rows + i, n + i, 1, i < decodes ? 1 : 0);
      return;
    }
    // Retire's release takes a prompt's unwritten blocks out of the prefix cache.
    Retire(*rows[0], stream::Event::Error(ApiError::Make(
                         ErrorCode::kInternal, std::string(decodes > 0 ? "decode: " : "prefill: ") + st.message())));
    return;
  }
  if (decodes < count) {
    if (m_.prefill_seconds) m_.prefill_seconds->Observe(SecondsSince(t0));
    counters_.prefill_passes++;
  }
  if (decodes > 0) {
    if (m_.batch_size) m_.batch_size->Observe(decodes);
    counters_.max_batch_seen = std::max<int64_t>(counters_.max_batch_seen, decodes);
  }
  const int bs = options_.block_size_tokens;
  for (int i = 0; i < count; i++) {
    Sequence& s = *rows[i];
    if (i < decodes) {
      s.kv_tokens.push_back(s.last_token);  // its K/V is in the cache now
      s.cached += 1;
      if (s.cached % bs == 0) CacheFullBlocks(s, s.cached / bs, /*ready=*/true);
      EmitToken(s, sampled_[static_cast<size_t>(i)]);
      continue;
    }
    s.cached += n[i];
    if (s.cached < s.prompt_len) {
      counters_.prefill_chunks++;  // the rest in later steps
      continue;
    }
    for (int k = s.shared_blocks; k < s.pending_end; k++) pool_->MarkReady(s.block_table[k]);
    if (s.wants_prompt_logprobs()) PromptLogprobsOf(s);
    EmitToken(s, sampled_[static_cast<size_t>(i)]);
  }
}

std::shared_ptr<const stream::TokenLogprobs> Engine::LogprobsOf(const SampledToken& sampled) const {
  if (!sampled.has_logprobs) return nullptr;
  auto lp = std::make_shared<stream::TokenLogprobs>();
  auto entry = [&](int32_t id, double logprob) {
    return stream::TokenLogprob{id, logprob, std::string(tokenizer_->TokenBytes(id))};
  };
  lp->sampled = entry(sampled.id, sampled.logprob);
  const int n = std::clamp(sampled.top_count, 0, kMaxTopLogprobs);
  lp->top.reserve(static_cast<size_t>(n));
  for (int j = 0; j < n; j++) lp->top.push_back(entry(sampled.top_ids[j], sampled.top_logprobs[j]));
  return lp;
}

void Engine::PromptLogprobsOf(Sequence& s) const {
  auto lp = std::make_shared<stream::PromptLogprobs>();
  const std::vector<int32_t>& prompt = s.request.prompt_tokens;  // empty: [eos] was prefilled, nothing to report
  lp->reserve(prompt.size());
  auto bytes = [&](int32_t id) { return std::string(tokenizer_->TokenBytes(id)); };
  for (size_t j = 0; j < prompt.size(); j++) {
    stream::TokenLogprobs e;
    e.sampled.id = prompt[j];
    e.sampled.bytes = bytes(prompt[j]);
    if (j == 0 || j - 1 >= s.prompt_out.size()) {
      e.none = true;  // nothing precedes the first token
    } else {
      const SampledToken& o = s.prompt_out[j - 1];
      e.sampled.logprob = o.logprob;
      e.sampled.rank = o.rank;
      const int k = std::clamp(o.top_count, 0, kMaxTopLogprobs);
      for (int t = 0; t < k; t++) e.top.push_back({o.top_ids[t], o.top_logprobs[t], bytes(o.top_ids[t]), t + 1});
    }
    lp->push_back(std::move(e));
  }
  s.prompt_out = std::vector<SampledToken>();  // the runner's entries are no longer needed
  s.prompt_logprobs = std::move(lp);
  s.request.prompt_logprobs = -1;  // once: a recompute after preemption reports none
}

bool Engine::EmitToken(Sequence& s, const SampledToken& sampled) {
  s.last_token = sampled.id;
  counters_.tokens_generated++;
  if (s.matcher.active()) {
    // The mask allowed only what the grammar takes; anything else is a bug.
    if (Status st = s.matcher.Accept(sampled.id); !st.ok()) {
      if (s.matcher.refused()) {
        ReportBug(s, "the runner drew a token the grammar's mask refuses", st.message());
        Retire(s, stream::Event::Error(ApiError::Make(ErrorCode::kInternal, st.message())));
      } else {
        Retire(s, stream::Event::Error(ApiError::Make(ErrorCode::kInvalidRequest, st.message())));  // a bound
      }
      return true;
    }
  }
  // A grammar that is complete and takes nothing more ends the output with
  // this token (finish "stop"): end-of-text would be the only token left.
  const bool grammar_done = s.matcher.active() && s.matcher.IsComplete() && !s.matcher.CanContinue();
  backend::TokenEmitter::Emit e = s.emit.Push(sampled.id, grammar_done);
  if (!e.done) s.edits.OnToken(sampled.id, s.emit.produced());
  stream::Event event = stream::Event::Token(e.index, sampled.id, std::move(e.text));
  event.logprobs = LogprobsOf(sampled);
  if (s.prompt_logprobs) event.prompt_logprobs = std::move(s.prompt_logprobs);  // the first token's
  s.stream->Append(std::move(event));
  if (e.done) Retire(s, DoneOf(s, e.reason));
  return e.done;
}

void Engine::Compact() {
  // Preempted sequences wait again (their arrival order puts them ahead of
  // later arrivals).
  for (auto& p : running_) {
    if (p && !p->done && !p->admitted) waiting_.push_front(std::move(p));
  }
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(),
                                [](const std::unique_ptr<Sequence>& p) { return !p || p->done; }),
                 waiting_.end());
  running_.erase(std::remove_if(running_.begin(), running_.end(),
                                [](const std::unique_ptr<Sequence>& p) { return !p || p->done; }),
                 running_.end());
}

void Engine::CheckInvariants() {
  auto broken = [&](const Sequence* s, const std::string& what) {
    counters_.invariant_violations++;
    if (s != nullptr) {
      ReportBug(*s, "scheduler invariant", what);
    } else if (options_.log != nullptr) {
      options_.log->Log(LogLevel::kError, "engine_bug", {{"what", "scheduler invariant"}, {"detail", what.c_str()}});
    } else {
      std::fprintf(stderr, "engine: BUG: scheduler invariant: %s\n", what.c_str());
    }
  };
  const int bs = options_.block_size_tokens;
  std::unordered_map<int32_t, int> holders;  // block -> tables holding it
  int live = 0;
  for (auto& p : running_) {
    if (!p) {
      broken(nullptr, "a null entry among the running after Compact");
      continue;
    }
    if (p->done) {
      broken(p.get(), "a finished sequence among the running after Compact");
      continue;
    }
    if (!p->admitted) broken(p.get(), "running, but not admitted");
    live++;
    if (p->prefilled() && p->cached != static_cast<int>(p->kv_tokens.size())) {
      broken(p.get(), "cached does not match the tokens fed");
    }
    if (static_cast<int>(p->block_table.size()) < BlocksFor(p->cached, bs)) broken(p.get(), "fewer blocks than its K/V");
    if (options_.admission == AdmissionMode::kReserve && static_cast<int>(p->block_table.size()) != p->blocks_needed) {
      broken(p.get(), "reserve: not every block it may need");
    }
    for (int32_t id : p->block_table) holders[id]++;
  }
  if (live > options_.max_batch) broken(nullptr, std::to_string(live) + " running over max_batch");
  int64_t waiting = 0;
  for (auto& p : waiting_) {
    if (!p || p->done) continue;
    waiting++;
    if (p->admitted || !p->block_table.empty()) broken(p.get(), "waiting, but admitted or holding blocks");
  }
  for (const auto& [id, n] : holders) {
    if (pool_->refcount(id) != n) broken(nullptr, "block " + std::to_string(id) + " has " +
                                                      std::to_string(pool_->refcount(id)) + " references, " +
                                                      std::to_string(n) + " tables");
  }
  if (pool_->referenced() != static_cast<int>(holders.size())) {
    broken(nullptr, std::to_string(pool_->referenced()) + " blocks referenced, " + std::to_string(holders.size()) +
                        " in tables");
  }
  if (counters_.admitted - counters_.releases != static_cast<uint64_t>(live)) {
    broken(nullptr, "admissions - releases != running");
  }
  MutexLock lock(mu_);
  for (const Command& c : inbox_) waiting += c.kind == Command::Kind::kSubmit ? 1 : 0;  // submitted meanwhile
  if (pending_waiting_ != waiting) {
    broken(nullptr, "waiting count " + std::to_string(pending_waiting_) + " != " + std::to_string(waiting));
  }
}

void Engine::Publish() {
  counters_.running = static_cast<int64_t>(running_.size());
  counters_.kv_blocks_free = pool_->available();
  counters_.kv_blocks_total = pool_->num_blocks();
  counters_.kv_blocks_cached = pool_->cached();
  if (m_.kv_blocks_cached) m_.kv_blocks_cached->Set(counters_.kv_blocks_cached);
  if (m_.kv_blocks_free) m_.kv_blocks_free->Set(counters_.kv_blocks_free);
  if (m_.kv_blocks_used) m_.kv_blocks_used->Set(counters_.kv_blocks_total - counters_.kv_blocks_free);
  if (m_.running) m_.running->Set(counters_.running);
  MutexLock lock(mu_);
  published_ = counters_;
  if (m_.waiting) m_.waiting->Set(pending_waiting_);
}

bool Engine::ReadersGateClosed() const {
  if (naive_live_ == 0) return false;  // the lab gate: no naive stream is live
  for (auto& p : running_) {
    if (!p->done && p->stream->waits_for_readers() && !p->stream->ReadersCaughtUp()) return true;
  }
  return false;
}

void Engine::OnReadersProgress() {
  MutexLock lock(mu_);
  readers_progress_ = true;
  cv_.notify_one();
}

bool Engine::HasRunnableWork() const {
  if (ReadersGateClosed()) return false;
  for (auto& p : running_) {
    if (!p || p->done || p->paused || !p->admitted) continue;
    // A prompt waiting for blocks another prefill computes is not work of
    // its own (were that one paused, the loop would spin).
    if (p->prefilled() || SharedReady(*p) || !SharedInProgress(*p)) return true;
  }
  const Sequence* head = nullptr;  // the first in admission order
  const auto now = stream::Clock::now();
  for (auto& p : waiting_) {
    if (!p || p->done || p->paused) continue;
    if (head == nullptr || AdmissionKey(*p, now) < AdmissionKey(*head, now)) head = p.get();
  }
  if (head == nullptr) return false;
  const int live = Live();
  if (live < options_.max_batch && Fits(*head, live)) return true;
  return options_.scheduling == SchedulingPolicy::kPriority && Victim(&head->request.priority) != nullptr;
}

void Engine::Step() {
  auto t0 = stream::Clock::now();
  ExpireWaiting(t0);
  if (!ReadersGateClosed()) {
    Admit();
    Schedule();
    RunRows(scratch_.rows.data(), scratch_.chunks.data(), static_cast<int>(scratch_.rows.size()), scratch_.decodes);
  }
  Compact();
  if (options_.check_invariants) CheckInvariants();
  counters_.steps++;
  if (m_.step_seconds) m_.step_seconds->Observe(SecondsSince(t0));
  Publish();
}

void Engine::Run() {
  std::vector<Command> batch;
  for (;;) {
    bool stop = false;
    {
      MutexLock lock(mu_);
      readers_progress_ = false;
      if (inbox_.empty() && !stopping_ && !HasRunnableWork()) {
        if (ReadersGateClosed()) {
          // Published now: the loop may sleep here until a reader moves,
          // and no step publishes meanwhile.
          counters_.reader_waits++;
          published_.reader_waits = counters_.reader_waits;
        }
        // Idle: sleep until a wish arrives or the earliest queue timeout.
        stream::Clock::time_point deadline = stream::Clock::time_point::max();
        for (auto& p : waiting_) {
          if (p && !p->done && p->request.queue_timeout_ms > 0) {
            deadline = std::min(deadline, p->request.arrival + std::chrono::milliseconds(p->request.queue_timeout_ms));
          }
        }
        if (deadline == stream::Clock::time_point::max()) {
          while (inbox_.empty() && !stopping_ && !readers_progress_) lock.Wait(cv_);
        } else {
          while (inbox_.empty() && !stopping_ && !readers_progress_ && lock.WaitUntil(cv_, deadline)) {
          }
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
        if (p && !p->done) Retire(*p, DoneOf(*p, stream::FinishReason::kCancelled));
      }
      for (auto& p : running_) {
        if (!p->done) Retire(*p, DoneOf(*p, stream::FinishReason::kCancelled));
      }
      Compact();
      Publish();
      return;
    }
    Step();
  }
}

}  // namespace tw::engine
