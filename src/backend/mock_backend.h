// MockBackend: synthetic, deterministic tokens at a configured time to first
// token and rate, so the server can be measured apart from compute.
//
// Token i of a stream is a pure function of (prompt tokens, seed, i), so a
// test or the bench can recompute what any stream must contain. A request
// that asks for log-probabilities gets synthetic ones (no model: the
// produced token is the most likely at probability 1/2, alternative j has
// 2^-(j+1), its id a hash of the token and j), enough to exercise the
// edges that write them.
//
// Clocks: by default each stream runs on its own clock (first token at
// arrival + ttft, then one every 1/rate s). With step_clock every stream's
// tokens fall on one shared grid of steps 1/rate s apart (the first on the
// first step after arrival + ttft), so the streams due at a step are
// produced together and announced with one wake-up, as a batching engine
// produces a token for every running sequence per step. Every stream
// honours max_new_tokens, stop strings, pause, resume and cancel exactly like
// the real engine, and the mock keeps an emission log per stream: the token
// ids it produced and the moment its producer exited (finished the stream).
// Cancellation "reached the model" when that exit is recorded.
//
// Threads: one producer thread for all mock streams (a timer-driven loop);
// the public methods are thread-safe and only record wishes in an inbox.
// Memory: per live stream a small record; emission logs of at most
// `max_logged_streams` streams (oldest dropped first).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "common/mutex.h"

namespace tw::tokenizer {
class Tokenizer;
}

namespace tw::backend {

struct MockOptions {
  int ttft_ms = 200;
  double tokens_per_s = 20.0;
  size_t max_logged_streams = 20000;
  std::string model_name = "mock-gpt2";
  int context_length = 1024;
  bool step_clock = false;  // every stream on one shared step grid (see above)
};

class MockBackend : public Backend {
 public:
  // `tokenizer` turns token ids into text; it must outlive the backend.
  MockBackend(const MockOptions& options, const tokenizer::Tokenizer* tokenizer);
  ~MockBackend() override;

  const char* kind() const override { return "mock"; }
  std::string model_name() const override { return options_.model_name; }
  int context_length() const override { return options_.context_length; }
  bool Submit(std::shared_ptr<stream::Stream> stream, GenerationRequest request,
              ApiError* refusal) override;
  void Cancel(const std::string& stream_id) override;
  void SetPaused(const std::string& stream_id, bool paused) override;
  void Shutdown() override;
  void Stats(std::vector<StatField>* out) const override;

  // The token the mock produces at position `index` for this prompt and seed.
  static int32_t TokenAt(const std::vector<int32_t>& prompt, uint64_t seed, int index);
  // The synthetic log-probabilities of `token` with k alternatives (above).
  std::shared_ptr<const stream::TokenLogprobs> Logprobs(int32_t token, int k) const;

  struct EmissionLog {
    std::vector<int32_t> tokens;  // every token id produced, in order
    bool exited = false;          // producer finished the stream
    std::string finish_reason;
    stream::Clock::time_point exit_time{};
    stream::Clock::time_point cancel_requested{};  // zero if never
  };
  // Copy of the log for `stream_id`; false if unknown (never seen or evicted).
  bool GetEmissionLog(const std::string& stream_id, EmissionLog* out) const;

  size_t live_count() const;

 private:
  struct Sequence;
  struct Command {
    enum class Kind { kSubmit, kCancel, kPause, kResume } kind;
    std::string id;
    std::shared_ptr<stream::Stream> stream;
    GenerationRequest request;
    stream::Clock::time_point at;
  };

  void Run();
  void Apply(Command& c);
  void Produce(const std::shared_ptr<Sequence>& s, stream::Clock::time_point now);
  void Finish(Sequence& s, stream::FinishReason reason);
  void Log(Sequence& s, int32_t token);

  const MockOptions options_;
  const tokenizer::Tokenizer* const tokenizer_;
  const stream::Clock::duration interval_;
  const stream::Clock::time_point origin_;  // step_clock: the grid's step 0
  // step_clock: the first step at or after t; otherwise t.
  stream::Clock::time_point OnGrid(stream::Clock::time_point t) const;

  mutable Mutex mu_;
  std::condition_variable cv_;
  std::vector<Command> inbox_ TW_GUARDED_BY(mu_);
  bool stopping_ TW_GUARDED_BY(mu_) = false;
  // A live sequence shares its log (Sequence::log), so logging a token
  // takes the lock but no lookup; an evicted log lives on until it ends.
  // A log's fields are written and read under mu_ too.
  std::unordered_map<std::string, std::shared_ptr<EmissionLog>> logs_ TW_GUARDED_BY(mu_);
  std::deque<std::string> log_order_ TW_GUARDED_BY(mu_);
  size_t live_ TW_GUARDED_BY(mu_) = 0;

  // Owned by the producer thread:
  std::unordered_map<std::string, std::shared_ptr<Sequence>> seqs_;
  // The schedule: (when, ticket, sequence). An entry is live while its
  // ticket is the sequence's current one (pausing, finishing or
  // rescheduling changes it); it keeps its sequence alive until popped.
  struct Due {
    stream::Clock::time_point when;
    uint64_t ticket;
    std::shared_ptr<Sequence> seq;
    bool operator>(const Due& o) const { return when != o.when ? when > o.when : ticket > o.ticket; }
  };
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> schedule_;
  void Schedule(const std::shared_ptr<Sequence>& s);
  uint64_t next_ticket_ = 1;

  std::thread thread_;
};

}  // namespace tw::backend
