// The sampling controls and the field policy of the OpenAI requests
// (openai/completions.h, openai/chat.h, service/request_fields.h;
// docs/openai.md "Request fields"): every control parsed into its typed
// field of the generation request, every refusal with its whole message
// (the field, the value and the allowed range), max_tokens and
// max_completion_tokens in both key orders, the temperature floor, and
// fields we do not know: accepted and listed, or refused with
// --strict-request-fields; fields we know and do not support: refused,
// naming them and why.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "openai/chat.h"
#include "openai/completions.h"
#include "service/request_fields.h"
#include "support/request_test_util.h"
#include "tokenizer/tokenizer.h"

namespace tw {
namespace {

const tokenizer::Tokenizer& Tok() { return testing::EmbeddedTokenizer(); }

service::RequestBounds Bounds(bool strict = false) {
  service::RequestBounds b = testing::TestBounds();
  b.max_logit_bias = 3;
  b.max_stop_token_ids = 2;
  b.strict_request_fields = strict;
  return b;
}

// The body of a completions request with `extra` members appended, and the
// same members in a chat request.
std::string Completion(const std::string& extra) { return R"({"model":"gpt2","prompt":"x")" + extra + "}"; }
std::string Chat(const std::string& extra) {
  return R"({"model":"gpt2","messages":[{"role":"user","content":"x"}])" + extra + "}";
}

bool ParseCompletion(const std::string& body, openai::CompletionRequest* r, ApiError* e, bool strict = false) {
  return openai::ParseCompletionRequest(body, Tok(), Bounds(strict), "gpt2", r, e);
}
bool ParseChat(const std::string& body, openai::ChatRequest* r, ApiError* e, bool strict = false) {
  return openai::ParseChatRequest(body, Tok(), Bounds(strict), "gpt2", openai::ChatTemplate::Plain(), r, e);
}

// Both APIs, one generation request each (or the refusal of each).
struct Both {
  bool ok_completion = false, ok_chat = false;
  ApiError completion_error, chat_error;
  backend::GenerationRequest completion, chat;
  std::vector<std::string> completion_unknown, chat_unknown;
};
Both ParseBoth(const std::string& extra, bool strict = false) {
  Both b;
  openai::CompletionRequest c;
  b.ok_completion = ParseCompletion(Completion(extra), &c, &b.completion_error, strict);
  if (b.ok_completion) b.completion = openai::ToGeneration(c);
  b.completion_unknown = c.unknown_fields;
  openai::ChatRequest h;
  b.ok_chat = ParseChat(Chat(extra), &h, &b.chat_error, strict);
  if (b.ok_chat) b.chat = openai::ChatToGeneration(h);
  b.chat_unknown = h.shared.unknown_fields;
  return b;
}

TEST(OpenAiParams, EverySamplingControlReachesTheGenerationRequest) {
  Both b = ParseBoth(R"(,"max_tokens":12,"top_k":40,"min_p":0.05,"repetition_penalty":1.3,"presence_penalty":-0.5,
      "frequency_penalty":1.5,"logit_bias":{"50256":-100,"11":2.5},"min_tokens":4,"ignore_eos":true,
      "stop_token_ids":[13,50256])");
  ASSERT_TRUE(b.ok_completion) << b.completion_error.message;
  ASSERT_TRUE(b.ok_chat) << b.chat_error.message;
  for (const backend::GenerationRequest* g : {&b.completion, &b.chat}) {
    EXPECT_EQ(g->max_new_tokens, 12);
    EXPECT_EQ(g->top_k, 40);
    EXPECT_FLOAT_EQ(g->min_p, 0.05f);
    EXPECT_FLOAT_EQ(g->repetition_penalty, 1.3f);
    EXPECT_FLOAT_EQ(g->presence_penalty, -0.5f);
    EXPECT_FLOAT_EQ(g->frequency_penalty, 1.5f);
    EXPECT_EQ(g->logit_bias, (std::vector<std::pair<int32_t, float>>{{50256, -100.0f}, {11, 2.5f}}));
    EXPECT_EQ(g->min_tokens, 4);
    EXPECT_TRUE(g->ignore_eos);
    EXPECT_EQ(g->stop_token_ids, (std::vector<int32_t>{13, 50256}));
  }
}

TEST(OpenAiParams, DefaultsNullsAndOffValuesLeaveEveryControlOff) {
  const backend::GenerationRequest off;
  for (const char* extra : {"", R"(,"top_k":null,"min_p":null,"repetition_penalty":null,"presence_penalty":null,
                                  "frequency_penalty":null,"logit_bias":null,"min_tokens":null,"ignore_eos":null,
                                  "stop_token_ids":null)",
                            R"(,"top_k":-1,"min_p":0,"repetition_penalty":1,"presence_penalty":0,"frequency_penalty":0,
                                  "logit_bias":{},"min_tokens":0,"ignore_eos":false,"stop_token_ids":[])",
                            R"(,"top_k":0)", R"(,"top_k":50257)", R"(,"top_k":1000000)"}) {
    Both b = ParseBoth(extra);
    ASSERT_TRUE(b.ok_completion) << extra << ": " << b.completion_error.message;
    ASSERT_TRUE(b.ok_chat) << extra << ": " << b.chat_error.message;
    for (const backend::GenerationRequest* g : {&b.completion, &b.chat}) {
      EXPECT_EQ(g->top_k, 0) << extra;  // -1, 0 and k >= the vocabulary: every token kept
      EXPECT_EQ(g->min_p, off.min_p) << extra;
      EXPECT_EQ(g->repetition_penalty, off.repetition_penalty) << extra;
      EXPECT_EQ(g->presence_penalty, off.presence_penalty) << extra;
      EXPECT_EQ(g->frequency_penalty, off.frequency_penalty) << extra;
      EXPECT_TRUE(g->logit_bias.empty()) << extra;
      EXPECT_EQ(g->min_tokens, 0) << extra;
      EXPECT_FALSE(g->ignore_eos) << extra;
      EXPECT_TRUE(g->stop_token_ids.empty()) << extra;
    }
  }
}

