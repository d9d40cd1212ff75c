// OpenAI-compatible chat completions (docs/openai.md, "Chat completions").
//
// POST /v1/chat/completions takes OpenAI's chat request, renders its
// messages through the chat template (api/chat_template.h: GPT-2 is a base
// model, so the template is a plain one, or --chat-template FILE), and runs
// the text like a completions prompt: the same launch (App::LaunchOpenAi),
// bounds, n choices and logprobs; the answers are `chat.completion` or a
// stream of `chat.completion.chunk` (api/openai_response.h). The template's
// stop strings are added to the request's own `stop`.
//
// Everything the parser can refuse is refused before the first byte, with an
// OpenAI error naming the param: a missing or ill-typed message field
// (`messages[2].content`), a role other than system / developer / user /
// assistant, content parts other than text (`messages[0].content[1].type`),
// and params this server does not implement (tools, tool_choice, functions,
// function_call, …), each by name and why; response_format and the other
// structured-output fields are service/structured_output.h's.
// The top-level params follow completions' field policy (ParseSharedParam,
// OtherParam in openai/completions.h): unknown ones are accepted and listed.
//
// Threads: pure functions (the App calls the parser on a prep thread).
// Memory: the parsed messages (at most bounds.max_chat_messages; freed on
// the parsing thread once rendered, so the loop never frees a large
// request's messages) and the prompt's tokens (bounded by the context).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "openai/chat_template.h"
#include "openai/completions.h"

namespace tw::openai {

// A validated chat request.
struct ChatRequest {
  std::string model;
  std::vector<ChatMessage> messages;   // parsed, rendered into prompt_tokens, then emptied
  std::vector<int32_t> prompt_tokens;  // the rendered template, tokenized
  int max_tokens = 0;                  // max_tokens / max_completion_tokens, or all the room left
  SharedParams shared;                 // temperature, top_p, seed, stream, n, the sampling controls, unknown fields
  std::vector<std::string> stop;       // the request's, then the template's
  bool include_usage = false;
  int logprobs = -1;                   // -1 unless logprobs: true; then top_logprobs (0..20)
};

// Parses and validates a POST /v1/chat/completions body against the served
// model id, the bounds and the template. Returns false with *err filled
// (its param names the field) on any refusal.
bool ParseChatRequest(std::string_view body, const tokenizer::Tokenizer& tokenizer,
                      const service::RequestBounds& bounds, std::string_view model_id,
                      const ChatTemplate& chat_template, ChatRequest* out, ApiError* err);

// Our generation request for a validated chat request.
backend::GenerationRequest ChatToGeneration(const ChatRequest& req);

}  // namespace tw::openai
