// GET /v1/ws against the real server (mock backend) over loopback with our
// own client: generation, resume after forced disconnects (exact against the
// mock's emission log, as for SSE), the resume window, cancel, several
// streams per connection and their bound, a slow reader under each policy,
// heartbeat + pong deadline, shutdown (1001), and handshake refusals.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>

#include <random>
#include <thread>

#include "app/app_fixture.h"
#include "support/metrics_text.h"
#include "support/ws_test_client.h"

namespace tw::ws {
namespace {

using testing::WsTestClient;
using tw::testing::AppServer;
using tw::testing::ParseJson;
using tw::testing::WaitUntil;
using Read = WsTestClient::Read;

// Everything one stream's messages told us.
struct Collected {
  std::vector<uint64_t> seqs;
  std::vector<int64_t> tokens;
  std::string finish_reason;
  bool done = false;
  std::vector<json::Value> errors;  // {"type":"error",…} messages without seq
  bool cancelled = false;
};

// Reads one text message as JSON (fails the test on anything else).
bool ReadJson(WsTestClient& c, json::Value* v, int timeout_ms = 5000) {
  WsTestClient::Frame f;
  Read r = c.ReadMessage(&f, timeout_ms);
  if (r != Read::kFrame || f.opcode != Opcode::kText) return false;
  *v = ParseJson(f.payload);
  return true;
}

// Adds one message to the stream's record. Returns false if it was not
// about `id` (when id is non-empty).
void Absorb(const json::Value& m, Collected* c) {
  std::string type = m.Find("type")->as_string();
  if (m.Find("seq") == nullptr) {
    if (type == "cancelled") c->cancelled = true;
    if (type == "error") c->errors.push_back(m);
    return;
  }
  c->seqs.push_back(static_cast<uint64_t>(m.Find("seq")->as_int()));
  if (type == "token") c->tokens.push_back(m.Find("token")->as_int());
  if (type == "done") {
    c->done = true;
    c->finish_reason = m.Find("finish_reason")->as_string();
  }
}

bool Contiguous(const std::vector<uint64_t>& s) {
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] != i + 1) return false;
  }
  return true;
}

std::vector<int64_t> LoggedTokens(AppServer& srv, const std::string& id) {
  std::vector<int64_t> out;
  json::Value log = srv.Emissions(id);  // named: the loop below reads into it
  for (const auto& t : log.Find("tokens")->items()) out.push_back(t.as_int());
  return out;
}

// Sends generate and returns the stream id from the start event.
std::string Generate(WsTestClient& c, const std::string& fields, Collected* got) {
  EXPECT_TRUE(c.SendText(R"({"op":"generate",)" + fields + "}"));
  json::Value m;
  if (!ReadJson(c, &m)) return "";
  EXPECT_EQ(m.Find("type")->as_string(), "start") << json::Serialize(m);
  if (m.Find("stream") == nullptr) return "";
  Absorb(m, got);
  return m.Find("stream")->as_string();
}

void ReadUntilDone(WsTestClient& c, Collected* got) {
  json::Value m;
  while (!got->done && ReadJson(c, &m)) Absorb(m, got);
}

TEST(WsSession, GenerateMatchesTheEmissionLogAndSse) {
  AppServer srv;
  WsTestClient c;
  ASSERT_TRUE(c.Connect(srv.port(), "/v1/ws").ok());
  Collected got;
  std::string id = Generate(c, R"("prompt":"The capital of France is","max_new_tokens":30,"seed":7)", &got);
  ASSERT_FALSE(id.empty());
  json::Value m;
  while (!got.done) {
    ASSERT_TRUE(ReadJson(c, &m));
    EXPECT_EQ(m.Find("stream")->as_string(), id);
    if (m.Find("type")->as_string() == "token") {
      EXPECT_NE(m.Find("text"), nullptr);
      EXPECT_NE(m.Find("index"), nullptr);
    }
    Absorb(m, &got);
  }
  EXPECT_TRUE(Contiguous(got.seqs));
  EXPECT_EQ(got.seqs.size(), 32u);  // start + 30 tokens + done
  EXPECT_EQ(got.finish_reason, "length");
  EXPECT_EQ(got.tokens, LoggedTokens(srv, id));
  // The same request over SSE's /v1/generate gives the same tokens (seeded).
  json::Value g = srv.CallJson("POST", "/v1/generate", R"({"prompt":"The capital of France is","max_new_tokens":30,"seed":7})");
  std::vector<int64_t> sse_tokens;
  for (const auto& t : g.Find("tokens")->items()) sse_tokens.push_back(t.as_int());
  EXPECT_EQ(got.tokens, sse_tokens);
  bool eof = false;
  EXPECT_EQ(c.CloseHandshake(1000, &eof), 1000);
  EXPECT_TRUE(eof);
  srv.WaitIdle();
}

