// The streaming API against a real server on loopback (mock backend):
// resume exactness, the 409 path, DELETE, linger, policies, heartbeats,
// shutdown, refusals. After each test the server must hold nothing.
#include <gtest/gtest.h>

#include <random>

#include "app/app_fixture.h"

namespace tw {
namespace {

using testing::AppServer;
using testing::ParseJson;
using testing::WaitUntil;

struct Collected {
  std::vector<uint64_t> ids;      // ids of stream events, in arrival order
  std::vector<int64_t> tokens;    // token ids
  std::string finish_reason;
  bool done = false;
};

// Adds the events of one connection to *c; returns the number of events
// taken. Checks every event has an id except subscriber-level errors.
void Absorb(const std::vector<sse::Event>& events, Collected* c, std::string* error_type = nullptr,
            uint64_t* resume_from = nullptr) {
  for (const sse::Event& e : events) {
    json::Value d = ParseJson(e.data);
    if (e.type == "error" && d.Find("resume_from") != nullptr) {
      if (error_type) *error_type = d.Find("type")->as_string();
      if (resume_from) *resume_from = static_cast<uint64_t>(d.Find("resume_from")->as_int());
      continue;
    }
    c->ids.push_back(std::stoull(e.id));
    if (e.type == "token") c->tokens.push_back(d.Find("token")->as_int());
    if (e.type == "done") {
      c->done = true;
      c->finish_reason = d.Find("finish_reason")->as_string();
    }
  }
}

std::string HeaderOf(const client::ResponseHead& h, std::string_view name) {
  const std::string* v = h.Find(name);
  return v ? *v : std::string();
}

// Stop reading after the first `n` events; later ReadEvents calls read on.
std::function<bool(const sse::Event&)> StopOnceAfter(int n) {
  auto count = std::make_shared<int>(0);
  return [count, n](const sse::Event&) { return ++*count == n; };
}

bool Contiguous(const std::vector<uint64_t>& ids) {
  for (size_t i = 0; i < ids.size(); i++) {
    if (ids[i] != i + 1) return false;
  }
  return true;
}

std::vector<int64_t> LoggedTokens(AppServer& srv, const std::string& id) {
  std::vector<int64_t> out;
  json::Value log = srv.Emissions(id);
  for (const auto& t : log.Find("tokens")->items()) out.push_back(t.as_int());
  return out;
}

TEST(Streams, SseStreamHasContiguousIdsAndMatchesTheEmissionLog) {
  AppServer srv;
  client::SseClient c;
  ASSERT_OK(c.Connect(srv.port()));
  ASSERT_TRUE(c.Post("/v1/stream", R"({"prompt":"Hello there","max_new_tokens":30,"seed":7})").ok());
  ASSERT_TRUE(c.is_event_stream());
  ASSERT_TRUE(c.ReadEvents().ok());
  ASSERT_TRUE(c.result().ended);
  Collected got;
  Absorb(c.result().events, &got);
  EXPECT_TRUE(Contiguous(got.ids));
  EXPECT_EQ(got.ids.size(), 32u);  // start + 30 tokens + done
  EXPECT_EQ(got.finish_reason, "length");
  EXPECT_EQ(c.result().retry_ms.value_or(0), 1000u);
  std::string id(HeaderOf(c.result().head, "X-Stream-Id"));
  EXPECT_EQ(got.tokens, LoggedTokens(srv, id));
  srv.WaitIdle();
}

TEST(Streams, StreamedOutputEqualsGenerate) {
  AppServer srv;
  const std::string body = R"({"prompt":"The capital of France is","max_new_tokens":25,"seed":3})";
  client::SseClient c;
  ASSERT_OK(c.Connect(srv.port()));
  ASSERT_TRUE(c.Post("/v1/stream", body).ok());
  ASSERT_TRUE(c.ReadEvents().ok());
  std::string text;
  std::vector<int64_t> tokens;
  for (const auto& e : c.result().events) {
    if (e.type != "token") continue;
    json::Value d = ParseJson(e.data);
    tokens.push_back(d.Find("token")->as_int());
    text += d.Find("text")->as_string();
  }
  int status = 0;
  json::Value g = srv.CallJson("POST", "/v1/generate", body, &status);
  ASSERT_EQ(status, 200);
  std::vector<int64_t> gt;
  for (const auto& t : g.Find("tokens")->items()) gt.push_back(t.as_int());
  EXPECT_EQ(gt, tokens);
  EXPECT_EQ(g.Find("text")->as_string(), text);
  EXPECT_EQ(g.Find("finish_reason")->as_string(), "length");
  EXPECT_EQ(g.Find("usage")->Find("completion_tokens")->as_int(), 25);
  srv.WaitIdle();
}

// Forced disconnects at random points (clean close and RST), each followed by
// a resume with Last-Event-ID: the reassembled stream equals the emission log.
TEST(Streams, ResumeAfterRandomDisconnectsIsExact) {
  AppServer srv({"--linger-ms", "2000", "--mock-tokens-per-s", "2000"});
  std::mt19937 rng(12345);
  for (int n = 0; n < 12; n++) {
    Collected got;
    std::string id;
    std::string last_id;
    int disconnects = 0;
    while (!got.done) {
      client::SseOptions o;
      o.close_with_reset = (rng() % 2) == 0;
      uint32_t stop_at = 1 + rng() % 15;
      if (disconnects >= 6) stop_at = 0;  // then read to the end
      o.max_events = stop_at;
      client::SseClient c(o);
      ASSERT_OK(c.Connect(srv.port()));
      if (id.empty()) {
        ASSERT_TRUE(c.Post("/v1/stream", R"({"prompt":"resume me","max_new_tokens":80,"seed":)" +
                                             std::to_string(n) + "}")
                        .ok());
        id = std::string(HeaderOf(c.result().head, "X-Stream-Id"));
      } else {
        ASSERT_TRUE(c.Get("/v1/streams/" + id + "/events", last_id).ok());
      }
      ASSERT_TRUE(c.is_event_stream()) << c.result().error_body;
      ASSERT_TRUE(c.ReadEvents().ok());
      Absorb(c.result().events, &got);
      if (!got.ids.empty()) last_id = std::to_string(got.ids.back());
      if (!got.done) {
        disconnects++;
        if (o.close_with_reset) c.http().CloseWithReset(); else c.http().Close();
      }
    }
    EXPECT_TRUE(Contiguous(got.ids)) << "stream " << n;
    EXPECT_EQ(got.ids.size(), 82u);
    EXPECT_EQ(got.tokens, LoggedTokens(srv, id)) << "stream " << n;
  }
  srv.WaitIdle();
}

TEST(Streams, ResumeBeyondTheWindowIs409WithOldestAvailable) {
  AppServer srv({"--resume-window", "8", "--subscriber-lag", "4"});
  int status = 0;
  json::Value created =
      srv.CallJson("POST", "/v1/streams", R"({"prompt":"x","max_new_tokens":20})", &status);
  ASSERT_EQ(status, 201);
  std::string id = created.Find("stream")->as_string();
  EXPECT_EQ(created.Find("events")->as_string(), "/v1/streams/" + id + "/events");
  // Keep it alive while it runs: attach once so linger does not cancel it.
  client::SseClient watcher;
  ASSERT_OK(watcher.Connect(srv.port()));
  ASSERT_TRUE(watcher.Get("/v1/streams/" + id + "/events", "").ok());
  ASSERT_TRUE(watcher.ReadEvents().ok());
  ASSERT_TRUE(watcher.result().ended);

  client::Response r = srv.Call("GET", "/v1/streams/" + id + "/events?after=3");
  EXPECT_EQ(r.head.status, 409);
  json::Value err = ParseJson(r.body);
  EXPECT_EQ(err.Find("error")->Find("type")->as_string(), "resume_window_exceeded");
  EXPECT_FALSE(err.Find("error")->Find("retryable")->as_bool());
  int64_t oldest = err.Find("error")->Find("oldest_available")->as_int();
  EXPECT_EQ(oldest, 22 - 8 + 1);
  // Exactly at the window edge it works, through every spelling.
  for (std::string q : {"?after=", "?starting_after="}) {
    client::SseClient c;
    ASSERT_OK(c.Connect(srv.port()));
    ASSERT_TRUE(c.Get("/v1/streams/" + id + "/events" + q + std::to_string(oldest - 1), "").ok());
    ASSERT_TRUE(c.ReadEvents().ok());
    ASSERT_EQ(c.result().events.size(), 8u);
    EXPECT_EQ(c.result().events.front().id, std::to_string(oldest));
  }
  srv.WaitIdle();
}

// A field given twice is refused naming it, rather than one of the values
// winning silently (on /v1/stream, /v1/generate and /v1/tokenize alike).
TEST(Streams, ADuplicateKeyIs400NamingIt) {
  AppServer srv;
  for (std::string path : {"/v1/stream", "/v1/streams", "/v1/generate"}) {
    client::Response r = srv.Call("POST", path, R"({"prompt":"a","max_new_tokens":3,"prompt":"b"})");
    EXPECT_EQ(r.head.status, 400) << path;
    json::Value err = ParseJson(r.body);
    EXPECT_EQ(err.Find("error")->Find("type")->as_string(), "invalid_request") << r.body;
    EXPECT_NE(err.Find("error")->Find("message")->as_string().find("'prompt' appears twice"), std::string::npos)
        << r.body;
  }
  client::Response r = srv.Call("POST", "/v1/tokenize", R"({"text":"a","text":"b"})");
  EXPECT_EQ(r.head.status, 400);
  EXPECT_NE(r.body.find("'text' appears twice"), std::string::npos) << r.body;
  srv.WaitIdle();
}

TEST(Streams, UnknownStreamIs404AndBadCursorIs400) {
  AppServer srv;
  EXPECT_EQ(srv.Call("GET", "/v1/streams/s_nope/events").head.status, 404);
  EXPECT_EQ(srv.Call("GET", "/v1/streams/s_nope").head.status, 404);
  EXPECT_EQ(srv.Call("DELETE", "/v1/streams/s_nope").head.status, 404);
  int status = 0;
  json::Value c = srv.CallJson("POST", "/v1/streams", R"({"prompt":"x","max_new_tokens":3})", &status);
  std::string id = c.Find("stream")->as_string();
  EXPECT_EQ(srv.Call("GET", "/v1/streams/" + id + "/events?after=-1").head.status, 400);
  EXPECT_EQ(srv.Call("GET", "/v1/streams/" + id + "/events", "", {{"Last-Event-ID", "x1"}}).head.status,
            400);
  srv.WaitIdle();
}

// What an EventSource sends when it reconnects after `done` (Last-Event-ID =
// the done event's id) gets at once a complete, empty event stream; an id
// past the stream's last event, live or finished, gets 400 naming it (ids
// near 2^63 and 2^64 included: no wrap-around into "left the window").
TEST(Streams, ResumeAtTheTerminalEventIsEmptyAndPastTheHeadIs400) {
  AppServer srv({"--mock-tokens-per-s", "200"});
  int status = 0;
  json::Value c = srv.CallJson("POST", "/v1/streams", R"({"prompt":"x","max_new_tokens":5})", &status);
  ASSERT_EQ(status, 201);
  std::string id = c.Find("stream")->as_string();
  const std::string events = "/v1/streams/" + id + "/events";
  client::SseResult all;
  ASSERT_OK(client::GetSse(srv.port(), events, "", &all));
  ASSERT_TRUE(all.ended);
  ASSERT_EQ(all.events.size(), 7u);
  ASSERT_EQ(all.events.back().type, "done");
  const std::string done_id = all.events.back().id;
  ASSERT_EQ(done_id, "7");

  client::SseResult empty;
  ASSERT_OK(client::GetSse(srv.port(), events, done_id, &empty));
  EXPECT_EQ(empty.head.status, 200);
  EXPECT_TRUE(empty.ended);  // the server ended the response: no hang
  EXPECT_TRUE(empty.events.empty());
  EXPECT_EQ(empty.retry_ms.value_or(0), 1000u);
  // The same through ?after=.
  client::Response r = srv.Call("GET", events + "?after=" + done_id);
  EXPECT_EQ(r.head.status, 200);
  EXPECT_EQ(r.body, "retry: 1000\n\n");

  for (std::string past : {"8", "9223372036854775807", "18446744073709551615"}) {
    r = srv.Call("GET", events, "", {{"Last-Event-ID", past}});
    EXPECT_EQ(r.head.status, 400) << past;
    json::Value err = ParseJson(r.body);
    EXPECT_EQ(err.Find("error")->Find("type")->as_string(), "invalid_request") << past;
    EXPECT_NE(err.Find("error")->Find("message")->as_string().find("finished with event 7"),
              std::string::npos)
        << r.body;
  }
  // A live stream: an id past its head is refused too, naming the head.
  json::Value live =
      srv.CallJson("POST", "/v1/streams", R"({"prompt":"x","max_new_tokens":1000})", &status);
  std::string live_id = live.Find("stream")->as_string();
  r = srv.Call("GET", "/v1/streams/" + live_id + "/events", "", {{"Last-Event-ID", "5000"}});
  EXPECT_EQ(r.head.status, 400);
  EXPECT_NE(r.body.find("has produced events up to"), std::string::npos) << r.body;
  EXPECT_EQ(srv.Call("DELETE", "/v1/streams/" + live_id).head.status, 204);
  srv.WaitIdle();
}

// POST /v1/generate whose client leaves before the answer: nobody can resume
// a stream whose id was never sent, so the generation is cancelled at the
// close (a linger of a minute here is not what ends it), not run to
// max_new_tokens. tests/app/abandon_test.cc has every endpoint, queued and
// running, on the real binary.
TEST(Streams, GenerateWhoseClientLeftIsCancelledAtOnce) {
  AppServer srv({"--mock-tokens-per-s", "400", "--linger-ms", "60000"});
  ASSERT_NO_FATAL_FAILURE(srv.PostAndLeave("/v1/generate", R"({"prompt":"x","max_new_tokens":20000})"));
  ASSERT_TRUE(srv.WaitIdle(8000));  // 20000 tokens at 400/s would take 50 s
  client::Response m = srv.Call("GET", "/metrics");
  EXPECT_NE(m.body.find("tokenwire_client_gone_cancels_total 1\n"), std::string::npos);
  EXPECT_NE(m.body.find("tokenwire_linger_cancels_total 0\n"), std::string::npos);
  EXPECT_NE(m.body.find("tokenwire_streams_finished_total{outcome=\"cancelled\"} 1\n"), std::string::npos);
}

TEST(Streams, DeleteAnswers204OnlyAfterTheProducerExitedAndIsIdempotent) {
  AppServer srv({"--mock-tokens-per-s", "20"});
  int status = 0;
  json::Value c = srv.CallJson("POST", "/v1/streams", R"({"prompt":"x","max_new_tokens":1000})", &status);
  std::string id = c.Find("stream")->as_string();
  client::Response d = srv.Call("DELETE", "/v1/streams/" + id);
  EXPECT_EQ(d.head.status, 204);
  EXPECT_EQ(d.head.Find("Content-Length"), nullptr);  // RFC 9110 §8.6
  EXPECT_TRUE(d.body.empty());
  json::Value log = srv.Emissions(id);
  EXPECT_TRUE(log.Find("exited")->as_bool());
  EXPECT_EQ(log.Find("finish_reason")->as_string(), "cancelled");
  EXPECT_EQ(srv.Call("DELETE", "/v1/streams/" + id).head.status, 204);
  json::Value st = srv.CallJson("GET", "/v1/streams/" + id);
  EXPECT_EQ(st.Find("state")->as_string(), "finished");
  ASSERT_NE(st.Find("finish_reason"), nullptr) << json::Serialize(st);
  EXPECT_EQ(st.Find("finish_reason")->as_string(), "cancelled");
  // The stream's last event says why it ended.
  client::SseClient r;
  ASSERT_OK(r.Connect(srv.port()));
  ASSERT_TRUE(r.Get("/v1/streams/" + id + "/events", "").ok());
  ASSERT_TRUE(r.ReadEvents().ok());
  EXPECT_EQ(r.result().events.back().type, "done");
  EXPECT_EQ(ParseJson(r.result().events.back().data).Find("finish_reason")->as_string(), "cancelled");
  srv.WaitIdle();
}

TEST(Streams, LingerCancelsAfterDisconnectAndAResumeRescues) {
  // The rescue must reconnect within the linger: long enough for a loaded
  // machine; the abandoned stream still ends long before its 1000 tokens.
  AppServer srv({"--linger-ms", "1000", "--mock-tokens-per-s", "50"});
  // Rescue: drop after 3 events, come back within the linger time.
  std::string id;
  Collected got;
  {
    client::SseOptions o;
    o.max_events = 3;
    client::SseClient c(o);
    ASSERT_OK(c.Connect(srv.port()));
    ASSERT_TRUE(c.Post("/v1/stream", R"({"prompt":"x","max_new_tokens":20})").ok());
    id = std::string(HeaderOf(c.result().head, "X-Stream-Id"));
    ASSERT_TRUE(c.ReadEvents().ok());
    Absorb(c.result().events, &got);
  }
  {
    client::SseClient c;
    ASSERT_OK(c.Connect(srv.port()));
    ASSERT_TRUE(c.Get("/v1/streams/" + id + "/events", std::to_string(got.ids.back())).ok());
    ASSERT_TRUE(c.ReadEvents().ok());
    Absorb(c.result().events, &got);
  }
  EXPECT_EQ(got.finish_reason, "length");
  EXPECT_TRUE(Contiguous(got.ids));
  // Abandon: drop and stay away.
  std::string id2;
  {
    client::SseOptions o;
    o.max_events = 2;
    o.close_with_reset = true;
    client::SseClient c(o);
    ASSERT_OK(c.Connect(srv.port()));
    ASSERT_TRUE(c.Post("/v1/stream", R"({"prompt":"x","max_new_tokens":1000})").ok());
    id2 = std::string(HeaderOf(c.result().head, "X-Stream-Id"));
    ASSERT_TRUE(c.ReadEvents().ok());
    c.http().CloseWithReset();
  }
  ASSERT_TRUE(WaitUntil([&] { return srv.Emissions(id2).Find("exited")->as_bool(); }));
  json::Value log = srv.Emissions(id2);
  EXPECT_EQ(log.Find("finish_reason")->as_string(), "cancelled");
  EXPECT_LT(log.Find("tokens")->items().size(), 1000u);
  srv.WaitIdle();
}

// A client that stops reading, with a small receive buffer: under each policy
// the server's per-connection output stays bounded and the policy acts.
struct PolicyRun {
  std::string error_type;
  uint64_t resume_from = 0;
  std::string id;
  Collected got;
};

PolicyRun StallThenRead(AppServer& srv, const std::string& policy, int stall_ms) {
  PolicyRun run;
  client::SseOptions o;
  o.http.rcvbuf_bytes = 4096;
  o.http.io_timeout_ms = 10000;
  o.stop_after = StopOnceAfter(1);
  client::SseClient c(o);
  EXPECT_OK(c.Connect(srv.port()));
  EXPECT_TRUE(c.Post("/v1/stream", R"({"prompt":"slow","max_new_tokens":6000,"policy":")" + policy +
                                       "\"}")
                  .ok());
  run.id = std::string(HeaderOf(c.result().head, "X-Stream-Id"));
  EXPECT_TRUE(c.ReadEvents().ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms));
  client::WidenReceiveWindow(c.http().fd());  // the reader is back, at full speed
  c.mutable_result().stopped = false;
  client::SseOptions rest;
  // Read everything that is left on this connection.
  EXPECT_TRUE(c.ReadEvents([](const sse::Event&) { return true; }).ok());
  Absorb(c.result().events, &run.got, &run.error_type, &run.resume_from);
  return run;
}

