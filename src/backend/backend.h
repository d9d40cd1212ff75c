// Backend: what produces tokens for a stream (DESIGN.md §2).
//
// Three implementations sit behind this interface: `mock` (synthetic tokens at
// a configured time-to-first-token and rate, for measuring the server apart
// from compute), `cpu` (GPT-2 on the step-driven engine) and, on a GPU box,
// `cuda`. The API layer creates a Stream, appends its `start` event, and hands
// it to Submit(); from then on the backend is the stream's only producer: it
// appends token events and calls Stream::Finish() exactly once, whatever ends
// the generation (length, eos, stop string, cancel, shutdown, error, queue
// timeout). Stream::producer_exited() becoming true is the moment
// "cancellation reached the model".
//
// Threads: every method is thread-safe and never blocks on a client. Submit,
// Cancel and SetPaused only record a wish; the backend's own thread carries it
// out at its next step.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "json/json.h"
#include "stream/stream.h"

namespace tw::backend {

struct GenerationRequest {
  std::vector<int32_t> prompt_tokens;
  int max_new_tokens = 64;
  float temperature = 0.0f;  // 0 = greedy
  int top_k = 0;             // 0 = off
  float top_p = 1.0f;        // 1 = off
  uint64_t seed = 0;
  bool has_seed = false;
  std::vector<std::string> stop;  // stop strings, matched on decoded text
  int64_t queue_timeout_ms = 0;   // 0 = wait as long as needed
  stream::Clock::time_point arrival = stream::Clock::now();
};

struct SubmitRefusal {
  int http_status = 503;
  std::string type = "overloaded";
  std::string message;
  int64_t retry_after_ms = 1000;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const char* kind() const = 0;           // "mock", "cpu", "cuda"
  virtual std::string model_name() const = 0;     // e.g. "gpt2"
  virtual int context_length() const = 0;         // prompt + new tokens bound

  // Queues a generation producing into `stream`. Returns false (and fills
  // *refusal) if it cannot be accepted now; nothing is appended then and the
  // caller still owns the stream.
  virtual bool Submit(std::shared_ptr<stream::Stream> stream, GenerationRequest request,
                      SubmitRefusal* refusal) = 0;
  // Asks the producer to stop; it finishes the stream with finish_reason
  // "cancelled" (if it had not finished already). Idempotent; unknown ids are
  // ignored.
  virtual void Cancel(const std::string& stream_id) = 0;
  // Leaves the stream out of generation (keeping its state) until resumed.
  virtual void SetPaused(const std::string& stream_id, bool paused) = 0;
  // Cancels every generation, waits for the producer threads to exit.
  virtual void Shutdown() = 0;

  // Appends backend fields to an open JSON object (for /stats), e.g.
  // "running", "waiting", "kv_blocks_total", ...
  virtual void WriteStats(json::Writer* w) const = 0;
};

}  // namespace tw::backend
