// OpenAI-compatible completions (src/openai/completions.h, docs/openai.md):
// request parsing and its refusals (each naming its param), the response
// shapes, and, against a real server on loopback (mock backend), the
// non-streamed answer, the streamed chunk grammar read with our SSE and JSON
// parsers, streamed == non-streamed, stop strings, errors before and after
// the first byte, and cancellation when the client leaves.
#include "openai/completions.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "app/app_fixture.h"
#include "sse/parser.h"
#include "support/request_test_util.h"
#include "tokenizer/tokenizer.h"

namespace tw {
namespace {

using openai::CompletionRequest;
using testing::AppServer;
using testing::ParseJson;
using testing::WaitUntil;

const tokenizer::Tokenizer& Tok() { return testing::EmbeddedTokenizer(); }

service::RequestBounds Bounds() { return testing::TestBounds(); }

bool Parse(const std::string& body, CompletionRequest* out, ApiError* err) {
  return openai::ParseCompletionRequest(body, Tok(), Bounds(), "gpt2", out, err);
}

std::vector<int32_t> Ids(std::initializer_list<int32_t> l) { return std::vector<int32_t>(l); }
std::vector<std::vector<int32_t>> Prompts(std::initializer_list<std::vector<int32_t>> l) {
  return std::vector<std::vector<int32_t>>(l);
}

std::string HeaderOf(const client::ResponseHead& h, std::string_view name) {
  const std::string* v = h.Find(name);
  return v ? *v : std::string();
}

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// ---- request parsing ------------------------------------------------------------

TEST(CompletionsParse, EveryFieldIsRead) {
  CompletionRequest r;
  ApiError e;
  ASSERT_TRUE(Parse(R"({"model":"gpt2","prompt":"Hello world","max_tokens":7,"temperature":0.5,
                        "top_p":0.9,"seed":42,"stop":["\n","x"],"stream":true,
                        "stream_options":{"include_usage":true},"n":1,"best_of":1,"echo":false,
                        "logprobs":null,"suffix":null,"presence_penalty":0,"frequency_penalty":0.0,
                        "logit_bias":{},"user":"someone"})",
                    &r, &e))
      << e.message;
  EXPECT_EQ(r.model, "gpt2");
  EXPECT_EQ(r.prompts, Prompts({Ids({15496, 995})}));  // "Hello" " world" (GPT-2's vocabulary)
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_DOUBLE_EQ(r.temperature, 0.5);
  EXPECT_DOUBLE_EQ(r.top_p, 0.9);
  EXPECT_TRUE(r.has_seed);
  EXPECT_EQ(r.seed, 42);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n", "x"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
}

TEST(CompletionsParse, DefaultsAreOpenAis) {
  CompletionRequest r;
  ApiError e;
  ASSERT_TRUE(Parse(R"({"model":"gpt2","prompt":"x"})", &r, &e)) << e.message;
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_DOUBLE_EQ(r.temperature, 1.0);
  EXPECT_DOUBLE_EQ(r.top_p, 1.0);
  EXPECT_FALSE(r.has_seed);
  EXPECT_TRUE(r.stop.empty());
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.include_usage);
  // null means "the default" for every optional param.
  ASSERT_TRUE(Parse(R"({"model":"gpt2","prompt":"x","max_tokens":null,"temperature":null,
                        "top_p":null,"seed":null,"stop":null,"stream":null,"stream_options":null,
                        "n":null,"best_of":null,"echo":null,"suffix":null,"presence_penalty":null,
                        "frequency_penalty":null,"logit_bias":null,"user":null})",
                    &r, &e))
      << e.message;
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_DOUBLE_EQ(r.temperature, 1.0);
  EXPECT_FALSE(r.has_seed);
  EXPECT_FALSE(r.stream);
  // The default never exceeds the server's --max-new-tokens.
  service::RequestBounds small = Bounds();
  small.max_new_tokens = 5;
  ASSERT_TRUE(openai::ParseCompletionRequest(R"({"model":"gpt2","prompt":"x"})", Tok(), small, "gpt2", &r, &e));
  EXPECT_EQ(r.max_tokens, 5);
}

TEST(CompletionsParse, PromptForms) {
  CompletionRequest r;
  ApiError e;
  ASSERT_TRUE(Parse(R"({"model":"gpt2","prompt":["Hello world"]})", &r, &e)) << e.message;
  EXPECT_EQ(r.prompts, Prompts({Ids({15496, 995})}));
  ASSERT_TRUE(Parse(R"({"model":"gpt2","prompt":[15496,995,0,50256]})", &r, &e)) << e.message;
  EXPECT_EQ(r.prompts, Prompts({Ids({15496, 995, 0, 50256})}));
  ASSERT_TRUE(Parse(R"({"model":"gpt2","prompt":[[11,12]]})", &r, &e)) << e.message;
  EXPECT_EQ(r.prompts, Prompts({Ids({11, 12})}));
  // OpenAI's default prompt is <|endoftext|>; the literal is the special token.
  ASSERT_TRUE(Parse(R"({"model":"gpt2","prompt":""})", &r, &e)) << e.message;
  EXPECT_EQ(r.prompts, Prompts({Ids({50256})}));
  ASSERT_TRUE(Parse(R"({"model":"gpt2","prompt":"<|endoftext|>Hello"})", &r, &e)) << e.message;
  EXPECT_EQ(r.prompts, Prompts({Ids({50256, 15496})}));
  // An array of prompts: each answered with n choices of its own.
  ASSERT_TRUE(Parse(R"({"model":"gpt2","prompt":["Hello world","","x"]})", &r, &e)) << e.message;
  EXPECT_EQ(r.prompts, Prompts({Ids({15496, 995}), Ids({50256}), Ids({87})}));
  ASSERT_TRUE(Parse(R"({"model":"gpt2","prompt":[[11,12],[13]],"n":8})", &r, &e)) << e.message;
  EXPECT_EQ(r.prompts, Prompts({Ids({11, 12}), Ids({13})}));
  EXPECT_EQ(r.n, 8);
}

