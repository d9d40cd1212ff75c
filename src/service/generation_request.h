// Parsing and validating a generation request body (DESIGN.md §4).
//
// Turns the JSON body of POST /v1/stream, /v1/streams, /v1/generate and the
// WebSocket "generate" op into a backend::GenerationRequest. Everything that
// can be refused is refused here, before the first byte of a response:
//   400 invalid_json     the body is not JSON (with the byte offset)
//   400 invalid_request  unknown field, or a field of the wrong JSON type
//   422 invalid_request  a value out of range (max_new_tokens < 1, ...)
// each message naming the field, the value and what is allowed
// (service/request_fields.h, which also reads vLLM's sampling controls:
// top_k, min_p, the penalties, logit_bias, min_tokens, ignore_eos,
// stop_token_ids).
//   422 prompt_too_long  prompt tokens + max_new_tokens over the context
//
// Threads: pure functions (no shared state); the App calls them on a prep
// thread (net::WorkerPool), off the event loop.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "common/api_error.h"
#include "json/json.h"
#include "stream/hub.h"

namespace tw::tokenizer {
class Tokenizer;
}
namespace tw::grammar {
class Compiler;
}

namespace tw::service {

struct RequestBounds {
  int max_new_tokens = 1024;      // --max-new-tokens: the largest a request may ask
  int default_new_tokens = 64;    // when the request does not say
  int context_length = 1024;      // prompt + new tokens
  size_t max_stop_strings = 4;
  size_t max_stop_bytes = 64;     // each stop string
  size_t max_chat_messages = 2048;  // --max-chat-messages: messages in one chat request
  int max_json_depth = 64;
  int64_t max_queue_timeout_ms = 3600 * 1000;
  int vocab_size = 50257;
  size_t max_logit_bias = 300;      // --max-logit-bias: logit_bias entries (OpenAI's bound)
  size_t max_stop_token_ids = 64;   // --max-stop-token-ids: stop_token_ids entries
  // --strict-request-fields: the OpenAI endpoints refuse a field they do not
  // know instead of accepting it with a warning (docs/openai.md). Our own
  // API refuses unknown fields always.
  bool strict_request_fields = false;
  // Compiles the structured-output fields (service/structured_output.h);
  // null: they are refused. Not owned; thread-safe.
  grammar::Compiler* grammars = nullptr;
};

struct ParsedGeneration {
  backend::GenerationRequest request;
  stream::Policy policy = stream::Policy::kDropSlow;
  bool has_policy = false;
};

// Parses a request body as JSON within the request bounds (max_json_depth;
// the HTTP layer has already bounded its size), one value per key: on
// failure *err is invalid_json (400, with the byte offset) or, for a key
// given twice in one object, invalid_request (400) naming it (param: its
// path, e.g. "prompt").
bool ParseRequestBody(std::string_view body, const RequestBounds& bounds, json::Value* out, ApiError* err);

// The values of a "stop" field, not yet checked: the field itself if it is a
// string, its items if an array, none if null. False if it is none of these.
bool StopValues(const json::Value& v, std::vector<const json::Value*>* items);

// `allow_extra` lists top-level fields that are accepted and ignored (the
// WebSocket "op"). Returns false with *err filled on any refusal (its code
// invalid_json with the offset, invalid_request with the field as param, or
// prompt_too_long).
bool ParseGenerationRequest(std::string_view body, const tokenizer::Tokenizer& tokenizer,
                            const RequestBounds& bounds, stream::Policy default_policy,
                            ParsedGeneration* out, ApiError* err,
                            std::initializer_list<std::string_view> allow_extra = {});

// Same, from an already-parsed JSON object.
bool ParseGenerationObject(const json::Value& obj, const tokenizer::Tokenizer& tokenizer,
                           const RequestBounds& bounds, stream::Policy default_policy,
                           ParsedGeneration* out, ApiError* err,
                           std::initializer_list<std::string_view> allow_extra = {});

}  // namespace tw::service
