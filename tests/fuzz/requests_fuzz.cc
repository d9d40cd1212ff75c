// libFuzzer target for the two request parsers of the API layer: our
// generation request (api::ParseGenerationRequest, DESIGN.md §4) and OpenAI's
// completions request (api::ParseCompletionRequest, docs/openai.md). For any
// input bytes:
// - each parser accepts, or refuses with a 4xx status and a non-empty message
//   (an invalid_json refusal names a byte offset inside the input);
// - a completions request it accepts translates (ToGenerationBody) into a
//   generation request that ParseGenerationRequest accepts, with the same
//   prompt tokens.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "api/completions.h"
#include "api/generation_request.h"
#include "fuzz/embedded_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "requests_fuzz: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tw::api;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const tw::tokenizer::Tokenizer& tok = tw::fuzz::EmbeddedTokenizer();
  RequestBounds bounds;
  bounds.vocab_size = static_cast<int>(tok.vocab_size());

  ParsedGeneration g;
  RequestError e;
  if (!ParseGenerationRequest(body, tok, bounds, tw::stream::Policy::kDropSlow, &g, &e)) {
    if (e.status < 400 || e.status > 499 || e.message.empty()) Fail("generation refusal without 4xx + message");
    if (e.type == "invalid_json" && (e.offset < 0 || static_cast<size_t>(e.offset) > size)) {
      Fail("invalid_json offset outside the input: " + std::to_string(e.offset));
    }
  }

  CompletionRequest c;
  OpenAiError oe;
  if (!ParseCompletionRequest(body, tok, bounds, "gpt2", &c, &oe)) {
    if (oe.status < 400 || oe.status > 499 || oe.message.empty()) Fail("completions refusal without 4xx + message");
    return 0;
  }
  const std::string ours = ToGenerationBody(c);
  ParsedGeneration t;
  RequestError te;
  if (!ParseGenerationRequest(ours, tok, bounds, tw::stream::Policy::kDropSlow, &t, &te)) {
    Fail("an accepted completions request translated into a refused one: " + ours + " -> " + te.message);
  }
  if (t.request.prompt_tokens != c.prompt_tokens) Fail("translation changed the prompt tokens: " + ours);
  return 0;
}
