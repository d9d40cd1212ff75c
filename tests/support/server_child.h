// The real server binary as a child process, for tests that need the
// process itself (signals, exit codes, a backend built into another binary):
// <build>/tokenwire beside the running test binary (<build>/tests/x_tests,
// for every build: build/, build/asan/, build/tsan/, build/cuda/, build/emu/),
// started with `serve --port 0 <flags>`, its stdout and stderr in a log
// file, its port read from the "listening on" line.
//
// Waits: the start up to start_timeout_ms (a GPU runner, or the CPU
// emulator's, takes seconds to be ready); Wait() up to the given bound.
// The destructor kills the child (SIGKILL) if it still runs and removes the
// log.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tw::testing {

// <build>/tokenwire for the test binary running now.
std::string ServerBinary();

// `flags` with "--model random-tiny" appended when they run the cpu backend
// (no --backend, or the last --backend is cpu) and name no --model: the
// tests pin their outputs on the random tiny model (2 layers, 64 wide), not
// on the server's default trained model. ServerChild and AppServer apply it;
// a test that wants the default model passes --model "" (the serve parser's
// default value: the built-in model).
std::vector<std::string> WithRandomTinyModel(std::vector<std::string> flags);

class ServerChild {
 public:
  // stderr_fd >= 0: the child's stderr goes there (a pipe the test holds)
  // instead of the log file.
  explicit ServerChild(std::vector<std::string> flags, int start_timeout_ms = 10000, int stderr_fd = -1);
  ~ServerChild();
  ServerChild(const ServerChild&) = delete;
  ServerChild& operator=(const ServerChild&) = delete;

  uint16_t port() const { return port_; }  // 0: it did not start (see Log())
  pid_t pid() const { return pid_; }
  // Waits up to `ms` for the child; its exit code, or -1 (still running or
  // killed by a signal: *signal says which).
  int Wait(int ms, int* signal);
  // What the child has written so far.
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string log_;
};

}  // namespace tw::testing
