// The API's error (common/api_error.h) in JSON, DESIGN.md §4:
//   object    {"type":"prompt_too_long","message":"…","retryable":false}
//             plus the optional fields that are set: param (the request
//             field at fault), offset, retry_after_ms,
//             resume_from, oldest_available, stream (POST /v1/generate's
//             ending: the stream to resume)
//   envelope  {"error":{…object…}}
// Used by the HTTP responder (error responses), our SSE and WebSocket event
// formats (error events and subscriber-level endings). OpenAI's own error
// shape is written by openai/openai_response.
//
// Threads: pure functions. Allocation: only growth of *out.
#pragma once

#include <string>

#include "common/api_error.h"

namespace tw::json {

void AppendErrorObject(std::string* out, const ApiError& e);
std::string ErrorEnvelope(const ApiError& e);

}  // namespace tw::json