TEST(CompletionsParse, TranslatesToOurGenerationRequest) {
  CompletionRequest r;
  ApiError e;
  ASSERT_TRUE(Parse(R"({"model":"gpt2","prompt":"Hello world","max_tokens":9,"temperature":0.25,
                        "top_p":0.5,"seed":7,"stop":"\n\n"})",
                    &r, &e));
  backend::GenerationRequest g = openai::ToGeneration(r);
  EXPECT_EQ(g.prompt_tokens, Ids({15496, 995}));
  EXPECT_EQ(g.max_new_tokens, 9);
  EXPECT_FLOAT_EQ(g.temperature, 0.25f);
  EXPECT_FLOAT_EQ(g.top_p, 0.5f);
  EXPECT_TRUE(g.has_seed);
  EXPECT_EQ(g.seed, 7u);
  EXPECT_EQ(g.stop, std::vector<std::string>{"\n\n"});
  // Without a seed, none is set.
  ASSERT_TRUE(Parse(R"({"model":"gpt2","prompt":"x"})", &r, &e));
  g = openai::ToGeneration(r);
  EXPECT_FALSE(g.has_seed);
  EXPECT_TRUE(g.stop.empty());
  EXPECT_EQ(g.max_new_tokens, 16);
}

struct Rejection {
  const char* body;
  int status;
  const char* param;    // "" = null
  const char* code;     // "" = null
  const char* message;  // the whole message: the field, the value, what is allowed
};