struct Refusal {
  std::string extra;    // members appended to a valid request of each API
  std::string param;
  std::string message;  // the whole message
};

void ExpectRefusedByBoth(const std::vector<Refusal>& cases, bool strict = false) {
  for (const Refusal& c : cases) {
    Both b = ParseBoth(c.extra, strict);
    EXPECT_FALSE(b.ok_completion) << c.extra;
    EXPECT_FALSE(b.ok_chat) << c.extra;
    for (const ApiError* e : {&b.completion_error, &b.chat_error}) {
      EXPECT_EQ(e->http_status, 400) << c.extra;
      EXPECT_EQ(e->code, ErrorCode::kInvalidRequest) << c.extra;
      EXPECT_EQ(e->param, c.param) << c.extra;
      EXPECT_EQ(e->message, c.message) << c.extra;
    }
  }
}

TEST(OpenAiParams, ARangeOrTypeRefusalNamesTheFieldTheValueAndTheRange) {
  ExpectRefusedByBoth({
      // The shared params: before, each of these was answered
      // "unrecognized request argument supplied" (the refusal fell through).
      {R"(,"temperature":2.5)", "temperature", "temperature: 2.5 is out of range; expected a number in [0, 2]"},
      {R"(,"temperature":-0.1)", "temperature", "temperature: -0.1 is out of range; expected a number in [0, 2]"},
      {R"(,"temperature":"hot")", "temperature", R"(temperature: expected a number in [0, 2], got the string "hot")"},
      {R"(,"top_p":0)", "top_p", "top_p: 0 is out of range; expected a number in (0, 1]"},
      {R"(,"top_p":1.01)", "top_p", "top_p: 1.01 is out of range; expected a number in (0, 1]"},
      {R"(,"n":17)", "n",
       "n: 17 is out of range; expected an integer in [1, 16] (choices per request on this server)"},
      {R"(,"n":1.5)", "n", "n: expected an integer in [1, 16], got the number 1.5"},
      {R"(,"prompt_logprobs":21)", "prompt_logprobs",
       "prompt_logprobs: 21 is out of range; expected an integer in [0, 20] (alternatives per prompt token)"},
      {R"(,"prompt_logprobs":true)", "prompt_logprobs",
       "prompt_logprobs: expected an integer in [0, 20], got the boolean true"},
      {R"(,"stream":true,"prompt_logprobs":0)", "prompt_logprobs",
       "prompt_logprobs: the prompt's log-probabilities are not available when stream is true; send stream false"},
      {R"(,"seed":-1)", "seed", "seed: -1 is out of range; expected an integer in [0, 9223372036854775807]"},
      {R"(,"seed":"7")", "seed", R"(seed: expected an integer in [0, 9223372036854775807], got the string "7")"},
      {R"(,"stream":"yes")", "stream", R"(stream: expected a boolean, got the string "yes")"},
      {R"(,"stream":1)", "stream", "stream: expected a boolean, got the number 1"},
      {R"(,"max_tokens":0)", "max_tokens",
       "max_tokens: 0 is out of range; expected an integer in [1, 100] (--max-new-tokens)"},
      {R"(,"max_completion_tokens":101)", "max_completion_tokens",
       "max_completion_tokens: 101 is out of range; expected an integer in [1, 100] (--max-new-tokens)"},
      {R"(,"stop":["a",""])", "stop", "stop[1]: 0 bytes is out of range; expected 1..8 bytes (--max-stop-bytes)"},
      {R"(,"stop":[1])", "stop", "stop[0]: expected a string, got the number 1"},
      {R"(,"user":5)", "user", "user: expected a string, got the number 5"},
      // The sampling controls.
      {R"(,"top_k":-2)", "top_k", "top_k: -2 is out of range; expected an integer, -1 or 0 (off) or at least 1"},
      {R"(,"top_k":2.5)", "top_k", "top_k: expected an integer, -1 or 0 (off) or at least 1, got the number 2.5"},
      {R"(,"min_p":1.5)", "min_p", "min_p: 1.5 is out of range; expected a number in [0, 1]"},
      {R"(,"min_p":-0.01)", "min_p", "min_p: -0.01 is out of range; expected a number in [0, 1]"},
      {R"(,"min_p":true)", "min_p", "min_p: expected a number in [0, 1], got the boolean true"},
      {R"(,"repetition_penalty":0)", "repetition_penalty",
       "repetition_penalty: 0 is out of range; expected a number in (0, 10]"},
      {R"(,"repetition_penalty":10.5)", "repetition_penalty",
       "repetition_penalty: 10.5 is out of range; expected a number in (0, 10]"},
      {R"(,"presence_penalty":2.01)", "presence_penalty",
       "presence_penalty: 2.01 is out of range; expected a number in [-2, 2]"},
      {R"(,"frequency_penalty":-3)", "frequency_penalty",
       "frequency_penalty: -3 is out of range; expected a number in [-2, 2]"},
      {R"(,"frequency_penalty":[1])", "frequency_penalty",
       "frequency_penalty: expected a number in [-2, 2], got an array"},
      {R"(,"logit_bias":[1])", "logit_bias", "logit_bias: expected an object of token ids to numbers, got an array"},
      {R"(,"logit_bias":{"hello":1})", "logit_bias",
       R"(logit_bias: the key "hello" is not a token id; expected a decimal integer in [0, 50256])"},
      {R"(,"logit_bias":{"50257":1})", "logit_bias",
       R"(logit_bias["50257"]: 50257 is out of range; expected a token id in [0, 50256])"},
      {R"(,"logit_bias":{"-1":1})", "logit_bias",
       R"(logit_bias["-1"]: -1 is out of range; expected a token id in [0, 50256])"},
      {R"(,"logit_bias":{"11":100.5})", "logit_bias",
       R"(logit_bias["11"]: 100.5 is out of range; expected a number in [-100, 100])"},
      {R"(,"logit_bias":{"11":"up"})", "logit_bias",
       R"(logit_bias["11"]: expected a number in [-100, 100], got the string "up")"},
      {R"(,"logit_bias":{"11":1,"011":2})", "logit_bias", "logit_bias: the token id 11 is given twice"},
      {R"(,"logit_bias":{"1":1,"2":1,"3":1,"4":1})", "logit_bias",
       "logit_bias: 4 entries is out of range; expected at most 3 (--max-logit-bias)"},
      {R"(,"min_tokens":-1)", "min_tokens",
       "min_tokens: -1 is out of range; expected an integer in [0, 100] (--max-new-tokens)"},
      {R"(,"max_tokens":5,"min_tokens":6)", "min_tokens",
       "min_tokens: 6 is out of range; expected an integer in [0, 5] (at most max_tokens)"},
      {R"(,"min_tokens":6,"max_tokens":5)", "min_tokens",
       "min_tokens: 6 is out of range; expected an integer in [0, 5] (at most max_tokens)"},
      {R"(,"ignore_eos":"true")", "ignore_eos", R"(ignore_eos: expected a boolean, got the string "true")"},
      {R"(,"stop_token_ids":5)", "stop_token_ids", "stop_token_ids: expected an array of token ids, got the number 5"},
      {R"(,"stop_token_ids":[1,2,3])", "stop_token_ids",
       "stop_token_ids: 3 ids is out of range; expected at most 2 (--max-stop-token-ids)"},
      {R"(,"stop_token_ids":[50257])", "stop_token_ids",
       "stop_token_ids[0]: 50257 is out of range; expected a token id in [0, 50256]"},
      {R"(,"stop_token_ids":["13"])", "stop_token_ids",
       R"(stop_token_ids[0]: expected an integer token id, got the string "13")"},
  });
}

