// The HTTP edges of the real binary (issue 32): CORS (--allowed-origins),
// request ids (X-Request-Id on every answer and in the log), vLLM's paths
// beside ours (/health, /version, /tokenize, /detokenize), and OpenAI's
// error envelope on every error of the OpenAI routes and unknown /v1/ paths.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "app/app_fixture.h"
#include "client/http_client.h"
#include "support/server_child.h"

namespace tw {
namespace {

using testing::ServerChild;
using Headers = std::vector<std::pair<std::string, std::string>>;

constexpr const char* kPage = "http://page.example:8000";
constexpr const char* kKey = "sekrit";
const std::string kAuth = std::string("Bearer ") + kKey;

std::vector<std::string> Flags(std::vector<std::string> more) {
  std::vector<std::string> f = {"--backend", "mock", "--mock-ttft-ms", "0", "--mock-tokens-per-s", "2000",
                                "--log-level", "info"};
  for (std::string& m : more) f.push_back(std::move(m));
  return f;
}

client::Response Call(const ServerChild& s, const std::string& method, const std::string& target,
                      const std::string& body = "", Headers headers = {}) {
  client::Request req;
  req.method = method;
  req.target = target;
  req.body = body;
  req.headers = std::move(headers);
  client::Response r;
  Status st = client::Fetch(s.port(), req, &r);
  EXPECT_TRUE(st.ok()) << method << " " << target << ": " << st.message();
  return r;
}

std::string H(const client::Response& r, std::string_view name) {
  const std::string* v = r.head.Find(name);
  return v ? *v : std::string("<absent>");
}

// A server id: 16 hex digits, '-', a hex counter.
bool LooksGenerated(const std::string& id) {
  if (id.size() < 18 || id[16] != '-') return false;
  for (size_t i = 0; i < id.size(); i++) {
    if (i == 16) continue;
    if (!std::isxdigit(static_cast<unsigned char>(id[i])) || std::isupper(static_cast<unsigned char>(id[i]))) {
      return false;
    }
  }
  return true;
}

// ---- CORS ----

TEST(Cors, APreflightFromAnAllowedOriginIs204WithTheCorsHeadersAndNeedsNoKey) {
  ServerChild s(Flags({"--allowed-origins", std::string("https://other.example, ") + kPage, "--api-key", kKey}));
  ASSERT_NE(s.port(), 0) << s.Log();
  client::Response r = Call(s, "OPTIONS", "/v1/completions", "",
                            {{"Origin", kPage},
                             {"Access-Control-Request-Method", "POST"},
                             {"Access-Control-Request-Headers", "authorization,content-type,x-stainless-os"}});
  EXPECT_EQ(r.head.status, 204);
  EXPECT_EQ(r.body, "");
  EXPECT_EQ(H(r, "Access-Control-Allow-Origin"), kPage);
  EXPECT_EQ(H(r, "Vary"), "Origin");
  EXPECT_EQ(H(r, "Access-Control-Allow-Methods"), "GET, POST, DELETE, OPTIONS");
  EXPECT_EQ(H(r, "Access-Control-Allow-Headers"), "authorization,content-type,x-stainless-os");
  EXPECT_EQ(H(r, "Access-Control-Max-Age"), "600");
  EXPECT_EQ(H(r, "Access-Control-Expose-Headers"), "X-Request-Id, X-Stream-Id, Retry-After");
  EXPECT_EQ(H(r, "Content-Length"), "<absent>");
}

TEST(Cors, A401AndAStreamedAnswerCarryAllowOrigin) {
  ServerChild s(Flags({"--allowed-origins", kPage, "--api-key", kKey}));
  ASSERT_NE(s.port(), 0) << s.Log();
  const std::string body = R"({"model":"mock-gpt2","prompt":"hi","max_tokens":3,"stream":true})";
  client::Response r = Call(s, "POST", "/v1/completions", body, {{"Origin", kPage}});
  EXPECT_EQ(r.head.status, 401);
  EXPECT_EQ(H(r, "Access-Control-Allow-Origin"), kPage);
  EXPECT_EQ(H(r, "Access-Control-Expose-Headers"), "X-Request-Id, X-Stream-Id, Retry-After");
  EXPECT_EQ(H(r, "Vary"), "Origin");

  r = Call(s, "POST", "/v1/completions", body, {{"Origin", kPage}, {"Authorization", kAuth}});
  EXPECT_EQ(r.head.status, 200);
  EXPECT_EQ(H(r, "Content-Type"), "text/event-stream; charset=utf-8");
  EXPECT_EQ(H(r, "Access-Control-Allow-Origin"), kPage);
  EXPECT_NE(r.body.find("data: [DONE]"), std::string::npos) << r.body;

  r = Call(s, "POST", "/v1/stream", R"({"prompt":"hi","max_new_tokens":2})", {{"Origin", kPage}, {"Authorization", kAuth}});
  EXPECT_EQ(r.head.status, 200);
  EXPECT_EQ(H(r, "Access-Control-Allow-Origin"), kPage);
  EXPECT_EQ(H(r, "Access-Control-Allow-Origin").size(), std::string(kPage).size());  // one, not two
}

TEST(Cors, AnOriginNotAllowedGetsNoAllowOriginAndItsPreflightIsNotAnswered) {
  ServerChild s(Flags({"--allowed-origins", kPage}));
  ASSERT_NE(s.port(), 0) << s.Log();
  client::Response r = Call(s, "GET", "/v1/models", "", {{"Origin", "http://evil.example"}});
  EXPECT_EQ(r.head.status, 200);
  EXPECT_EQ(H(r, "Access-Control-Allow-Origin"), "<absent>");
  EXPECT_EQ(H(r, "Vary"), "Origin");
  r = Call(s, "OPTIONS", "/v1/completions", "",
           {{"Origin", "http://evil.example"}, {"Access-Control-Request-Method", "POST"}});
  EXPECT_EQ(r.head.status, 405);
  EXPECT_EQ(H(r, "Allow"), "POST");
  EXPECT_EQ(H(r, "Access-Control-Allow-Origin"), "<absent>");
  EXPECT_EQ(H(r, "Access-Control-Allow-Methods"), "<absent>");
}

TEST(Cors, WithoutTheFlagAnswersCarryTheRequestIdButNoCorsHeader) {
  ServerChild s(Flags({}));
  ASSERT_NE(s.port(), 0) << s.Log();
  for (const char* path : {"/v1/models", "/v1/nope"}) {
    client::Response r = Call(s, "GET", path, "", {{"Origin", kPage}, {"X-Request-Id", "no-cors"}});
    EXPECT_EQ(H(r, "X-Request-Id"), "no-cors") << path;
    EXPECT_EQ(H(r, "Access-Control-Allow-Origin"), "<absent>") << path;
    EXPECT_EQ(H(r, "Vary"), "<absent>") << path;
    EXPECT_EQ(H(r, "Access-Control-Expose-Headers"), "<absent>") << path;
  }
  client::Response r = Call(s, "OPTIONS", "/v1/completions", "",
                            {{"Origin", kPage}, {"Access-Control-Request-Method", "POST"}});
  EXPECT_EQ(r.head.status, 405);
  EXPECT_EQ(H(r, "Access-Control-Allow-Origin"), "<absent>");
}

TEST(Cors, AStarAllowsEveryOriginAndEchoesIt) {
  ServerChild s(Flags({"--allowed-origins", "*"}));
  ASSERT_NE(s.port(), 0) << s.Log();
  client::Response r = Call(s, "GET", "/v1/nope", "", {{"Origin", "http://anyone.example"}});
  EXPECT_EQ(r.head.status, 404);
  EXPECT_EQ(H(r, "Access-Control-Allow-Origin"), "http://anyone.example");
}

TEST(Cors, ABadOriginIsRefusedNamingTheFlag) {
  auto parse = [](std::vector<std::string> args) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    app::Config c;
    return app::ParseServeFlags(static_cast<int>(argv.size()), argv.data(), 0, &c);
  };
  EXPECT_EQ(parse({"--allowed-origins", "https://page.example/"}).message(),
            "--allowed-origins: 'https://page.example/' has a path; an origin is scheme://host[:port] with no '/' "
            "after it");
  EXPECT_TRUE(parse({"--allowed-origins", "https://a.example,http://b.example:81"}).ok());
  EXPECT_TRUE(parse({"--cors-origin", "https://a.example"}).ok());
  EXPECT_FALSE(parse({"--cors-origin", "null"}).ok());
}

// ---- request ids ----

TEST(RequestId, AValidClientIdIsEchoedAndLoggedInTheAccessAndStreamRecords) {
  ServerChild s(Flags({}));
  ASSERT_NE(s.port(), 0) << s.Log();
  client::Response r = Call(s, "POST", "/v1/stream", R"({"prompt":"hi","max_new_tokens":2})",
                            {{"X-Request-Id", "client-id_42:x"}});
  EXPECT_EQ(r.head.status, 200);
  EXPECT_EQ(H(r, "X-Request-Id"), "client-id_42:x");
  EXPECT_TRUE(testing::WaitUntil([&] {
    const std::string log = s.Log();
    return log.find("access method=POST path=/v1/stream status=200") != std::string::npos &&
           log.find("request_id=client-id_42:x") != std::string::npos &&
           log.find(" stream stream=") != std::string::npos;
  })) << s.Log();
  // Both records name the id: the access record and the stream's outcome.
  const std::string log = s.Log();
  size_t access = log.find("access method=POST path=/v1/stream");
  ASSERT_NE(access, std::string::npos);
  EXPECT_NE(log.substr(access, log.find('\n', access) - access).find(" request_id=client-id_42:x"),
            std::string::npos)
      << log;
  size_t stream = log.find(" stream stream=");
  ASSERT_NE(stream, std::string::npos);
  EXPECT_NE(log.substr(stream, log.find('\n', stream) - stream).find(" request_id=client-id_42:x"),
            std::string::npos)
      << log;
}

TEST(RequestId, AnInvalidOrAbsentIdIsReplacedByAUniqueServerId) {
  ServerChild s(Flags({}));
  ASSERT_NE(s.port(), 0) << s.Log();
  std::set<std::string> seen;
  const std::vector<Headers> cases = {
      {},                                                // absent
      {{"X-Request-Id", "has space"}},                   // a space
      {{"X-Request-Id", std::string(129, 'a')}},         // one byte too long
      {{"X-Request-Id", "caf\xc3\xa9"}},                 // not ASCII
      {},
  };
  for (const Headers& h : cases) {
    client::Response r = Call(s, "GET", "/healthz", "", h);
    EXPECT_EQ(r.head.status, 200);
    const std::string id = H(r, "X-Request-Id");
    EXPECT_TRUE(LooksGenerated(id)) << id;
    EXPECT_TRUE(seen.insert(id).second) << "repeated: " << id;
  }
  client::Response r = Call(s, "GET", "/healthz", "", {{"X-Request-Id", std::string(128, 'b')}});
  EXPECT_EQ(H(r, "X-Request-Id"), std::string(128, 'b'));
  // Errors carry it too.
  r = Call(s, "GET", "/nope", "", {{"X-Request-Id", "on-a-404"}});
  EXPECT_EQ(r.head.status, 404);
  EXPECT_EQ(H(r, "X-Request-Id"), "on-a-404");
}

// ---- vLLM's paths ----

TEST(VllmPaths, HealthAndVersionAreOpen) {
  ServerChild s(Flags({"--api-key", kKey}));
  ASSERT_NE(s.port(), 0) << s.Log();
  client::Response r = Call(s, "GET", "/health");
  EXPECT_EQ(r.head.status, 200);
  EXPECT_EQ(r.body, "");
  r = Call(s, "GET", "/version");
  EXPECT_EQ(r.head.status, 200);
  EXPECT_EQ(H(r, "Content-Type"), "application/json");
  json::Value v = testing::ParseJson(r.body);
  ASSERT_TRUE(v.is_object()) << r.body;
  for (const char* key : {"version", "commit", "model", "backend"}) ASSERT_NE(v.Find(key), nullptr) << key << " in " << r.body;
  EXPECT_EQ(v.Find("version")->as_string(), "0.1.0");
  EXPECT_FALSE(v.Find("commit")->as_string().empty());
  EXPECT_EQ(v.Find("model")->as_string(), "mock-gpt2");
  EXPECT_EQ(v.Find("backend")->as_string(), "mock");
}

TEST(VllmPaths, TokenizeAndDetokenizeRoundTripBehindTheKey) {
  ServerChild s(Flags({"--api-key", kKey}));
  ASSERT_NE(s.port(), 0) << s.Log();
  const Headers auth = {{"Authorization", kAuth}};
  client::Response r = Call(s, "POST", "/tokenize", R"({"prompt":"Hello world"})");
  EXPECT_EQ(r.head.status, 401);
  r = Call(s, "POST", "/tokenize", R"({"model":"mock-gpt2","prompt":"Hello world","add_special_tokens":true})", auth);
  EXPECT_EQ(r.head.status, 200);
  // The mock backend's context is 2^30 tokens.
  EXPECT_EQ(r.body, R"({"count":2,"max_model_len":1073741824,"tokens":[15496,995]})");
  r = Call(s, "POST", "/detokenize", R"({"tokens":[15496,995]})", auth);
  EXPECT_EQ(r.head.status, 200);
  EXPECT_EQ(r.body, R"({"prompt":"Hello world"})");
  // "<|endoftext|>" is the special token, as in a completions prompt.
  r = Call(s, "POST", "/tokenize", R"({"prompt":"<|endoftext|>"})", auth);
  EXPECT_EQ(r.body, R"({"count":1,"max_model_len":1073741824,"tokens":[50256]})");
}

TEST(VllmPaths, TokenizeRendersChatMessagesThroughTheChatTemplate) {
  ServerChild s(Flags({}));
  ASSERT_NE(s.port(), 0) << s.Log();
  client::Response chat =
      Call(s, "POST", "/tokenize", R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]})");
  EXPECT_EQ(chat.head.status, 200) << chat.body;
  // The plain template: "{system}\n\n", "User: {content}\n", then "Assistant:".
  client::Response text = Call(s, "POST", "/tokenize", R"({"prompt":"Be brief.\n\nUser: Hi\nAssistant:"})");
  EXPECT_EQ(chat.body, text.body);
  EXPECT_NE(chat.body.find("\"count\":"), std::string::npos) << chat.body;
  client::Response r = Call(s, "POST", "/tokenize", R"({"messages":[{"role":"robot","content":"x"}]})");
  EXPECT_EQ(r.head.status, 400);
  EXPECT_NE(r.body.find(R"("param":"messages[0].role")"), std::string::npos) << r.body;
  r = Call(s, "POST", "/tokenize", R"({"prompt":"x","messages":[]})");
  EXPECT_EQ(r.body, R"({"error":{"message":"give 'prompt' or 'messages', not both","type":"invalid_request_error","param":"messages","code":null}})");
}

