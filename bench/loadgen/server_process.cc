#include "loadgen/server_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "client/http_client.h"

namespace tw::loadgen {

ServerProcess::~ServerProcess() { Stop(1000); }

Status ServerProcess::Start(const std::string& binary, const std::vector<std::string>& args, int wait_ms,
                            int cpu) {
  char tmpl[] = "/tmp/tw_loadgen_server_XXXXXX";
  int log_fd = ::mkstemp(tmpl);
  if (log_fd < 0) return Status::FromErrno("mkstemp");
  log_path_ = tmpl;
  int out_fd = log_fd;  // the child's stdout and stderr
  int p[2] = {-1, -1};
  if (log_pipe_) {
    if (::pipe2(p, O_CLOEXEC) != 0) return Status::FromErrno("pipe2");
    out_fd = p[1];
  }
  std::vector<std::string> argv_s = {binary, "serve", "--host", "127.0.0.1", "--port", "0"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  command_.clear();
  for (const auto& a : argv_s) command_ += (command_.empty() ? "" : " ") + a;
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ < 0) return Status::FromErrno("fork");
  if (pid_ == 0) {
    if (cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      ::sched_setaffinity(0, sizeof set, &set);
    }
    ::dup2(out_fd, 1);
    ::dup2(out_fd, 2);
    ::execv(argv[0], argv.data());
    std::_Exit(127);
  }
  if (log_pipe_) {
    ::close(p[1]);
    pipe_read_ = p[0];
    relay_ = std::thread([this, log_fd] { Relay(log_fd); });  // owns log_fd from here
  } else {
    ::close(log_fd);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream f(log_path_);
    std::string line;
    while (std::getline(f, line)) {
      auto at = line.rfind("listening on ");
      auto colon = line.rfind(':');
      if (at != std::string::npos && colon != std::string::npos && colon > at) {
        port_ = static_cast<uint16_t>(std::atoi(line.c_str() + colon + 1));
        if (port_ != 0) return Status::Ok();
      }
    }
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      std::ifstream g(log_path_);
      std::stringstream ss;
      ss << g.rdbuf();
      return Status::Error("server exited at start-up: " + ss.str());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status::Error("server printed no 'listening on' line within " + std::to_string(wait_ms) + " ms");
}

void ServerProcess::Relay(int log_fd) {
  char buf[65536];
  for (;;) {
    if (relay_paused_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    pollfd pfd{pipe_read_, POLLIN, 0};
    if (::poll(&pfd, 1, 50) <= 0) continue;
    ssize_t n = ::read(pipe_read_, buf, sizeof buf);
    if (n <= 0) break;  // EOF: every writer (the child) is gone
    for (ssize_t off = 0; off < n;) {
      ssize_t w = ::write(log_fd, buf + off, static_cast<size_t>(n - off));
      if (w <= 0) break;
      off += w;
    }
  }
  ::close(log_fd);
}

int ServerProcess::PipeBytesWaiting() const {
  int avail = 0;
  return pipe_read_ >= 0 && ::ioctl(pipe_read_, FIONREAD, &avail) == 0 ? avail : -1;
}

int ServerProcess::Stop(int grace_ms, int sig) {
  if (pid_ < 0 && !relay_.joinable()) return 0;
  if (pid_ < 0) {  // exited at start-up
    relay_paused_ = false;
    relay_.join();
    ::close(pipe_read_);
    pipe_read_ = -1;
    return 0;
  }
  ::kill(pid_, sig);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  int st = 0;
  int result = -1;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      result = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (pid_ >= 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
  }
  if (relay_.joinable()) {  // the child is gone: the relay reads to EOF
    relay_paused_ = false;
    relay_.join();
    ::close(pipe_read_);
    pipe_read_ = -1;
  }
  if (!log_path_.empty()) ::unlink(log_path_.c_str());
  log_path_.clear();
  return result;
}

int64_t ServerProcess::StatusKb(const std::string& field) const {
  std::ifstream f("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atoll(line.c_str() + field.size() + 1);
  }
  return -1;
}

int64_t ServerProcess::OpenFds() const {
  DIR* d = ::opendir(("/proc/" + std::to_string(pid_) + "/fd").c_str());
  if (!d) return -1;
  int64_t n = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') n++;
  }
  ::closedir(d);
  return n;
}

bool ServerProcess::CpuSeconds(double* user, double* sys) const {
  std::ifstream f("/proc/" + std::to_string(pid_) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return false;
  // Fields after the command (which is in parentheses and may hold spaces).
  size_t close = line.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream in(line.substr(close + 2));
  std::string field;
  std::vector<std::string> fields;
  while (in >> field) fields.push_back(field);
  // state is field 3 (index 0 here); utime 14 and stime 15 (indexes 11, 12).
  if (fields.size() < 13) return false;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  *user = std::atof(fields[11].c_str()) / tick;
  *sys = std::atof(fields[12].c_str()) / tick;
  return true;
}

double ServerProcess::RunSeconds() const {
  const std::string dir = "/proc/" + std::to_string(pid_) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return -1;
  double total = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(dir + "/" + e->d_name + "/schedstat");
    unsigned long long on_cpu_ns = 0;
    if (f >> on_cpu_ns) total += static_cast<double>(on_cpu_ns) / 1e9;
  }
  ::closedir(d);
  return total;
}

Status HttpGet(uint16_t port, const std::string& target, int* status, std::string* body) {
  client::Request req;
  req.method = "GET";
  req.target = target;
  client::Response resp;
  Status st = client::Fetch(port, req, &resp);
  if (!st.ok()) return Status::Error("GET " + target + ": " + st.message());
  *status = resp.head.status;
  *body = std::move(resp.body);
  return Status::Ok();
}

}  // namespace tw::loadgen
