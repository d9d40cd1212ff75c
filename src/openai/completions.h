// OpenAI-compatible completions (DESIGN.md §9; the contract is docs/openai.md).
//
// POST /v1/completions takes OpenAI's legacy completions request and answers
// in OpenAI's shapes: one `text_completion` object, or (stream: true) a
// text/event-stream of `data: {chunk}` lines ending with `data: [DONE]`.
// GET /v1/models and /v1/models/{id} list the one served model.
//
// The request is parsed once into a CompletionRequest, mapped onto our typed
// generation request (ToGeneration) and launched through App::LaunchOpenAi:
// one App::Launch per choice (`n` per prompt, or `best_of` candidates of
// which the n most likely are answered; choice j with seed + j), so the policies,
// bounds, metrics and cancellation on disconnect are those of /v1/stream; the
// answers (n choices, logprobs) are api/openai_response.h's. The parsing
// helpers shared with chat (api/chat.h) are declared here too. Everything the
// parser can refuse is refused here, before the first byte, with an OpenAI
// error object that names the param (and its message the value and what is
// allowed: service/request_fields.h). A member this server does not know is
// accepted and listed (unknown_fields; refused with
// RequestBounds::strict_request_fields); one it knows and does not
// implement is refused naming it and why (OtherParam):
//   400 invalid_request_error  bad JSON, unsupported param, bad value,
//                              prompt + max_tokens over the context
//                              (code context_length_exceeded)
//   404 invalid_request_error  a model other than the served one (code model_not_found)
// After the 200 of a stream, a failure is a `data: {"error":{…}}` line
// followed by `data: [DONE]`.
//
// Threads: the parsing and JSON-building functions are pure (any thread);
// App::LaunchOpenAi runs on the I/O thread.
// Memory: a parsed request holds the prompt's token ids (bounded by the body
// bound).
// Never: blocks, throws, or sends a byte before a request is fully validated.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "common/api_error.h"
#include "json/json.h"
#include "openai/openai_response.h"
#include "service/generation_request.h"
#include "service/request_fields.h"

namespace tw::tokenizer {
class Tokenizer;
}