TEST(CompletionsParse, EveryRejectionNamesItsParam) {
  std::string long_prompt = R"({"model":"gpt2","max_tokens":20,"prompt":[)";
  for (int i = 0; i < 1010; i++) long_prompt += (i ? ",1" : "1");
  long_prompt += "]}";
  const std::vector<Rejection> cases = {
      {R"({"model":"gpt2","prompt":"x",})", 400, "", "invalid_json",
       "the body is not valid JSON (byte 29): json: unexpected byte '}', expected a string key at byte 29"},
      {R"({"model":"gpt2","prompt":"x","prompt":"y"})", 400, "prompt", "",
       "key 'prompt' appears twice; give each field once"},
      {R"({"model":"gpt2","prompt":"x","stream_options":{"include_usage":true,"include_usage":false}})", 400,
       "stream_options.include_usage", "",
       "key 'stream_options.include_usage' appears twice; give each field once"},
      {R"(["gpt2"])", 400, "", "",
       "the body must be a JSON object"},
      {R"({"prompt":"x"})", 400, "model", "",
       "you must provide a model parameter ('gpt2')"},
      {R"({"model":null,"prompt":"x"})", 400, "model", "",
       "you must provide a model parameter ('gpt2')"},
      {R"({"model":5,"prompt":"x"})", 400, "model", "",
       "model: expected a string, got the number 5"},
      {R"({"model":"gpt-4","prompt":"x"})", 404, "model", "model_not_found",
       "the model 'gpt-4' does not exist; this server serves 'gpt2'"},
      {R"({"model":"gpt2"})", 400, "prompt", "",
       "you must provide a 'prompt'"},
      {R"({"model":"gpt2","prompt":null})", 400, "prompt", "",
       "you must provide a 'prompt'"},
      {R"({"model":"gpt2","prompt":5})", 400, "prompt", "",
       "prompt: expected a string, an array of token ids or an array of prompts, got the number 5"},
      {R"({"model":"gpt2","prompt":[]})", 400, "prompt", "",
       "'prompt' must not be an empty array"},
      {R"({"model":"gpt2","prompt":["a",1]})", 400, "prompt", "",
       "prompt[1]: expected a string or an array of token ids, got the number 1"},
      {R"({"model":"gpt2","prompt":["a","b","c"],"n":6})", 400, "n", "",
       "n: 6 choices for each of 3 prompts is out of range; expected at most 16 choices in all (prompts times n) "
       "per request on this server"},
      {R"({"model":"gpt2","prompt":["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"]})",
       400, "prompt", "", "prompt: 17 prompts is out of range; expected at most 16 (choices per request on this server)"},
      {R"({"model":"gpt2","prompt":[[]]})", 400, "prompt", "",
       "'prompt[0]' must not be empty"},
      {R"({"model":"gpt2","prompt":[1,"a"]})", 400, "prompt", "",
       R"(prompt[1]: expected an integer token id, got the string "a")"},
      {R"({"model":"gpt2","prompt":[1,50257]})", 400, "prompt", "",
       "prompt[1]: 50257 is out of range; expected a token id in [0, 50256]"},
      {R"({"model":"gpt2","prompt":[-1]})", 400, "prompt", "",
       "prompt[0]: -1 is out of range; expected a token id in [0, 50256]"},
      {long_prompt.c_str(), 400, "prompt", "context_length_exceeded",
       "this model's maximum context length is 1024 tokens, however you requested 1030 tokens (1010 in your prompt; 20 for the completion). Please reduce your prompt or max_tokens."},
      {R"({"model":"gpt2","prompt":"x","max_tokens":0})", 400, "max_tokens", "",
       "max_tokens: 0 is out of range; expected an integer in [1, 100] (--max-new-tokens)"},
      {R"({"model":"gpt2","prompt":"x","max_tokens":101})", 400, "max_tokens", "",
       "max_tokens: 101 is out of range; expected an integer in [1, 100] (--max-new-tokens)"},
      {R"({"model":"gpt2","prompt":"x","max_tokens":"5"})", 400, "max_tokens", "",
       R"(max_tokens: expected an integer in [1, 100], got the string "5")"},
      {R"({"model":"gpt2","prompt":"x","max_tokens":2.5})", 400, "max_tokens", "",
       "max_tokens: expected an integer in [1, 100], got the number 2.5"},
      {R"({"model":"gpt2","prompt":"x","temperature":2.5})", 400, "temperature", "",
       "temperature: 2.5 is out of range; expected a number in [0, 2]"},
      {R"({"model":"gpt2","prompt":"x","temperature":-0.1})", 400, "temperature", "",
       "temperature: -0.1 is out of range; expected a number in [0, 2]"},
      {R"({"model":"gpt2","prompt":"x","temperature":"hot"})", 400, "temperature", "",
       R"(temperature: expected a number in [0, 2], got the string "hot")"},
      {R"({"model":"gpt2","prompt":"x","top_p":0})", 400, "top_p", "",
       "top_p: 0 is out of range; expected a number in (0, 1]"},
      {R"({"model":"gpt2","prompt":"x","top_p":1.01})", 400, "top_p", "",
       "top_p: 1.01 is out of range; expected a number in (0, 1]"},
      {R"({"model":"gpt2","prompt":"x","seed":-1})", 400, "seed", "",
       "seed: -1 is out of range; expected an integer in [0, 9223372036854775807]"},
      {R"({"model":"gpt2","prompt":"x","seed":1.5})", 400, "seed", "",
       "seed: expected an integer in [0, 9223372036854775807], got the number 1.5"},
      {R"({"model":"gpt2","prompt":"x","stop":["a","b","c","d","e"]})", 400, "stop", "",
       "stop: 5 strings is out of range; expected at most 4 (--max-stop-strings)"},
      {R"({"model":"gpt2","prompt":"x","stop":[""]})", 400, "stop", "",
       "stop[0]: 0 bytes is out of range; expected 1..8 bytes (--max-stop-bytes)"},
      {R"({"model":"gpt2","prompt":"x","stop":"123456789"})", 400, "stop", "",
       "stop: 9 bytes is out of range; expected 1..8 bytes (--max-stop-bytes)"},
      {R"({"model":"gpt2","prompt":"x","stop":[1]})", 400, "stop", "",
       "stop[0]: expected a string, got the number 1"},
      {R"({"model":"gpt2","prompt":"x","stop":7})", 400, "stop", "",
       "stop: expected a string or an array of strings, got the number 7"},
      {R"({"model":"gpt2","prompt":"x","stream":"yes"})", 400, "stream", "",
       R"(stream: expected a boolean, got the string "yes")"},
      {R"({"model":"gpt2","prompt":"x","stream_options":{"include_usage":true}})", 400, "stream_options", "",
       "'stream_options' is only allowed when 'stream' is true"},
      {R"({"model":"gpt2","prompt":"x","stream":false,"stream_options":{}})", 400, "stream_options", "",
       "'stream_options' is only allowed when 'stream' is true"},
      {R"({"model":"gpt2","prompt":"x","stream":true,"stream_options":[]})", 400, "stream_options", "",
       "stream_options: expected an object, got an array"},
      {R"({"model":"gpt2","prompt":"x","stream":true,"stream_options":{"include_usage":1}})", 400,
       "stream_options.include_usage", "",
       "stream_options.include_usage: expected a boolean, got the number 1"},
      {R"({"model":"gpt2","prompt":"x","stream":true,"stream_options":{"continuous_usage_stats":true}})",
       400, "stream_options.continuous_usage_stats", "",
       "unrecognized stream option 'stream_options.continuous_usage_stats'"},
      {R"({"model":"gpt2","prompt":"x","n":0})", 400, "n", "",
       "n: 0 is out of range; expected an integer in [1, 16] (choices per request on this server)"},
      {R"({"model":"gpt2","prompt":"x","n":17})", 400, "n", "",
       "n: 17 is out of range; expected an integer in [1, 16] (choices per request on this server)"},
      {R"({"model":"gpt2","prompt":"x","n":1.5})", 400, "n", "",
       "n: expected an integer in [1, 16], got the number 1.5"},
      {R"({"model":"gpt2","prompt":"x","best_of":3,"stream":true})", 400, "best_of", "",
       "best_of: best_of greater than n cannot be streamed; send stream false"},
      {R"({"model":"gpt2","prompt":"x","prompt_logprobs":21})", 400, "prompt_logprobs", "",
       "prompt_logprobs: 21 is out of range; expected an integer in [0, 20] (alternatives per prompt token)"},
      {R"({"model":"gpt2","prompt":"x","prompt_logprobs":-1})", 400, "prompt_logprobs", "",
       "prompt_logprobs: -1 is out of range; expected an integer in [0, 20] (alternatives per prompt token)"},
      {R"({"model":"gpt2","prompt":"x","prompt_logprobs":0,"stream":true})", 400, "prompt_logprobs", "",
       "prompt_logprobs: the prompt's log-probabilities are not available when stream is true; send stream false"},
      {R"({"model":"gpt2","prompt":"x","logprobs":21})", 400, "logprobs", "",
       "logprobs: 21 is out of range; expected an integer in [0, 20] (alternatives per token)"},
      {R"({"model":"gpt2","prompt":"x","logprobs":-1})", 400, "logprobs", "",
       "logprobs: -1 is out of range; expected an integer in [0, 20] (alternatives per token)"},
      {R"({"model":"gpt2","prompt":"x","logprobs":true})", 400, "logprobs", "",
       "logprobs: expected an integer in [0, 20], got the boolean true"},
      {R"({"model":"gpt2","prompt":"x","suffix":"end"})", 400, "suffix", "",
       "suffix: insertion (a suffix after the completion) is not supported: GPT-2 only continues text"},
      {R"({"model":"gpt2","prompt":"x","presence_penalty":2.5})", 400, "presence_penalty", "",
       "presence_penalty: 2.5 is out of range; expected a number in [-2, 2]"},
      {R"({"model":"gpt2","prompt":"x","frequency_penalty":-3})", 400, "frequency_penalty", "",
       "frequency_penalty: -3 is out of range; expected a number in [-2, 2]"},
      {R"({"model":"gpt2","prompt":"x","logit_bias":{"50257":-100}})", 400, "logit_bias", "",
       R"(logit_bias["50257"]: 50257 is out of range; expected a token id in [0, 50256])"},
      {R"({"model":"gpt2","prompt":"x","user":5})", 400, "user", "",
       "user: expected a string, got the number 5"},
      {R"({"model":"gpt2","prompt":"x","top_k":-5})", 400, "top_k", "",
       "top_k: -5 is out of range; expected an integer, -1 or 0 (off) or at least 1"},
  };
  for (const Rejection& c : cases) {
    CompletionRequest r;
    ApiError e;
    EXPECT_FALSE(Parse(c.body, &r, &e)) << c.body;
    EXPECT_EQ(e.http_status, c.status) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
    json::Value w = ParseJson(openai::OpenAiErrorJson(e));
    const json::Value* code = w.Find("error")->Find("code");
    EXPECT_EQ(code->is_null() ? std::string() : code->as_string(), c.code) << c.body;
    EXPECT_EQ(w.Find("error")->Find("type")->as_string(), "invalid_request_error") << c.body;
    EXPECT_EQ(e.message, c.message) << c.body;
  }
}

