// A real TokenWire server (App, mock backend) on a loopback ephemeral port,
// running on a background thread, plus small client helpers.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "app/app.h"
#include "client/http_client.h"
#include "client/sse_client.h"
#include "json/json.h"
#include "support/server_child.h"  // WithRandomTinyModel

#define ASSERT_OK(expr)                               \
  do {                                                \
    ::tw::Status _s = (expr);                         \
    ASSERT_TRUE(_s.ok()) << #expr << ": " << _s.message(); \
  } while (0)
#define EXPECT_OK(expr)                               \
  do {                                                \
    ::tw::Status _s = (expr);                         \
    EXPECT_TRUE(_s.ok()) << #expr << ": " << _s.message(); \
  } while (0)

namespace tw::testing {

class AppServer {
 public:
  // `flags`: extra serve flags, e.g. {"--linger-ms", "50"}. The log says
  // errors only unless a test asks for more (--log-level); `log_fd` >= 0
  // sends it there instead of stderr.
  explicit AppServer(std::vector<std::string> flags = {}, int log_fd = -1) {
    std::vector<std::string> args = {"tokenwire", "serve", "--port", "0", "--backend", "mock",
                                     "--lab", "--mock-ttft-ms", "20", "--mock-tokens-per-s",
                                     "400", "--retain-ms", "200", "--linger-ms", "100",
                                     "--max-new-tokens", "20000", "--log-level", "error"};
    for (auto& f : flags) args.push_back(f);
    args = WithRandomTinyModel(std::move(args));  // the last --backend counts
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    app::Config cfg;
    Status s = app::ParseServeFlags(static_cast<int>(argv.size()), argv.data(), 2, &cfg);
    EXPECT_TRUE(s.ok()) << s.message();
    if (log_fd >= 0) cfg.log_fd = log_fd;
    app_ = std::make_unique<app::App>(cfg);
    s = app_->Init(false);
    EXPECT_TRUE(s.ok()) << s.message();
    thread_ = std::thread([this] { run_status_ = app_->Run(); });
  }
  ~AppServer() { Stop(); }

  void Stop() {
    if (!thread_.joinable()) return;
    app_->RequestShutdown();
    thread_.join();
  }
  // Shutdown and report how long Run() took to return.
  int64_t StopAndTimeMs() {
    auto t0 = std::chrono::steady_clock::now();
    Stop();
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
        .count();
  }
  uint16_t port() const { return static_cast<uint16_t>(app_->port()); }
  app::App* app() { return app_.get(); }

  // A whole request and its answer. The client waits up to 30 s of silence:
  // a hang still fails, and a sanitizer build on a loaded machine (where a
  // generation queued behind others may take seconds) does not.
  client::Response Call(const std::string& method, const std::string& target,
                        const std::string& body = "",
                        std::vector<std::pair<std::string, std::string>> headers = {}) {
    client::ClientOptions co;
    co.io_timeout_ms = 30000;
    client::HttpClient c(co);
    client::Response resp;
    EXPECT_OK(c.Connect(port()));
    client::Request req;
    req.method = method;
    req.target = target;
    req.body = body;
    req.headers = std::move(headers);
    Status s = c.RoundTrip(req, &resp);
    EXPECT_TRUE(s.ok()) << method << " " << target << ": " << s.message();
    return resp;
  }
  json::Value CallJson(const std::string& method, const std::string& target,
                       const std::string& body = "", int* status = nullptr) {
    client::Response r = Call(method, target, body);
    if (status) *status = r.head.status;
    json::Value v;
    json::ParseLimits lim;
    lim.max_bytes = 64 << 20;
    Status s = json::Parse(r.body, &v, lim);
    EXPECT_TRUE(s.ok()) << target << ": " << s.message() << " in " << r.body;
    return v;
  }
  json::Value Stats() { return CallJson("GET", "/stats"); }

  // Sends a POST whose answer is a whole body (not a stream), waits until
  // its `streams` streams are live, and leaves without reading: a client
  // that gave up.
  void PostAndLeave(const std::string& target, const std::string& body, int64_t streams = 1) {
    client::HttpClient c;
    ASSERT_TRUE(c.Connect(port()).ok());
    client::Request req;
    req.method = "POST";
    req.target = target;
    req.body = body;
    ASSERT_TRUE(c.SendRequest(req).ok());
    ASSERT_TRUE(WaitLive(streams));
    c.Close();
  }
  // Waits until exactly n streams are live.
  bool WaitLive(int64_t n, int timeout_ms = 5000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      if (Stats().Find("streams")->Find("live")->as_int() == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  // Waits until no stream, subscriber or held byte is left (after retain-ms).
  bool WaitIdle(int timeout_ms = 5000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      json::Value st = Stats();
      const json::Value* s = st.Find("streams");
      if (s && s->Find("registered")->as_int() == 0 && s->Find("subscribers")->as_int() == 0 &&
          s->Find("bytes_held")->as_int() == 0 && s->Find("live")->as_int() == 0) {
        return true;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "server not idle: " << json::Serialize(st);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // The mock's emission log for a stream.
  json::Value Emissions(const std::string& id) { return CallJson("GET", "/lab/emissions/" + id); }

 private:
  std::unique_ptr<app::App> app_;
  std::thread thread_;
  Status run_status_;
};

inline bool WaitUntil(const std::function<bool()>& pred, int timeout_ms = 10000) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return pred();
}

inline json::Value ParseJson(const std::string& s) {
  json::Value v;
  json::ParseLimits lim;
  lim.max_bytes = s.size() + 1;
  EXPECT_TRUE(json::Parse(s, &v, lim).ok()) << s;
  return v;
}

}  // namespace tw::testing
