// OpenAI-compatible completions (DESIGN.md §9; the contract is docs/openai.md).
//
// POST /v1/completions takes OpenAI's legacy completions request and answers
// in OpenAI's shapes: one `text_completion` object, or (stream: true) a
// text/event-stream of `data: {chunk}` lines ending with `data: [DONE]`.
// GET /v1/models and /v1/models/{id} list the one served model.
//
// The request is parsed once into a CompletionRequest, mapped onto our typed
// generation request (ToGeneration) and launched through App::Launch, so the
// policies, bounds, metrics and cancellation on disconnect are those of
// /v1/stream. Everything the parser can refuse is refused here, before the
// first byte, with an OpenAI error object that names the param:
//   400 invalid_request_error  bad JSON, unknown or unsupported param, bad value,
//                              prompt + max_tokens over the context
//                              (code context_length_exceeded)
//   404 invalid_request_error  a model other than the served one (code model_not_found)
// After the 200 of a stream, a failure is a `data: {"error":{…}}` line
// followed by `data: [DONE]`.
//
// Threads: the parsing and JSON-building functions are pure (any thread); the
// stream format and the collecting subscription run on the I/O thread only,
// like SseSubscription.
// Memory: a parsed request holds the prompt's token ids (bounded by the body
// bound); a stream holds one chunk at a time (in its SseSubscription); a
// collecting subscription holds the completion text (bounded by max_tokens
// tokens).
// Never: blocks, throws, or sends a byte before a request is fully validated.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "api/generation_request.h"
#include "api/sse_subscription.h"
#include "http/server.h"
#include "stream/hub.h"

namespace tw::tokenizer {
class Tokenizer;
}

namespace tw::api {

// OpenAI's default max_tokens for legacy completions.
inline constexpr int kOpenAiDefaultMaxTokens = 16;

// A validated completions request.
struct CompletionRequest {
  std::string model;
  std::vector<int32_t> prompt_tokens;  // never empty
  int max_tokens = kOpenAiDefaultMaxTokens;
  double temperature = 1.0;            // OpenAI's default
  double top_p = 1.0;
  bool has_seed = false;
  int64_t seed = 0;                    // >= 0
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;          // stream_options.include_usage
};

// Parses and validates a POST /v1/completions body against the served model
// id and the server's bounds. The prompt is tokenized here (a literal
// "<|endoftext|>" is the special token, as in OpenAI's API). Returns false
// with *err filled on any refusal; *err names the param.
bool ParseCompletionRequest(std::string_view body, const tokenizer::Tokenizer& tokenizer,
                            const RequestBounds& bounds, std::string_view model_id,
                            CompletionRequest* out, ApiError* err);

// Our generation request (DESIGN.md §4) for a validated completions request
// (max_tokens → max_new_tokens; prompt tokens, temperature, top_p, seed and
// stop as they are).
backend::GenerationRequest ToGeneration(const CompletionRequest& req);

// Our finish reasons to OpenAI's: eos and stop → "stop", length → "length".
// False for cancelled and error (those end in an error).
bool OpenAiFinishReason(stream::FinishReason ours, std::string* openai);

// One of our errors as OpenAI answers it: 422 becomes 400, prompt_too_long
// names the param "prompt"; the rest as it is.
ApiError ForOpenAi(ApiError e);

// {"error":{"message":…,"type":…,"param":…,"code":…}}: type is
// invalid_request_error under 500, else server_error; param null when
// empty; code: null for invalid_request (the param says what), OpenAI's
// context_length_exceeded for prompt_too_long, else our type (invalid_json,
// model_not_found, overloaded, …).
std::string OpenAiErrorJson(const ApiError& e);

// What every chunk and answer of one completion shares.
struct CompletionMeta {
  std::string id;        // "cmpl-" + our stream id
  int64_t created = 0;   // unix seconds
  std::string model;
  bool include_usage = false;  // chunks carry "usage":null, then a usage chunk
};

// {"id","object":"text_completion","created","model","choices":[{"text","index":0,
//  "logprobs":null,"finish_reason":…}]}; finish_reason "" is written as null.
std::string CompletionChunkJson(const CompletionMeta& m, std::string_view text,
                                std::string_view finish_reason);
// The final chunk of include_usage: "choices":[] and "usage".
std::string UsageChunkJson(const CompletionMeta& m, int prompt_tokens, int completion_tokens);
// The whole non-streamed answer.
std::string CompletionJson(const CompletionMeta& m, std::string_view text,
                           std::string_view finish_reason, int prompt_tokens,
                           int completion_tokens);
// {"id","object":"model","created","owned_by":"tokenwire"}
std::string ModelJson(std::string_view id, int64_t created);
// {"object":"list","data":[ModelJson]}
std::string ModelListJson(std::string_view id, int64_t created);

// Sends an OpenAI error as a complete JSON response (with Retry-After when
// retry_after_ms > 0).
void SendOpenAiError(http::Responder& r, const ApiError& e, const http::Headers& extra = {});

// Extra room a completion stream keeps free below the output bound
// (SseSubscription::Options::reserve_bytes): the last chunks, or an error
// chunk with its resume hint, and [DONE] always fit.
inline constexpr size_t kOpenAiStreamReserveBytes = 2048;

// OpenAI's chunks for a streamed completion (stream: true), the format of an
// SseSubscription (which owns the response, heartbeats, backpressure and the
// client's close): each token with text is a `data: {chunk}` line; a done
// event is the chunk with the finish reason (then, with include_usage, the
// usage chunk) and `data: [DONE]`; an error event, a done without a usable
// finish reason, or a subscriber-level ending is `data: {"error":{…}}` and
// `data: [DONE]`. Tokens whose text is held back write nothing.
class OpenAiSseFormat : public SseFormat {
 public:
  // `stream_id` names the stream in a slow_client ending's resume hint.
  OpenAiSseFormat(CompletionMeta meta, std::string stream_id)
      : meta_(std::move(meta)), stream_id_(std::move(stream_id)) {}

  void AppendPreamble(std::string*) override {}
  Bytes AppendEvent(const stream::Event& event, std::string* out) override;
  void AppendEnding(const ApiError& end, std::string* out) override;

 private:
  CompletionMeta meta_;
  std::string stream_id_;
};

// Collects a whole completion (stream: false) and answers once at the end.
// A client that has gone by the time a token arrives makes Deliver() say
// kGone, so the hub detaches it (linger, then cancellation).
class CompletionCollectSubscription : public stream::Subscription {
 public:
  CompletionCollectSubscription(http::Responder responder, CompletionMeta meta,
                                http::Headers extra_headers,
                                std::function<void(stream::Subscription*)> on_done);

  stream::DeliverResult Deliver(const stream::Event& event) override;
  void Complete() override;
  void End(const ApiError& end) override;

 private:
  void Done();

  http::Responder responder_;
  CompletionMeta meta_;
  http::Headers extra_headers_;
  std::function<void(stream::Subscription*)> on_done_;
  std::string text_;
  int prompt_tokens_ = 0;
  int completion_tokens_ = 0;
  std::string finish_reason_;  // OpenAI's, from the done event
  bool failed_ = false;        // an error event, or a done we turn into an error
  ApiError error_;
};

}  // namespace tw::api