TEST(CompletionsParse, ContextBoundCountsPromptAndMaxTokens) {
  std::string prompt;
  for (int i = 0; i < 1008; i++) prompt += (i ? ",1" : "1");
  CompletionRequest r;
  ApiError e;
  // 1008 + 16 = 1024 fits exactly; one more token does not.
  EXPECT_TRUE(Parse(R"({"model":"gpt2","prompt":[)" + prompt + "]}", &r, &e)) << e.message;
  EXPECT_FALSE(Parse(R"({"model":"gpt2","max_tokens":17,"prompt":[)" + prompt + "]}", &r, &e));
  EXPECT_NE(e.message.find("1025"), std::string::npos) << e.message;
}

// ---- response shapes ------------------------------------------------------------

TEST(CompletionsShapes, ErrorObjectHasOpenAisFourFields) {
  ApiError e = ApiError::Make(ErrorCode::kModelNotFound, "no such model");
  e.param = "model";
  json::Value v = ParseJson(openai::OpenAiErrorJson(e));
  ASSERT_TRUE(v.Find("error") && v.Find("error")->is_object());
  const json::Value& err = *v.Find("error");
  EXPECT_EQ(err.members().size(), 4u);
  EXPECT_EQ(err.Find("message")->as_string(), "no such model");
  EXPECT_EQ(err.Find("type")->as_string(), "invalid_request_error");
  EXPECT_EQ(err.Find("param")->as_string(), "model");
  EXPECT_EQ(err.Find("code")->as_string(), "model_not_found");
  // invalid_request: the param says what; the code is null (as OpenAI's).
  ApiError bad = ApiError::Make(ErrorCode::kInvalidRequest, "bad");
  v = ParseJson(openai::OpenAiErrorJson(bad));
  EXPECT_TRUE(v.Find("error")->Find("param")->is_null());
  EXPECT_TRUE(v.Find("error")->Find("code")->is_null());

  ApiError o = ApiError::Make(ErrorCode::kOverloaded, "busy");
  v = ParseJson(openai::OpenAiErrorJson(o));
  EXPECT_EQ(o.http_status, 503);
  EXPECT_EQ(v.Find("error")->Find("type")->as_string(), "server_error");
  EXPECT_EQ(v.Find("error")->Find("code")->as_string(), "overloaded");
  ApiError p = openai::ForOpenAi(ApiError::Make(ErrorCode::kPromptTooLong, "long"));
  EXPECT_EQ(p.http_status, 400);
  EXPECT_EQ(p.param, "prompt");
  v = ParseJson(openai::OpenAiErrorJson(p));
  EXPECT_EQ(v.Find("error")->Find("type")->as_string(), "invalid_request_error");
  EXPECT_EQ(v.Find("error")->Find("code")->as_string(), "context_length_exceeded");
}

TEST(CompletionsShapes, FinishReasonsMapToOpenAis) {
  std::string out;
  EXPECT_TRUE(openai::OpenAiFinishReason(stream::FinishReason::kEos, &out));
  EXPECT_EQ(out, "stop");
  EXPECT_TRUE(openai::OpenAiFinishReason(stream::FinishReason::kStop, &out));
  EXPECT_EQ(out, "stop");
  EXPECT_TRUE(openai::OpenAiFinishReason(stream::FinishReason::kLength, &out));
  EXPECT_EQ(out, "length");
  EXPECT_FALSE(openai::OpenAiFinishReason(stream::FinishReason::kCancelled, &out));
  EXPECT_FALSE(openai::OpenAiFinishReason(stream::FinishReason::kError, &out));
}

TEST(CompletionsShapes, CompletionChunkAndUsage) {
  openai::CompletionMeta m{"cmpl-s_1", 1700000000, "gpt2", false};
  json::Value c = ParseJson(openai::CompletionJson(m, "Hi \"there\"\n", "length", 3, 5));
  EXPECT_EQ(c.Find("id")->as_string(), "cmpl-s_1");
  EXPECT_EQ(c.Find("object")->as_string(), "text_completion");
  EXPECT_EQ(c.Find("created")->as_int(), 1700000000);
  EXPECT_EQ(c.Find("model")->as_string(), "gpt2");
  ASSERT_EQ(c.Find("choices")->items().size(), 1u);
  const json::Value& ch = c.Find("choices")->items()[0];
  EXPECT_EQ(ch.Find("text")->as_string(), "Hi \"there\"\n");
  EXPECT_EQ(ch.Find("index")->as_int(), 0);
  EXPECT_TRUE(ch.Find("logprobs")->is_null());
  EXPECT_EQ(ch.Find("finish_reason")->as_string(), "length");
  EXPECT_EQ(c.Find("usage")->Find("prompt_tokens")->as_int(), 3);
  EXPECT_EQ(c.Find("usage")->Find("completion_tokens")->as_int(), 5);
  EXPECT_EQ(c.Find("usage")->Find("total_tokens")->as_int(), 8);

  json::Value k = ParseJson(openai::CompletionChunkJson(m, "abc", ""));
  EXPECT_TRUE(k.Find("choices")->items()[0].Find("finish_reason")->is_null());
  EXPECT_EQ(k.Find("usage"), nullptr);
  m.include_usage = true;
  k = ParseJson(openai::CompletionChunkJson(m, "abc", "stop"));
  EXPECT_EQ(k.Find("choices")->items()[0].Find("finish_reason")->as_string(), "stop");
  ASSERT_NE(k.Find("usage"), nullptr);
  EXPECT_TRUE(k.Find("usage")->is_null());
  json::Value u = ParseJson(openai::UsageChunkJson(m, 2, 4));
  EXPECT_TRUE(u.Find("choices")->items().empty());
  EXPECT_EQ(u.Find("usage")->Find("total_tokens")->as_int(), 6);

  json::Value list = ParseJson(openai::ModelListJson("gpt2", 5));
  EXPECT_EQ(list.Find("object")->as_string(), "list");
  ASSERT_EQ(list.Find("data")->items().size(), 1u);
  const json::Value& model = list.Find("data")->items()[0];
  EXPECT_EQ(model.Find("id")->as_string(), "gpt2");
  EXPECT_EQ(model.Find("object")->as_string(), "model");
  EXPECT_EQ(model.Find("created")->as_int(), 5);
  EXPECT_EQ(model.Find("owned_by")->as_string(), "tokenwire");
}

