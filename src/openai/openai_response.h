// The response side of the OpenAI-compatible endpoints (docs/openai.md):
// /v1/completions' `text_completion` objects and /v1/chat/completions'
// `chat.completion` / `chat.completion.chunk`, with n choices and logprobs.
//
// One request of n choices is n of our streams (one per choice, DESIGN.md
// §4), and one HTTP response. OpenAiChoices ties them: it attaches one small
// relay subscription per stream to the hub, and the relays hand each event,
// with its choice index, to one sink — the streamed response (an
// SseSubscription with an OpenAiSseFormat) or the collected answer
// (OpenAiCollector). The response ends once every choice has finished, or
// at the first choice that fails (the others are then detached, so they
// linger and are cancelled like any abandoned stream); a client that leaves
// detaches every choice.
//
// Log-probabilities come typed on token events (stream::TokenLogprobs) and
// become JSON here only: completions' legacy {tokens, token_logprobs,
// top_logprobs, text_offset}, chat's {content: [{token, logprob, bytes,
// top_logprobs}]}. A prompt's (stream::PromptLogprobs, on a choice's first
// token event) become echo's leading entries (null for the first token) and
// vLLM's prompt_logprobs, [null, {"<id>": {logprob, rank, decoded_token}}]. A token whose text is held back (part of a character or
// of a possible stop string) sends no chunk; its log-probabilities wait for
// the choice's next chunk (or its finish chunk).
//
// Threads: the JSON functions are pure; everything else runs on the I/O
// thread. Memory: per choice the log-probabilities not yet written (a few
// tokens' worth while streaming; the whole completion's when collecting,
// bounded by max_tokens) and, when collecting, the text.
// Never: blocks, throws, or answers twice.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "http/server.h"
#include "sse/sse_subscription.h"
#include "stream/hub.h"

