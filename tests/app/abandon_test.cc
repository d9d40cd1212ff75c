// A client that leaves a request whose answer is not streamed, on the real
// binary: nobody can resume a stream whose id was never sent, so the close
// cancels the generation at once, on every such endpoint, whether it is
// still queued or already running. (Before, the leave was noticed only at
// the stream's next event: a queued request waited for its slot, was
// admitted and generated until the stream's linger ran out.) The linger is
// a minute in these servers: it is never what ends a stream here.
//
// And an n-choice response that one choice ends (DELETE on it) cancels its
// other choices at once, instead of leaving them to the linger.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "client/http_client.h"
#include "client/sse_client.h"
#include "app/app_fixture.h"
#include "support/metrics_text.h"
#include "support/server_child.h"

namespace tw {
namespace {

using testing::MetricValue;
using testing::ServerChild;
using testing::WaitUntil;

struct Endpoint {
  const char* path;
  const char* body;  // not streamed, with a long answer
};

const Endpoint kEndpoints[] = {
    {"/v1/generate", R"({"prompt":"Hello","max_new_tokens":900})"},
    {"/v1/completions", R"({"model":"M","prompt":"Hello","max_tokens":900})"},
    {"/v1/chat/completions", R"({"model":"M","messages":[{"role":"user","content":"Hi"}],"max_tokens":900})"},
};

std::string WithModel(const char* body, const std::string& model) {
  std::string b = body;
  const size_t at = b.find("\"M\"");
  if (at != std::string::npos) b.replace(at, 3, "\"" + model + "\"");
  return b;
}

std::string Metrics(uint16_t port) { return testing::FetchMetrics(port); }

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The `stream` log record of the stream cancelled because its client left,
// the n-th such record (0-based).
std::string ClientGoneRecord(const std::string& log, size_t n) {
  size_t at = 0;
  for (size_t i = 0;; ++i) {
    at = log.find("cancel=client_gone", at);
    if (at == std::string::npos) return "";
    if (i == n) break;
    ++at;
  }
  const size_t begin = log.rfind('\n', at) + 1;
  return log.substr(begin, log.find('\n', at) - begin);
}

int64_t Field(const std::string& record, const std::string& key) {
  const size_t at = record.find(" " + key + "=");
  return at == std::string::npos ? -1 : std::stoll(record.substr(at + key.size() + 2));
}

// Sends a request and leaves without reading its answer.
void SendAndLeave(client::HttpClient* c, uint16_t port, const std::string& path, const std::string& body) {
  ASSERT_TRUE(c->Connect(port).ok());
  client::Request req;
  req.method = "POST";
  req.target = path;
  req.body = body;
  ASSERT_TRUE(c->SendRequest(req).ok());
}

// Queued: one batch slot, held by a stream whose reader left under
// pause_producer (paused, its slot and KV kept for the minute's linger).
// Each endpoint's request waits behind it; its client leaves; its stream
// ends cancelled with no token, and the one waiting is gone.
TEST(AbandonedRequest, QueuedIsCancelledAtItsClientsCloseOnEveryEndpoint) {
  ServerChild server({"--backend", "cpu", "--threads", "1", "--max-batch", "1", "--linger-ms", "60000",
                      "--log-level", "info", "--served-model-name", "m"});
  ASSERT_NE(server.port(), 0) << server.Log();
  client::SseClient holder;
  ASSERT_TRUE(holder.Connect(server.port()).ok());
  ASSERT_TRUE(holder.Post("/v1/stream", R"({"prompt":"Hello","max_new_tokens":900,"policy":"pause_producer"})").ok());
  // Read on to the first token (the callback returns false to stop): the
  // holder is then admitted. Stopping at "start" left a race: under load the
  // reset could pause the holder before its admission, and a paused waiting
  // sequence holds no slot, so the requests below ran.
  ASSERT_TRUE(holder.ReadEvents([](const sse::Event& e) { return e.type != "token"; }).ok());
  ASSERT_FALSE(holder.result().events.empty());
  ASSERT_EQ(holder.result().events.back().type, "token");
  holder.http().CloseWithReset();
  ASSERT_TRUE(WaitUntil([&] { return Metrics(server.port()).find("tokenwire_producer_pauses_total 1\n") != std::string::npos; }))
      << Metrics(server.port());
  size_t n = 0;
  for (const Endpoint& e : kEndpoints) {
    SCOPED_TRACE(e.path);
    client::HttpClient c;
    ASSERT_NO_FATAL_FAILURE(SendAndLeave(&c, server.port(), e.path, WithModel(e.body, "m")));
    ASSERT_TRUE(WaitUntil([&] { return Metrics(server.port()).find("tokenwire_engine_waiting 1\n") != std::string::npos; }))
        << Metrics(server.port());
    c.Close();
    ASSERT_TRUE(WaitUntil([&] { return !ClientGoneRecord(server.Log(), n).empty(); })) << server.Log();
    const std::string record = ClientGoneRecord(server.Log(), n);
    EXPECT_EQ(Field(record, "tokens"), 0) << record;
    EXPECT_NE(record.find("finish_reason=cancelled"), std::string::npos) << record;
    ASSERT_TRUE(WaitUntil([&] { return Metrics(server.port()).find("tokenwire_engine_waiting 0\n") != std::string::npos; }));
    ++n;
  }
  const std::string m = Metrics(server.port());
  EXPECT_NE(m.find("tokenwire_client_gone_cancels_total 3\n"), std::string::npos) << m;
  EXPECT_NE(m.find("tokenwire_linger_cancels_total 0\n"), std::string::npos) << m;
}

// Running: the mock backend at 50 tokens/s (900 tokens would take 18 s).
// The client leaves once its stream has made tokens; the stream ends
// cancelled, far short of its 900.
TEST(AbandonedRequest, RunningIsCancelledAtItsClientsCloseOnEveryEndpoint) {
  ServerChild server({"--backend", "mock", "--mock-tokens-per-s", "50", "--mock-ttft-ms", "0", "--linger-ms",
                      "60000", "--log-level", "info"});
  ASSERT_NE(server.port(), 0) << server.Log();
  size_t n = 0;
  for (const Endpoint& e : kEndpoints) {
    SCOPED_TRACE(e.path);
    const std::string before = Metrics(server.port());
    client::HttpClient c;
    ASSERT_NO_FATAL_FAILURE(SendAndLeave(&c, server.port(), e.path, WithModel(e.body, "mock-gpt2")));
    // Running: a token has been generated since the request.
    const int64_t generated = MetricValue(before, "tokenwire_tokens_generated_total");
    ASSERT_GE(generated, 0) << before;
    ASSERT_TRUE(WaitUntil([&] { return MetricValue(Metrics(server.port()), "tokenwire_tokens_generated_total") > generated; }));
    c.Close();
    ASSERT_TRUE(WaitUntil([&] { return !ClientGoneRecord(server.Log(), n).empty(); })) << server.Log();
    const std::string record = ClientGoneRecord(server.Log(), n);
    EXPECT_GT(Field(record, "tokens"), 0) << record;
    EXPECT_LT(Field(record, "tokens"), 900) << record;
    ++n;
  }
  EXPECT_NE(Metrics(server.port()).find("tokenwire_client_gone_cancels_total 3\n"), std::string::npos);
}

// n = 4, streamed: DELETE on choice 0 ends the response (its error, then
// [DONE]); the other three choices are cancelled at once, not after the
// linger, and every stream has ended when the response has.
TEST(AbandonedRequest, OneFailedChoiceCancelsItsSiblingsAtOnce) {
  ServerChild server({"--backend", "mock", "--mock-tokens-per-s", "50", "--mock-ttft-ms", "0", "--linger-ms",
                      "60000", "--log-level", "info"});
  ASSERT_NE(server.port(), 0) << server.Log();
  client::SseOptions o;
  o.stop_after = [](const sse::Event& e) { return e.data.find("\"text\"") != std::string::npos; };
  client::SseClient c(o);
  ASSERT_TRUE(c.Connect(server.port()).ok());
  ASSERT_TRUE(c.Post("/v1/completions", R"({"model":"mock-gpt2","prompt":"x","n":4,"stream":true,"max_tokens":900})").ok());
  ASSERT_TRUE(c.is_event_stream());
  ASSERT_TRUE(c.ReadEvents().ok());
  std::string id;
  for (const auto& [k, v] : c.result().head.headers) {
    if (k == "X-Stream-Id") id = v;
  }
  ASSERT_FALSE(id.empty());
  client::Response del;
  client::Request req;
  req.method = "DELETE";
  req.target = "/v1/streams/" + id;
  ASSERT_TRUE(client::Fetch(server.port(), req, &del).ok());
  EXPECT_EQ(del.head.status, 204);
  c.mutable_result().stopped = false;
  ASSERT_TRUE(c.ReadEvents([](const sse::Event&) { return true; }).ok());
  ASSERT_TRUE(WaitUntil([&] { return Count(server.Log(), "cancel=sibling") == 3; })) << server.Log();
  ASSERT_TRUE(WaitUntil([&] { return Metrics(server.port()).find("tokenwire_active_streams 0\n") != std::string::npos; }));
  const std::string m = Metrics(server.port());
  EXPECT_NE(m.find("tokenwire_sibling_cancels_total 3\n"), std::string::npos) << m;
  EXPECT_NE(m.find("tokenwire_delete_cancels_total 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("tokenwire_linger_cancels_total 0\n"), std::string::npos) << m;
}

}  // namespace
}  // namespace tw
