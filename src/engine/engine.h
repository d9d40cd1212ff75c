// Engine: the step-driven engine with continuous batching on the paged KV
// cache — the scheduling half of the `cpu` and `cuda` backends (DESIGN.md
// §2). The compute half is a ModelRunner (engine/runner.h): the engine hands
// it each step's sequences (their block tables and tokens) and gets one
// token id per sequence back; it never sees logits, weights or KV memory.
//
// The rest of the program talks to the engine through a thread-safe inbox:
// Submit, Cancel and SetPaused only record a wish; the engine thread carries
// it out at its next step. One step():
//   1. applies the inbox (new requests join the waiting list in arrival
//      order; cancels, pauses and resumes take effect) and expires waiting
//      requests older than their queue_timeout_ms (error event
//      `queue_timeout`, retryable);
//   2. admits waiting requests strictly in admission order (arrival under
//      --scheduling-policy fcfs; under priority: lower priority first, a
//      waiting request's priority improving by one per priority_aging_ms,
//      then arrival) while there is a batch slot (max_batch) and its blocks
//      fit: under --admission reserve every block the sequence may ever
//      need (prompt + max_new_tokens - 1 positions), so it never runs out;
//      under optimistic (the default) its prompt's blocks with one more and
//      the watermark (kv_watermark of the pool) still free — a sequence
//      alone is admitted whenever its prompt fits. The blocks of its
//      longest cached prompt prefix are shared, not taken again (below). A
//      paused waiting request is skipped (not admitted, not blocking the
//      others), the first one that does not fit stops admission (no
//      overtaking) — under priority, after preempting running sequences of
//      a worse priority than its own to make room, if there are any;
//   3. builds the step's rows within its token budget
//      (max_num_batched_tokens): first every running, unpaused sequence's
//      decode row (one token), after giving each the block its next position
//      needs (optimistic admission: when none is free, the running sequence
//      of the worst priority, latest admitted, is preempted); then, with
//      what is left, the admitted prompts still to prefill, in admission
//      order, each its next min(rest, budget left) tokens — a long prompt
//      is spread over several steps while the others decode at each. A
//      prompt sharing blocks that another is still computing waits a step
//      for them (a step's rows never read blocks the same step writes); if
//      their owner ends first, the sharer waits again and computes them
//      itself. Then ONE runner call (ModelRunner::Step) computes every row
//      in one pass: one read of the weights for the whole step. A chunk that
//      does not end its prompt draws nothing; one that does draws the
//      prompt's first token;
//   4. appends token events and finishes sequences (done with finish_reason
//      length / eos / stop / cancelled, or an error event).
//
// Lab policy `naive` (stream::Policy::kNaive, only with --lab): a stream
// marked Stream::waits_for_readers() gates the whole step loop (behind one
// gate: the count of such streams, zero in production). A step runs
// its admissions and its decode only when every running gated sequence's
// readers have taken every event of its stream (Stream::ReadersCaughtUp);
// otherwise the engine thread sleeps until the hub publishes progress (the
// stream's delivery listener wakes it), a wish arrives, or shutdown. One
// stalled reader therefore stalls every stream: the point of the lab policy.
// Cancel and Shutdown still take effect while the loop waits.
//
// Finishing: `length` after max_new_tokens tokens; `eos` when the sampled
// token is the end-of-text id (the model's eos_token_id unless overridden):
// the eos token IS reported as the last token event, with its id and, as
// text, only what was still held back (the "<|endoftext|>" marker itself is
// never emitted); it counts in completion_tokens. `stop` when a stop string
// completes in the decoded text (backend::TextAssembler: the stop string is
// not emitted, a possible prefix is held back). `cancelled` on Cancel (DELETE,
// linger, pause_then_cancel) and on Shutdown.
//
// Preemption by recompute (optimistic admission): the victim's blocks are
// released (its full blocks stay in the prefix cache, so the recompute is
// mostly shared blocks), its emitted tokens are appended to its prompt, and
// it waits again (at the head: it keeps its arrival order); when admitted
// again its prefill draws its next token as the next decode would have.
// Because a runner's K/V and logits do not depend on chunking, batch or
// cache, its tokens are those it would have drawn unpreempted; its stream
// sees a pause. Counted (preemptions, engine_preemptions_total) and logged
// at info (`preempt`). A preempted request's queue_timeout_ms no longer
// applies (its stream has started).
//
// KV blocks (engine/block_pool.h): taken at admission (and as sequences
// grow), released in exactly one place per admission (ReleaseBlocks: from
// Engine::Retire whatever ended the sequence, or from Preempt);
// a block is free once no sequence references it. A second release of a
// sequence, or the pool refusing a release, is a detected error: counted
// (stats().double_releases) and logged.
//
// Prompt log-probabilities (GenerationRequest::prompt_logprobs): such a
// request reads nothing from the prefix cache (every position's logits are
// computed; its own blocks are still cached for others) and is prefilled in
// chunks like any other; the runner fills one entry per prompt position as
// each chunk passes, and the first token event carries them
// (stream::PromptLogprobs).
//
// Prefix caching (EngineOptions::prefix_cache, --prefix-cache, on by
// default): every full block of a sequence — of its prompt at admission, of
// its generated tokens as a decode fills one — is cached under the chained
// hash of all tokens up to its end. At admission the longest cached chain of
// whole blocks matching the prompt (never its last token) is shared, and
// only the rest is prefilled. Blocks stay cached after their sequences end,
// while no admission needs them (least recently released evicted first). A
// sequence's last, partial block is always its own; shared blocks are never
// written. Because a runner's K/V and logits are bitwise independent of
// chunking and of the batch, a request's tokens are the same with the cache
// on or off. Prompts admitted in the same step share too: the first one's
// prompt blocks are cached at its admission and the sharer is prefilled in
// the step after they are written (if that prefill fails, the sharer
// computes them itself).
//
// Metrics (when EngineOptions::metrics is set; names get the tokenwire_
// prefix): engine_step_seconds, engine_batch_size (decode rows per step),
// engine_prefill_seconds (runner time of a step with prompt chunks),
// request_queue_time_seconds (arrival to admission, vLLM's definition)
// histograms; kv_blocks_used, kv_blocks_free, engine_running, engine_waiting
// gauges; kv_double_releases_total; prefix_cache_queries_total and
// prefix_cache_hits_total (prompt tokens looked up at admission / found
// cached: vLLM's meanings) and the kv_blocks_cached gauge. kv_blocks_free
// counts the blocks admission can take (free, or cached and unreferenced);
// kv_blocks_used the referenced ones. TTFT, inter-token latency and tokens
// generated are measured by the stream layer as tokens are appended.
//
// Determinism: each request draws from a counter-based stream keyed by its
// seed (`seed`, or the engine's seed counter when has_seed is false) and the
// token's index, and a runner's logits are bitwise independent of batch
// composition, so a request's tokens do not depend on what else runs with it.
//
// Threads: every public method is thread-safe and never blocks on a client
// or on compute (Submit/Cancel/SetPaused take the inbox mutex briefly).
// Shutdown joins the engine thread. The engine thread owns the sequences,
// the allocator and the runner.
// Memory: the runner's (allocated once by its factory); here, per live
// request one Sequence (its prompt, text state, block table), and a step's
// scratch lists reserved in Create(). The waiting list is bounded by
// max_waiting (Submit refuses beyond it with 503 overloaded and
// retry_after_ms).
// Never: includes a model or kernel header, allocates KV memory, lets a
// waiting request whose stream was cancelled reach the model, or finishes a
// stream twice.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/status.h"
#include "engine/block_pool.h"
#include "engine/runner.h"

