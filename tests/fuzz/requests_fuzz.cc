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
//   generation request with its first prompt's tokens, the stop strings and seed,
//   and a max_new_tokens within the server's bound;
// - any accepted request's sampling controls are within their documented
//   ranges (docs/openai.md): logit_bias ids in the vocabulary, distinct, at
//   most max_logit_bias, biases in [-100, 100]; stop_token_ids in the
//   vocabulary, at most max_stop_token_ids; min_tokens in [0, max_new_tokens];
//   min_p in [0, 1]; penalties in range; a temperature 0 or >= 1e-5;
//   prompt_logprobs in [-1, 20], never with stream (echo aside), never from
//   our own API.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

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

// The sampling controls of an accepted request, within their ranges.
void CheckControls(const tw::backend::GenerationRequest& r, const tw::service::RequestBounds& b, const char* what) {
  const std::string w = what;
  std::vector<int32_t> ids;
  for (const auto& [id, bias] : r.logit_bias) {
    if (id < 0 || id >= b.vocab_size) Fail(w + ": a logit_bias id outside the vocabulary");
    if (!(bias >= -100.0f && bias <= 100.0f)) Fail(w + ": a logit_bias value outside [-100, 100]");
    ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) Fail(w + ": a logit_bias id twice");
  if (r.logit_bias.size() > b.max_logit_bias) Fail(w + ": more logit_bias entries than the bound");
  for (int32_t id : r.stop_token_ids) {
    if (id < 0 || id >= b.vocab_size) Fail(w + ": a stop_token_ids id outside the vocabulary");
  }
  if (r.stop_token_ids.size() > b.max_stop_token_ids) Fail(w + ": more stop_token_ids than the bound");
  if (r.min_tokens < 0 || r.min_tokens > r.max_new_tokens) Fail(w + ": min_tokens outside [0, max_new_tokens]");
  if (!(r.min_p >= 0.0f && r.min_p <= 1.0f)) Fail(w + ": min_p outside [0, 1]");
  if (!(r.presence_penalty >= -2.0f && r.presence_penalty <= 2.0f)) Fail(w + ": presence_penalty outside [-2, 2]");
  if (!(r.frequency_penalty >= -2.0f && r.frequency_penalty <= 2.0f)) Fail(w + ": frequency_penalty outside [-2, 2]");
  if (!(r.repetition_penalty > 0.0f && r.repetition_penalty <= 10.0f)) Fail(w + ": repetition_penalty outside (0, 10]");
  if (!(r.temperature == 0.0f || r.temperature >= 1e-5f)) Fail(w + ": a temperature in (0, 1e-5) not made greedy");
  if (r.top_k < 0) Fail(w + ": a negative top_k");
  if (r.prompt_logprobs < -1 || r.prompt_logprobs > 20) Fail(w + ": prompt_logprobs outside [-1, 20]");
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
    if (chat.shared.stream && cg.prompt_logprobs >= 0) Fail("chat: prompt_logprobs accepted with stream");
  }

  ParsedGeneration g;
  tw::ApiError e;
  if (!ParseGenerationRequest(body, tok, bounds, tw::stream::Policy::kDropSlow, &g, &e)) {
    CheckRefusal(e, size, "generation");
  } else {
    CheckControls(g.request, bounds, "generation");
    if (g.request.prompt_logprobs != -1) Fail("generation: our own API set prompt_logprobs");
  }

  CompletionRequest c;
  tw::ApiError ce;
  if (!ParseCompletionRequest(body, tok, bounds, "gpt2", &c, &ce)) {
    CheckRefusal(ce, size, "completions");
    return 0;
  }
  const tw::backend::GenerationRequest t = ToGeneration(c);
  CheckControls(t, bounds, "completions");
  if (c.prompts.empty() || t.prompt_tokens != c.prompts[0]) Fail("the mapping changed the (first) prompt's tokens");
  if (t.stop != c.stop) Fail("the mapping changed the stop strings");
  if (t.has_seed != c.has_seed || (c.has_seed && t.seed != static_cast<uint64_t>(c.seed))) {
    Fail("the mapping changed the seed");
  }
  if (t.max_new_tokens < 1 || t.max_new_tokens > bounds.max_new_tokens) {
    Fail("max_new_tokens outside the bound: " + std::to_string(t.max_new_tokens));
  }
  if (c.stream && c.controls.prompt_logprobs >= 0) Fail("completions: prompt_logprobs accepted with stream");
  if (c.echo && c.logprobs >= 0 && t.prompt_logprobs < c.logprobs) Fail("completions: echo with logprobs asks too few");
  return 0;
}
