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
// Events are typed (stream::Event); a backend never writes JSON. The stream
// layer controls a backend through stream::ProducerControl (Cancel,
// SetPaused), which Backend extends, so the hub needs nothing from here.
//
// Threads: every method is thread-safe and never blocks on a client. Submit,
// Cancel and SetPaused only record a wish; the backend's own thread carries it
// out at its next step.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/api_error.h"
#include "grammar/matcher.h"
#include "stream/producer.h"
#include "stream/stream.h"

namespace tw::backend {

struct GenerationRequest {
  std::vector<int32_t> prompt_tokens;
  int max_new_tokens = 64;
  float temperature = 0.0f;  // 0 = greedy
  int top_k = 0;             // 0 = off
  float top_p = 1.0f;        // 1 = off
  // The sampling controls vLLM names alike (docs/openai.md has the table;
  // model/sampling.h the order they apply in). Each default is "off".
  float min_p = 0.0f;               // keep ids with P >= min_p * P(most likely); 0 = off
  float repetition_penalty = 1.0f;  // over the prompt's and the generated ids; 1 = off
  float presence_penalty = 0.0f;    // over the generated ids
  float frequency_penalty = 0.0f;   // over the generated ids, times their count
  // id -> added to that id's logit before anything else, in [-100, 100];
  // ids distinct and < the vocabulary.
  std::vector<std::pair<int32_t, float>> logit_bias;
  int min_tokens = 0;               // end-of-text and stop_token_ids held back until this many tokens
  bool ignore_eos = false;          // end-of-text does not end the generation
  std::vector<int32_t> stop_token_ids;  // drawing one ends the generation (finish "stop")
  uint64_t seed = 0;
  bool has_seed = false;
  std::vector<std::string> stop;  // stop strings, matched on decoded text
  // -1: none; 0..20: each token event carries its log-probability and this
  // many most likely alternatives (stream::TokenLogprobs).
  int logprobs = -1;
  // -1: none; 0..20: the first token event carries the prompt's
  // log-probabilities (stream::PromptLogprobs) with this many alternatives
  // per prompt token. Such a request computes its whole prompt (the prefix
  // cache is not read for it).
  int prompt_logprobs = -1;
  // Scheduling priority: lower runs first (vLLM's); only with
  // --scheduling-policy priority (the engine refuses another value
  // otherwise). Admission and preemption order follow it.
  int priority = 0;
  // Structured output: the compiled grammar every generated token must
  // follow (grammar/matcher.h; response_format, guided_*, grammar,
  // json_schema); null: unconstrained. Shared with the server's grammar
  // cache and every choice of the request.
  std::shared_ptr<grammar::TokenGrammar> grammar;
  int64_t queue_timeout_ms = 0;   // 0 = wait as long as needed
  stream::Clock::time_point arrival = stream::Clock::now();
};

// One named counter or gauge of a backend, for /stats and the start-up
// summary (the edge writes them; e.g. {"kv_blocks_free", 448}).
struct StatField {
  const char* name;
  int64_t value;
};

class Backend : public stream::ProducerControl {
 public:
  ~Backend() override = default;

  virtual const char* kind() const = 0;           // "mock", "cpu", "cuda"
  virtual std::string model_name() const = 0;     // e.g. "gpt2"
  virtual int context_length() const = 0;         // prompt + new tokens bound

  // Queues a generation producing into `stream`. Returns false (and fills
  // *refusal: overloaded with retry_after_ms, shutting_down, prompt_too_long)
  // if it cannot be accepted now; nothing is appended then and the caller
  // still owns the stream.
  virtual bool Submit(std::shared_ptr<stream::Stream> stream, GenerationRequest request,
                      ApiError* refusal) = 0;
  // Cancel and SetPaused: stream::ProducerControl (the stream is finished
  // with finish_reason "cancelled"; idempotent; unknown ids are ignored).
  // Cancels every generation, waits for the producer threads to exit.
  virtual void Shutdown() = 0;

  // The backend's counters for /stats, e.g. {"running", n}, {"waiting", n},
  // {"kv_blocks_total", n}, ... (appended to *out).
  virtual void Stats(std::vector<StatField>* out) const = 0;
};

}  // namespace tw::backend