namespace tw::openai {

// Which OpenAI API a response speaks.
enum class OpenAiApi : uint8_t { kCompletions, kChat };

// What every chunk and answer of one response shares.
struct CompletionMeta {
  std::string id;        // "cmpl-" / "chatcmpl-" + the first choice's stream id
  int64_t created = 0;   // unix seconds
  std::string model;
  bool include_usage = false;  // chunks carry "usage":null, then a usage chunk
  OpenAiApi api = OpenAiApi::kCompletions;
  int n = 1;             // choices, indexes 0..n-1
  // Choices per prompt (completions' array of prompts): usage counts each
  // prompt once, with choice i answering prompt i / choices_per_prompt.
  // 0: every choice answers the one prompt.
  int choices_per_prompt = 0;
  // best_of (collected answers only): per prompt, the answered_per_prompt
  // candidates whose tokens' log-probabilities sum highest, re-indexed
  // 0..; usage still counts every candidate. 0: every choice is answered.
  int answered_per_prompt = 0;
  // Completions' echo: each prompt's text, which starts its choices' text
  // (streamed: the choice's first chunk). Empty: no echo.
  std::vector<std::string> echo;
  // Completions' echo with logprobs: the prompt's tokens start the choice's
  // logprobs (the first with null), from its first token event.
  bool echo_logprobs = false;
  int logprobs = -1;     // -1: "logprobs": null; else alternatives per token (0..20)
  // vLLM's prompt_logprobs (collected answers only): -1 absent; else the
  // alternatives per prompt token. Completions: each choice's
  // "prompt_logprobs"; chat: the response's. Only the first choice of each
  // prompt asks for them; its siblings answer with the same.
  int prompt_logprobs = -1;
};

// The log-probabilities of a run of tokens of one choice.
using LogprobRun = std::vector<std::shared_ptr<const stream::TokenLogprobs>>;

// One choice in a chunk or an answer.
struct ChoiceJson {
  int index = 0;
  std::string_view text;
  std::string_view finish_reason;     // "" = null
  const LogprobRun* logprobs = nullptr;  // null with meta.logprobs >= 0: an empty run
  int64_t text_offset = 0;           // completions: bytes of the choice's tokens before this run
  bool role = false;                 // chat chunk: the first, {"role":"assistant","content":""}
  const stream::PromptLogprobs* prompt_logprobs = nullptr;  // with meta.prompt_logprobs >= 0
};

struct UsageJson {
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

// A chunk (streamed) with the given choices, or with none and the usage.
std::string ChunkJson(const CompletionMeta& m, const ChoiceJson* choices, size_t count,
                      const UsageJson* usage);
// The whole non-streamed answer.
std::string AnswerJson(const CompletionMeta& m, const ChoiceJson* choices, size_t count,
                       const UsageJson& usage);

// Completions, one choice: {"id","object":"text_completion","created","model",
// "choices":[{"text","index":0,"logprobs":null,"finish_reason":…}]};
// finish_reason "" is written as null.
std::string CompletionChunkJson(const CompletionMeta& m, std::string_view text,
                                std::string_view finish_reason);
// The final chunk of include_usage: "choices":[] and "usage".
std::string UsageChunkJson(const CompletionMeta& m, int prompt_tokens, int completion_tokens);
// The whole non-streamed answer of one choice.
std::string CompletionJson(const CompletionMeta& m, std::string_view text,
                           std::string_view finish_reason, int prompt_tokens,
                           int completion_tokens);

// Our finish reasons to OpenAI's: eos and stop → "stop", length → "length".
// False for cancelled and error (those end in an error).
bool OpenAiFinishReason(stream::FinishReason ours, std::string* openai);

// {"error":{"message":…,"type":…,"param":…,"code":…}}: type is
// invalid_request_error under 500, else server_error; param null when
// empty; code: null for invalid_request (the param says what), OpenAI's
// context_length_exceeded for prompt_too_long, else our type (invalid_json,
// model_not_found, overloaded, …).
std::string OpenAiErrorJson(const ApiError& e);

// Sends an OpenAI error as a complete JSON response: Responder::SendError,
// whose body on an OpenAI path is OpenAiErrorJson (the app's error_body),
// with Retry-After when retry_after_ms > 0, named in the access record.
void SendOpenAiError(http::Responder& r, const ApiError& e, const http::Headers& extra = {});

// Extra room a completion stream keeps free below the output bound
// (SseSubscription::Options::reserve_bytes): the last chunks, or an error
// chunk with its resume hint, and [DONE] always fit.
inline constexpr size_t kOpenAiStreamReserveBytes = 4096;

// OpenAI's chunks for a streamed response (stream: true), the format of an
// SseSubscription. SetChoice(i) names the choice of the events that follow
// (OpenAiChoices sets it; 0 by default). Per choice: chat's first chunk
// carries the role (on the start event); each token with text is a chunk;
// a done event is the chunk with the finish reason. When every choice is
// done: the usage chunk (include_usage) and `data: [DONE]` (Bytes::kLast).
// An error event, a done without a usable finish reason, or a
// subscriber-level ending is `data: {"error":{…}}` and `data: [DONE]`.
class OpenAiSseFormat : public sse::SseFormat {
 public:
  // `stream_id` names the stream in a slow_client ending's resume hint.
  OpenAiSseFormat(CompletionMeta meta, std::string stream_id);

  void SetChoice(int index) { choice_ = index; }
  // The response's last bytes ([DONE]) have been written.
  bool ended() const { return ended_; }

  void AppendPreamble(std::string*) override {}
  Bytes AppendEvent(const stream::Event& event, std::string* out) override;
  void AppendEnding(const ApiError& end, std::string* out) override;

 private:
  struct Choice {
    LogprobRun pending;       // tokens whose text is held back
    int64_t text_offset = 0;  // bytes of the tokens already written
    bool echo_pending = false;  // echo_logprobs: the echo waits for the prompt's logprobs
    bool done = false;
    // The state before the last event, restored when the hub offers that
    // event again (its bytes were refused: kNoRoom), so a retry writes the
    // same chunk instead of losing the held-back tokens' entries.
    uint64_t last_seq = 0;
    LogprobRun saved_pending;
    int64_t saved_offset = 0;
    bool saved_echo_pending = false;
  };
  // echo_logprobs: the echo chunk (the prompt's text and, when the event
  // has them, its tokens' logprobs).
  void AppendEcho(std::string* out, const stream::Event& ev);
  void AppendChoice(std::string* out, std::string_view text, std::string_view finish_reason, bool role);