TEST(VllmPaths, BadInputIsRefusedInOpenAisEnvelope) {
  ServerChild s(Flags({}));
  ASSERT_NE(s.port(), 0) << s.Log();
  client::Response r = Call(s, "POST", "/tokenize", R"({"text":"hi"})");
  EXPECT_EQ(r.head.status, 400);
  EXPECT_EQ(r.body, R"({"error":{"message":"'text' is not supported by this server","type":"invalid_request_error","param":"text","code":null}})");
  r = Call(s, "POST", "/tokenize", R"({"prompt":7})");
  EXPECT_EQ(r.body, R"({"error":{"message":"'prompt' must be a string","type":"invalid_request_error","param":"prompt","code":null}})");
  r = Call(s, "POST", "/tokenize", R"({"model":"gpt-4","prompt":"x"})");
  EXPECT_EQ(r.head.status, 404);
  EXPECT_NE(r.body.find(R"("param":"model","code":"model_not_found"})"), std::string::npos) << r.body;
  r = Call(s, "POST", "/detokenize", R"({"tokens":[1,99999999]})");
  EXPECT_EQ(r.head.status, 422);
  EXPECT_EQ(r.body, R"({"error":{"message":"tokens[1] is not a token id","type":"invalid_request_error","param":null,"code":null}})");
}