TEST(OpenAiParams, ALongStringValueIsCutInTheMessage) {
  Both b = ParseBoth(R"(,"stream":")" + std::string(100, 'y') + "\"");
  EXPECT_EQ(b.completion_error.message,
            R"(stream: expected a boolean, got the string ")" + std::string(40, 'y') + R"(..." (100 bytes))");
}

TEST(OpenAiParams, MaxTokensAndMaxCompletionTokensMustAgreeInEitherOrder) {
  const std::string both_differ =
      "max_tokens (5) and max_completion_tokens (7) differ; give one of them, or both equal";
  ExpectRefusedByBoth({
      {R"(,"max_tokens":5,"max_completion_tokens":7)", "max_tokens", both_differ},
      {R"(,"max_completion_tokens":7,"max_tokens":5)", "max_tokens", both_differ},
  });
  for (const char* extra : {R"(,"max_tokens":9,"max_completion_tokens":9)", R"(,"max_completion_tokens":9,"max_tokens":9)",
                            R"(,"max_completion_tokens":9)", R"(,"max_tokens":9,"max_completion_tokens":null)"}) {
    Both b = ParseBoth(extra);
    ASSERT_TRUE(b.ok_completion) << extra << ": " << b.completion_error.message;
    ASSERT_TRUE(b.ok_chat) << extra << ": " << b.chat_error.message;
    EXPECT_EQ(b.completion.max_new_tokens, 9) << extra;
    EXPECT_EQ(b.chat.max_new_tokens, 9) << extra;
  }
}

