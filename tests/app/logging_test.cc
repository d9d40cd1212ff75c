// The server's log (common/log.h, --log-level, --log-format): the start-up
// summary, one access record per response, one record per stream outcome,
// cancels and slow-client detaches, in both formats; what a level leaves out.
// The log goes to a pipe the test reads (Config::log_fd).
#include <fcntl.h>
#include <strings.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "app/app_fixture.h"
#include "client/http_client.h"

namespace tw::testing {
namespace {

// The read end of the server's log.
class LogPipe {
 public:
  LogPipe() {
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
    r_ = fds[0];
    w_ = fds[1];
    fcntl(r_, F_SETFL, O_NONBLOCK);
  }
  ~LogPipe() {
    close(r_);
    close(w_);
  }
  int write_fd() const { return w_; }

  // Every complete line so far (reads what the pipe holds now).
  const std::vector<std::string>& Lines() {
    char buf[65536];
    for (;;) {
      ssize_t n = read(r_, buf, sizeof buf);
      if (n <= 0) break;
      partial_.append(buf, static_cast<size_t>(n));
    }
    size_t start = 0;
    for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
      lines_.push_back(partial_.substr(start, nl - start));
    }
    partial_.erase(0, start);
    return lines_;
  }
  // Waits for a line holding every one of `parts`; returns it ("" on timeout).
  std::string WaitFor(const std::vector<std::string>& parts) {
    std::string found;
    WaitUntil([&] {
      for (const std::string& line : Lines()) {
        bool all = true;
        for (const std::string& p : parts) all = all && line.find(p) != std::string::npos;
        if (all) {
          found = line;
          return true;
        }
      }
      return false;
    });
    EXPECT_FALSE(found.empty()) << "no log line with all of: " << Join(parts) << "\nlog:\n" << Join(lines_, "\n");
    return found;
  }
  static std::string Join(const std::vector<std::string>& v, const char* sep = " | ") {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
    return s;
  }