namespace tw::tokenizer {
class Tokenizer;
}

namespace tw::engine {

// How admission takes KV blocks (--admission).
enum class AdmissionMode : uint8_t {
  // A request is admitted when its prompt's blocks (less the shared prefix)
  // and one more fit above the watermark; blocks are allocated as a sequence
  // grows, and a sequence that needs one when none is free preempts the
  // lowest-priority, latest-admitted sequence (by recompute).
  kOptimistic,
  // Every block a request may ever need (prompt + max_new_tokens) is
  // reserved at admission: no sequence is ever preempted.
  kReserve,
};
// The order of admission and of preemption (--scheduling-policy).
enum class SchedulingPolicy : uint8_t {
  kFcfs,      // arrival order; a request's priority must be 0
  kPriority,  // lower priority first (vLLM's), then arrival; with aging
};

struct EngineOptions {
  std::string model_name = "gpt2";
  // What the runner is built with (RunnerLimitsFor); the engine takes the
  // values the runner reports.
  int max_batch = 32;               // sequences in one decode step (and running at once)
  int num_kv_blocks = 0;            // KV pool size in blocks; 0 = max_batch full contexts
  int block_size_tokens = 16;       // tokens per KV block
  int threads = 1;                  // compute threads of a CPU runner (the engine thread included)
  // Scheduling.
  int max_waiting = 64;             // requests queued for a slot; Submit refuses beyond
  // Tokens one step computes (--max-num-batched-tokens, vLLM's name): every
  // running sequence's decode row first, the rest for prompt chunks, so a
  // long prompt is spread over several steps while the others decode at
  // each; the runner's one pass holds this many rows (RunnerLimits::
  // max_step_tokens). At least max_batch. The server sets it per backend
  // (app::DefaultStepTokens: 64 on the CPU); 512 here.
  int max_num_batched_tokens = 512;
  int64_t retry_after_ms = 1000;    // suggested in an `overloaded` refusal
  int eos_token_id = -1;            // -1 = the model config's eos_token_id
  bool prefix_cache = true;         // share full KV blocks of a cached prompt prefix (--prefix-cache)
  AdmissionMode admission = AdmissionMode::kOptimistic;  // --admission
  double kv_watermark = 0.01;       // optimistic: this fraction of the blocks stays free at admission (--kv-watermark)
  SchedulingPolicy scheduling = SchedulingPolicy::kFcfs;  // --scheduling-policy
  // priority: a waiting request's priority improves by one per this many
  // ms waited (--priority-aging-ms; 0: never), so none waits forever.
  int64_t priority_aging_ms = 1000;
  uint64_t unseeded_base = 0x7477656e67696e65ull;  // seeds of requests without has_seed
  // Tests: after every step the scheduler's invariants are checked (each
  // sequence where its state says, block references equal the tables that
  // hold them, one release per admission, the bounds); a broken one is
  // counted in EngineStats::invariant_violations and reported as a bug.
  bool check_invariants = false;
  // Optional registry for the engine's metrics (must outlive the engine).
  Metrics* metrics = nullptr;
  Logger* log = nullptr;  // errors the engine detects in itself; null: stderr
};

// Counters readable from any thread (a consistent snapshot under the inbox
// mutex, updated by the engine thread at the end of each step).
struct EngineStats {
  int64_t running = 0;          // admitted, not finished
  int64_t waiting = 0;          // submitted, not admitted, not finished
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_free = 0;
  uint64_t submitted = 0;       // accepted by Submit
  uint64_t admitted = 0;        // reached the model (prefill started)
  uint64_t finished = 0;        // streams finished (done or error), one per submitted
  uint64_t releases = 0;        // block releases (one per admitted sequence)
  uint64_t double_releases = 0; // detected second releases (must stay 0)
  uint64_t steps = 0;
  uint64_t prefill_passes = 0;  // steps that carried prompt chunks (beside their decodes)
  uint64_t prefill_chunks = 0;  // prompt chunks that left the rest of their prompt for a later step
  uint64_t tokens_generated = 0;
  uint64_t queue_timeouts = 0;
  uint64_t refused = 0;         // Submit refusals (overloaded, too long)
  int64_t max_batch_seen = 0;   // most decode rows in one step so far
  uint64_t reader_waits = 0;    // times the loop slept on a naive stream's readers
  int64_t kv_blocks_cached = 0;         // blocks in the prefix cache (referenced or evictable)
  uint64_t prefix_cache_queries = 0;    // prompt tokens looked up at admission
  uint64_t prefix_cache_hits = 0;       // of those, found cached (not prefilled)
  uint64_t preemptions = 0;             // sequences preempted (their blocks freed, recomputed later)
  int64_t most_preemptions = 0;         // the most times one request has been preempted
  uint64_t invariant_violations = 0;    // EngineOptions::check_invariants (must stay 0)
};

// The limits a runner for these options is built with: num_kv_blocks 0
// becomes max_batch full contexts of n_ctx positions.
RunnerLimits RunnerLimitsFor(const EngineOptions& options, int n_ctx);

class Engine : public backend::Backend {
 public:
  // Takes the runner (built by a factory with RunnerLimitsFor(options)) and
  // starts the engine thread. `tokenizer` (token bytes for the text fields)
  // must outlive the engine.
  static Status Create(std::unique_ptr<ModelRunner> runner, const tokenizer::Tokenizer* tokenizer,
                       const EngineOptions& options, std::unique_ptr<Engine>* out);
  ~Engine() override;

