// The HTTP layer's edges (issue 32): CORS matching and headers (cors.h),
// request ids (request_id.h), and the server applying both to every answer
// (a handler's, the router's 404/405, the reader's 413, a preflight), with
// the error body chosen by ServerOptions::error_body.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "http/cors.h"
#include "http/request_id.h"
#include "http/router.h"
#include "http/server.h"
#include "test_client.h"

namespace tw::testing {
namespace {

http::Request RequestWith(std::string method, http::Headers headers) {
  http::Request r;
  r.method = std::move(method);
  r.target = r.path = "/v1/completions";
  r.headers = std::move(headers);
  return r;
}

// An id NewRequestId made: this process's prefix, '-', a counter.
bool IsServerId(const std::string& id) {
  const std::string mine = http::NewRequestId();
  return id.size() >= 18 && id.compare(0, 17, mine, 0, 17) == 0 && id != mine;
}

// ---- CorsPolicy ----

TEST(CorsPolicy, ParsesAListOfExactOriginsOrAStar) {
  http::CorsPolicy p;
  ASSERT_TRUE(http::ParseAllowedOrigins(" https://a.example , http://127.0.0.1:5173,", &p).ok());
  EXPECT_FALSE(p.any);
  EXPECT_EQ(p.origins, (std::vector<std::string>{"https://a.example", "http://127.0.0.1:5173"}));
  EXPECT_TRUE(p.Allows("https://a.example"));
  EXPECT_TRUE(p.Allows("http://127.0.0.1:5173"));
  EXPECT_FALSE(p.Allows("https://A.example"));       // byte for byte
  EXPECT_FALSE(p.Allows("https://a.example:443"));   // not normalised
  EXPECT_FALSE(p.Allows("http://127.0.0.1:5174"));
  EXPECT_FALSE(p.Allows(""));

  ASSERT_TRUE(http::ParseAllowedOrigins("*", &p).ok());
  EXPECT_TRUE(p.any);
  EXPECT_TRUE(p.Allows("http://anything.example"));
  EXPECT_FALSE(p.Allows(""));

  ASSERT_TRUE(http::ParseAllowedOrigins("", &p).ok());
  EXPECT_FALSE(p.enabled());
  EXPECT_FALSE(p.Allows("https://a.example"));
}

TEST(CorsPolicy, RefusesWhatIsNotAnOrigin) {
  http::CorsPolicy p;
  EXPECT_EQ(http::ParseAllowedOrigins("https://a.example/", &p).message(),
            "--allowed-origins: 'https://a.example/' has a path; an origin is scheme://host[:port] with no '/' "
            "after it");
  EXPECT_EQ(http::ParseAllowedOrigins("a.example", &p).message(),
            "--allowed-origins: 'a.example' is not scheme://host[:port]");
  EXPECT_FALSE(http::ParseAllowedOrigins("https://", &p).ok());
  EXPECT_FALSE(http::ParseAllowedOrigins("https://a.example, *", &p).ok());
  EXPECT_FALSE(http::ParseAllowedOrigins("null", &p).ok());
  EXPECT_FALSE(http::ParseAllowedOrigins("https://a b", &p).ok());
}

TEST(CorsPolicy, AHeaderNameListIsCommaSeparatedTokens) {
  EXPECT_TRUE(http::IsHeaderNameList("authorization"));
  EXPECT_TRUE(http::IsHeaderNameList("authorization, content-type,x-stainless-os , x-stainless-retry-count"));
  EXPECT_TRUE(http::IsHeaderNameList("a,,b"));  // RFC 9110 §5.6.1: empty elements are allowed
  EXPECT_FALSE(http::IsHeaderNameList(""));
  EXPECT_FALSE(http::IsHeaderNameList(" , "));
  EXPECT_FALSE(http::IsHeaderNameList("x y"));
  EXPECT_FALSE(http::IsHeaderNameList("x:y"));
  EXPECT_FALSE(http::IsHeaderNameList("caf\xc3\xa9"));
}

TEST(CorsPolicy, ResponseHeadersForAllowedAndOtherOrigins) {
  http::CorsPolicy p;
  ASSERT_TRUE(http::ParseAllowedOrigins("https://a.example", &p).ok());
  http::Headers h;
  http::AppendCorsHeaders(p, RequestWith("GET", {{"origin", "https://a.example"}}), &h);
  EXPECT_EQ(h, (http::Headers{{"Vary", "Origin"},
                              {"Access-Control-Allow-Origin", "https://a.example"},
                              {"Access-Control-Expose-Headers", "X-Request-Id, X-Stream-Id, Retry-After"}}));
  h.clear();
  http::AppendCorsHeaders(p, RequestWith("GET", {{"Origin", "https://b.example"}}), &h);
  EXPECT_EQ(h, (http::Headers{{"Vary", "Origin"}}));
  h.clear();
  http::AppendCorsHeaders(http::CorsPolicy(), RequestWith("GET", {{"Origin", "https://a.example"}}), &h);
  EXPECT_TRUE(h.empty());
}

TEST(CorsPolicy, APreflightEchoesAValidHeaderListElseNamesOurs) {
  http::CorsPolicy p;
  ASSERT_TRUE(http::ParseAllowedOrigins("https://a.example", &p).ok());
  http::Headers h;
  EXPECT_TRUE(http::PreflightHeaders(p,
                                     RequestWith("OPTIONS", {{"Origin", "https://a.example"},
                                                             {"Access-Control-Request-Method", "POST"},
                                                             {"Access-Control-Request-Headers", " authorization,x-stainless-lang "}}),
                                     &h));
  EXPECT_EQ(h, (http::Headers{{"Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"},
                              {"Access-Control-Allow-Headers", "authorization,x-stainless-lang"},
                              {"Access-Control-Max-Age", "600"}}));
  h.clear();
  EXPECT_TRUE(http::PreflightHeaders(p,
                                     RequestWith("OPTIONS", {{"Origin", "https://a.example"},
                                                             {"Access-Control-Request-Method", "POST"},
                                                             {"Access-Control-Request-Headers", "bad header"}}),
                                     &h));
  EXPECT_EQ(h[1], (std::pair<std::string, std::string>{"Access-Control-Allow-Headers",
                                                        "Authorization, Content-Type, X-Request-Id, Last-Event-ID"}));
  h.clear();
  // Not a preflight: another origin, no requested method, another method.
  EXPECT_FALSE(http::PreflightHeaders(
      p, RequestWith("OPTIONS", {{"Origin", "https://b.example"}, {"Access-Control-Request-Method", "POST"}}), &h));
  EXPECT_FALSE(http::PreflightHeaders(p, RequestWith("OPTIONS", {{"Origin", "https://a.example"}}), &h));
  EXPECT_FALSE(http::PreflightHeaders(
      p, RequestWith("GET", {{"Origin", "https://a.example"}, {"Access-Control-Request-Method", "POST"}}), &h));
  EXPECT_TRUE(h.empty());
}

// ---- request ids ----

TEST(RequestId, AValidIdIsOneTo128VisibleAsciiBytes) {
  EXPECT_TRUE(http::ValidRequestId("a"));
  EXPECT_TRUE(http::ValidRequestId("!~:/_-."));
  EXPECT_TRUE(http::ValidRequestId(std::string(128, 'x')));
  EXPECT_FALSE(http::ValidRequestId(""));
  EXPECT_FALSE(http::ValidRequestId(std::string(129, 'x')));
  EXPECT_FALSE(http::ValidRequestId("a b"));
  EXPECT_FALSE(http::ValidRequestId("a\tb"));
  EXPECT_FALSE(http::ValidRequestId("a\x7f"));
  EXPECT_FALSE(http::ValidRequestId("caf\xc3\xa9"));
}

TEST(RequestId, ServerIdsShareAPrefixAndCountInHex) {
  std::set<std::string> seen;
  std::string prefix;
  for (int i = 0; i < 1000; i++) {
    std::string id = http::NewRequestId();
    ASSERT_GE(id.size(), 18u) << id;
    ASSERT_EQ(id[16], '-') << id;
    if (prefix.empty()) prefix = id.substr(0, 16);
    EXPECT_EQ(id.substr(0, 16), prefix);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef-"), std::string::npos) << id;
    EXPECT_TRUE(seen.insert(id).second) << id;
    EXPECT_TRUE(http::ValidRequestId(id)) << id;
  }
  EXPECT_EQ(http::RequestIdFor("mine"), "mine");
  EXPECT_EQ(http::RequestIdFor("not mine").substr(0, 16), prefix);
}

// ---- the server ----

http::ServerOptions EdgeOptions() {
  http::ServerOptions o;
  EXPECT_TRUE(http::ParseAllowedOrigins("https://a.example", &o.cors).ok());
  o.max_body_bytes = 16;
  // The envelope by path: "/other/*" answers in an envelope of its own.
  o.error_body = [](std::string_view path, const ApiError& e) {
    return path.starts_with("/other/") ? "{\"other\":\"" + std::string(e.type()) + "\"}" : std::string("{\"ours\":1}");
  };
  return o;
}

// Starts `f`, sends `request` on a new connection, and reads one answer.
ClientResponse OneExchange(ServerFixture& f, std::string_view request) {
  ClientResponse r;
  RawClient c;
  EXPECT_TRUE(f.Start());
  EXPECT_TRUE(c.Connect(f.port()));
  EXPECT_TRUE(c.SendAll(request));
  EXPECT_TRUE(c.ReadResponse(&r));
  return r;
}

TEST(ServerEdges, EveryAnswerCarriesTheRequestIdAndCorsHeaders) {
  ServerFixture f(EdgeOptions());
  f.router().Add("GET", "/hello", [](const http::Request&, http::Responder r) { r.Send(200, "text/plain", "hi"); });
  f.router().Add("POST", "/other/x", [](const http::Request&, http::Responder r) { r.Send(200, "text/plain", "x"); });
  ASSERT_TRUE(f.Start());
  RawClient c;
  ASSERT_TRUE(c.Connect(f.port()));
  const std::string cors = "Origin: https://a.example\r\nX-Request-Id: id-1\r\n";
  ClientResponse r;
  ASSERT_TRUE(c.SendAll(Get("/hello", cors)));
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("X-Request-Id"), "id-1");
  EXPECT_EQ(r.Header("Access-Control-Allow-Origin"), "https://a.example");
  EXPECT_EQ(r.Header("Vary"), "Origin");
  // The router's 404 and 405, in the envelope error_body chooses by path.
  ASSERT_TRUE(c.SendAll(Get("/other/nope", cors)));
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, "{\"other\":\"not_found\"}");
  EXPECT_EQ(r.Header("X-Request-Id"), "id-1");
  EXPECT_EQ(r.Header("Access-Control-Allow-Origin"), "https://a.example");
  ASSERT_TRUE(c.SendAll(Get("/other/x", cors)));
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.body, "{\"other\":\"method_not_allowed\"}");
  ASSERT_TRUE(c.SendAll(Get("/nope")));
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.body, "{\"ours\":1}");
  EXPECT_EQ(r.Header("Access-Control-Allow-Origin"), "");
  EXPECT_TRUE(IsServerId(r.Header("X-Request-Id"))) << r.Header("X-Request-Id");
  // A preflight is answered before routing, on a path with no OPTIONS route.
  ASSERT_TRUE(c.SendAll("OPTIONS /other/x HTTP/1.1\r\nHost: t\r\nOrigin: https://a.example\r\n"
                        "Access-Control-Request-Method: POST\r\n\r\n"));
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(r.Header("Access-Control-Allow-Methods"), "GET, POST, DELETE, OPTIONS");
  EXPECT_EQ(r.Header("Access-Control-Allow-Origin"), "https://a.example");
  EXPECT_NE(r.Header("X-Request-Id"), "");
}