TEST(Streams, DropSlowDetachesTheSlowReaderWhoCanResume) {
  AppServer srv({"--mock-tokens-per-s", "20000", "--subscriber-lag", "64", "--max-output-bytes",
                 "8192", "--socket-send-buffer-bytes", "4096", "--linger-ms", "5000",
                 "--resume-window", "8000", "--retain-ms", "4000"});
  PolicyRun run = StallThenRead(srv, "drop_slow", 1500);
  EXPECT_EQ(run.error_type, "slow_client");
  ASSERT_GT(run.resume_from, 0u);
  EXPECT_EQ(run.got.ids.back(), run.resume_from);
  EXPECT_TRUE(Contiguous(run.got.ids));
  // Generation went on; resume from resume_from finishes the stream exactly.
  client::SseClient c;
  ASSERT_OK(c.Connect(srv.port()));
  ASSERT_TRUE(c.Get("/v1/streams/" + run.id + "/events", std::to_string(run.resume_from)).ok());
  ASSERT_TRUE(c.ReadEvents().ok());
  Absorb(c.result().events, &run.got);
  EXPECT_TRUE(Contiguous(run.got.ids));
  EXPECT_EQ(run.got.finish_reason, "length");
  EXPECT_EQ(run.got.tokens, LoggedTokens(srv, run.id));
  srv.WaitIdle(8000);
}