TEST(OpenAiParams, ATemperatureBelowTheFloorIsGreedy) {
  EXPECT_EQ(service::kMinTemperature, 1e-5);
  for (const char* t : {"0", "1e-300", "5e-324", "9.99e-6"}) {
    Both b = ParseBoth(std::string(R"(,"temperature":)") + t);
    ASSERT_TRUE(b.ok_completion) << t;
    ASSERT_TRUE(b.ok_chat) << t;
    EXPECT_EQ(b.completion.temperature, 0.0f) << t;
    EXPECT_EQ(b.chat.temperature, 0.0f) << t;
  }
  Both b = ParseBoth(R"(,"temperature":1e-5)");
  EXPECT_FLOAT_EQ(b.completion.temperature, 1e-5f);
  EXPECT_FLOAT_EQ(b.chat.temperature, 1e-5f);
  EXPECT_EQ(service::EffectiveTemperature(2e-6), 0.0f);
  EXPECT_EQ(service::EffectiveTemperature(0.7), 0.7f);
}

TEST(OpenAiParams, UnknownFieldsAreAcceptedAndListedUnlessStrict) {
  const std::string extra = R"(,"max_new_tokens":5,"policy":"drop_slow","some_future_param":{"a":1})";
  Both b = ParseBoth(extra);
  ASSERT_TRUE(b.ok_completion) << b.completion_error.message;
  ASSERT_TRUE(b.ok_chat) << b.chat_error.message;
  const std::vector<std::string> names = {"max_new_tokens", "policy", "some_future_param"};
  EXPECT_EQ(b.completion_unknown, names);
  EXPECT_EQ(b.chat_unknown, names);
  EXPECT_EQ(b.completion.max_new_tokens, 16);  // ignored: OpenAI's default
  // With --strict-request-fields: refused, the first one named.
  ExpectRefusedByBoth({{extra, "max_new_tokens",
                        "unrecognized request argument supplied: 'max_new_tokens' (this server refuses fields it "
                        "does not know: --strict-request-fields)"}},
                      /*strict=*/true);
  // Known fields are known under both settings.
  for (bool strict : {false, true}) {
    Both k = ParseBoth(R"(,"top_k":3,"user":"u","store":false,"metadata":{"k":"v"},"service_tier":"auto",
                          "parallel_tool_calls":true,"chat_template_kwargs":{"enable_thinking":false},
                          "response_format":{"type":"text"},"modalities":["text"],"tools":null,"prompt_logprobs":null,
                          "prompt_cache_key":"k","safety_identifier":"s","use_beam_search":false,
                          "include_stop_str_in_output":false)",
                       strict);
    EXPECT_TRUE(k.ok_completion) << k.completion_error.message;
    EXPECT_TRUE(k.ok_chat) << k.chat_error.message;
    EXPECT_TRUE(k.completion_unknown.empty());
    EXPECT_TRUE(k.chat_unknown.empty());
  }
}

