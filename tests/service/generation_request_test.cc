// Our own generation request (service/generation_request.h, DESIGN.md §4:
// /v1/stream, /v1/streams, /v1/generate and the WebSocket "generate" op):
// the sampling controls spelled as vLLM spells them, parsed into their typed
// fields; refusals that name the field, the value and the range (400 for a
// wrong type, 422 for a value out of range); unknown fields refused; the
// temperature floor.
#include "service/generation_request.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "service/request_fields.h"
#include "support/request_test_util.h"
#include "tokenizer/tokenizer.h"

namespace tw {
namespace {

const tokenizer::Tokenizer& Tok() { return testing::EmbeddedTokenizer(); }

service::RequestBounds Bounds() {
  service::RequestBounds b = testing::TestBounds();
  b.default_new_tokens = 10;
  b.max_logit_bias = 2;
  b.max_stop_token_ids = 2;
  return b;
}

bool Parse(const std::string& body, service::ParsedGeneration* out, ApiError* err,
           std::initializer_list<std::string_view> allow_extra = {}) {
  return service::ParseGenerationRequest(body, Tok(), Bounds(), stream::Policy::kDropSlow, out, err, allow_extra);
}

TEST(GenerationRequest, TheSamplingControlsAreParsedIntoTheirFields) {
  service::ParsedGeneration p;
  ApiError e;
  ASSERT_TRUE(Parse(R"({"prompt":"Hello","max_new_tokens":20,"temperature":0.7,"top_k":40,"min_p":0.1,
      "repetition_penalty":1.15,"presence_penalty":0.5,"frequency_penalty":-0.25,"logit_bias":{"13":-100,"11":3},
      "min_tokens":5,"ignore_eos":true,"stop_token_ids":[198,50256]})",
                    &p, &e))
      << e.message;
  const backend::GenerationRequest& g = p.request;
  EXPECT_EQ(g.max_new_tokens, 20);
  EXPECT_FLOAT_EQ(g.temperature, 0.7f);
  EXPECT_EQ(g.top_k, 40);
  EXPECT_FLOAT_EQ(g.min_p, 0.1f);
  EXPECT_FLOAT_EQ(g.repetition_penalty, 1.15f);
  EXPECT_FLOAT_EQ(g.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(g.frequency_penalty, -0.25f);
  EXPECT_EQ(g.logit_bias, (std::vector<std::pair<int32_t, float>>{{13, -100.0f}, {11, 3.0f}}));
  EXPECT_EQ(g.min_tokens, 5);
  EXPECT_TRUE(g.ignore_eos);
  EXPECT_EQ(g.stop_token_ids, (std::vector<int32_t>{198, 50256}));
  // The WebSocket op's extra member is allowed there, nowhere else.
  ASSERT_TRUE(Parse(R"({"op":"generate","prompt":"x","top_k":-1})", &p, &e, {"op"})) << e.message;
  EXPECT_EQ(p.request.top_k, 0);
}

TEST(GenerationRequest, EveryRefusalNamesTheFieldTheValueAndTheRange) {
  struct Case {
    const char* body;
    int status;
    const char* param;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"prompt":"x","temperature":101})", 422, "temperature",
            "temperature: 101 is out of range; expected a number in [0, 100]"},
           {R"({"prompt":"x","temperature":"warm"})", 400, "temperature",
            R"(temperature: expected a number in [0, 100], got the string "warm")"},
           {R"({"prompt":"x","top_p":0})", 422, "top_p", "top_p: 0 is out of range; expected a number in (0, 1]"},
           {R"({"prompt":"x","seed":-3})", 422, "seed",
            "seed: -3 is out of range; expected an integer in [0, 9223372036854775807]"},
           {R"({"prompt":"x","max_new_tokens":0})", 422, "max_new_tokens",
            "max_new_tokens: 0 is out of range; expected an integer in [1, 100] (--max-new-tokens)"},
           {R"({"prompt_tokens":[1,50257]})", 422, "prompt_tokens[1]",
            "prompt_tokens[1]: 50257 is out of range; expected a token id in [0, 50256]"},
           {R"({"prompt":"x","logprobs":21})", 422, "logprobs",
            "logprobs: 21 is out of range; expected an integer in [0, 20] (alternatives per token)"},
           {R"({"prompt":"x","policy":"fastest"})", 422, "policy",
            R"(policy: "fastest" is out of range; expected drop_slow, pause_producer or pause_then_cancel)"},
           {R"({"prompt":"x","stop":["a","b","c","d","e"]})", 422, "stop",
            "stop: 5 strings is out of range; expected at most 4 (--max-stop-strings)"},
           {R"({"prompt":"x","top_k":-2})", 422, "top_k",
            "top_k: -2 is out of range; expected an integer, -1 or 0 (off) or at least 1"},
           {R"({"prompt":"x","min_p":2})", 422, "min_p", "min_p: 2 is out of range; expected a number in [0, 1]"},
           {R"({"prompt":"x","repetition_penalty":-1})", 422, "repetition_penalty",
            "repetition_penalty: -1 is out of range; expected a number in (0, 10]"},
           {R"({"prompt":"x","presence_penalty":"a"})", 400, "presence_penalty",
            R"(presence_penalty: expected a number in [-2, 2], got the string "a")"},
           {R"({"prompt":"x","logit_bias":{"1":1,"2":2,"3":3}})", 422, "logit_bias",
            "logit_bias: 3 entries is out of range; expected at most 2 (--max-logit-bias)"},
           {R"({"prompt":"x","min_tokens":11})", 422, "min_tokens",
            "min_tokens: 11 is out of range; expected an integer in [0, 10] (at most max_new_tokens)"},
           {R"({"prompt":"x","ignore_eos":1})", 400, "ignore_eos", "ignore_eos: expected a boolean, got the number 1"},
           {R"({"prompt":"x","stop_token_ids":[-1]})", 422, "stop_token_ids",
            "stop_token_ids[0]: -1 is out of range; expected a token id in [0, 50256]"},
           // Our API refuses fields it does not know (DESIGN.md §4), OpenAI's too.
           {R"({"prompt":"x","max_tokens":5})", 400, "max_tokens", "unknown field 'max_tokens'"},
           {R"({"prompt":"x","op":"generate"})", 400, "op", "unknown field 'op'"},
           {R"({"prompt_tokens":[]})", 422, "prompt_tokens", "'prompt_tokens' must hold at least one token id"},
       }) {
    service::ParsedGeneration p;
    ApiError e;
    EXPECT_FALSE(Parse(c.body, &p, &e)) << c.body;
    EXPECT_EQ(e.http_status, c.status) << c.body;
    EXPECT_EQ(e.code, ErrorCode::kInvalidRequest) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_EQ(e.message, c.message) << c.body;
  }
}

