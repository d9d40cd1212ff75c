// SIGTERM sent to the real binary (to the process, as `kill` and Kubernetes
// send it, so the kernel may pick any thread) drains: a client in the middle
// of a stream gets its `shutting_down` error event with resume_from, and the
// process exits 0. Signals are blocked before any thread starts (App::Init);
// before that fix the signal could land on a backend thread, whose default
// action killed the process at once.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "client/sse_client.h"
#include "json/json.h"

namespace tw {
namespace {

// build/tokenwire beside this test binary (build/tests/api_tests, or the
// sanitizer builds' build/asan/..., build/tsan/...).
std::string ServerBinary() {
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "build/tokenwire";
  std::string p(self, static_cast<size_t>(n));
  p = p.substr(0, p.rfind('/'));  // .../tests
  return p.substr(0, p.rfind('/')) + "/tokenwire";
}

class ServerChild {
 public:
  explicit ServerChild(std::vector<std::string> flags) {
    log_ = "/tmp/tw_signal_test_" + std::to_string(::getpid()) + ".log";
    std::vector<std::string> args = {ServerBinary(), "serve", "--port", "0"};
    args.insert(args.end(), flags.begin(), flags.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      FILE* f = std::fopen(log_.c_str(), "w");
      if (f != nullptr) {
        ::dup2(fileno(f), 1);
        ::dup2(fileno(f), 2);
      }
      ::execv(argv[0], argv.data());
      std::_Exit(127);
    }
    for (int i = 0; i < 500 && port_ == 0; i++) {
      std::ifstream in(log_);
      std::string line;
      while (std::getline(in, line)) {
        size_t at = line.find("listening on ");
        if (at != std::string::npos) port_ = static_cast<uint16_t>(std::atoi(line.c_str() + line.rfind(':') + 1));
      }
      if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~ServerChild() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::unlink(log_.c_str());
  }
  uint16_t port() const { return port_; }
  // Waits up to `ms` for the child; its exit code, or -1 (still running or
  // killed by a signal: *signal says which).
  int Wait(int ms, int* signal) {
    *signal = 0;
    for (int i = 0; i < ms / 10; i++) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        if (WIFSIGNALED(st)) *signal = WTERMSIG(st);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string log_;
};

// `clients` streams of `tokens` tokens on the server; once the last client
// has its start event, SIGTERM to the process. Every stream still running
// ends with a shutting_down error event (resume_from = the last event the
// client got); one that finished first ends with done; at least
// `min_drained` were cut by the shutdown. The process exits 0 within
// --drain-ms (not killed by the signal).
void DrainOnSigterm(const std::vector<std::string>& flags, int clients_n, int tokens, int min_drained) {
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
  ASSERT_EQ(::kill(server.pid(), SIGTERM), 0);
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

TEST(Signals, SigtermToTheProcessDrainsTheMockBackend) {
  DrainOnSigterm({"--backend", "mock", "--mock-tokens-per-s", "50", "--mock-ttft-ms", "0", "--max-new-tokens",
                  "100000", "--drain-ms", "3000"},
                 4, 100000, 4);
}

// The CPU backend has the engine thread and its pool's workers: the threads
// a process-directed signal used to land on. One sequence at a time and 48
// queued, so most are still waiting or running when the signal comes.
TEST(Signals, SigtermToTheProcessDrainsTheCpuBackend) {
  DrainOnSigterm({"--backend", "cpu", "--threads", "2", "--max-batch", "1", "--max-waiting", "64", "--drain-ms",
                  "3000"},
                 48, 120, 1);
}

}  // namespace
}  // namespace tw
