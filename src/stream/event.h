// Event: one sequence-numbered event of a stream (DESIGN.md §5), as a typed
// value from its producer to the edge that writes it.
//
// The producer (the engine, the mock) fills the fields of its type; the
// stream assigns `seq`; the hub reads the type and the finish reason to count
// outcomes; only the transports turn an event into bytes: our SSE
// (`id:/event:/data: {…}`), our WebSocket messages, OpenAI's chunks. An event
// shared by several subscribers is encoded once per wire format: the first
// transport that writes it stores its bytes in `wire[format]` and the others
// copy them (I/O thread only; see Wire).
//
// Threads: an event is written by its producer before Stream::Append and
// never changed by it afterwards (it is shared as EventPtr, a pointer to
// const). `wire` is mutable and touched by the I/O thread only.
// Memory: the fixed fields, the token's text (a few bytes), an error's
// message, a token's log-probabilities when its request asked (at most 21
// entries of a few bytes), on a first token the prompt's when asked (at most
// 21 entries per prompt token), and at most kWireFormats encodings of the
// event.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/api_error.h"

namespace tw::stream {

enum class EventType : uint8_t { kStart, kToken, kDone, kError };
const char* EventTypeName(EventType t);  // "start", "token", "done", "error"

// Why a stream ended (the done event's finish_reason, DESIGN.md §5).
enum class FinishReason : uint8_t { kLength, kStop, kEos, kCancelled, kError };
inline constexpr int kFinishReasons = 5;
const char* FinishReasonName(FinishReason r);  // "length", "stop", "eos", "cancelled", "error"

// The wire formats whose bytes are the same for every subscriber of a
// stream, so an event caches them (OpenAI's chunks carry a per-response id
// and are written by their one subscriber, uncached).
enum class Wire : uint8_t { kSse = 0, kWebSocket = 1 };
inline constexpr int kWireFormats = 2;

// One token's log-probability: its id, log P (double, >= -9999) and its
// bytes (the tokenizer's, not necessarily valid UTF-8: an edge writes them).
struct TokenLogprob {
  int32_t id = 0;
  double logprob = 0.0;
  std::string bytes;
  int32_t rank = 0;  // 1 + ids more likely (vLLM's rank); 0: not computed
};
// A token event's log-probabilities (engine::SampledToken's semantics): the
// sampled token's and the most likely alternatives, most likely first.
struct TokenLogprobs {
  TokenLogprob sampled;
  std::vector<TokenLogprob> top;  // 0..20 entries, as many as asked
  // A prompt's first token: nothing precedes it, so it has no
  // log-probability (JSON null); `sampled` holds its id and bytes only.
  bool none = false;
};
// A prompt's tokens' log-probabilities, one entry per prompt token, the
// first with `none` (backend::GenerationRequest::prompt_logprobs): those of
// the raw model at temperature 1, with ranks.
using PromptLogprobs = std::vector<TokenLogprobs>;

struct Event {
  uint64_t seq = 0;  // set by Stream::Append: 1, 2, 3, … within a stream
  EventType type = EventType::kToken;
  FinishReason finish_reason = FinishReason::kLength;  // done
  int32_t index = 0;              // token: its position in the completion, from 0
  int32_t token = 0;              // token: the id
  int32_t prompt_tokens = 0;      // start, done
  int32_t completion_tokens = 0;  // done
  uint32_t lab_pad_bytes = 0;     // lab (--lab-pad-bytes): the edge adds a "pad" field this long
  std::string text;               // token: the UTF-8 delta ("" while text is held back)
  std::shared_ptr<const ApiError> error;  // error events: type, message, retryable
  std::shared_ptr<const TokenLogprobs> logprobs;  // token: set only when the request asked
  // The first token event (index 0) of a request that asked for its
  // prompt's log-probabilities; null otherwise.
  std::shared_ptr<const PromptLogprobs> prompt_logprobs;

  // I/O thread only: the event's bytes in each Wire format ("" = not yet).
  mutable std::string wire[kWireFormats];

  bool terminal() const { return type == EventType::kDone || type == EventType::kError; }

  static Event Start(int prompt_tokens);
  static Event Token(int index, int32_t token, std::string text);
  static Event Done(FinishReason reason, int prompt_tokens, int completion_tokens);
  static Event Error(ApiError error);
};
using EventPtr = std::shared_ptr<const Event>;

}  // namespace tw::stream