TEST(WsSession, ResumeAfterForcedDisconnectsIsExact) {
  AppServer srv({"--linger-ms", "2000", "--mock-tokens-per-s", "2000"});
  std::mt19937 rng(6455);
  for (int n = 0; n < 8; n++) {
    Collected got;
    std::string id;
    int disconnects = 0;
    while (!got.done) {
      WsTestClient c;
      ASSERT_TRUE(c.Connect(srv.port(), "/v1/ws").ok());
      if (id.empty()) {
        id = Generate(c, R"("prompt":"resume me","max_new_tokens":80,"seed":)" + std::to_string(n), &got);
        ASSERT_FALSE(id.empty());
      } else {
        uint64_t after = got.seqs.empty() ? 0 : got.seqs.back();
        ASSERT_TRUE(c.SendText(R"({"op":"resume","stream":")" + id + R"(","after":)" + std::to_string(after) + "}"));
      }
      uint32_t take = disconnects >= 6 ? 1u << 30 : 1 + rng() % 15;
      json::Value m;
      for (uint32_t k = 0; k < take && !got.done; k++) {
        ASSERT_TRUE(ReadJson(c, &m));
        ASSERT_EQ(m.Find("stream")->as_string(), id);
        Absorb(m, &got);
      }
      ASSERT_TRUE(got.errors.empty()) << json::Serialize(got.errors[0]);
      if (!got.done) {
        disconnects++;
        if (rng() % 2) c.DisconnectWithReset(); else c.Disconnect();  // no close handshake
      }
    }
    EXPECT_TRUE(Contiguous(got.seqs)) << "stream " << n;
    EXPECT_EQ(got.seqs.size(), 82u);
    EXPECT_EQ(got.tokens, LoggedTokens(srv, id)) << "stream " << n;
  }
  srv.WaitIdle();
}

TEST(WsSession, ResumeBeyondTheWindowIsAnErrorWithOldestAvailable) {
  AppServer srv({"--resume-window", "8", "--subscriber-lag", "4"});
  WsTestClient c;
  ASSERT_TRUE(c.Connect(srv.port(), "/v1/ws").ok());
  Collected got;
  std::string id = Generate(c, R"("prompt":"x","max_new_tokens":20)", &got);
  ReadUntilDone(c, &got);
  ASSERT_EQ(got.seqs.size(), 22u);
  ASSERT_TRUE(c.SendText(R"({"op":"resume","stream":")" + id + R"(","after":3})"));
  json::Value m;
  ASSERT_TRUE(ReadJson(c, &m));
  EXPECT_EQ(m.Find("type")->as_string(), "error");
  EXPECT_EQ(m.Find("seq"), nullptr);
  EXPECT_EQ(m.Find("stream")->as_string(), id);
  const json::Value* e = m.Find("error");
  EXPECT_EQ(e->Find("type")->as_string(), "resume_window_exceeded");
  EXPECT_FALSE(e->Find("retryable")->as_bool());
  int64_t oldest = e->Find("oldest_available")->as_int();
  EXPECT_EQ(oldest, 22 - 8 + 1);
  // Exactly at the window edge: the 8 events held, no hole.
  ASSERT_TRUE(c.SendText(R"({"op":"resume","stream":")" + id + R"(","after":)" + std::to_string(oldest - 1) + "}"));
  Collected again;
  ReadUntilDone(c, &again);
  ASSERT_EQ(again.seqs.size(), 8u);
  EXPECT_EQ(again.seqs.front(), static_cast<uint64_t>(oldest));
  EXPECT_EQ(again.seqs.back(), 22u);
  // Unknown stream.
  ASSERT_TRUE(c.SendText(R"({"op":"resume","stream":"s_nope","after":0})"));
  ASSERT_TRUE(ReadJson(c, &m));
  EXPECT_EQ(m.Find("error")->Find("type")->as_string(), "not_found");
  srv.WaitIdle();
}