TEST(ServerEdges, ABodyOverItsBoundIsAnsweredKnowingItsRequest) {
  ServerFixture f(EdgeOptions());
  f.router().Add("POST", "/other/x", [](const http::Request&, http::Responder r) { r.Send(200, "text/plain", "x"); });
  ClientResponse r = OneExchange(f, "POST /other/x HTTP/1.1\r\nHost: t\r\nOrigin: https://a.example\r\n"
                                    "X-Request-Id: big-1\r\nContent-Length: 17\r\n\r\n");
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.body, "{\"other\":\"payload_too_large\"}");
  EXPECT_EQ(r.Header("X-Request-Id"), "big-1");
  EXPECT_EQ(r.Header("Access-Control-Allow-Origin"), "https://a.example");
  EXPECT_EQ(r.Header("Connection"), "close");
}

TEST(ServerEdges, AHeadThatCannotBeReadGetsAServerIdAndTheDefaultPath) {
  ServerFixture f(EdgeOptions());
  ClientResponse r = OneExchange(f, "GET /other/x HTTP/1.1\r\nHost: t\r\nbad header\r\n\r\n");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, "{\"ours\":1}");
  EXPECT_TRUE(IsServerId(r.Header("X-Request-Id"))) << r.Header("X-Request-Id");
  EXPECT_EQ(r.Header("Vary"), "");
}

TEST(ServerEdges, AProtocolSwitchCarriesThemToo) {
  ServerFixture f(EdgeOptions());
  f.router().Add("GET", "/up", [](const http::Request&, http::Responder r) {
    r.Upgrade("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n",
              [](net::Connection*, std::string) { return std::unique_ptr<net::ConnectionHandler>(); });
  });
  ClientResponse r = OneExchange(f, Get("/up", "Origin: https://a.example\r\nX-Request-Id: up-1\r\n"));
  EXPECT_EQ(r.status, 101);
  EXPECT_EQ(r.Header("Upgrade"), "x");
  EXPECT_EQ(r.Header("X-Request-Id"), "up-1");
  EXPECT_EQ(r.Header("Access-Control-Allow-Origin"), "https://a.example");
}

TEST(RouterHasPath, IsTrueForAPathAnyMethodServes) {
  http::Router router;
  router.Add("GET", "/v1/models/{id}", [](const http::Request&, http::Responder) {});
  EXPECT_TRUE(router.HasPath("/v1/models/gpt2"));
  EXPECT_FALSE(router.HasPath("/v1/models"));
  EXPECT_FALSE(router.HasPath("/v1/models/a/b"));
}

}  // namespace
}  // namespace tw::testing
