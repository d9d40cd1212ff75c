// Our event schema in JSON (DESIGN.md §5 and §6): the one place a typed
// stream::Event becomes the JSON our SSE `data:` lines and our WebSocket
// messages carry. (OpenAI's chunks are written by openai/openai_response.)
//
//   start  {"stream":"s_…","model":"gpt2","prompt_tokens":5}
//   token  {"index":0,"token":6342,"text":" Paris"}
//          with logprobs asked ("logprobs": k): …,"logprob":-0.51,"top":[{"id":6342,
//          "text":" Paris","logprob":-0.51},…] (k entries, most likely first;
//          a token's text is its bytes, invalid UTF-8 written as U+FFFD)
//   done   {"finish_reason":"length","usage":{"prompt_tokens":5,"completion_tokens":64}}
//   error  {"type":"queue_timeout","message":"…","retryable":true} (json/error_json.h)
// A lab event (--lab-pad-bytes) adds "pad":"…." to the token object.
//
// Threads: pure functions. Allocation: only growth of *out. Never fails.
#pragma once

#include <string>
#include <string_view>

#include "common/api_error.h"
#include "stream/event.h"

namespace tw::wire {

// Who the event belongs to: the start event names them.
struct EventContext {
  std::string_view stream_id;
  std::string_view model;
};

// The event's data object (SSE `data:`).
void AppendEventData(std::string* out, const stream::Event& ev, const EventContext& ctx);
// The whole SSE record: `id: N\nevent: type\ndata: {…}\n\n`. The JSON has no
// line break (strings are escaped), so it is one data line, written in place
// (sse::AppendEvent's line splitting is not needed).
void AppendSseEvent(std::string* out, const stream::Event& ev, const EventContext& ctx);
// Our WebSocket message for the event: {"stream","seq","type"} then the
// data object's members; an error event keeps its object under "error".
void AppendWsEventMessage(std::string* out, const stream::Event& ev, const EventContext& ctx);

}  // namespace tw::wire