TEST(Streams, PauseProducerStopsGenerationForASlowReader) {
  AppServer srv({"--mock-tokens-per-s", "20000", "--subscriber-lag", "64", "--max-output-bytes",
                 "8192", "--socket-send-buffer-bytes", "4096"});
  client::SseOptions o;
  o.http.rcvbuf_bytes = 4096;
  o.stop_after = StopOnceAfter(1);
  client::SseClient c(o);
  ASSERT_OK(c.Connect(srv.port()));
  ASSERT_TRUE(c.Post("/v1/stream", R"({"prompt":"slow","max_new_tokens":6000,"policy":"pause_producer"})").ok());
  std::string id(HeaderOf(c.result().head, "X-Stream-Id"));
  ASSERT_TRUE(c.ReadEvents().ok());
  ASSERT_TRUE(WaitUntil([&] {
    json::Value status = srv.CallJson("GET", "/v1/streams/" + id);
    const json::Value* state = status.Find("state");
    return state != nullptr && state->as_string() == "paused";
  }));
  // Socket buffers fill in steps (the kernel's windows grow), so the producer
  // may pause and resume a few times; once everything is full it must stay
  // paused with its count frozen.
  size_t produced = 0;
  ASSERT_TRUE(WaitUntil([&] {
    size_t before = srv.Emissions(id).Find("tokens")->items().size();
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    produced = srv.Emissions(id).Find("tokens")->items().size();
    json::Value status = srv.CallJson("GET", "/v1/streams/" + id);
    const json::Value* state = status.Find("state");
    return before == produced && state != nullptr && state->as_string() == "paused";
  }));
  EXPECT_LT(produced, 6000u);
  // Now read everything: it resumes and completes with nothing lost.
  client::WidenReceiveWindow(c.http().fd());
  c.mutable_result().stopped = false;
  ASSERT_TRUE(c.ReadEvents([](const sse::Event&) { return true; }).ok());
  Collected got;
  Absorb(c.result().events, &got);
  EXPECT_TRUE(Contiguous(got.ids));
  EXPECT_EQ(got.finish_reason, "length");
  EXPECT_EQ(got.tokens.size(), 6000u);
  srv.WaitIdle();
}

