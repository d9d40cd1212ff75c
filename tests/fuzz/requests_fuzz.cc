// libFuzzer target for the request parsers of the API layer: our
// generation request (service::ParseGenerationRequest, DESIGN.md §4), OpenAI's
// completions and chat requests (openai::ParseCompletionRequest,
// openai::ParseChatRequest, docs/openai.md), and the chat template file
// (openai::ChatTemplate::Parse, the same bytes read as a template). For any
// input bytes:
// - the template parses, or is refused with "line L, byte B: …", B inside
//   the input;
// - a chat request is accepted, with its template's stop strings among its
//   stops and its prompt within the context, or refused with a 4xx;
// - each parser accepts, or refuses with a 4xx status and a non-empty message
//   (an invalid_json refusal names a byte offset inside the input);
// - a completions request it accepts maps (ToGeneration) onto our typed
//   generation request with the same prompt tokens, stop strings and seed,
//   and a max_new_tokens within the server's bound.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/embedded_tokenizer.h"
#include "openai/chat.h"
#include "openai/completions.h"
#include "service/generation_request.h"
#include "tokenizer/tokenizer.h"

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "requests_fuzz: %s\n", what.c_str());
  std::abort();
}

void CheckRefusal(const tw::ApiError& e, size_t size, const char* who) {
  if (e.http_status < 400 || e.http_status > 499 || e.message.empty()) {
    Fail(std::string(who) + " refusal without 4xx + message: " + std::to_string(e.http_status));
  }
  if (e.code == tw::ErrorCode::kInvalidJson && (e.offset < 0 || static_cast<size_t>(e.offset) > size)) {
    Fail(std::string(who) + " invalid_json offset outside the input: " + std::to_string(e.offset));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tw::openai;
  using namespace tw::service;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const tw::tokenizer::Tokenizer& tok = tw::fuzz::EmbeddedTokenizer();
  RequestBounds bounds;
  bounds.vocab_size = static_cast<int>(tok.vocab_size());

  ChatTemplate tmpl;
  if (tw::Status ts = ChatTemplate::Parse(body, &tmpl); !ts.ok()) {
    unsigned line = 0, byte = 0;
    if (std::sscanf(ts.message().c_str(), "line %u, byte %u: ", &line, &byte) != 2 || line < 1 || byte > size) {
      Fail("template refusal without a line and a byte inside the input: " + ts.message());
    }
  }

  const ChatTemplate plain = ChatTemplate::Plain();
  ChatRequest chat;
  tw::ApiError che;
  if (!ParseChatRequest(body, tok, bounds, "gpt2", plain, &chat, &che)) {
    CheckRefusal(che, size, "chat");
  } else {
    const tw::backend::GenerationRequest cg = ChatToGeneration(chat);
    if (cg.prompt_tokens.empty()) Fail("chat: an empty prompt");
    if (static_cast<int64_t>(cg.prompt_tokens.size()) + cg.max_new_tokens > bounds.context_length) {
      Fail("chat: prompt + max_new_tokens over the context");
    }
    for (const std::string& s : plain.stop()) {
      bool found = false;
      for (const std::string& t : cg.stop) found |= t == s;
      if (!found) Fail("chat: the template's stop string is missing");
    }
    if (chat.shared.n < 1 || chat.shared.n > kMaxChoices || chat.logprobs > kMaxLogprobs) Fail("chat: n or logprobs out of bounds");
  }

  ParsedGeneration g;
  tw::ApiError e;
  if (!ParseGenerationRequest(body, tok, bounds, tw::stream::Policy::kDropSlow, &g, &e)) {
    CheckRefusal(e, size, "generation");
  }

  CompletionRequest c;
  tw::ApiError ce;
  if (!ParseCompletionRequest(body, tok, bounds, "gpt2", &c, &ce)) {
    CheckRefusal(ce, size, "completions");
    return 0;
  }
  const tw::backend::GenerationRequest t = ToGeneration(c);
  if (t.prompt_tokens != c.prompt_tokens) Fail("the mapping changed the prompt tokens");
  if (t.stop != c.stop) Fail("the mapping changed the stop strings");
  if (t.has_seed != c.has_seed || (c.has_seed && t.seed != static_cast<uint64_t>(c.seed))) {
    Fail("the mapping changed the seed");
  }
  if (t.max_new_tokens < 1 || t.max_new_tokens > bounds.max_new_tokens) {
    Fail("max_new_tokens outside the bound: " + std::to_string(t.max_new_tokens));
  }
  return 0;
}