// ---- OpenAI's envelope on /v1/ ----

TEST(OpenAiEnvelope, TheServersOwnErrorsOnV1UseIt) {
  ServerChild s(Flags({"--api-key", kKey, "--max-body-bytes", "64"}));
  ASSERT_NE(s.port(), 0) << s.Log();
  const Headers auth = {{"Authorization", kAuth}};
  client::Response r = Call(s, "GET", "/v1/models");
  EXPECT_EQ(r.head.status, 401);
  EXPECT_EQ(r.body, R"J({"error":{"message":"missing or wrong API key (Authorization: Bearer KEY)","type":"invalid_request_error","param":null,"code":"unauthorized"}})J");
  r = Call(s, "GET", "/v1/nope", "", auth);
  EXPECT_EQ(r.head.status, 404);
  EXPECT_EQ(r.body, R"({"error":{"message":"no route for GET /v1/nope","type":"invalid_request_error","param":null,"code":"not_found"}})");
  r = Call(s, "GET", "/v1/completions", "", auth);
  EXPECT_EQ(r.head.status, 405);
  EXPECT_EQ(H(r, "Allow"), "POST");
  EXPECT_EQ(r.body, R"J({"error":{"message":"method GET is not allowed on /v1/completions (allowed: POST)","type":"invalid_request_error","param":null,"code":"method_not_allowed"}})J");
  r = Call(s, "POST", "/v1/completions", std::string(65, ' '), auth);
  EXPECT_EQ(r.head.status, 413);
  EXPECT_NE(r.body.find(R"("type":"invalid_request_error","param":null,"code":"payload_too_large"}})"), std::string::npos)
      << r.body;
  EXPECT_EQ(r.body.rfind(R"({"error":{"message":)", 0), 0u) << r.body;
}