  const char* kind() const override { return kind_; }
  std::string model_name() const override { return options_.model_name; }
  int context_length() const override { return shape_.n_ctx; }
  bool Submit(std::shared_ptr<stream::Stream> stream, backend::GenerationRequest request,
              ApiError* refusal) override;
  void Cancel(const std::string& stream_id) override;
  void SetPaused(const std::string& stream_id, bool paused) override;
  void Shutdown() override;
  // running, waiting, kv_blocks_total, kv_blocks_free, releases,
  // double_releases, and a few more counters.
  void Stats(std::vector<backend::StatField>* out) const override;

  EngineStats stats() const;
  const EngineOptions& options() const { return options_; }
  // Blocks one request reserves at admission.
  int BlocksNeeded(int prompt_tokens, int max_new_tokens) const;

 private:
  struct Sequence;
  struct Command {
    enum class Kind { kSubmit, kCancel, kPause, kResume } kind;
    std::string id;
    std::unique_ptr<Sequence> seq;  // kSubmit only
  };
  struct Instruments {
    Histogram* step_seconds = nullptr;
    Histogram* batch_size = nullptr;
    Histogram* prefill_seconds = nullptr;
    Histogram* queue_wait_seconds = nullptr;
    Gauge* kv_blocks_used = nullptr;
    Gauge* kv_blocks_free = nullptr;
    Gauge* running = nullptr;
    Gauge* waiting = nullptr;
    Counter* double_releases = nullptr;
    Gauge* kv_blocks_cached = nullptr;
    Counter* prefix_queries = nullptr;
    Counter* prefix_hits = nullptr;
    Counter* preemptions = nullptr;
  };