  CompletionMeta meta_;
  std::string stream_id_;
  std::vector<Choice> choices_;
  int choice_ = 0;
  int done_ = 0;
  int prompt_tokens_ = 0;
  int completion_tokens_ = 0;  // summed over the choices
  bool ended_ = false;
};

// Collects a whole response (stream: false) and answers once.
class OpenAiCollector {
 public:
  OpenAiCollector(http::Responder responder, CompletionMeta meta);

  // kGone once the client has left (the hub then detaches that choice).
  stream::DeliverResult Deliver(int choice, const stream::Event& event);
  // An error event, or a done without a usable finish reason, was seen.
  bool failed() const { return failed_; }
  // Answers: the choices, or the failure's error.
  void Answer();
  // Answers a subscriber-level ending as an error.
  void Fail(const ApiError& end);

 private:
  struct Choice {
    std::string text;
    LogprobRun logprobs;
    std::shared_ptr<const stream::PromptLogprobs> prompt;  // from the first token event, when asked
    std::string finish_reason;  // OpenAI's, from the done event
    double logprob_sum = 0;     // of its tokens (best_of ranks by it)
  };

  http::Responder responder_;
  CompletionMeta meta_;
  std::vector<Choice> choices_;
  int prompt_tokens_ = 0;
  int completion_tokens_ = 0;
  bool failed_ = false;
  bool answered_ = false;
  ApiError error_;
};

// best_of's pick: of `sums` (each candidate's summed log-probability, the
// candidates of each prompt in a row of `per_prompt`), the `keep` highest of
// each prompt (ties: the lower index), most likely first; candidate indexes.
std::vector<int> PickBest(const std::vector<double>& sums, int per_prompt, int keep);

// One OpenAI request's choices (n streams) and its one response (above).
// Made by the App, kept alive in its subscriptions until on_done.
class OpenAiChoices : public std::enable_shared_from_this<OpenAiChoices> {
 public:
  OpenAiChoices(stream::StreamHub* hub, std::vector<std::shared_ptr<stream::Stream>> streams,
                std::function<void(OpenAiChoices*)> on_done);
  ~OpenAiChoices();

  // The sink: a streamed response (its SseSubscription must have been made
  // with `format` and with SinkDone as its on_done, and route its
  // writability to OnWritable) or a collector.
  void UseStream(std::shared_ptr<sse::SseSubscription> sse, OpenAiSseFormat* format);
  void UseCollector(std::unique_ptr<OpenAiCollector> collector);
  // Attaches every choice from its first event. False if the hub refused
  // one (--max-subscribers 0): every choice is then detached again.
  bool Attach();
  // The socket can take more: every choice's events are offered again.
  void OnWritable();
  // The streamed response has ended (finished, or the client left).
  void SinkDone();
  // The client of a collected (not streamed) response left: every choice
  // still running is cancelled at once (nobody can resume them).
  void ClientGone();

 private:
  class Relay;
  stream::DeliverResult Deliver(int choice, const stream::Event& event);
  void EndBatch();
  void ChoiceComplete(int choice);
  void ChoiceEnd(int choice, const ApiError& end);
  void ChoiceGone(int choice);
  // Ends the group (once): the choices still attached are detached (they
  // linger, like any stream whose reader left) or, when one choice ended the
  // response (cancel_rest_), cancelled at once; then on_done.
  void Finish();

  stream::StreamHub* hub_;
  std::vector<std::shared_ptr<stream::Stream>> streams_;
  std::vector<std::unique_ptr<Relay>> relays_;
  std::function<void(OpenAiChoices*)> on_done_;
  std::shared_ptr<sse::SseSubscription> sse_;
  OpenAiSseFormat* format_ = nullptr;  // owned by sse_
  std::unique_ptr<OpenAiCollector> collector_;
  int completed_ = 0;
  bool finished_ = false;
  bool cancel_rest_ = false;  // a choice failed: the others' tokens can go nowhere
};

}  // namespace tw::openai
