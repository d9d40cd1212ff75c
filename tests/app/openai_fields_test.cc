// The OpenAI endpoints' field policy on the real binary (docs/openai.md,
// "Request fields"): a field the server does not know is accepted, logged
// once per request at warn level with its name and counted in
// tokenwire_openai_unknown_fields_total; --strict-request-fields refuses it
// (400 naming it, in OpenAI's envelope); a known field this server does not
// support is refused either way; a value out of range is answered with the
// field, the value and the range, not as an unknown argument.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/app_fixture.h"
#include "app/config.h"
#include "client/http_client.h"
#include "engine/runner.h"
#include "support/metrics_text.h"
#include "support/server_child.h"

namespace tw {
namespace {

using testing::FetchMetrics;
using testing::MetricValue;
using testing::ParseJson;
using testing::ServerChild;
using testing::WaitUntil;

client::Response Post(uint16_t port, const std::string& path, const std::string& body) {
  client::Request req;
  req.method = "POST";
  req.target = path;
  req.body = body;
  client::Response r;
  EXPECT_TRUE(client::Fetch(port, req, &r).ok());
  return r;
}

const char* kCompletion = R"({"model":"mock-gpt2","prompt":"x","max_tokens":2,"foo":1,"bar_baz":[true]})";
const char* kChat =
    R"({"model":"mock-gpt2","messages":[{"role":"user","content":"x"}],"max_tokens":2,"guided_decoding_backend":"x"})";
const char* kUnknownMetric = "tokenwire_openai_unknown_fields_total";

// The error object of an answer: message, type, param, code (all four, OpenAI's envelope).
void ExpectOpenAiError(const client::Response& r, const std::string& param, const std::string& message) {
  EXPECT_EQ(r.head.status, 400) << r.body;
  json::Value v = ParseJson(r.body);
  const json::Value* e = v.Find("error");
  ASSERT_NE(e, nullptr) << r.body;
  EXPECT_EQ(e->members().size(), 4u) << r.body;
  EXPECT_EQ(e->Find("message")->as_string(), message) << r.body;
  EXPECT_EQ(e->Find("type")->as_string(), "invalid_request_error") << r.body;
  EXPECT_EQ(e->Find("param")->as_string(), param) << r.body;
  EXPECT_TRUE(e->Find("code")->is_null()) << r.body;
}

TEST(OpenAiFields, UnknownFieldsAreAcceptedLoggedOncePerRequestAndCounted) {
  ServerChild server({"--backend", "mock", "--mock-ttft-ms", "0"});
  ASSERT_NE(server.port(), 0) << server.Log();
  EXPECT_EQ(MetricValue(FetchMetrics(server.port()), kUnknownMetric), 0);
  EXPECT_EQ(Post(server.port(), "/v1/completions", kCompletion).head.status, 200);
  EXPECT_EQ(Post(server.port(), "/v1/chat/completions", kChat).head.status, 200);
  const std::string completions_line = "warn openai_unknown_fields path=/v1/completions fields=foo,bar_baz action=ignored";
  const std::string chat_line =
      "warn openai_unknown_fields path=/v1/chat/completions fields=guided_decoding_backend action=ignored";
  EXPECT_TRUE(WaitUntil([&] {
    const std::string log = server.Log();
    return log.find(completions_line) != std::string::npos && log.find(chat_line) != std::string::npos;
  })) << server.Log();
  EXPECT_EQ(MetricValue(FetchMetrics(server.port()), kUnknownMetric), 3);
  // One line per request, whatever the number of fields.
  const std::string log = server.Log();
  EXPECT_EQ(log.find(completions_line), log.rfind(completions_line)) << log;
  // A request with only known fields says nothing and counts nothing.
  EXPECT_EQ(Post(server.port(), "/v1/completions", R"({"model":"mock-gpt2","prompt":"x","max_tokens":1,"top_k":5,
      "min_p":0.1,"repetition_penalty":1.2,"logit_bias":{"11":5},"stop_token_ids":[13],"ignore_eos":true,"user":"u"})")
                .head.status,
            200);
  EXPECT_EQ(MetricValue(FetchMetrics(server.port()), kUnknownMetric), 3);
}

TEST(OpenAiFields, StrictRequestFieldsRefusesUnknownFieldsNamingThem) {
  ServerChild server({"--backend", "mock", "--mock-ttft-ms", "0", "--strict-request-fields"});
  ASSERT_NE(server.port(), 0) << server.Log();
  ExpectOpenAiError(Post(server.port(), "/v1/completions", kCompletion), "foo",
                    "unrecognized request argument supplied: 'foo' (this server refuses fields it does not know: "
                    "--strict-request-fields)");
  ExpectOpenAiError(Post(server.port(), "/v1/chat/completions", kChat), "guided_decoding_backend",
                    "unrecognized request argument supplied: 'guided_decoding_backend' (this server refuses fields "
                    "it does not know: --strict-request-fields)");
  EXPECT_EQ(MetricValue(FetchMetrics(server.port()), kUnknownMetric), 0);
  EXPECT_EQ(server.Log().find("openai_unknown_fields"), std::string::npos) << server.Log();
  // Known fields still pass.
  EXPECT_EQ(Post(server.port(), "/v1/completions", R"({"model":"mock-gpt2","prompt":"x","max_tokens":1,"top_k":-1})")
                .head.status,
            200);
}

TEST(OpenAiFields, RangeAndUnsupportedRefusalsSayWhatWasWrong) {
  ServerChild server({"--backend", "mock", "--mock-ttft-ms", "0"});
  ASSERT_NE(server.port(), 0) << server.Log();
  ExpectOpenAiError(Post(server.port(), "/v1/completions", R"({"model":"mock-gpt2","prompt":"x","temperature":2.5})"),
                    "temperature", "temperature: 2.5 is out of range; expected a number in [0, 2]");
  ExpectOpenAiError(Post(server.port(), "/v1/chat/completions",
                         R"({"model":"mock-gpt2","messages":[{"role":"user","content":"x"}],"stream":"yes"})"),
                    "stream", "stream: expected a boolean, got the string \"yes\"");
  ExpectOpenAiError(Post(server.port(), "/v1/chat/completions",
                         R"({"model":"mock-gpt2","messages":[{"role":"user","content":"x"}],"tools":[{}]})"),
                    "tools",
                    "tools: tool and function calling is not supported: GPT-2 is a base model that was never "
                    "trained to call tools");
  ExpectOpenAiError(
      Post(server.port(), "/v1/completions", R"({"model":"mock-gpt2","prompt":"x","max_completion_tokens":3,"max_tokens":4})"),
      "max_tokens", "max_tokens (4) and max_completion_tokens (3) differ; give one of them, or both equal");
}

TEST(OpenAiFields, NamedIdFlagsStayUnderTheEnginesBound) {
  // --max-logit-bias and --max-stop-token-ids together stay under the
  // engine's kMaxNamedIds (with end-of-text): their largest values are taken,
  // one more is refused naming the flag.
  auto parse = [](std::vector<std::string> args) {
    args.insert(args.begin(), {"tokenwire", "serve"});
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    app::Config cfg;
    return app::ParseServeFlags(static_cast<int>(argv.size()), argv.data(), 2, &cfg);
  };
  EXPECT_TRUE(parse({"--max-logit-bias", "768", "--max-stop-token-ids", "255"}).ok());
  EXPECT_LE(768 + 255 + 1, engine::kMaxNamedIds);
  const Status a = parse({"--max-logit-bias", "769"});
  EXPECT_NE(a.message().find("--max-logit-bias"), std::string::npos) << a.message();
  const Status b = parse({"--max-stop-token-ids", "256"});
  EXPECT_NE(b.message().find("--max-stop-token-ids"), std::string::npos) << b.message();
}

}  // namespace
}  // namespace tw