// ---- against a server (mock backend: "mock-gpt2") ---------------------------------

constexpr const char* kModel = "mock-gpt2";

// One streamed completion, read with our SSE parser and checked chunk by
// chunk against the grammar of docs/openai.md.
struct StreamedCompletion {
  int status = 0;
  std::string stream_id;
  std::string text;
  std::string finish_reason;       // of the last content chunk
  json::Value usage;               // of the usage chunk (null if none)
  json::Value error;               // the error object, if the stream carried one
  size_t content_chunks = 0;
  bool done_last = false;          // [DONE] was the last event
  bool ended = false;
};

void CheckChunkHeader(const json::Value& c, const std::string& id, int64_t created) {
  ASSERT_TRUE(c.is_object());
  EXPECT_EQ(c.Find("id")->as_string(), id);
  EXPECT_EQ(c.Find("object")->as_string(), "text_completion");
  EXPECT_EQ(c.Find("created")->as_int(), created);
  EXPECT_EQ(c.Find("model")->as_string(), kModel);
}

StreamedCompletion ReadStream(const std::vector<sse::Event>& events, bool include_usage) {
  StreamedCompletion out;
  std::string id;
  int64_t created = 0;
  bool saw_finish = false;
  for (size_t i = 0; i < events.size(); i++) {
    const sse::Event& e = events[i];
    EXPECT_EQ(e.type, "message") << "OpenAI streams have no event: lines";
    if (e.data == "[DONE]") {
      out.done_last = (i + 1 == events.size());
      continue;
    }
    json::Value c = ParseJson(e.data);
    if (!c.is_object() || (c.Find("error") == nullptr &&
                           (!c.Find("id") || !c.Find("created") || !c.Find("object")))) {
      ADD_FAILURE() << "not a chunk object: " << e.data;
      continue;
    }
    if (const json::Value* err = c.Find("error")) {
      out.error = *err;
      continue;
    }
    if (id.empty()) {
      id = c.Find("id")->as_string();
      created = c.Find("created")->as_int();
      EXPECT_EQ(id.rfind("cmpl-", 0), 0u) << id;
      EXPECT_LE(std::abs(created - NowUnix()), 60);
    }
    CheckChunkHeader(c, id, created);
    const json::Value* choices = c.Find("choices");
    if (!choices || !choices->is_array()) {
      ADD_FAILURE() << "no choices array: " << e.data;
      continue;
    }
    if (choices->items().empty()) {
      // The usage chunk: after the last content chunk, only when asked.
      EXPECT_TRUE(include_usage) << e.data;
      EXPECT_TRUE(saw_finish) << "usage chunk before the finish reason";
      out.usage = *c.Find("usage");
      continue;
    }
    EXPECT_FALSE(saw_finish) << "a content chunk after the one with the finish reason: " << e.data;
    EXPECT_TRUE(out.usage.is_null());
    if (choices->items().size() != 1u) {
      ADD_FAILURE() << "choices must hold one choice: " << e.data;
      continue;
    }
    const json::Value& ch = choices->items()[0];
    EXPECT_EQ(ch.Find("index")->as_int(), 0);
    EXPECT_TRUE(ch.Find("logprobs")->is_null());
    out.text += ch.Find("text")->as_string();
    out.content_chunks++;
    const json::Value* fr = ch.Find("finish_reason");
    if (!fr->is_null()) {
      saw_finish = true;
      out.finish_reason = fr->as_string();
    }
    if (include_usage) {
      EXPECT_TRUE(c.Find("usage") && c.Find("usage")->is_null()) << e.data;
    } else {
      EXPECT_EQ(c.Find("usage"), nullptr) << e.data;
    }
  }
  out.stream_id = id.empty() ? "" : id.substr(5);
  return out;
}

StreamedCompletion PostStream(AppServer& srv, const std::string& body, bool include_usage,
                              client::SseOptions o = {}) {
  client::SseClient c(o);
  StreamedCompletion out;
  EXPECT_OK(c.Connect(srv.port()));
  EXPECT_OK(c.Post("/v1/completions", body));
  out.status = c.result().head.status;
  if (!c.is_event_stream()) return out;
  EXPECT_OK(c.ReadEvents());
  StreamedCompletion r = ReadStream(c.result().events, include_usage);
  r.status = out.status;
  r.ended = c.result().ended;
  EXPECT_EQ(r.stream_id, HeaderOf(c.result().head, "X-Stream-Id"));
  return r;
}

json::Value PostJson(AppServer& srv, const std::string& body, int* status,
                     client::ResponseHead* head = nullptr) {
  client::Response r = srv.Call("POST", "/v1/completions", body);
  *status = r.head.status;
  if (head) *head = r.head;
  EXPECT_NE(HeaderOf(r.head, "Content-Type").find("application/json"), std::string::npos);
  return ParseJson(r.body);
}

void ExpectOpenAiError(const json::Value& v, const std::string& type, const std::string& param,
                       const std::string& code) {
  const json::Value* e = v.Find("error");
  ASSERT_TRUE(e && e->is_object()) << json::Serialize(v);
  EXPECT_EQ(e->members().size(), 4u) << json::Serialize(v);
  EXPECT_TRUE(e->Find("message")->is_string());
  EXPECT_EQ(e->Find("type")->as_string(), type);
  if (param.empty()) {
    EXPECT_TRUE(e->Find("param")->is_null()) << json::Serialize(v);
  } else {
    EXPECT_EQ(e->Find("param")->as_string(), param);
  }
  if (code.empty()) {
    EXPECT_TRUE(e->Find("code")->is_null()) << json::Serialize(v);
  } else {
    EXPECT_EQ(e->Find("code")->as_string(), code);
  }
}

std::vector<sse::Event> ParseSse(const std::string& bytes) {
  std::vector<sse::Event> events;
  sse::Parser parser([&](const sse::Event& e) { events.push_back(e); });
  EXPECT_OK(parser.Feed(bytes));
  return events;
}

