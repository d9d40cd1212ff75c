// The server under test as a child process: started with fork/exec
// (`tokenwire serve --port 0 ...`, its output to a log file), its port read
// from the "listening on HOST:PORT" line, its memory read from
// /proc/PID/status, stopped with SIGTERM (SIGKILL after a grace period).
//
// With set_log_through_pipe(true) before Start, its stdout and stderr are a
// pipe that a relay thread copies into the log file, and PauseLogRelay()
// stops reading it: the server's stderr then blocks, as when nobody reads
// it (chaos ends so). Stop resumes the relay once the child has exited.
//
// Thread: the caller's (plus the relay's, which touches only the pipe, the
// log file and the two flags). Owns the child process and its log file path.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"

namespace tw::loadgen {

class ServerProcess {
 public:
  ~ServerProcess();
  // Starts `binary serve --port 0 <args>` and waits (up to `wait_ms`) for its
  // listening line. With cpu >= 0 the child runs on that CPU only
  // (sched_setaffinity before exec).
  Status Start(const std::string& binary, const std::vector<std::string>& args, int wait_ms = 10000,
               int cpu = -1);
  // `sig` (SIGTERM), wait up to `grace_ms`, then SIGKILL. Returns the exit
  // status (-1 if it had to be killed).
  int Stop(int grace_ms = 3000, int sig = SIGTERM);

  void set_log_through_pipe(bool on) { log_pipe_ = on; }
  void PauseLogRelay() { relay_paused_ = true; }
  // Bytes the server has written to the pipe that the relay has not read
  // (FIONREAD); -1 without the pipe.
  int PipeBytesWaiting() const;

  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string command_line() const { return command_; }
  // The file holding its stdout and stderr (removed by Stop).
  const std::string& log_path() const { return log_path_; }
  // A field of /proc/PID/status in kB ("VmHWM", "VmRSS"); -1 if unreadable.
  int64_t StatusKb(const std::string& field) const;
  // Open file descriptors of the server (entries in /proc/PID/fd).
  int64_t OpenFds() const;
  // User and system CPU seconds the server has used (all its threads;
  // /proc/PID/stat, clock-tick resolution). False if unreadable.
  bool CpuSeconds(double* user, double* sys) const;
  // CPU seconds on the CPU of all its threads, at nanosecond resolution
  // (the sum of /proc/PID/task/*/schedstat); -1 if unreadable.
  double RunSeconds() const;

 private:
  void Relay(int log_fd);

  pid_t pid_ = -1;
  uint16_t port_ = 0;
  bool log_pipe_ = false;
  int pipe_read_ = -1;
  std::thread relay_;
  std::atomic<bool> relay_paused_{false};
  std::string log_path_;
  std::string command_;
};

// GET/DELETE helpers over a blocking connection (after a run, not during).
Status HttpGet(uint16_t port, const std::string& target, int* status, std::string* body);

}  // namespace tw::loadgen