  Engine(std::unique_ptr<ModelRunner> runner, const tokenizer::Tokenizer* tokenizer,
         const EngineOptions& options);
  void Run();
  // One step (see above).
  void Step();
  void Apply(Command& c);
  void ExpireWaiting(stream::Clock::time_point now);
  void Admit();
  // The waiting requests that may be admitted (not done, not paused), in
  // admission order: arrival (fcfs), or aged priority then arrival.
  void AdmissionOrder(std::vector<Sequence*>* out) const;
  // s's place in that order at `now` (smaller first).
  std::pair<int64_t, uint64_t> AdmissionKey(const Sequence& s, stream::Clock::time_point now) const;
  // Admitted, unfinished sequences.
  int Live() const;
  // Blocks s takes at admission: all it may need (reserve), or its
  // prompt's (optimistic).
  int AdmitBlocks(const Sequence& s) const;
  // s can be admitted now beside `live` running sequences (its shared
  // prefix counted once; optimistic: one more block and the watermark
  // free, unless nothing runs).
  bool Fits(const Sequence& s, int live) const;
  // The running sequence preemption takes first: the lowest priority
  // (priority policy), then the latest admitted; with `below`, only one of
  // priority greater (worse) than it. Null if none.
  Sequence* Victim(const int* below = nullptr) const;
  // Frees s's blocks and returns it to the waiting requests, its emitted
  // tokens appended to its prompt (recomputed when it is admitted again).
  // Also for an admitted prompt whose shared blocks' owner ended before
  // computing them (nothing emitted yet: it computes them itself).
  void Preempt(Sequence& s);
  // Gives each sequence of the batch a block for the position it writes
  // (optimistic admission), preempting when none is free; the preempted
  // leave the batch.
  void Grow(std::vector<Sequence*>* batch);
  // The step's rows (scratch_.rows, .chunks: tokens per row, .decodes):
  // every decoding sequence's row, then prompt chunks with what the decodes
  // leave of max_num_batched_tokens, in admission order.
  void Schedule();
  // One runner call over rows[0, count) (the first `decodes` decode rows,
  // then n[i] prompt tokens each), then each row's results: tokens
  // appended, prompts advanced, first tokens of the prompts completed. A
  // failed call is retried row by row, so that only a bad row fails.
  void RunRows(Sequence** rows, int* n, int count, int decodes);
  // Structured output: s's allowed-token mask for its next draw into `mask`
  // (its grammar's, with end-of-text and stop_token_ids only where the
  // grammar may end). On error the sequence is retired with it.
  bool MaskOf(Sequence& s, uint64_t* mask);
  // The blocks s shares that are not ready yet are being computed by a
  // live prefill (else that prefill failed).
  bool SharedInProgress(const Sequence& s) const;
  // Prompt tokens still to prefill (after the shared prefix).
  static int ToPrefill(const Sequence& s);
  // Reserves s's blocks: its longest cached prefix shared, the rest fresh;
  // false (and nothing held) when they do not fit.
  bool Reserve(Sequence& s);
  // Blocks of s's prompt that may come from the prefix cache.
  int MaxSharedBlocks(const Sequence& s) const;
  // Caches s's full blocks [hashed so far, full_blocks) (prefix cache on).
  void CacheFullBlocks(Sequence& s, int full_blocks, bool ready);
  // Every block s shares has been written (by the prefill of its owner).
  bool SharedReady(const Sequence& s) const;
  // The runner's view of a sequence appending `tokens[0..n)`.
  static SeqView ViewOf(const Sequence& s, const int32_t* tokens, int n);
  // Appends the token event for `sampled` (with its log-probabilities when
  // the request asked) and finishes the sequence if this token ends it
  // (returns true then).
  bool EmitToken(Sequence& s, const SampledToken& sampled);
  // After its prefill: s's prompt log-probabilities as the first token
  // event will carry them (from the runner's entries, which it frees).
  void PromptLogprobsOf(Sequence& s) const;
  // The event's typed log-probabilities for a row that asked.
  std::shared_ptr<const stream::TokenLogprobs> LogprobsOf(const SampledToken& sampled) const;
  // The one place a sequence ends: finishes its stream (once) with
  // `terminal`, releases its blocks (if it had any) and marks it for
  // removal from the lists.
  void Retire(Sequence& s, stream::Event terminal);
  // A done event with `reason` for s (its prompt and completion counts).
  static stream::Event DoneOf(const Sequence& s, stream::FinishReason reason);
  void ReleaseBlocks(Sequence& s);
  // A broken invariant (a bug, counted in double_releases): logged as an error.
  void ReportBug(const Sequence& s, const char* what, const std::string& detail) const;
  void Compact();
  // EngineOptions::check_invariants, after a step.
  void CheckInvariants();
  void Publish();
  bool HasRunnableWork() const;
  // naive: some running sequence's readers have not taken its last event.
  bool ReadersGateClosed() const;
  // A naive stream's hub published reader progress (I/O thread).
  void OnReadersProgress();