// The stream format on its own (the server tests below see it through an
// SseSubscription): what each of our events becomes, read back with our SSE
// parser and checked with the chunk grammar.
TEST(CompletionsShapes, StreamFormatWritesOpenAisChunks) {
  using Bytes = sse::SseFormat::Bytes;
  openai::CompletionMeta m{"cmpl-s_9", NowUnix(), kModel, true};
  openai::OpenAiSseFormat f(m, "s_9");
  std::string out;
  f.AppendPreamble(&out);
  EXPECT_EQ(out, "");
  EXPECT_EQ(f.AppendEvent(stream::Event::Start(3), &out), Bytes::kNone);
  EXPECT_EQ(out, "");
  EXPECT_EQ(f.AppendEvent(stream::Event::Token(0, 15496, "Hello"), &out), Bytes::kEvent);
  // Text held back (part of a character or a possible stop string): nothing.
  std::string held;
  EXPECT_EQ(f.AppendEvent(stream::Event::Token(1, 171, ""), &held), Bytes::kNone);
  EXPECT_EQ(held, "");
  EXPECT_EQ(f.AppendEvent(stream::Event::Token(2, 995, " world"), &out), Bytes::kEvent);
  EXPECT_EQ(f.AppendEvent(stream::Event::Done(stream::FinishReason::kEos, 3, 3), &out), Bytes::kLast);
  StreamedCompletion s = ReadStream(ParseSse(out), true);
  EXPECT_EQ(s.text, "Hello world");
  EXPECT_EQ(s.finish_reason, "stop");
  EXPECT_EQ(s.content_chunks, 3u);  // two tokens and the finish reason
  ASSERT_TRUE(s.usage.is_object());
  EXPECT_EQ(s.usage.Find("total_tokens")->as_int(), 6);
  EXPECT_TRUE(s.done_last);
  EXPECT_TRUE(s.error.is_null());

  // Endings without a finish reason: an error chunk, then [DONE].
  struct Case {
    stream::Event event;
    const char* code;
    const char* error_type;
  };
  const Case cases[] = {
      {stream::Event::Error(ApiError::Make(ErrorCode::kInternal, "boom")), "internal", "server_error"},
      {stream::Event::Done(stream::FinishReason::kCancelled, 3, 1), "cancelled", "server_error"},
  };
  for (const Case& c : cases) {
    out.clear();
    EXPECT_EQ(f.AppendEvent(c.event, &out), Bytes::kLast) << c.code;
    s = ReadStream(ParseSse(out), true);
    EXPECT_TRUE(s.done_last) << c.code;
    ASSERT_TRUE(s.error.is_object()) << c.code;
    EXPECT_EQ(s.error.Find("code")->as_string(), c.code);
    EXPECT_EQ(s.error.Find("type")->as_string(), c.error_type);
  }

  // A subscriber-level ending: the slow client is told where to resume.
  out.clear();
  f.AppendEnding(stream::SubscriberEnd(ErrorCode::kSlowClient, "too slow", 7), &out);
  s = ReadStream(ParseSse(out), true);
  EXPECT_TRUE(s.done_last);
  ASSERT_TRUE(s.error.is_object());
  EXPECT_EQ(s.error.Find("code")->as_string(), "slow_client");
  EXPECT_NE(s.error.Find("message")->as_string().find("GET /v1/streams/s_9/events?after=7"),
            std::string::npos)
      << s.error.Find("message")->as_string();
}

// SseOptions that stop reading after the first `n` events (ReadRest reads on).
client::SseOptions StopAfterEvents(int n) {
  client::SseOptions o;
  auto count = std::make_shared<int>(0);
  o.stop_after = [count, n](const sse::Event&) { return ++*count == n; };
  return o;
}

// Posts a streamed completion of `max_tokens` tokens through `c` (made with
// StopAfterEvents) and reads its first events.
void PostStreamAndReadFirst(AppServer& srv, client::SseClient& c, int max_tokens) {
  ASSERT_OK(c.Connect(srv.port()));
  ASSERT_OK(c.Post("/v1/completions", R"({"model":"mock-gpt2","prompt":"x","stream":true,"max_tokens":)" +
                                          std::to_string(max_tokens) + "}"));
  ASSERT_TRUE(c.is_event_stream());
  ASSERT_OK(c.ReadEvents());
}

// Reads a stream that stopped early on to the end of the response.
void ReadRest(client::SseClient& c) {
  c.mutable_result().stopped = false;
  ASSERT_OK(c.ReadEvents([](const sse::Event&) { return true; }));
  EXPECT_TRUE(c.result().ended);
}

TEST(Completions, ModelsListsTheServedModel) {
  AppServer srv;
  int status = 0;
  json::Value v = srv.CallJson("GET", "/v1/models", "", &status);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(v.Find("object")->as_string(), "list");
  ASSERT_EQ(v.Find("data")->items().size(), 1u);
  const json::Value& m = v.Find("data")->items()[0];
  EXPECT_EQ(m.Find("id")->as_string(), kModel);
  EXPECT_EQ(m.Find("object")->as_string(), "model");
  EXPECT_EQ(m.Find("owned_by")->as_string(), "tokenwire");
  EXPECT_LE(std::abs(m.Find("created")->as_int() - NowUnix()), 60);
  json::Value one = srv.CallJson("GET", std::string("/v1/models/") + kModel, "", &status);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(json::Serialize(one), json::Serialize(m));
  json::Value none = srv.CallJson("GET", "/v1/models/gpt-4", "", &status);
  EXPECT_EQ(status, 404);
  ExpectOpenAiError(none, "invalid_request_error", "model", "model_not_found");
}

