// Work that grows with a request's size runs off the event loop (the prep
// threads, --prep-threads): while a 1 MB prompt of digits is tokenized (a
// pathological input for BPE: one pre-token of a million symbols), other
// connections are answered. Before, the loop itself tokenized, and every
// connection waited 0.5-3 s.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "app/app_fixture.h"

namespace tw {
namespace {

using testing::AppServer;
using testing::ParseJson;
using testing::WaitUntil;

int64_t PrepRunning(AppServer& srv) {
  json::Value st = srv.Stats();
  const json::Value* p = st.Find("prep");
  return p == nullptr ? -1 : p->Find("running")->as_int();
}

// A client for a megabyte body's answer: up to 60 s of silence while it is
// prepared (a sanitizer build on a loaded machine tokenizes a megabyte in
// seconds; the two bodies of OverMaxPrepQueue... are prepared one after the
// other). A hang still fails.
client::ClientOptions PatientClient() {
  client::ClientOptions co;
  co.io_timeout_ms = 60000;
  return co;
}

// Sends `body` to `target` on its own connection and leaves the answer unread.
void SendBig(client::HttpClient* c, AppServer& srv, const std::string& target, const std::string& body) {
  ASSERT_TRUE(c->Connect(srv.port()).ok());
  client::Request req;
  req.method = "POST";
  req.target = target;
  req.body = body;
  ASSERT_TRUE(c->SendRequest(req).ok());
}

// The order of events is the check, not a time: /healthz and another
// request are answered while the big one is still being prepared.
void OthersAreAnsweredWhileABigBodyIsPrepared(const std::string& target, const std::string& body,
                                              int want_status) {
  AppServer srv;
  client::HttpClient big(PatientClient());
  ASSERT_NO_FATAL_FAILURE(SendBig(&big, srv, target, body));
  ASSERT_TRUE(WaitUntil([&] { return PrepRunning(srv) == 1; }))
      << "the big request is never seen on a prep thread";
  auto t0 = std::chrono::steady_clock::now();
  client::Response h = srv.Call("GET", "/healthz");
  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(h.head.status, 200);
  // (Not another tokenize: with one prep thread it would wait its turn.)
  client::Response models = srv.Call("GET", "/v1/models");
  EXPECT_EQ(models.head.status, 200);
  EXPECT_EQ(PrepRunning(srv), 1) << "the big request finished first: nothing was shown";
  std::fprintf(stderr, "/healthz answered in %.1f ms while a %zu-byte body was prepared\n", ms, body.size());
  client::Response r;
  ASSERT_TRUE(big.ReadResponse(&r).ok());
  EXPECT_EQ(r.head.status, want_status) << r.body.substr(0, 300);
  srv.WaitIdle();
}

std::string Digits(size_t n) { return std::string(n, '7'); }

TEST(Prep, ATokenizeOfAMegabyteDoesNotStallOtherConnections) {
  OthersAreAnsweredWhileABigBodyIsPrepared("/v1/tokenize", R"({"text":")" + Digits(1000000) + R"("})", 200);
}

// A generation's prompt is tokenized off the loop too (the mock backend has
// no context bound, so it is served).
TEST(Prep, AMegabytePromptDoesNotStallOtherConnections) {
  OthersAreAnsweredWhileABigBodyIsPrepared(
      "/v1/generate", R"({"prompt":")" + Digits(1000000) + R"(","max_new_tokens":3})", 200);
}

// --max-prep-queue: with one request being prepared and one waiting, a third
// is refused at once (503 overloaded, Retry-After), in our shape and
// OpenAI's; the two taken are answered.
TEST(Prep, OverMaxPrepQueueIsRefusedWith503) {
  AppServer srv({"--prep-threads", "1", "--max-prep-queue", "1"});
  const std::string big = R"({"text":")" + Digits(1000000) + R"("})";
  client::HttpClient running(PatientClient()), waiting(PatientClient());
  ASSERT_NO_FATAL_FAILURE(SendBig(&running, srv, "/v1/tokenize", big));
  ASSERT_TRUE(WaitUntil([&] { return PrepRunning(srv) == 1; }));
  ASSERT_NO_FATAL_FAILURE(SendBig(&waiting, srv, "/v1/tokenize", big));
  ASSERT_TRUE(WaitUntil([&] { return srv.Stats().Find("prep")->Find("queued")->as_int() == 1; }));
  client::Response r = srv.Call("POST", "/v1/tokenize", R"({"text":"x"})");
  EXPECT_EQ(r.head.status, 503);
  EXPECT_NE(r.body.find("\"overloaded\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("--max-prep-queue"), std::string::npos) << r.body;
  const std::string* retry = r.head.Find("Retry-After");
  EXPECT_TRUE(retry != nullptr && *retry == "1");
  r = srv.Call("POST", "/v1/completions", R"({"model":"mock-gpt2","prompt":"x"})");
  EXPECT_EQ(r.head.status, 503);
  EXPECT_NE(r.body.find("--max-prep-queue"), std::string::npos) << r.body;
  client::Response a, b;
  ASSERT_TRUE(running.ReadResponse(&a).ok());
  ASSERT_TRUE(waiting.ReadResponse(&b).ok());
  EXPECT_EQ(a.head.status, 200);
  EXPECT_EQ(b.head.status, 200);
}

}  // namespace
}  // namespace tw