TEST(Streams, PauseThenCancelCancelsAStalledReader) {
  AppServer srv({"--mock-tokens-per-s", "20000", "--subscriber-lag", "64", "--max-output-bytes",
                 "8192", "--socket-send-buffer-bytes", "4096", "--stall-timeout-ms", "100",
                 "--retain-ms", "2000"});
  PolicyRun run = StallThenRead(srv, "pause_then_cancel", 600);
  EXPECT_TRUE(Contiguous(run.got.ids));
  EXPECT_EQ(run.got.finish_reason, "cancelled");
  json::Value log = srv.Emissions(run.id);
  EXPECT_EQ(log.Find("finish_reason")->as_string(), "cancelled");
  EXPECT_LT(log.Find("tokens")->items().size(), 6000u);
  srv.WaitIdle();
}

TEST(Streams, HeartbeatsArriveOnAnIdleStream) {
  AppServer srv({"--heartbeat-ms", "30", "--mock-ttft-ms", "400"});
  client::SseOptions o;
  o.stop_after = StopOnceAfter(2);  // start + first token (after 400 ms of silence)
  client::SseClient c(o);
  ASSERT_OK(c.Connect(srv.port()));
  ASSERT_TRUE(c.Post("/v1/stream", R"({"prompt":"x","max_new_tokens":2})").ok());
  ASSERT_TRUE(c.ReadEvents().ok());
  EXPECT_GE(c.result().comments.size(), 3u);
  for (const auto& cm : c.result().comments) EXPECT_EQ(cm, "ping");
  c.mutable_result().stopped = false;
  ASSERT_TRUE(c.ReadEvents().ok());
  srv.WaitIdle();
}

