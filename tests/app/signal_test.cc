// SIGTERM sent to the real binary (to the process, as `kill` and Kubernetes
// send it, so the kernel may pick any thread) drains: a client in the middle
// of an SSE stream gets its `shutting_down` error event with resume_from, a
// WebSocket client the same error message and then a 1001 close, and the
// process exits 0. Signals are blocked before any thread starts (App::Init);
// before that fix the signal could land on a backend thread, whose default
// action killed the process at once. While it drains the server still
// answers: /readyz 503, /healthz 200, new streams 503 shutting_down.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "client/http_client.h"
#include "client/sse_client.h"
#include "json/json.h"
#include "support/server_child.h"
#include "support/ws_test_client.h"

namespace tw {
namespace {

using ws::testing::WsTestClient;

using testing::ServerChild;

// `clients` streams of `tokens` tokens on the server; once the last client
// has its start event, SIGTERM to the process. Every stream still running
// ends with a shutting_down error event (resume_from = the last event the
// client got); one that finished first ends with done; at least
// `min_drained` were cut by the shutdown. The process exits 0 within
// --drain-ms (not killed by the signal).
void DrainOnSignal(const std::vector<std::string>& flags, int clients_n, int tokens, int min_drained,
                   int sig = SIGTERM) {
  ServerChild server(flags);
  ASSERT_NE(server.port(), 0) << "the server did not start";
  std::vector<client::SseClient> clients(static_cast<size_t>(clients_n));
  const std::string body = R"({"prompt":"Hello","max_new_tokens":)" + std::to_string(tokens) + "}";
  for (auto& c : clients) {
    ASSERT_TRUE(c.Connect(server.port()).ok());
    ASSERT_TRUE(c.Post("/v1/stream", body).ok());
    ASSERT_TRUE(c.is_event_stream());
  }
  ASSERT_TRUE(clients.back().ReadEvents([](const sse::Event& e) { return e.type != "start"; }).ok());
  // A WebSocket stream too, read up to its start message.
  WsTestClient ws;
  ASSERT_TRUE(ws.Connect(server.port(), "/v1/ws").ok());
  ASSERT_TRUE(ws.SendText(R"({"op":"generate",)" + body.substr(1)));
  WsTestClient::Frame f;
  ASSERT_EQ(ws.ReadMessage(&f), WsTestClient::Read::kFrame);
  json::Value start;
  ASSERT_TRUE(json::Parse(f.payload, &start).ok()) << f.payload;
  ASSERT_EQ(start.Find("type")->as_string(), "start") << f.payload;
  ASSERT_EQ(::kill(server.pid(), sig), 0);
  // The WebSocket: its events, then shutting_down naming the last seq it
  // got (or done, if it finished first), then the 1001 close.
  int64_t ws_last_seq = start.Find("seq")->as_int();
  std::string ws_end;
  for (;;) {
    ASSERT_EQ(ws.ReadMessage(&f), WsTestClient::Read::kFrame) << "no close from the server";
    if (f.opcode == ws::Opcode::kClose) break;
    json::Value m;
    ASSERT_TRUE(json::Parse(f.payload, &m).ok()) << f.payload;
    ws_end = m.Find("type")->as_string();
    if (ws_end == "error") {
      EXPECT_EQ(m.Find("error")->Find("type")->as_string(), "shutting_down") << f.payload;
      EXPECT_EQ(m.Find("error")->Find("resume_from")->as_int(), ws_last_seq) << f.payload;
    } else if (m.Find("seq") != nullptr) {
      ws_last_seq = m.Find("seq")->as_int();
    }
  }
  EXPECT_EQ(f.close_code(), 1001);
  EXPECT_TRUE(ws_end == "error" || ws_end == "done") << ws_end;
  ASSERT_TRUE(ws.SendClose(1001));
  int drained = 0;
  for (auto& c : clients) {
    std::string last_type, last_data;
    int64_t last_id = 0;
    c.mutable_result().stopped = false;
    Status st = c.ReadEvents([&](const sse::Event& e) {
      last_type = e.type;
      last_data = e.data;
      if (!e.id.empty()) last_id = std::atoll(e.id.c_str());
      return true;
    });
    EXPECT_TRUE(st.ok()) << st.message();
    if (last_type == "done") continue;  // it finished before the signal
    EXPECT_EQ(last_type, "error") << "the stream ended without its shutting_down event";
    json::Value v;
    ASSERT_TRUE(json::Parse(last_data, &v).ok()) << last_data;
    EXPECT_EQ(v.Find("type")->as_string(), "shutting_down");
    EXPECT_EQ(v.Find("resume_from")->as_int(), last_id) << "resume_from names the last event received";
    drained++;
  }
  EXPECT_GE(drained, min_drained);
  int signal = 0;
  EXPECT_EQ(server.Wait(5000, &signal), 0) << "killed by signal " << signal;
}

// While draining, the server answers probes and refuses new work: a load
// balancer sees /readyz fail (and /healthz, liveness, still pass) and takes
// the instance out before it exits. A WebSocket client that holds back its
// close reply keeps the drain open (up to the close timeout) while the
// probes run on new connections.
TEST(Signals, ReadinessFailsWhileDrainingAndHealthStaysUp) {
  ServerChild server({"--backend", "mock", "--mock-tokens-per-s", "50", "--mock-ttft-ms", "0", "--drain-ms",
                      "10000"});
  ASSERT_NE(server.port(), 0) << "the server did not start";
  auto get = [&](const std::string& method, const std::string& target, const std::string& body) {
    client::HttpClient c;
    client::Response resp;
    EXPECT_TRUE(c.Connect(server.port()).ok());
    client::Request req;
    req.method = method;
    req.target = target;
    req.body = body;
    Status st = c.RoundTrip(req, &resp);
    EXPECT_TRUE(st.ok()) << target << ": " << st.message();
    return resp;
  };
  EXPECT_EQ(get("GET", "/readyz", "").head.status, 200);
  WsTestClient ws;
  ASSERT_TRUE(ws.Connect(server.port(), "/v1/ws").ok());
  ASSERT_TRUE(ws.SendText(R"({"op":"generate","prompt":"x","max_new_tokens":100000})"));
  WsTestClient::Frame f;
  ASSERT_EQ(ws.ReadMessage(&f), WsTestClient::Read::kFrame);
  ASSERT_EQ(::kill(server.pid(), SIGTERM), 0);
  do {
    ASSERT_EQ(ws.ReadMessage(&f), WsTestClient::Read::kFrame);
  } while (f.opcode != ws::Opcode::kClose);
  // The close is not answered yet: the server is draining now.
  client::Response r = get("GET", "/readyz", "");
  EXPECT_EQ(r.head.status, 503);
  EXPECT_NE(r.body.find("\"shutting_down\""), std::string::npos) << r.body;
  const std::string* conn = r.head.Find("Connection");
  EXPECT_TRUE(conn != nullptr && *conn == "close");
  EXPECT_EQ(get("GET", "/healthz", "").head.status, 200);
  r = get("POST", "/v1/stream", R"({"prompt":"x","max_new_tokens":5})");
  EXPECT_EQ(r.head.status, 503);
  EXPECT_NE(r.body.find("\"shutting_down\""), std::string::npos) << r.body;
  ASSERT_TRUE(ws.SendClose(1001));
  int signal = 0;
  EXPECT_EQ(server.Wait(5000, &signal), 0) << "killed by signal " << signal;
}

TEST(Signals, SigtermToTheProcessDrainsTheMockBackend) {
  DrainOnSignal({"--backend", "mock", "--mock-tokens-per-s", "50", "--mock-ttft-ms", "0", "--max-new-tokens",
                  "100000", "--drain-ms", "3000"},
                 4, 100000, 4);
}

// The CPU backend has the engine thread and its pool's workers: the threads
// a process-directed signal used to land on. One sequence at a time and 48
// queued, so most are still waiting or running when the signal comes.
TEST(Signals, SigtermToTheProcessDrainsTheCpuBackend) {
  DrainOnSignal({"--backend", "cpu", "--threads", "2", "--max-batch", "1", "--max-waiting", "64", "--drain-ms",
                  "3000"},
                 48, 120, 1);
}

// HUP and QUIT drain like TERM (INT too: Ctrl-C). Before, their default
// action ended the process at once (status 129 for HUP), with no drain and
// no shutting_down event.
TEST(Signals, HupAndQuitDrainLikeTerm) {
  for (int sig : {SIGHUP, SIGQUIT, SIGINT}) {
    SCOPED_TRACE(sig);
    DrainOnSignal({"--backend", "mock", "--mock-tokens-per-s", "50", "--mock-ttft-ms", "0", "--max-new-tokens",
                   "100000", "--drain-ms", "3000"},
                  2, 100000, 2, sig);
  }
}

// USR1, USR2 and ALRM are logged and ignored: the stream in flight goes on,
// the server answers, and TERM still drains it afterwards.
TEST(Signals, Usr1Usr2AndAlrmAreLoggedAndIgnored) {
  ServerChild server({"--backend", "mock", "--mock-tokens-per-s", "200", "--mock-ttft-ms", "0", "--max-new-tokens",
                      "100000", "--drain-ms", "3000", "--log-level", "info"});
  ASSERT_NE(server.port(), 0) << "the server did not start";
  client::SseClient c;
  ASSERT_TRUE(c.Connect(server.port()).ok());
  ASSERT_TRUE(c.Post("/v1/stream", R"({"prompt":"Hello","max_new_tokens":100000})").ok());
  ASSERT_TRUE(c.ReadEvents([](const sse::Event& e) { return e.type != "start"; }).ok());
  for (const char* name : {"SIGUSR1", "SIGUSR2", "SIGALRM"}) {
    const int sig = std::string(name) == "SIGUSR1" ? SIGUSR1 : std::string(name) == "SIGUSR2" ? SIGUSR2 : SIGALRM;
    ASSERT_EQ(::kill(server.pid(), sig), 0);
    // Counted, not slept: the log line says the signal was handled.
    const std::string want = std::string("signal=") + name + " action=ignored";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (server.Log().find(want) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      int dead_by = 0;
      const int exited = server.Wait(10, &dead_by);  // one look, 10 ms
      ASSERT_TRUE(exited == -1 && dead_by == 0) << name << " ended the process (exit " << exited << ", signal "
                                                << dead_by << ")";
    }
    ASSERT_NE(server.Log().find(want), std::string::npos) << server.Log();
    client::HttpClient h;
    client::Response resp;
    ASSERT_TRUE(h.Connect(server.port()).ok());
    client::Request req;
    req.method = "GET";
    req.target = "/healthz";
    ASSERT_TRUE(h.RoundTrip(req, &resp).ok());
    EXPECT_EQ(resp.head.status, 200);
  }
  // The stream still runs: more token events after the three signals.
  size_t tokens = 0;
  c.mutable_result().stopped = false;
  ASSERT_TRUE(c.ReadEvents([&](const sse::Event& e) { return e.type != "token" || ++tokens < 20; }).ok());
  EXPECT_EQ(tokens, 20u);
  ASSERT_EQ(::kill(server.pid(), SIGTERM), 0);
  int signal = 0;
  EXPECT_EQ(server.Wait(5000, &signal), 0) << "killed by signal " << signal;
}

// stderr is a pipe nobody reads: the log fills it (and its queue), the
// writer thread blocks, and SIGTERM must still end the process within
// --drain-ms + --log-exit-flush-ms, exit 0. Before the bound, the exit-time
// flush waited for the pipe forever.
TEST(Signals, AStderrNobodyReadsDoesNotHoldTheExit) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ServerChild server({"--backend", "mock", "--log-level", "info", "--drain-ms", "1000", "--log-exit-flush-ms", "300"},
                     10000, p[1]);
  ::close(p[1]);
  ASSERT_NE(server.port(), 0) << "the server did not start";
  // One access line per request: far more than the pipe's 64 KiB.
  client::HttpClient c;
  ASSERT_TRUE(c.Connect(server.port()).ok());
  for (int i = 0; i < 3000; i++) {
    client::Request req;
    req.method = "GET";
    req.target = "/healthz?pad=" + std::string(100, 'x');
    client::Response resp;
    ASSERT_TRUE(c.RoundTrip(req, &resp).ok()) << i;
    ASSERT_EQ(resp.head.status, 200);
  }
  // The logger's thread fills the pipe behind the requests: wait until it
  // has (a sanitizer build writes slowly), so the drain starts on a full one.
  // Full: over half its 64 KiB and no byte more for 60 polls in a row (how
  // many bytes fit depends on how the writes fell into the pipe's pages:
  // 57 KB was seen full under ThreadSanitizer; 3000 lines are ~450 KB).
  int avail = 0, last = -1, still = 0;
  const auto fill_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (::ioctl(p[0], FIONREAD, &avail) == 0 && std::chrono::steady_clock::now() < fill_deadline) {
    still = avail == last ? still + 1 : 0;
    last = avail;
    if (avail >= 32768 && still >= 60) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GE(avail, 32768) << "the pipe is not full: test too weak";
  ASSERT_GE(still, 60) << "the pipe is still filling: test too weak";
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(server.pid(), SIGTERM), 0);
  int signal = 0;
  const int code = server.Wait(6000, &signal);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  ::close(p[0]);
  EXPECT_EQ(code, 0) << "still running after 6 s, or killed by signal " << signal;
  EXPECT_LT(ms, 1000 + 300 + 2000) << "the exit took longer than its bounds";
}

// With --log-format json every line the process writes to stderr is JSON,
// from the start-up summary to the last one after a drain. (The last line
// was a plain "tokenwire: stopped".)
TEST(Signals, WithJsonLogsEveryStderrLineIsJsonToTheEnd) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ServerChild server({"--backend", "mock", "--log-level", "info", "--log-format", "json", "--drain-ms", "1000"}, 10000,
                     p[1]);
  ::close(p[1]);
  ASSERT_NE(server.port(), 0) << "the server did not start";
  ASSERT_EQ(::kill(server.pid(), SIGTERM), 0);
  int signal = 0;
  ASSERT_EQ(server.Wait(5000, &signal), 0) << "killed by signal " << signal;
  std::string err;
  char buf[4096];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  int lines = 0;
  std::string last;
  for (size_t at = 0; at < err.size();) {
    size_t nl = err.find('\n', at);
    ASSERT_NE(nl, std::string::npos) << "an unterminated line: " << err.substr(at);
    last = err.substr(at, nl - at);
    json::Value v;
    EXPECT_TRUE(json::Parse(last, &v).ok()) << "not JSON: " << last;
    lines++;
    at = nl + 1;
  }
  EXPECT_GE(lines, 3) << err;  // the summary, draining, stopped
  EXPECT_NE(last.find("\"stopped\""), std::string::npos) << last;
}

}  // namespace
}  // namespace tw
