// `tokenwire generate` runs through the engine and the runner factory, like
// the server: the same prompt, seed and sampling flags give the same tokens,
// text and finish reason as POST /v1/generate to `serve --backend cpu` on the
// same model (the random tiny weights both load without --model).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/generate_cli.h"
#include "app_fixture.h"

namespace tw {
namespace {

using testing::AppServer;

struct Case {
  const char* prompt;
  int max_new_tokens;
  double temperature;
  int top_k;
  double top_p;
  uint64_t seed;
  std::vector<std::string> stop;
};

std::string RequestBody(const Case& c) {
  std::string body = "{\"prompt\":" + json::Serialize(json::Value::String(c.prompt)) +
                     ",\"max_new_tokens\":" + std::to_string(c.max_new_tokens) +
                     ",\"temperature\":" + std::to_string(c.temperature) + ",\"top_k\":" + std::to_string(c.top_k) +
                     ",\"top_p\":" + std::to_string(c.top_p) + ",\"seed\":" + std::to_string(c.seed);
  if (!c.stop.empty()) {
    body += ",\"stop\":[";
    for (size_t i = 0; i < c.stop.size(); i++) body += (i ? "," : "") + json::Serialize(json::Value::String(c.stop[i]));
    body += "]";
  }
  return body + "}";
}

TEST(Generate, TheSameSeedGivesTheServersTokens) {
  AppServer srv({"--backend", "cpu", "--threads", "1"});
  const std::vector<Case> cases = {
      {"Hello there", 24, 0.0, 0, 1.0, 0, {}},          // greedy
      {"Hello there", 24, 0.9, 40, 1.0, 5, {}},         // top-k
      {"The capital of", 24, 1.0, 0, 0.9, 11, {}},      // top-p
      {"The capital of", 30, 1.3, 0, 1.0, 123456789, {}},  // plain sampling, a large seed
      {"Hello there", 24, 0.0, 0, 1.0, 0, {"e"}},       // a stop string (likely in noise text)
  };
  int sampled_differ = 0;
  std::vector<int64_t> first_sampled;
  for (const Case& c : cases) {
    SCOPED_TRACE(RequestBody(c));
    app::GenerateFlags f;
    f.model_dir = "random-tiny";  // the server's (AppServer: WithRandomTinyModel)
    f.prompt = c.prompt;
    f.has_prompt = true;
    f.max_new_tokens = c.max_new_tokens;
    f.temperature = c.temperature;
    f.top_k = c.top_k;
    f.top_p = c.top_p;
    f.seed = c.seed;
    f.threads = 1;
    f.stop = c.stop;
    std::string text;
    app::GenerateOutcome o;
    ASSERT_OK(app::Generate(f, [&](std::string_view t) { text += t; }, &o));

    int status = 0;
    json::Value g = srv.CallJson("POST", "/v1/generate", RequestBody(c), &status);
    ASSERT_EQ(status, 200) << json::Serialize(g);
    std::vector<int64_t> server_tokens;
    for (const auto& t : g.Find("tokens")->items()) server_tokens.push_back(t.as_int());
    std::vector<int64_t> generate_tokens(o.tokens.begin(), o.tokens.end());
    ASSERT_FALSE(generate_tokens.empty());
    EXPECT_EQ(generate_tokens, server_tokens);
    EXPECT_EQ(text, g.Find("text")->as_string());
    EXPECT_EQ(o.finish_reason, g.Find("finish_reason")->as_string());
    EXPECT_EQ(o.prompt_tokens, g.Find("usage")->Find("prompt_tokens")->as_int());
    if (c.temperature > 0) {
      if (first_sampled.empty()) first_sampled = generate_tokens;
      else sampled_differ += generate_tokens != first_sampled;
    }
    if (!c.stop.empty()) {
      EXPECT_EQ(o.finish_reason, "stop") << "the stop case did not stop: test too weak";
    }
  }
  // The sampled cases are not one text repeated (the seed matters).
  EXPECT_GE(sampled_differ, 1);
  srv.WaitIdle();
}

TEST(Generate, RefusalsNameTheirCause) {
  app::GenerateFlags f;
  f.prompt = "Hello";
  f.has_prompt = true;
  f.max_new_tokens = 100000;  // over the tiny model's context
  app::GenerateOutcome o;
  Status s = app::Generate(f, [](std::string_view) {}, &o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exceed the model context"), std::string::npos) << s.message();
  f.max_new_tokens = 4;
  f.model_dir = "/nonexistent-model-folder";
  s = app::Generate(f, [](std::string_view) {}, &o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--model"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tw