TEST(Completions, NonStreamedAnswerMatchesOurGenerate) {
  AppServer srv;
  int status = 0;
  json::Value c = PostJson(srv, R"({"model":"mock-gpt2","prompt":"Hello world","max_tokens":12,"seed":5})",
                           &status);
  ASSERT_EQ(status, 200) << json::Serialize(c);
  EXPECT_EQ(c.Find("id")->as_string().rfind("cmpl-s_", 0), 0u);
  EXPECT_EQ(c.Find("object")->as_string(), "text_completion");
  EXPECT_EQ(c.Find("model")->as_string(), kModel);
  EXPECT_LE(std::abs(c.Find("created")->as_int() - NowUnix()), 60);
  ASSERT_EQ(c.Find("choices")->items().size(), 1u);
  const json::Value& ch = c.Find("choices")->items()[0];
  EXPECT_EQ(ch.Find("index")->as_int(), 0);
  EXPECT_TRUE(ch.Find("logprobs")->is_null());
  EXPECT_EQ(ch.Find("finish_reason")->as_string(), "length");
  const json::Value* u = c.Find("usage");
  EXPECT_EQ(u->Find("prompt_tokens")->as_int(), 2);  // "Hello" " world"
  EXPECT_EQ(u->Find("completion_tokens")->as_int(), 12);
  EXPECT_EQ(u->Find("total_tokens")->as_int(), 14);
  // The same generation through our own endpoint, an independent path.
  json::Value g = srv.CallJson("POST", "/v1/generate",
                               R"({"prompt":"Hello world","max_new_tokens":12,"seed":5})", &status);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(ch.Find("text")->as_string(), g.Find("text")->as_string());
  EXPECT_FALSE(g.Find("text")->as_string().empty());
  // And the mock's emission log for this very stream.
  std::string id = c.Find("id")->as_string().substr(5);
  json::Value log = srv.Emissions(id);
  EXPECT_EQ(log.Find("tokens")->items().size(), 12u);
  EXPECT_EQ(log.Find("finish_reason")->as_string(), "length");
  srv.WaitIdle();
}

TEST(Completions, StreamedChunksFollowTheGrammarAndEqualTheNonStreamedText) {
  AppServer srv;
  const std::string common = R"("model":"mock-gpt2","prompt":"The capital of France is","max_tokens":25,"seed":3)";
  int status = 0;
  json::Value whole = PostJson(srv, "{" + common + "}", &status);
  ASSERT_EQ(status, 200);
  const std::string want = whole.Find("choices")->items()[0].Find("text")->as_string();

  StreamedCompletion s = PostStream(
      srv, "{" + common + R"(,"stream":true,"stream_options":{"include_usage":true}})", true);
  ASSERT_EQ(s.status, 200);
  EXPECT_TRUE(s.ended);
  EXPECT_TRUE(s.done_last);
  EXPECT_TRUE(s.error.is_null());
  EXPECT_EQ(s.text, want);
  EXPECT_EQ(s.finish_reason, "length");
  EXPECT_GT(s.content_chunks, 2u);
  ASSERT_TRUE(s.usage.is_object());
  EXPECT_EQ(json::Serialize(s.usage), json::Serialize(*whole.Find("usage")));

  // Without include_usage: no usage chunk, no usage member.
  StreamedCompletion plain = PostStream(srv, "{" + common + R"(,"stream":true})", false);
  ASSERT_EQ(plain.status, 200);
  EXPECT_TRUE(plain.done_last);
  EXPECT_EQ(plain.text, want);
  EXPECT_EQ(plain.finish_reason, "length");
  EXPECT_TRUE(plain.usage.is_null());
  srv.WaitIdle();
}

TEST(Completions, StreamHeadersAndHeartbeats) {
  AppServer srv({"--heartbeat-ms", "30", "--mock-ttft-ms", "300"});
  client::SseClient c;
  ASSERT_OK(c.Connect(srv.port()));
  ASSERT_OK(c.Post("/v1/completions", R"({"model":"mock-gpt2","prompt":"x","max_tokens":2,"stream":true})"));
  ASSERT_TRUE(c.is_event_stream());
  EXPECT_EQ(HeaderOf(c.result().head, "Cache-Control"), "no-cache");
  ASSERT_OK(c.ReadEvents());
  EXPECT_GE(c.result().comments.size(), 3u);  // 300 ms of silence before the first token
  for (const auto& cm : c.result().comments) EXPECT_EQ(cm, "ping");
  StreamedCompletion s = ReadStream(c.result().events, false);
  EXPECT_TRUE(s.done_last);
  EXPECT_EQ(s.finish_reason, "length");
  srv.WaitIdle();
}

// Picks a stop string from the middle of an unconstrained completion (ASCII,
// so it cannot split a character) and expects the text up to its first
// occurrence, finish_reason "stop", streamed and not.
TEST(Completions, StopStrings) {
  AppServer srv;
  const std::string common = R"("model":"mock-gpt2","prompt":"Once upon a time","max_tokens":40,"seed":11)";
  int status = 0;
  json::Value free_run = PostJson(srv, "{" + common + "}", &status);
  ASSERT_EQ(status, 200);
  const std::string full = free_run.Find("choices")->items()[0].Find("text")->as_string();
  std::string stop;
  for (size_t i = full.size() / 2; i + 3 <= full.size() && stop.empty(); i++) {
    bool ascii = true;
    for (size_t k = 0; k < 3; k++) ascii &= static_cast<unsigned char>(full[i + k]) < 0x80;
    if (ascii) stop = full.substr(i, 3);
  }
  ASSERT_FALSE(stop.empty()) << full;
  const std::string want = full.substr(0, full.find(stop));
  std::string stop_json;
  json::AppendQuoted(&stop_json, stop);

  json::Value c = PostJson(srv, "{" + common + R"(,"stop":[")" + "zzzzzzz" + R"(",)" + stop_json + "]}",
                           &status);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(c.Find("choices")->items()[0].Find("text")->as_string(), want);
  EXPECT_EQ(c.Find("choices")->items()[0].Find("finish_reason")->as_string(), "stop");
  EXPECT_LT(c.Find("usage")->Find("completion_tokens")->as_int(), 40);

  StreamedCompletion s = PostStream(srv, "{" + common + R"(,"stream":true,"stop":)" + stop_json + "}", false);
  EXPECT_EQ(s.text, want);
  EXPECT_EQ(s.finish_reason, "stop");
  EXPECT_TRUE(s.done_last);
  srv.WaitIdle();
}