TEST(OpenAiEnvelope, OurOwnRoutesKeepOurs) {
  ServerChild s(Flags({"--api-key", kKey, "--max-body-bytes", "64"}));
  ASSERT_NE(s.port(), 0) << s.Log();
  const Headers auth = {{"Authorization", kAuth}};
  client::Response r = Call(s, "POST", "/v1/stream", "{}");
  EXPECT_EQ(r.head.status, 401);
  EXPECT_EQ(r.body, R"J({"error":{"type":"unauthorized","message":"missing or wrong API key (Authorization: Bearer KEY)","retryable":false}})J");
  r = Call(s, "GET", "/v1/streams/s_nope", "", auth);
  EXPECT_EQ(r.head.status, 404);
  EXPECT_EQ(r.body.rfind(R"({"error":{"type":"not_found",)", 0), 0u) << r.body;
  Headers with_id = auth;
  with_id.emplace_back("X-Request-Id", "big-body");
  r = Call(s, "POST", "/v1/stream", std::string(65, ' '), with_id);
  EXPECT_EQ(r.head.status, 413);
  EXPECT_EQ(r.body.rfind(R"({"error":{"type":"payload_too_large",)", 0), 0u) << r.body;
  EXPECT_EQ(H(r, "X-Request-Id"), "big-body");  // a 413 knows its request
}

}  // namespace
}  // namespace tw