// A resume at the terminal event of a finished stream is answered at once
// (there is nothing to send: an error naming it, op "resume"), and an id past
// the stream's last event is refused naming the last event; the connection
// stays usable.
TEST(WsSession, ResumeAtTheTerminalEventOrPastTheHeadIsAnsweredAtOnce) {
  AppServer srv;
  WsTestClient c;
  ASSERT_TRUE(c.Connect(srv.port(), "/v1/ws").ok());
  Collected got;
  std::string id = Generate(c, R"("prompt":"x","max_new_tokens":5)", &got);
  ReadUntilDone(c, &got);
  ASSERT_EQ(got.seqs.size(), 7u);
  for (std::string after : {"7", "8", "9223372036854775807"}) {
    ASSERT_TRUE(c.SendText(R"({"op":"resume","stream":")" + id + R"(","after":)" + after + "}"));
    json::Value m;
    ASSERT_TRUE(ReadJson(c, &m)) << after;
    EXPECT_EQ(m.Find("type")->as_string(), "error");
    EXPECT_EQ(m.Find("op")->as_string(), "resume");
    EXPECT_EQ(m.Find("stream")->as_string(), id);
    const json::Value* e = m.Find("error");
    EXPECT_EQ(e->Find("type")->as_string(), "invalid_request");
    EXPECT_FALSE(e->Find("retryable")->as_bool());
    const std::string& msg = e->Find("message")->as_string();
    if (after == "7") {
      EXPECT_NE(msg.find("no event follows event 7"), std::string::npos) << msg;
    } else {
      EXPECT_NE(msg.find("finished with event 7"), std::string::npos) << msg;
    }
  }
  // A key given twice is refused naming it.
  ASSERT_TRUE(c.SendText(R"({"op":"resume","stream":")" + id + R"(","after":1,"after":6})"));
  json::Value dup;
  ASSERT_TRUE(ReadJson(c, &dup));
  EXPECT_EQ(dup.Find("error")->Find("type")->as_string(), "invalid_request");
  EXPECT_EQ(dup.Find("error")->Find("param")->as_string(), "after") << json::Serialize(dup);
  // Still usable: a resume one before the end gets exactly the done event.
  ASSERT_TRUE(c.SendText(R"({"op":"resume","stream":")" + id + R"(","after":6})"));
  Collected tail;
  ReadUntilDone(c, &tail);
  EXPECT_EQ(tail.seqs, std::vector<uint64_t>{7});
  srv.WaitIdle();
}