TEST(Completions, ErrorsBeforeTheFirstByte) {
  AppServer srv({"--max-streams", "1", "--mock-tokens-per-s", "20", "--api-key", "k3y"});
  const std::vector<std::pair<std::string, std::string>> auth = {{"Authorization", "Bearer k3y"}};
  auto post = [&](const std::string& body, int* status, client::ResponseHead* head = nullptr) {
    client::Response r = srv.Call("POST", "/v1/completions", body, auth);
    *status = r.head.status;
    if (head) *head = r.head;
    return ParseJson(r.body);
  };
  // The API key guards these routes like every /v1 route.
  EXPECT_EQ(srv.Call("POST", "/v1/completions", R"({"model":"mock-gpt2","prompt":"x"})").head.status, 401);
  EXPECT_EQ(srv.Call("GET", "/v1/models").head.status, 401);
  EXPECT_EQ(srv.Call("GET", "/v1/models", "", auth).head.status, 200);

  int status = 0;
  ExpectOpenAiError(post(R"({"model":"mock-gpt2","prompt":"x",})", &status), "invalid_request_error", "",
                    "invalid_json");
  EXPECT_EQ(status, 400);
  ExpectOpenAiError(post(R"({"model":"gpt2","prompt":"x"})", &status), "invalid_request_error", "model",
                    "model_not_found");
  EXPECT_EQ(status, 404);
  ExpectOpenAiError(post(R"({"model":"mock-gpt2","prompt":"x","n":17,"stream":true})", &status),
                    "invalid_request_error", "n", "");
  EXPECT_EQ(status, 400);
  ExpectOpenAiError(post(R"({"model":"mock-gpt2","prompt":"x","max_tokens":20001})", &status),
                    "invalid_request_error", "max_tokens", "");
  EXPECT_EQ(status, 400);

  // The stream bound (--max-streams 1): a second completion is refused with
  // 503 and Retry-After, before any byte of a stream.
  client::Response first = srv.Call("POST", "/v1/streams", R"({"prompt":"x","max_new_tokens":500})", auth);
  ASSERT_EQ(first.head.status, 201);
  client::ResponseHead head;
  ExpectOpenAiError(post(R"({"model":"mock-gpt2","prompt":"x","stream":true})", &status, &head),
                    "server_error", "", "overloaded");
  EXPECT_EQ(status, 503);
  EXPECT_EQ(HeaderOf(head, "Retry-After"), "1");
  std::string id = ParseJson(first.body).Find("stream")->as_string();
  EXPECT_EQ(srv.Call("DELETE", "/v1/streams/" + id, "", auth).head.status, 204);
}

// After the 200 a failure is a data: {"error":…} line, then [DONE]: here a
// DELETE of the stream (its id is the completion id after "cmpl-").
TEST(Completions, ErrorAfterTheFirstByteIsAnErrorChunkThenDone) {
  AppServer srv({"--mock-tokens-per-s", "200"});
  client::SseClient c(StopAfterEvents(2));
  ASSERT_NO_FATAL_FAILURE(PostStreamAndReadFirst(srv, c, 1000));
  std::string id = HeaderOf(c.result().head, "X-Stream-Id");
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(srv.Call("DELETE", "/v1/streams/" + id).head.status, 204);
  ASSERT_NO_FATAL_FAILURE(ReadRest(c));
  StreamedCompletion s = ReadStream(c.result().events, false);
  EXPECT_TRUE(s.done_last);
  EXPECT_TRUE(s.finish_reason.empty());
  ASSERT_TRUE(s.error.is_object());
  EXPECT_EQ(s.error.Find("code")->as_string(), "cancelled");
  EXPECT_EQ(s.error.Find("type")->as_string(), "server_error");
  ASSERT_GE(c.result().events.size(), 2u);
  EXPECT_NE(c.result().events[c.result().events.size() - 2].data.find("\"error\""), std::string::npos);
  srv.WaitIdle();
}

TEST(Completions, ShutdownMidStreamIsAnErrorChunkThenDone) {
  AppServer srv({"--mock-tokens-per-s", "50", "--drain-ms", "2000"});
  client::SseClient c(StopAfterEvents(2));
  ASSERT_NO_FATAL_FAILURE(PostStreamAndReadFirst(srv, c, 1000));
  std::thread stopper([&] { EXPECT_LT(srv.StopAndTimeMs(), 2000); });
  ReadRest(c);  // no ASSERT_NO_FATAL_FAILURE: the stopper must be joined first
  c.http().Close();
  stopper.join();
  ASSERT_FALSE(HasFatalFailure());
  StreamedCompletion s = ReadStream(c.result().events, false);
  EXPECT_TRUE(s.done_last);
  ASSERT_TRUE(s.error.is_object());
  EXPECT_EQ(s.error.Find("code")->as_string(), "shutting_down");
}

// A client that leaves mid-stream: the stream is cancelled after --linger-ms
// (100 in the fixture) and the registry goes back to zero.
TEST(Completions, ClientDisconnectCancelsTheStream) {
  AppServer srv({"--mock-tokens-per-s", "400"});
  client::SseClient c(StopAfterEvents(3));
  ASSERT_NO_FATAL_FAILURE(PostStreamAndReadFirst(srv, c, 5000));
  std::string id = HeaderOf(c.result().head, "X-Stream-Id");
  c.http().CloseWithReset();
  ASSERT_TRUE(srv.WaitIdle(8000));  // 5000 tokens at 400/s would take 12.5 s
  json::Value log = srv.Emissions(id);
  EXPECT_TRUE(log.Find("exited")->as_bool());
  EXPECT_EQ(log.Find("finish_reason")->as_string(), "cancelled");
  EXPECT_LT(log.Find("tokens")->items().size(), 5000u);
}

// A non-streamed request: nobody can resume a stream whose id was never
// sent, so the client's close cancels the generation at once (a linger of a
// minute here: it is not what ends it).
TEST(Completions, ClientDisconnectCancelsANonStreamedCompletion) {
  AppServer srv({"--mock-tokens-per-s", "400", "--linger-ms", "60000"});
  ASSERT_NO_FATAL_FAILURE(
      srv.PostAndLeave("/v1/completions", R"({"model":"mock-gpt2","prompt":"x","max_tokens":5000})"));
  ASSERT_TRUE(srv.WaitIdle(8000));  // 5000 tokens at 400/s would take 12.5 s
  client::Response m = srv.Call("GET", "/metrics");
  EXPECT_NE(m.body.find("tokenwire_client_gone_cancels_total 1\n"), std::string::npos);
  EXPECT_NE(m.body.find("tokenwire_linger_cancels_total 0\n"), std::string::npos);
  EXPECT_NE(m.body.find("tokenwire_streams_finished_total{outcome=\"cancelled\"} 1\n"), std::string::npos);
}

}  // namespace
}  // namespace tw