namespace tw::openai {

// OpenAI's default max_tokens for legacy completions.
inline constexpr int kOpenAiDefaultMaxTokens = 16;
// The most choices one request may ask for (`n`): each is a stream of its
// own, counted against --max-streams and the engine's batch like any other.
inline constexpr int kMaxChoices = 16;
// The most alternatives per token (`logprobs`, chat's `top_logprobs`): OpenAI's bound.
inline constexpr int kMaxLogprobs = 20;

// The params both OpenAI APIs share and parse alike (ParseSharedParam).
struct SharedParams {
  double temperature = 1.0;  // OpenAI's default; below service::kMinTemperature: greedy
  double top_p = 1.0;
  bool has_seed = false;
  int64_t seed = 0;
  bool stream = false;
  int n = 1;
  // max_tokens or max_completion_tokens (the same when both are given); 0: neither.
  int max_tokens = 0;
  // The sampling controls (top_k, min_p, the penalties, logit_bias,
  // min_tokens, ignore_eos, stop_token_ids: service::ReadSamplingField), in
  // the fields of a generation request; the others are left at their
  // defaults. The request sent is built on it (ToGeneration).
  backend::GenerationRequest controls;
  // Members this server does not know, accepted and ignored (unless
  // --strict-request-fields): the endpoint logs and counts them.
  std::vector<std::string> unknown_fields;
};

// A validated completions request.
struct CompletionRequest {
  std::string model;
  // One or more prompts (an array of prompts), none empty; each is
  // answered with n choices, prompt p's choice j at index p * n + j.
  std::vector<std::vector<int32_t>> prompts;
  int max_tokens = kOpenAiDefaultMaxTokens;
  double temperature = 1.0;            // OpenAI's default
  double top_p = 1.0;
  bool has_seed = false;
  int64_t seed = 0;                    // >= 0
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;          // stream_options.include_usage
  int n = 1;                           // choices, 1..kMaxChoices
  int best_of = 1;                     // candidates per prompt, >= n; the n most likely are answered
  int logprobs = -1;                   // -1: null; 0..kMaxLogprobs alternatives per token
  bool echo = false;                   // each choice's text starts with its prompt's
  std::vector<std::string> echo_texts;  // with echo: each prompt's text (its tokens decoded)
  backend::GenerationRequest controls;     // SharedParams::controls
  std::vector<std::string> unknown_fields;  // SharedParams::unknown_fields
};

// Parses and validates a POST /v1/completions body against the served model
// id and the server's bounds. The prompt is tokenized here (a literal
// "<|endoftext|>" is the special token, as in OpenAI's API). Returns false
// with *err filled on any refusal (always 400, or 404 for another model);
// *err names the param and its message the value and what is allowed.
bool ParseCompletionRequest(std::string_view body, const tokenizer::Tokenizer& tokenizer,
                            const service::RequestBounds& bounds, std::string_view model_id,
                            CompletionRequest* out, ApiError* err);

// Our generation request (DESIGN.md §4) for a validated completions request's
// first prompt (the launch copies it for the others: OpenAiLaunch):
// the sampling controls as read, max_tokens → max_new_tokens, the
// temperature through service::EffectiveTemperature, the rest as it is.
backend::GenerationRequest ToGeneration(const CompletionRequest& req);

// One member of either API's body, if it is a shared param: temperature,
// top_p, seed, stream, n, max_tokens / max_completion_tokens (both given:
// they must be equal), prompt_logprobs (0..20, into controls) and the
// sampling controls. kNotMine for any other.
service::FieldRead ParseSharedParam(const std::string& key, const json::Value& val,
                                    const service::RequestBounds& bounds, SharedParams* out, ApiError* err);
// prompt_logprobs (read by ParseSharedParam into controls) cannot be streamed.
bool CheckPromptLogprobsParam(const backend::GenerationRequest& controls, bool stream, ApiError* err);
// A member no parser above reads (the field policy, docs/openai.md): a
// param this server knows and does not support is refused naming it and
// why (tools, modalities other than text, ...); one that changes
// nothing here is accepted and ignored (user, store, metadata, ...); any
// other is unknown: recorded in *unknown, or refused with
// bounds.strict_request_fields.
bool OtherParam(const std::string& key, const json::Value& val, const service::RequestBounds& bounds,
                std::vector<std::string>* unknown, ApiError* err);
// The model param: 400 when missing or not a string, 404 model_not_found for another id.
bool CheckModel(const json::Value& body, std::string_view model_id, std::string* out, ApiError* err);
// stop: a string or an array of up to max_stop_strings strings of 1..max_stop_bytes bytes.
bool ParseStopParam(const json::Value& v, const service::RequestBounds& bounds, std::vector<std::string>* out, ApiError* err);
// stream_options (only with stream: true): include_usage.
bool ParseStreamOptionsParam(const json::Value* v, bool stream, bool* include_usage, ApiError* err);
// A body as JSON (invalid_json names the byte in its message, OpenAI's
// error having no offset field) that must be an object.
bool ParseOpenAiBody(std::string_view body, const service::RequestBounds& bounds, json::Value* out, ApiError* err);
// A refusal: status, param, message (code invalid_request unless given).
bool RefuseParam(ApiError* err, int status, std::string param, std::string message,
                 ErrorCode code = ErrorCode::kInvalidRequest);
// prompt tokens + max_tokens over the context: 400 context_length_exceeded.
bool CheckContext(size_t prompt_tokens, int max_tokens, const service::RequestBounds& bounds, ApiError* err);

// One error of ours as OpenAI answers it: 422 becomes 400, prompt_too_long
// names the param "prompt"; the rest as it is.
ApiError ForOpenAi(ApiError e);

// {"id","object":"model","created","owned_by":"tokenwire","base_model":true,
//  "chat_template":"plain"|"file"}: GPT-2 is a base model (no instruction
// tuning); chat requests go through a plain template (docs/openai.md).
std::string ModelJson(std::string_view id, int64_t created, std::string_view chat_template = "plain");
// {"object":"list","data":[ModelJson]}
std::string ModelListJson(std::string_view id, int64_t created, std::string_view chat_template = "plain");

// What the App launches for an OpenAI request of either API: the one
// generation request every choice shares, and the response's shape.
struct OpenAiLaunch {
  backend::GenerationRequest request;  // choice j of each prompt draws with seed + j
  // Completions' prompts after the first (request.prompt_tokens): each gets
  // n choices of its own, the same request with that prompt.
  std::vector<std::vector<int32_t>> more_prompts;
  int n = 1;                               // choices answered per prompt
  // Candidates launched per prompt (>= n; best_of): the n whose tokens'
  // log-probabilities sum highest are answered (not streamed only).
  int candidates = 1;
  bool stream = false;
  CompletionMeta meta;     // api, include_usage, logprobs, n (id, created, model: set at launch)
  std::string id_prefix;   // "cmpl-" or "chatcmpl-"
};

}  // namespace tw::openai