  const std::unique_ptr<ModelRunner> runner_;  // used by the engine thread only
  const char* const kind_;                      // runner_->kind()
  const ModelShape shape_;
  const tokenizer::Tokenizer* const tokenizer_;
  const EngineOptions options_;                 // with the runner's limits
  Instruments m_;

  mutable Mutex mu_;
  std::condition_variable cv_;
  std::vector<Command> inbox_ TW_GUARDED_BY(mu_);
  bool stopping_ TW_GUARDED_BY(mu_) = false;
  // Set by OnReadersProgress, cleared by the loop.
  bool readers_progress_ TW_GUARDED_BY(mu_) = false;
  // Submitted and not yet admitted or finished.
  int64_t pending_waiting_ TW_GUARDED_BY(mu_) = 0;
  uint64_t next_unseeded_ TW_GUARDED_BY(mu_) = 0;
  uint64_t next_arrival_ TW_GUARDED_BY(mu_) = 0;  // arrival order of accepted requests
  uint64_t submitted_ TW_GUARDED_BY(mu_) = 0;
  uint64_t refused_ TW_GUARDED_BY(mu_) = 0;
  // The engine thread's counters_ as of its last step.
  EngineStats published_ TW_GUARDED_BY(mu_);

  // Owned by the engine thread:
  std::unique_ptr<BlockPool> pool_;
  std::vector<SampledToken> sampled_;  // (max_batch) what the runner drew
  // A step's lists (capacity max_batch, reserved by Create, cleared before
  // each use): the step loop allocates nothing for them.
  struct StepScratch {
    std::vector<Sequence*> rows;         // Schedule: the step's rows, decodes first
    std::vector<int> chunks;             // Schedule: each row's tokens this step
    int decodes = 0;                     // Schedule: rows[0, decodes) decode
    std::vector<Sequence*> order;        // Admit: the waiting, in admission order (grows with the queue)
    std::vector<Sequence*> grow;         // Grow: the decode rows by priority, then admission
    std::vector<SeqView> views;          // the runner's view of each row
    // Structured output: row i's allowed-token mask at masks[i * mask_words]
    // (max_batch rows of ModelShape::vocab_size bits, 6.3 KB a row for GPT-2;
    // allocated by the first step with a grammar row).
    std::vector<uint64_t> masks;
  } scratch_;
  int mask_words_ = 0;  // (vocab_size + 63) / 64
  int naive_live_ = 0;  // live sequences of `naive` lab streams (the gate)
  int watermark_blocks_ = 0;   // optimistic admission keeps this many blocks free
  uint64_t next_admit_ = 0;    // admission order (preemption takes the latest)
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;
  std::unordered_map<std::string, Sequence*> by_id_;
  EngineStats counters_;  // engine thread's working copy
  int eos_ = 0;

  std::thread thread_;
};

}  // namespace tw::engine