TEST(OpenAiParams, KnownUnsupportedFieldsAreRefusedNamingThemAndWhy) {
  const std::string no_tools =
      ": tool and function calling is not supported: GPT-2 is a base model that was never trained to call tools";
  const std::string no_structured = ": structured output is not available on this server";
  for (bool strict : {false, true}) {
    ExpectRefusedByBoth(
        {
            {R"(,"tools":[])", "tools", "tools" + no_tools},
            {R"(,"tool_choice":"auto")", "tool_choice", "tool_choice" + no_tools},
            {R"(,"functions":[])", "functions", "functions" + no_tools},
            {R"(,"function_call":"auto")", "function_call", "function_call" + no_tools},
            // Structured output needs the server's grammar compiler, which
            // these parses run without (tests/app/structured_output_test.cc
            // runs it through the server).
            {R"(,"response_format":{"type":"json_object"})", "response_format",
             "response_format" + no_structured},
            {R"(,"response_format":{"type":"yaml"})", "response_format",
             R"(response_format: type "yaml" is not one of text, json_object, json_schema)"},
            {R"(,"guided_json":{})", "guided_json", "guided_json" + no_structured},
            {R"(,"modalities":["text","audio"])", "modalities",
             R"(modalities: only ["text"] is supported: GPT-2 reads and writes text)"},
            {R"(,"verbosity":"low")", "verbosity",
             "verbosity: GPT-2 is not a reasoning model; bound the answer with max_tokens"},
            {R"(,"allowed_token_ids":[1])", "allowed_token_ids",
             "allowed_token_ids: restricting the vocabulary is not supported yet; logit_bias -100 excludes a token"},
            {R"(,"bad_words":["x"])", "bad_words",
             "bad_words: banned words are not supported yet; logit_bias -100 excludes a token"},
            {R"(,"use_beam_search":true)", "use_beam_search",
             "use_beam_search: beam search is not supported; send false or omit it"},
            {R"(,"include_stop_str_in_output":true)", "include_stop_str_in_output",
             "include_stop_str_in_output: stop strings are never included in the output; send false or omit it"},
        },
        strict);
  }
}

