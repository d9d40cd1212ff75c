// The metrics' identities (DESIGN.md §8) on the real binary, after a mix of
// every way a stream can end and be read, once the server is at rest (no
// stream registered):
//   tokens_generated = tokens_delivered + tokens_never_delivered
//   Σ cancels by cause = streams_finished{outcome="cancelled"}
//   streams_created = Σ streams_finished by outcome
// Before, a fire-and-forget stream nobody had read counted its tokens as
// never delivered when it finished, and again as delivered when someone
// read it later (generated < delivered + never_delivered); and a cancel was
// counted when sent, even when the stream had already ended another way.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "client/http_client.h"
#include "client/sse_client.h"
#include "json/json.h"
#include "app/app_fixture.h"
#include "support/metrics_text.h"
#include "support/server_child.h"

namespace tw {
namespace {

using testing::FetchMetrics;
using testing::MetricValue;
using testing::ServerChild;
using testing::WaitUntil;

client::Response Call(uint16_t port, const std::string& method, const std::string& target,
                      const std::string& body = "") {
  client::Request req;
  req.method = method;
  req.target = target;
  req.body = body;
  client::Response r;
  EXPECT_TRUE(client::Fetch(port, req, &r).ok()) << method << " " << target;
  return r;
}

std::string StreamId(const client::Response& r) {
  json::Value v;
  if (!json::Parse(r.body, &v).ok() || v.Find("stream") == nullptr) return "";
  return v.Find("stream")->as_string();
}

bool Finished(uint16_t port, const std::string& id) {
  return Call(port, "GET", "/v1/streams/" + id).body.find("\"finished\"") != std::string::npos;
}

TEST(MetricIdentities, HoldAtRestAfterEveryKindOfEnding) {
  ServerChild server({"--backend", "mock", "--mock-tokens-per-s", "400", "--mock-ttft-ms", "0", "--linger-ms",
                      "50", "--retain-ms", "300"});
  const uint16_t port = server.port();
  ASSERT_NE(port, 0) << server.Log();
  // Fire and forget, never read (4), and read once finished (2).
  std::vector<std::string> unread, read_later;
  for (int i = 0; i < 6; ++i) {
    const std::string id = StreamId(Call(port, "POST", "/v1/streams", R"({"prompt":"x","max_new_tokens":20})"));
    ASSERT_FALSE(id.empty());
    (i < 4 ? unread : read_later).push_back(id);
  }
  for (const std::string& id : read_later) {
    ASSERT_TRUE(WaitUntil([&] { return Finished(port, id); }));
    client::SseClient c;
    ASSERT_TRUE(c.Connect(port).ok());
    ASSERT_TRUE(c.Get("/v1/streams/" + id + "/events", "").ok());
    ASSERT_TRUE(c.ReadEvents().ok());
    EXPECT_EQ(c.result().events.back().type, "done");
  }
  // Read whole; left mid-stream (linger); deleted; a collected answer left.
  client::SseClient whole;
  ASSERT_TRUE(whole.Connect(port).ok());
  ASSERT_TRUE(whole.Post("/v1/stream", R"({"prompt":"x","max_new_tokens":30})").ok());
  ASSERT_TRUE(whole.ReadEvents().ok());
  client::SseOptions first_token;
  first_token.stop_after = [](const sse::Event& e) { return e.type == "token"; };
  client::SseClient leaver(first_token);
  ASSERT_TRUE(leaver.Connect(port).ok());
  ASSERT_TRUE(leaver.Post("/v1/stream", R"({"prompt":"x","max_new_tokens":1000})").ok());
  ASSERT_TRUE(leaver.ReadEvents().ok());
  leaver.http().CloseWithReset();
  const std::string deleted = StreamId(Call(port, "POST", "/v1/streams", R"({"prompt":"x","max_new_tokens":1000})"));
  EXPECT_EQ(Call(port, "DELETE", "/v1/streams/" + deleted).head.status, 204);
  {
    client::HttpClient c;
    ASSERT_TRUE(c.Connect(port).ok());
    client::Request req;
    req.method = "POST";
    req.target = "/v1/generate";
    req.body = R"({"prompt":"x","max_new_tokens":1000})";
    ASSERT_TRUE(c.SendRequest(req).ok());
    ASSERT_TRUE(WaitUntil([&] { return MetricValue(FetchMetrics(port), "tokenwire_streams_created_total") == 10; }));
    c.Close();
  }
  // n = 3, choice 0 deleted: the others cancelled as its siblings.
  client::SseOptions first_chunk;  // OpenAI chunks have no event type: the first one
  first_chunk.stop_after = [](const sse::Event&) { return true; };
  client::SseClient choices(first_chunk);
  ASSERT_TRUE(choices.Connect(port).ok());
  ASSERT_TRUE(
      choices.Post("/v1/completions", R"({"model":"mock-gpt2","prompt":"x","n":3,"stream":true,"max_tokens":1000})")
          .ok());
  ASSERT_TRUE(choices.ReadEvents().ok());
  std::string first_choice;
  for (const auto& [k, v] : choices.result().head.headers) {
    if (k == "X-Stream-Id") first_choice = v;
  }
  EXPECT_EQ(Call(port, "DELETE", "/v1/streams/" + first_choice).head.status, 204);
  choices.mutable_result().stopped = false;
  ASSERT_TRUE(choices.ReadEvents([](const sse::Event&) { return true; }).ok());

  // At rest: every stream ended and forgotten (retention 0.3 s).
  std::string m;
  ASSERT_TRUE(WaitUntil([&] {
    m = FetchMetrics(port);
    return MetricValue(m, "tokenwire_registered_streams") == 0;
  })) << m;
  const int64_t generated = MetricValue(m, "tokenwire_tokens_generated_total");
  const int64_t delivered = MetricValue(m, "tokenwire_tokens_delivered_total");
  const int64_t never = MetricValue(m, "tokenwire_tokens_never_delivered_total");
  EXPECT_GT(never, 0);
  EXPECT_GT(delivered, 0);
  EXPECT_EQ(generated, delivered + never) << m;

  const std::string finished = "tokenwire_streams_finished_total{outcome=\"";
  int64_t cancels = 0;
  for (const char* cause : {"stall", "linger", "delete", "ws", "client_gone", "sibling", "shutdown"}) {
    const int64_t v = MetricValue(m, std::string("tokenwire_") + cause + "_cancels_total");
    ASSERT_GE(v, 0) << cause;
    cancels += v;
  }
  EXPECT_EQ(MetricValue(m, "tokenwire_linger_cancels_total"), 1) << m;
  EXPECT_EQ(MetricValue(m, "tokenwire_delete_cancels_total"), 2) << m;
  EXPECT_EQ(MetricValue(m, "tokenwire_client_gone_cancels_total"), 1) << m;
  EXPECT_EQ(MetricValue(m, "tokenwire_sibling_cancels_total"), 2) << m;
  EXPECT_EQ(cancels, MetricValue(m, finished + "cancelled\"}")) << m;
  int64_t ended = 0;
  for (const char* outcome : {"length", "stop", "eos", "cancelled", "error"}) {
    ended += std::max<int64_t>(0, MetricValue(m, finished + outcome + "\"}"));
  }
  EXPECT_EQ(ended, MetricValue(m, "tokenwire_streams_created_total")) << m;
  EXPECT_EQ(MetricValue(m, "tokenwire_streams_created_total"), 13) << m;
}

}  // namespace
}  // namespace tw