TEST(Streams, ShutdownMidStreamSendsShuttingDownAndExits) {
  AppServer srv({"--mock-tokens-per-s", "50", "--drain-ms", "2000"});
  client::SseOptions o;
  o.stop_after = StopOnceAfter(3);
  client::SseClient c(o);
  ASSERT_OK(c.Connect(srv.port()));
  ASSERT_TRUE(c.Post("/v1/stream", R"({"prompt":"x","max_new_tokens":1000})").ok());
  ASSERT_TRUE(c.ReadEvents().ok());
  std::thread stopper([&] { EXPECT_LT(srv.StopAndTimeMs(), 2000); });
  c.mutable_result().stopped = false;
  c.mutable_result().events.clear();
  ASSERT_TRUE(c.ReadEvents([](const sse::Event&) { return true; }).ok());
  EXPECT_TRUE(c.result().ended);
  c.http().Close();  // like a client at the end of a response: the server need not linger
  stopper.join();
  std::string type;
  uint64_t resume_from = 0;
  Collected got;
  Absorb(c.result().events, &got, &type, &resume_from);
  EXPECT_EQ(type, "shutting_down");
  EXPECT_GE(resume_from, 3u);
  ASSERT_FALSE(c.result().events.empty());
  const sse::Event& last = c.result().events.back();
  EXPECT_EQ(last.type, "error");
  EXPECT_TRUE(ParseJson(last.data).Find("retryable")->as_bool());
}