TEST(OpenAiParams, CompletionsOnlyFieldsEchoSuffixBestOf) {
  openai::CompletionRequest r;
  ApiError e;
  // Accepted at the values that change nothing: suffix "", best_of == n.
  ASSERT_TRUE(ParseCompletion(Completion(R"(,"echo":false,"suffix":"","best_of":3,"n":3)"), &r, &e)) << e.message;
  EXPECT_EQ(r.n, 3);
  ASSERT_TRUE(ParseCompletion(Completion(R"(,"n":2,"best_of":2)"), &r, &e)) << e.message;
  EXPECT_EQ(r.best_of, 2);
  // best_of > n: that many candidates per prompt, not streamed.
  ASSERT_TRUE(ParseCompletion(Completion(R"(,"best_of":5,"n":2,"stream":false)"), &r, &e)) << e.message;
  EXPECT_EQ(r.best_of, 5);
  EXPECT_EQ(r.n, 2);
  ASSERT_TRUE(ParseCompletion(Completion(""), &r, &e)) << e.message;
  EXPECT_EQ(r.best_of, 1);
  EXPECT_FALSE(openai::ParseCompletionRequest(R"({"model":"gpt2","prompt":["a","b"],"best_of":9})", Tok(), Bounds(),
                                              "gpt2", &r, &e));
  EXPECT_EQ(e.param, "best_of");
  EXPECT_EQ(e.message,
            "best_of: 9 choices for each of 2 prompts is out of range; expected at most 16 choices in all (prompts "
            "times best_of) per request on this server");
  EXPECT_FALSE(r.echo);
  EXPECT_TRUE(r.echo_texts.empty());
  // echo: each prompt's text, as the model read it (its tokens decoded).
  ASSERT_TRUE(openai::ParseCompletionRequest(R"({"model":"gpt2","echo":true,"prompt":["Hi <|endoftext|>",[15496,995],""]})",
                                             Tok(), Bounds(), "gpt2", &r, &e))
      << e.message;
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.echo_texts, (std::vector<std::string>{"Hi <|endoftext|>", "Hello world", "<|endoftext|>"}));
  // echo with logprobs: the prompt's log-probabilities are asked for, with
  // the larger of the two counts (in either key order).
  for (const char* extra : {R"(,"echo":true,"logprobs":2)", R"(,"logprobs":2,"echo":true,"prompt_logprobs":1)",
                            R"(,"echo":true,"logprobs":0,"prompt_logprobs":5)"}) {
    ASSERT_TRUE(ParseCompletion(Completion(extra), &r, &e)) << extra << ": " << e.message;
    const int want = std::string(extra).find("\"prompt_logprobs\":5") != std::string::npos ? 5 : 2;
    EXPECT_EQ(openai::ToGeneration(r).prompt_logprobs, want) << extra;
  }
  ASSERT_TRUE(ParseCompletion(Completion(R"(,"echo":true,"logprobs":1,"stream":true)"), &r, &e)) << e.message;
  EXPECT_EQ(openai::ToGeneration(r).prompt_logprobs, 1);
  ASSERT_TRUE(ParseCompletion(Completion(R"(,"echo":true)"), &r, &e)) << e.message;
  EXPECT_EQ(openai::ToGeneration(r).prompt_logprobs, -1);
  struct Case {
    std::string extra, param, message;
  };
  for (const Case& c : std::vector<Case>{
           {R"(,"echo":"no")", "echo", R"(echo: expected a boolean, got the string "no")"},
           {R"(,"suffix":"end")", "suffix",
            "suffix: insertion (a suffix after the completion) is not supported: GPT-2 only continues text"},
           {R"(,"best_of":3,"stream":true)", "best_of",
            "best_of: best_of greater than n cannot be streamed; send stream false"},
           {R"(,"best_of":2,"n":3)", "best_of", "best_of: 2 is out of range; expected an integer >= n (3)"},
           {R"(,"n":3,"best_of":2)", "best_of", "best_of: 2 is out of range; expected an integer >= n (3)"},
           {R"(,"best_of":0)", "best_of",
            "best_of: 0 is out of range; expected an integer in [1, 16] (choices per request on this server)"},
           {R"(,"logprobs":21)", "logprobs",
            "logprobs: 21 is out of range; expected an integer in [0, 20] (alternatives per token)"},
       }) {
    EXPECT_FALSE(ParseCompletion(Completion(c.extra), &r, &e)) << c.extra;
    EXPECT_EQ(e.http_status, 400) << c.extra;
    EXPECT_EQ(e.param, c.param) << c.extra;
    EXPECT_EQ(e.message, c.message) << c.extra;
  }
}

TEST(OpenAiParams, BestOfPicksTheMostLikelyOfEachPromptFirst) {
  // Two prompts of three candidates: the two highest sums of each, best first; ties keep the lower index.
  EXPECT_EQ(openai::PickBest({-5, -1, -3, -2, -2, -9}, 3, 2), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(openai::PickBest({-1, -1, -1}, 3, 1), (std::vector<int>{0}));
  EXPECT_EQ(openai::PickBest({-4, -2}, 2, 2), (std::vector<int>{1, 0}));
}

}  // namespace
}  // namespace tw
