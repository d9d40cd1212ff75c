// The server under test as a child process: started with fork/exec
// (`tokenwire serve --port 0 ...`, its output to a log file), its port read
// from the "listening on HOST:PORT" line, its memory read from
// /proc/PID/status, stopped with SIGTERM (SIGKILL after a grace period).
//
// Thread: the caller's. Owns the child process and its log file path.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
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
  // SIGTERM, wait up to `grace_ms`, then SIGKILL. Returns the exit status
  // (-1 if it had to be killed).
  int Stop(int grace_ms = 3000);

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
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string log_path_;
  std::string command_;
};

// GET/DELETE helpers over a blocking connection (after a run, not during).
Status HttpGet(uint16_t port, const std::string& target, int* status, std::string* body);

}  // namespace tw::loadgen
