#include "support/server_child.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace tw::testing {

std::string ServerBinary() {
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "build/tokenwire";
  std::string p(self, static_cast<size_t>(n));
  p = p.substr(0, p.rfind('/'));  // .../tests
  return p.substr(0, p.rfind('/')) + "/tokenwire";
}

std::vector<std::string> WithRandomTinyModel(std::vector<std::string> flags) {
  bool cpu = true, model = false;
  for (size_t i = 0; i < flags.size(); i++) {
    if (flags[i] == "--backend" && i + 1 < flags.size()) cpu = flags[i + 1] == "cpu";
    if (flags[i] == "--model") model = true;
  }
  if (cpu && !model) flags.insert(flags.end(), {"--model", "random-tiny"});
  return flags;
}

ServerChild::ServerChild(std::vector<std::string> flags, int start_timeout_ms, int stderr_fd) {
  flags = WithRandomTinyModel(std::move(flags));
  static int serial = 0;
  log_ = "/tmp/tw_server_child_" + std::to_string(::getpid()) + "_" + std::to_string(serial++) + ".log";
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
    if (stderr_fd >= 0) ::dup2(stderr_fd, 2);
    ::execv(argv[0], argv.data());
    std::_Exit(127);
  }
  for (int waited = 0; waited < start_timeout_ms && port_ == 0; waited += 20) {
    std::ifstream in(log_);
    std::string line;
    while (std::getline(in, line)) {
      size_t at = line.find("listening on ");
      if (at != std::string::npos) port_ = static_cast<uint16_t>(std::atoi(line.c_str() + line.rfind(':') + 1));
    }
    if (port_ != 0) break;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {  // it exited: no point waiting
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ServerChild::~ServerChild() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  ::unlink(log_.c_str());
}

int ServerChild::Wait(int ms, int* signal) {
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

std::string ServerChild::Log() const {
  std::ifstream in(log_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tw::testing