// A client that floods pings (each answered with a pong) or bad messages
// (each answered with an error) and never reads: the server stops reading
// once its output for the connection is over --max-output-bytes, so the
// client's sends block after about that much, instead of the server queueing
// every answer. When the client reads, every answer arrives.
void FloodWithoutReading(bool pings) {
  AppServer srv({"--max-output-bytes", "262144", "--socket-send-buffer-bytes", "4096"});
  WsTestClient c;
  c.rcvbuf_bytes = 4096;
  ASSERT_TRUE(c.Connect(srv.port(), "/v1/ws").ok());
  int sndbuf = 64 << 10;  // no autotuning: the kernel holds little of what we send
  ::setsockopt(c.fd(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  const std::string payload(100, 'p');
  const std::string frame = pings ? c.MaskedFrame(0x89, payload) : c.MaskedFrame(0x81, R"({"op":"nope"})");
  // 16 MB of pings, 4 MB of bad messages (each answered with ~150 bytes).
  const size_t kFrames = ((pings ? 16u : 4u) << 20) / frame.size();
  std::string all;
  all.reserve(kFrames * frame.size());
  for (size_t i = 0; i < kFrames; i++) all += frame;
  // Send without blocking until the server stops taking input: no progress
  // for a whole second (with the bound, it never resumes while we do not read).
  size_t sent = 0;
  while (sent < all.size()) {
    ssize_t n = ::send(c.fd(), all.data() + sent, all.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    ASSERT_TRUE(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) << std::strerror(errno);
    pollfd p{c.fd(), POLLOUT, 0};
    if (::poll(&p, 1, 1000) == 0) break;
  }
  // Without the bound the server read all 16 MB and queued an answer for
  // each. With it, it read about the output bound's worth (pongs are as
  // large as pings; an error reply is larger than its message) plus one read
  // chunk; the rest of what we sent sits in the kernel's buffers.
  std::string metrics = srv.Call("GET", "/metrics").body;
  const std::string name = "\ntokenwire_http_received_bytes_total ";
  size_t at = metrics.find(name);
  ASSERT_NE(at, std::string::npos);
  double received = std::atof(metrics.c_str() + at + name.size());
  EXPECT_LT(received, 1.0 * (1 << 20)) << "the server kept reading a client that does not read";
  EXPECT_LT(sent, all.size());
  // Now read: the rest goes out as the server drains, and every frame sent
  // is answered, in order.
  std::thread rest([&] { EXPECT_TRUE(c.SendRaw(std::string_view(all).substr(sent))); });
  size_t answers = 0;
  WsTestClient::Frame f;
  while (answers < kFrames) {
    Read r = pings ? c.ReadFrame(&f) : c.ReadMessage(&f);
    if (r != Read::kFrame) break;
    if (pings && f.opcode != Opcode::kPong) continue;
    if (!pings) {
      ASSERT_EQ(f.opcode, Opcode::kText);
      if (answers == 0) {
        EXPECT_NE(f.payload.find("\"error\""), std::string::npos) << f.payload;
      }
    } else {
      ASSERT_EQ(f.payload, payload);
    }
    answers++;
  }
  rest.join();
  EXPECT_EQ(answers, kFrames);
  c.Disconnect();
  srv.WaitIdle();
}

TEST(WsSession, APingFloodThatIsNeverReadIsBoundedByTheOutput) { FloodWithoutReading(true); }
TEST(WsSession, ABadMessageFloodThatIsNeverReadIsBoundedByTheOutput) { FloodWithoutReading(false); }

TEST(WsSession, CancelIsAnsweredOnlyAfterTheProducerExited) {
  AppServer srv({"--mock-tokens-per-s", "20"});
  WsTestClient c;
  ASSERT_TRUE(c.Connect(srv.port(), "/v1/ws").ok());
  Collected got;
  std::string id = Generate(c, R"("prompt":"x","max_new_tokens":1000)", &got);
  ASSERT_FALSE(id.empty());
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.SendText(R"({"op":"cancel","stream":")" + id + R"("})"));
  json::Value m;
  while (!got.cancelled) {
    ASSERT_TRUE(ReadJson(c, &m));
    Absorb(m, &got);
    if (got.cancelled) {
      EXPECT_EQ(m.Find("stream")->as_string(), id);
      // The producer had exited when "cancelled" was sent.
      json::Value log = srv.Emissions(id);
      EXPECT_TRUE(log.Find("exited")->as_bool());
      EXPECT_EQ(log.Find("finish_reason")->as_string(), "cancelled");
    }
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  // Far below the 50 s the 1000 tokens take at 20/s (slack for a loaded machine).
  EXPECT_LT(ms, 5000);
  // The stream's own terminal event says cancelled too (before or after).
  if (!got.done) ReadUntilDone(c, &got);
  EXPECT_EQ(got.finish_reason, "cancelled");
  EXPECT_TRUE(Contiguous(got.seqs));
  ASSERT_TRUE(c.SendText(R"({"op":"cancel","stream":"s_nope"})"));
  ASSERT_TRUE(ReadJson(c, &m));
  EXPECT_EQ(m.Find("error")->Find("type")->as_string(), "not_found");
  srv.WaitIdle();
  // Counted (and logged) as the WebSocket's cancel, not as a DELETE.
  const std::string metrics = tw::testing::FetchMetrics(srv.port());
  EXPECT_NE(metrics.find("tokenwire_ws_cancels_total 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("tokenwire_delete_cancels_total 0\n"), std::string::npos) << metrics;
}

TEST(WsSession, SeveralStreamsPerConnectionAreBounded) {
  AppServer srv({"--ws-max-streams-per-connection", "2", "--mock-tokens-per-s", "500"});
  WsTestClient c;
  ASSERT_TRUE(c.Connect(srv.port(), "/v1/ws").ok());
  ASSERT_TRUE(c.SendText(R"({"op":"generate","prompt":"a","max_new_tokens":40,"seed":1})"));
  ASSERT_TRUE(c.SendText(R"({"op":"generate","prompt":"b","max_new_tokens":40,"seed":2})"));
  ASSERT_TRUE(c.SendText(R"({"op":"generate","prompt":"c","max_new_tokens":40,"seed":3})"));
  std::map<std::string, Collected> streams;
  int refused = 0, done = 0;
  json::Value m;
  while (done < 2) {
    ASSERT_TRUE(ReadJson(c, &m));
    if (m.Find("seq") == nullptr) {
      ASSERT_EQ(m.Find("type")->as_string(), "error");
      EXPECT_EQ(m.Find("error")->Find("type")->as_string(), "too_many_streams");
      EXPECT_EQ(m.Find("op")->as_string(), "generate");
      refused++;
      continue;
    }
    Collected& s = streams[m.Find("stream")->as_string()];
    Absorb(m, &s);
    if (s.done) done++;
  }
  EXPECT_EQ(refused, 1);
  ASSERT_EQ(streams.size(), 2u);
  for (auto& [id, s] : streams) {
    EXPECT_TRUE(Contiguous(s.seqs));
    EXPECT_EQ(s.tokens, LoggedTokens(srv, id));
  }
  // Both finished: room again.
  Collected third;
  EXPECT_FALSE(Generate(c, R"("prompt":"c","max_new_tokens":3)", &third).empty());
  ReadUntilDone(c, &third);
  srv.WaitIdle();
}

TEST(WsSession, BadMessagesAreAnsweredAndBinaryCloses1003) {
  AppServer srv;
  WsTestClient c;
  ASSERT_TRUE(c.Connect(srv.port(), "/v1/ws").ok());
  json::Value m;
  ASSERT_TRUE(c.SendText("{\"op\":"));
  ASSERT_TRUE(ReadJson(c, &m));
  EXPECT_EQ(m.Find("error")->Find("type")->as_string(), "invalid_json");
  EXPECT_NE(m.Find("error")->Find("offset"), nullptr);
  ASSERT_TRUE(c.SendText(R"({"op":"dance"})"));
  ASSERT_TRUE(ReadJson(c, &m));
  EXPECT_EQ(m.Find("error")->Find("type")->as_string(), "invalid_request");
  ASSERT_TRUE(c.SendText(R"({"op":"generate","prompt":"x","max_new_tokens":-3})"));
  ASSERT_TRUE(ReadJson(c, &m));
  EXPECT_EQ(m.Find("error")->Find("type")->as_string(), "invalid_request");
  ASSERT_TRUE(c.SendText(R"({"op":"generate","prompt":"x","bogus":1})"));
  ASSERT_TRUE(ReadJson(c, &m));
  EXPECT_EQ(m.Find("error")->Find("type")->as_string(), "invalid_request");
  ASSERT_TRUE(c.SendBinary("{}"));
  WsTestClient::Frame f;
  ASSERT_EQ(c.ReadFrame(&f), Read::kFrame);
  EXPECT_EQ(f.opcode, Opcode::kClose);
  EXPECT_EQ(f.close_code(), 1003);
  srv.WaitIdle();
}

struct SlowRun {
  std::string id;
  Collected got;
};

// Generates a long stream on a client that does not read for `stall_ms`,
// then reads everything the server sends on that connection.
SlowRun StallThenRead(AppServer& srv, const std::string& policy, int stall_ms, WsTestClient& c) {
  SlowRun run;
  c.rcvbuf_bytes = 4096;
  EXPECT_TRUE(c.Connect(srv.port(), "/v1/ws").ok());
  run.id = Generate(c, R"("prompt":"slow","max_new_tokens":6000,"policy":")" + policy + "\"", &run.got);
  std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms));
  c.WidenReceiveWindow();  // the reader is back, at full speed
  json::Value m;
  while (!run.got.done && run.got.errors.empty() && ReadJson(c, &m)) Absorb(m, &run.got);
  return run;
}

const std::vector<std::string> kSlowFlags = {"--mock-tokens-per-s", "20000", "--subscriber-lag", "64",
                                             "--max-output-bytes", "8192", "--socket-send-buffer-bytes",
                                             "4096", "--linger-ms", "5000", "--resume-window", "8000"};

std::vector<std::string> SlowFlags(const std::string& retain_ms) {
  std::vector<std::string> f = kSlowFlags;
  f.insert(f.end(), {"--retain-ms", retain_ms});
  return f;
}

TEST(WsSession, DropSlowDetachesTheSlowStreamWhichCanResume) {
  AppServer srv(SlowFlags("2500"));  // generation ends during the stall: retained for the resume
  WsTestClient c;
  SlowRun run = StallThenRead(srv, "drop_slow", 1500, c);
  ASSERT_EQ(run.got.errors.size(), 1u);
  const json::Value* e = run.got.errors[0].Find("error");
  EXPECT_EQ(e->Find("type")->as_string(), "slow_client");
  EXPECT_EQ(run.got.errors[0].Find("stream")->as_string(), run.id);
  uint64_t resume_from = static_cast<uint64_t>(e->Find("resume_from")->as_int());
  ASSERT_GT(resume_from, 0u);
  EXPECT_EQ(run.got.seqs.back(), resume_from);
  EXPECT_TRUE(Contiguous(run.got.seqs));
  EXPECT_FALSE(run.got.done);
  // The connection is still open: resume on it and finish exactly.
  run.got.errors.clear();
  ASSERT_TRUE(c.SendText(R"({"op":"resume","stream":")" + run.id + R"(","after":)" + std::to_string(resume_from) + "}"));
  ReadUntilDone(c, &run.got);
  EXPECT_TRUE(run.got.errors.empty());
  EXPECT_TRUE(Contiguous(run.got.seqs));
  EXPECT_EQ(run.got.finish_reason, "length");
  EXPECT_EQ(run.got.tokens, LoggedTokens(srv, run.id));
  srv.WaitIdle(8000);
}

TEST(WsSession, PauseProducerPausesForASlowReaderAndLosesNothing) {
  AppServer srv(SlowFlags("1500"));  // the retained stream must outlive the reader's backlog
  WsTestClient c;
  c.rcvbuf_bytes = 4096;
  ASSERT_TRUE(c.Connect(srv.port(), "/v1/ws").ok());
  Collected got;
  std::string id = Generate(c, R"("prompt":"slow","max_new_tokens":6000,"policy":"pause_producer")", &got);
  auto paused = [&] {
    json::Value st = srv.CallJson("GET", "/v1/streams/" + id);  // named: Find points into it
    const json::Value* state = st.Find("state");
    return state != nullptr && state->as_string() == "paused";
  };
  ASSERT_TRUE(WaitUntil(paused));
  size_t produced = 0;
  ASSERT_TRUE(WaitUntil([&] {
    size_t before = srv.Emissions(id).Find("tokens")->items().size();
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    produced = srv.Emissions(id).Find("tokens")->items().size();
    return before == produced && paused();
  }));
  EXPECT_LT(produced, 6000u);
  c.WidenReceiveWindow();  // the reader is back, at full speed
  ReadUntilDone(c, &got);
  EXPECT_TRUE(got.errors.empty());
  EXPECT_TRUE(Contiguous(got.seqs));
  EXPECT_EQ(got.tokens.size(), 6000u);
  EXPECT_EQ(got.tokens, LoggedTokens(srv, id));
  srv.WaitIdle(8000);
}

TEST(WsSession, PauseThenCancelCancelsAStalledReader) {
  // Generous retention: on a loaded machine the reader may come back late.
  std::vector<std::string> flags = SlowFlags("5000");
  flags.insert(flags.end(), {"--stall-timeout-ms", "100"});
  AppServer srv(flags);
  WsTestClient c;
  SlowRun run = StallThenRead(srv, "pause_then_cancel", 600, c);
  EXPECT_TRUE(Contiguous(run.got.seqs));
  EXPECT_EQ(run.got.finish_reason, "cancelled")
      << run.got.seqs.size() << " events; errors: "
      << (run.got.errors.empty() ? std::string("none") : json::Serialize(run.got.errors[0]));
  json::Value log = srv.Emissions(run.id);
  EXPECT_EQ(log.Find("finish_reason")->as_string(), "cancelled");
  EXPECT_LT(log.Find("tokens")->items().size(), 6000u);
  srv.WaitIdle(12000);
}

TEST(WsSession, HeartbeatPingsAndThePongDeadline) {
  AppServer srv({"--heartbeat-ms", "40", "--ws-pong-timeout-ms", "150"});
  WsTestClient c;
  ASSERT_TRUE(c.Connect(srv.port(), "/v1/ws").ok());
  // Answer pings for a while: the connection stays up.
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  int pings = 0;
  WsTestClient::Frame f;
  while (std::chrono::steady_clock::now() < until) {
    Read r = c.ReadFrame(&f, 200);
    ASSERT_EQ(r, Read::kFrame);
    ASSERT_EQ(f.opcode, Opcode::kPing);
    pings++;
    ASSERT_TRUE(c.SendFrame(0x8A, f.payload));
  }
  EXPECT_GE(pings, 5);
  // Stop answering: closed with 1001 within heartbeat + pong timeout.
  auto t0 = std::chrono::steady_clock::now();
  uint16_t code = 0;
  for (;;) {
    Read r = c.ReadFrame(&f, 2000);
    ASSERT_EQ(r, Read::kFrame);
    if (f.opcode == Opcode::kClose) {
      code = f.close_code();
      break;
    }
    ASSERT_EQ(f.opcode, Opcode::kPing);
  }
  EXPECT_EQ(code, 1001);
  EXPECT_TRUE(c.WaitEof(1000));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(ms, 40 + 150 + 3000);  // heartbeat + pong timeout, slack for a loaded machine
  srv.WaitIdle();
}

TEST(WsSession, ShutdownSendsShuttingDownThenClose1001) {
  AppServer srv({"--mock-tokens-per-s", "50", "--drain-ms", "3000"});
  WsTestClient c;
  ASSERT_TRUE(c.Connect(srv.port(), "/v1/ws").ok());
  Collected got;
  std::string id = Generate(c, R"("prompt":"x","max_new_tokens":1000)", &got);
  json::Value m;
  while (got.seqs.size() < 3) {
    ASSERT_TRUE(ReadJson(c, &m));
    Absorb(m, &got);
  }
  std::thread stopper([&] { EXPECT_LT(srv.StopAndTimeMs(), 2000); });
  WsTestClient::Frame f;
  uint16_t code = 0;
  for (;;) {
    ASSERT_EQ(c.ReadMessage(&f), Read::kFrame);
    if (f.opcode == Opcode::kClose) {
      code = f.close_code();
      break;
    }
    Absorb(ParseJson(f.payload), &got);
  }
  EXPECT_EQ(code, 1001);
  ASSERT_TRUE(c.SendClose(1001));  // the client answers; the server closes TCP
  EXPECT_TRUE(c.WaitEof());
  c.Disconnect();  // like a client after the server's FIN: the server need not linger
  stopper.join();
  EXPECT_TRUE(Contiguous(got.seqs));
  ASSERT_EQ(got.errors.size(), 1u);
  const json::Value* e = got.errors[0].Find("error");
  EXPECT_EQ(e->Find("type")->as_string(), "shutting_down");
  EXPECT_TRUE(e->Find("retryable")->as_bool());
  EXPECT_EQ(static_cast<uint64_t>(e->Find("resume_from")->as_int()), got.seqs.back());
}

TEST(WsSession, HandshakeRefusalsOverTheWire) {
  AppServer srv({"--api-key", "k3y", "--ws-allowed-origins", "http://good.example, http://127.0.0.1:8080"});
  const std::vector<std::pair<std::string, std::string>> auth = {{"Authorization", "Bearer k3y"}};
  {
    WsTestClient c;
    int status = 0;
    EXPECT_FALSE(c.Connect(srv.port(), "/v1/ws", {}, &status).ok());
    EXPECT_EQ(status, 401);
  }
  {
    WsTestClient c;
    int status = 0;
    std::vector<std::pair<std::string, std::string>> h = auth;
    h.emplace_back("Origin", "http://evil.example");
    EXPECT_FALSE(c.Connect(srv.port(), "/v1/ws", h, &status).ok());
    EXPECT_EQ(status, 403);
  }
  {
    WsTestClient c;
    std::vector<std::pair<std::string, std::string>> h = auth;
    h.emplace_back("Origin", "http://good.example");
    EXPECT_TRUE(c.Connect(srv.port(), "/v1/ws", h).ok());
  }
  // Version 8: 426 with Sec-WebSocket-Version: 13 (a raw request).
  client::Response r = srv.Call("GET", "/v1/ws", "",
                                {{"Authorization", "Bearer k3y"}, {"Upgrade", "websocket"},
                                 {"Connection", "Upgrade"}, {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                                 {"Sec-WebSocket-Version", "8"}});
  EXPECT_EQ(r.head.status, 426);
  EXPECT_NE(r.body.find("\"type\":\"invalid_request\""), std::string::npos) << r.body;
  const std::string* v = r.head.Find("Sec-WebSocket-Version");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(*v, "13");
  // The Origin refusal's body: our envelope, type forbidden.
  r = srv.Call("GET", "/v1/ws", "",
               {{"Authorization", "Bearer k3y"}, {"Upgrade", "websocket"}, {"Connection", "Upgrade"},
                {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}, {"Sec-WebSocket-Version", "13"},
                {"Origin", "http://evil.example"}});
  EXPECT_EQ(r.head.status, 403);
  EXPECT_NE(r.body.find("\"type\":\"forbidden\",\"message\":\"WebSocket handshake"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"retryable\":false"), std::string::npos) << r.body;
  // Not an upgrade at all.
  EXPECT_EQ(srv.Call("GET", "/v1/ws", "", {{"Authorization", "Bearer k3y"}}).head.status, 400);
  // The lab echo endpoint exists only with --lab (the fixture passes it).
  srv.WaitIdle();
}

TEST(WsSession, EchoEndpointIsOffWithoutLab) {
  // A server without --lab: /lab/ws-echo is 404. (AppServer always adds
  // --lab, so this runs the App directly.)
  std::vector<std::string> args = {"tokenwire", "serve", "--port", "0", "--backend", "mock"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  app::Config cfg;
  ASSERT_TRUE(app::ParseServeFlags(static_cast<int>(argv.size()), argv.data(), 2, &cfg).ok());
  app::App app(cfg);
  ASSERT_TRUE(app.Init(false).ok());
  Status run;
  std::thread t([&] { run = app.Run(); });
  WsTestClient c;
  int status = 0;
  EXPECT_FALSE(c.Connect(static_cast<uint16_t>(app.port()), "/lab/ws-echo", {}, &status).ok());
  EXPECT_EQ(status, 404);
  WsTestClient ok;
  EXPECT_TRUE(ok.Connect(static_cast<uint16_t>(app.port()), "/v1/ws").ok());
  ok.Disconnect();
  c.Disconnect();
  app.RequestShutdown();
  t.join();
}

}  // namespace
}  // namespace tw::ws