// One rule with OpenAI's completions: an empty text prompt is the start of
// a document, <|endoftext|>.
TEST(GenerationRequest, AnEmptyPromptIsEndOfText) {
  service::ParsedGeneration p;
  ApiError e;
  ASSERT_TRUE(Parse(R"({"prompt":""})", &p, &e)) << e.message;
  EXPECT_EQ(p.request.prompt_tokens, std::vector<int32_t>{Tok().end_of_text_id()});
}

TEST(GenerationRequest, ATemperatureBelowTheFloorIsGreedy) {
  service::ParsedGeneration p;
  ApiError e;
  ASSERT_TRUE(Parse(R"({"prompt":"x","temperature":1e-300})", &p, &e)) << e.message;
  EXPECT_EQ(p.request.temperature, 0.0f);
  ASSERT_TRUE(Parse(R"({"prompt":"x","temperature":9e-6})", &p, &e)) << e.message;
  EXPECT_EQ(p.request.temperature, 0.0f);  // a float holds 9e-6: before, it was sampled at it
  ASSERT_TRUE(Parse(R"({"prompt":"x","temperature":2e-5})", &p, &e)) << e.message;
  EXPECT_FLOAT_EQ(p.request.temperature, 2e-5f);
}

}  // namespace
}  // namespace tw