TEST(Streams, RefusalsComeBeforeTheFirstByte) {
  AppServer srv({"--max-streams", "2", "--mock-tokens-per-s", "20", "--api-key", "k3y"});
  auto call = [&](const std::string& body, std::vector<std::pair<std::string, std::string>> h =
                                               {{"Authorization", "Bearer k3y"}}) {
    return srv.Call("POST", "/v1/stream", body, h);
  };
  EXPECT_EQ(srv.Call("POST", "/v1/stream", R"({"prompt":"x"})").head.status, 401);
  EXPECT_EQ(call(R"({"prompt":"x"})", {{"Authorization", "Bearer nope"}}).head.status, 401);
  client::Response r = call(R"({"prompt": "x",})");
  EXPECT_EQ(r.head.status, 400);
  json::Value e = ParseJson(r.body).Find("error") ? *ParseJson(r.body).Find("error") : json::Value();
  EXPECT_EQ(e.Find("type")->as_string(), "invalid_json");
  EXPECT_EQ(e.Find("offset")->as_int(), 15);  // the '}' where a member name must follow
  EXPECT_EQ(call(R"({"prompt":"x","bogus":1})").head.status, 400);
  EXPECT_EQ(call(R"({"prompt":"x","max_new_tokens":"5"})").head.status, 400);
  EXPECT_EQ(call(R"({"prompt":"x","max_new_tokens":0})").head.status, 422);
  EXPECT_EQ(call(R"({"prompt":"x","policy":"fastest"})").head.status, 422);
  EXPECT_EQ(call(R"({"prompt_tokens":[1,2,99999999]})").head.status, 422);
  EXPECT_EQ(call(R"({"max_new_tokens":3})").head.status, 400);
  // --max-stop-strings (4) and --max-stop-bytes (64).
  EXPECT_EQ(call(R"({"prompt":"x","stop":["a","b","c","d","e"]})").head.status, 422);
  EXPECT_EQ(call(std::string(R"({"prompt":"x","stop":")") + std::string(65, 's') + R"("})").head.status, 422);
  EXPECT_EQ(call(R"({"prompt":"x","stop":[""]})").head.status, 422);
  // The stream bound: two live streams, the third is refused with Retry-After.
  std::vector<std::string> ids;
  for (int i = 0; i < 2; i++) {
    client::Response ok = srv.Call("POST", "/v1/streams", R"({"prompt":"x","max_new_tokens":500})",
                                   {{"Authorization", "Bearer k3y"}});
    ASSERT_EQ(ok.head.status, 201);
    ids.push_back(ParseJson(ok.body).Find("stream")->as_string());
  }
  client::Response over = call(R"({"prompt":"x"})");
  EXPECT_EQ(over.head.status, 503);
  EXPECT_EQ(HeaderOf(over.head, "Retry-After"), "1");
  EXPECT_TRUE(ParseJson(over.body).Find("error")->Find("retryable")->as_bool());
  for (auto& id : ids) {
    EXPECT_EQ(srv.Call("DELETE", "/v1/streams/" + id, "", {{"Authorization", "Bearer k3y"}}).head.status, 204);
  }
  // Open endpoints stay open.
  EXPECT_EQ(srv.Call("GET", "/healthz").head.status, 200);
  EXPECT_EQ(srv.Call("GET", "/metrics").head.status, 200);
}

TEST(Streams, TokenizeAndDetokenize) {
  AppServer srv;
  int status = 0;
  json::Value t = srv.CallJson("POST", "/v1/tokenize", R"({"text":"Hello world"})", &status);
  ASSERT_EQ(status, 200);
  ASSERT_EQ(t.Find("tokens")->items().size(), 2u);
  EXPECT_EQ(t.Find("tokens")->items()[0].as_int(), 15496);
  EXPECT_EQ(t.Find("tokens")->items()[1].as_int(), 995);
  json::Value d = srv.CallJson("POST", "/v1/detokenize", R"({"tokens":[15496,995]})", &status);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(d.Find("text")->as_string(), "Hello world");
  srv.CallJson("POST", "/v1/detokenize", R"({"tokens":[50257]})", &status);
  EXPECT_EQ(status, 422);
}

}  // namespace
}  // namespace tw
