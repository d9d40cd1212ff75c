// The JSON payloads of stream events (DESIGN.md §5), built in one place so
// every backend and transport writes the same schema.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tw::backend {

// {"stream":"s_…","model":"gpt2","prompt_tokens":5}
std::string StartEventData(std::string_view stream_id, std::string_view model, int prompt_tokens);
// {"index":0,"token":6342,"text":" Paris"}
std::string TokenEventData(int index, int32_t token, std::string_view text);
// {"finish_reason":"length","usage":{"prompt_tokens":5,"completion_tokens":64}}
std::string DoneEventData(std::string_view finish_reason, int prompt_tokens, int completion_tokens);
// {"type":"queue_timeout","message":"…","retryable":true}
std::string ErrorEventData(std::string_view type, std::string_view message, bool retryable);

}  // namespace tw::backend
