// ApiError: the one error value of the API (DESIGN.md §4), from the layer
// that refuses or fails to the edge that writes it.
//
// A request refused before its first byte (bad JSON, a bad field, a full
// waiting list), a stream's error event (queue_timeout, internal), and a
// subscriber-level ending (slow_client, shutting_down, expired) are all an
// ApiError: a code from the contract's list, the HTTP status it answers
// with, a message naming what failed, whether a retry can succeed, and the
// optional fields the contract adds (the JSON byte offset, the request field
// at fault, Retry-After, resume_from, oldest_available, the stream's id).
//
// Only the edges turn one into bytes: http::Responder::SendError (our JSON
// envelope), the SSE and WebSocket formats (error events), the OpenAI layer
// (OpenAI's four-field object). Nothing below them formats an error.
//
// Threads: a plain value. Never: allocates beyond its strings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tw {

enum class ErrorCode : uint8_t {
  kInvalidJson,           // 400: the body is not JSON (RFC 8259), or nests too deep
  kInvalidRequest,        // 400/422: valid JSON, wrong fields or values
  kPromptTooLong,         // 422: prompt + max_new_tokens over the context
  kNotFound,              // 404
  kModelNotFound,         // 404: OpenAI's "model" names another model
  kMethodNotAllowed,      // 405
  kRequestTimeout,        // 408
  kResumeWindowExceeded,  // 409: the event after Last-Event-ID has left the window
  kPayloadTooLarge,       // 413
  kHeadersTooLarge,       // 431
  kInternal,              // 500
  kNotImplemented,        // 501
  kUnauthorized,          // 401
  kForbidden,             // 403: a WebSocket upgrade from an Origin not allowed
  kOverloaded,            // 503: a bound is full; Retry-After
  kShuttingDown,          // 503: draining
  kQueueTimeout,          // stream error: no batch slot within queue_timeout_ms
  kSlowClient,            // subscriber ending: detached by drop_slow
  kCancelled,             // stream ended by a cancel
  kExpired,               // subscriber ending: the stream's retention ran out
  kTooManyStreams,        // WebSocket: the connection's stream bound
};

// The contract's name of a code: "invalid_json", "prompt_too_long", ...
const char* ErrorCodeName(ErrorCode code);
// The HTTP status a code answers with before the first byte.
int DefaultHttpStatus(ErrorCode code);
// Whether a client may retry the same request as-is.
bool DefaultRetryable(ErrorCode code);

struct ApiError {
  ErrorCode code = ErrorCode::kInternal;
  int http_status = 500;
  std::string message;
  bool retryable = false;
  std::string param;              // the request field at fault ("" = none; OpenAI's "param")
  int64_t offset = -1;            // invalid_json: byte offset where parsing stopped
  int64_t retry_after_ms = 0;     // > 0: Retry-After (rounded up to seconds)
  int64_t resume_from = -1;       // >= 0: the last event the subscriber took
  int64_t oldest_available = -1;  // >= 0: resume_window_exceeded's oldest event held
  std::string stream_id;          // != "": the stream a collected answer's ending belongs to

  // The code's default status and retryability, this message.
  static ApiError Make(ErrorCode code, std::string message);
  // The same with another HTTP status (e.g. invalid_request as 422).
  static ApiError Make(ErrorCode code, int http_status, std::string message);

  const char* type() const { return ErrorCodeName(code); }
};

// invalid_request (400) for a request whose JSON gives a key twice
// (json::FindDuplicateKey's path), with the path as param.
ApiError DuplicateKeyError(const std::string& path);

}  // namespace tw