 private:
  int r_ = -1, w_ = -1;
  std::string partial_;
  std::vector<std::string> lines_;
};

std::string StreamIdOf(const client::SseClient& c) {
  for (const auto& [k, v] : c.result().head.headers) {
    if (strcasecmp(k.c_str(), "X-Stream-Id") == 0) return v;
  }
  return "";
}

TEST(Logging, TextSaysStartupEachResponseAndEachStreamOutcome) {
  LogPipe log;
  AppServer srv({"--log-level", "info"}, log.write_fd());
  const std::string port = std::to_string(srv.port());
  std::string startup = log.WaitFor({" info startup ", "backend=mock", "page=http://127.0.0.1:" + port + "/"});
  EXPECT_NE(startup.find("policy=drop_slow"), std::string::npos) << startup;

  EXPECT_EQ(srv.Call("GET", "/healthz").head.status, 200);
  log.WaitFor({" info access ", "method=GET path=/healthz status=200 "});
  EXPECT_EQ(srv.Call("GET", "/nope").head.status, 404);
  log.WaitFor({" warn access ", "path=/nope status=404 ", "error=not_found"});
  EXPECT_EQ(srv.Call("POST", "/v1/stream", "{\"prompt\":").head.status, 400);
  log.WaitFor({" warn access ", "path=/v1/stream status=400 ", "error=invalid_json", "msg=\"json: "});
  // OpenAI's endpoints answer in OpenAI's envelope and log the error alike.
  client::Response bad = srv.Call("POST", "/v1/completions", "{\"prompt\":");
  EXPECT_EQ(bad.head.status, 400);
  EXPECT_NE(bad.body.find("\"param\""), std::string::npos) << bad.body;  // OpenAI's envelope
  log.WaitFor({" warn access ", "path=/v1/completions status=400 ", "error=invalid_json", "msg=\"the body is not"});
  EXPECT_EQ(srv.Call("POST", "/v1/completions", R"({"prompt":"x","max_tokens":-1})").head.status, 400);
  log.WaitFor({" warn access ", "path=/v1/completions status=400 ", "error=invalid_request", "msg=\""});

  // A stream read to its end: the access record and the outcome.
  client::SseClient c;
  ASSERT_OK(c.Connect(srv.port()));
  ASSERT_OK(c.Post("/v1/stream", R"({"prompt":"x","max_new_tokens":5})"));
  ASSERT_OK(c.ReadEvents());
  const std::string id = StreamIdOf(c);
  ASSERT_FALSE(id.empty());
  std::string outcome = log.WaitFor({" info stream stream=" + id + " ", "finish_reason=length", "tokens=5 "});
  EXPECT_NE(outcome.find("resumes=0 detaches=0"), std::string::npos) << outcome;
  EXPECT_NE(outcome.find("ttft_ms="), std::string::npos) << outcome;
  EXPECT_EQ(outcome.find("cancel="), std::string::npos) << outcome;
  log.WaitFor({" info access ", "method=POST path=/v1/stream status=200 "});

  // A detached stream, then DELETE: the cancel and its outcome.
  int status = 0;
  json::Value created = srv.CallJson("POST", "/v1/streams", R"({"prompt":"x","max_new_tokens":20000})", &status);
  ASSERT_EQ(status, 201);
  const std::string id2 = created.Find("stream")->as_string();
  EXPECT_EQ(srv.Call("DELETE", "/v1/streams/" + id2).head.status, 204);
  log.WaitFor({" info cancel stream=" + id2 + " reason=delete"});
  log.WaitFor({" info stream stream=" + id2 + " ", "finish_reason=cancelled", "cancel=delete"});

  client::Response m = srv.Call("GET", "/metrics");
  EXPECT_NE(m.body.find("\ntokenwire_log_lines_dropped_total 0\n"), std::string::npos);
}

TEST(Logging, JsonFormatIsOneObjectPerLine) {
  LogPipe log;
  AppServer srv({"--log-level", "info", "--log-format", "json"}, log.write_fd());
  EXPECT_EQ(srv.Call("GET", "/healthz").head.status, 200);
  client::SseClient c;
  ASSERT_OK(c.Connect(srv.port()));
  ASSERT_OK(c.Post("/v1/stream", R"({"prompt":"x","max_new_tokens":3})"));
  ASSERT_OK(c.ReadEvents());
  log.WaitFor({"\"event\":\"stream\""});
  bool saw_access = false, saw_stream = false, saw_startup = false;
  for (const std::string& line : log.Lines()) {
    json::Value v;
    ASSERT_OK(json::Parse(line, &v));
    ASSERT_TRUE(v.is_object()) << line;
    const std::string ts = v.Find("ts")->as_string();
    EXPECT_EQ(ts.size(), 24u) << line;
    EXPECT_EQ(ts.back(), 'Z') << line;
    const std::string event = v.Find("event")->as_string();
    if (event == "startup") {
      saw_startup = true;
      EXPECT_EQ(v.Find("backend")->as_string(), "mock");
    } else if (event == "access" && v.Find("path")->as_string() == "/healthz") {
      saw_access = true;
      EXPECT_EQ(v.Find("level")->as_string(), "info");
      EXPECT_EQ(v.Find("status")->as_int(), 200);
      EXPECT_TRUE(v.Find("ms")->is_number()) << line;
      EXPECT_EQ(v.Find("error"), nullptr) << line;  // absent, not empty
    } else if (event == "stream") {
      saw_stream = true;
      EXPECT_EQ(v.Find("finish_reason")->as_string(), "length");
      EXPECT_EQ(v.Find("tokens")->as_int(), 3);
    }
  }
  EXPECT_TRUE(saw_startup && saw_access && saw_stream) << LogPipe::Join(log.Lines(), "\n");
}

TEST(Logging, WarnLevelLeavesOutInfoRecords) {
  LogPipe log;
  AppServer srv({"--log-level", "warn"}, log.write_fd());
  EXPECT_EQ(srv.Call("GET", "/healthz").head.status, 200);
  EXPECT_EQ(srv.Call("GET", "/nope").head.status, 404);
  // Records leave in order: once the 404's is out, the 200's would be too.
  log.WaitFor({" warn access ", "path=/nope status=404"});
  for (const std::string& line : log.Lines()) {
    EXPECT_EQ(line.find(" info "), std::string::npos) << line;
  }
}

// --log-buffer-bytes: a stderr nobody reads (a pipe, 64 KiB in the kernel)
// fills; the server goes on answering, and what did not fit is dropped and
// counted in /metrics.
TEST(Logging, AFullLogBufferDropsAndCountsRecordsAndBlocksNothing) {
  LogPipe log;
  AppServer srv({"--log-level", "info", "--log-buffer-bytes", "4096"}, log.write_fd());
  const int kRequests = 1500;  // ~100 bytes of access record each: past pipe + buffer
  int ok = 0;
  for (int i = 0; i < kRequests; i++) ok += srv.Call("GET", "/healthz").head.status == 200;
  EXPECT_EQ(ok, kRequests);
  const std::string m = srv.Call("GET", "/metrics").body;
  const std::string name = "\ntokenwire_log_lines_dropped_total ";
  const size_t at = m.find(name);
  ASSERT_NE(at, std::string::npos);
  EXPECT_GT(std::stoll(m.substr(at + name.size())), 0);
  // The logger's thread waits on the full pipe: read it while the server
  // stops, so its last records can be written.
  std::atomic<bool> stopped{false};
  std::thread reader([&] {
    while (!stopped.load()) {
      log.Lines();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  srv.Stop();
  stopped = true;
  reader.join();
}

TEST(Logging, ASlowClientsDetachIsLogged) {
  LogPipe log;
  AppServer srv({"--log-level", "info", "--mock-tokens-per-s", "20000", "--subscriber-lag", "64",
                 "--max-output-bytes", "8192", "--socket-send-buffer-bytes", "4096", "--linger-ms", "5000",
                 "--resume-window", "8000"},
                log.write_fd());
  client::SseOptions o;
  o.http.rcvbuf_bytes = 4096;
  o.max_events = 1;
  client::SseClient c(o);
  ASSERT_OK(c.Connect(srv.port()));
  ASSERT_OK(c.Post("/v1/stream", R"({"prompt":"slow","max_new_tokens":6000,"policy":"drop_slow"})"));
  ASSERT_OK(c.ReadEvents());
  const std::string id = StreamIdOf(c);
  // The client reads nothing more: the server detaches it and says so.
  std::string line = log.WaitFor({" info detach stream=" + id + " ", "reason=slow_client", "policy=drop_slow"});
  EXPECT_NE(line.find("resume_from="), std::string::npos) << line;
}

}  // namespace
}  // namespace tw::testing
