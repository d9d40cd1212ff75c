// Logger: what the server says about itself, one line per record, never
// blocking the thread that logs.
//
// A record is a level, an event name and typed fields:
//
//   log->Log(LogLevel::kInfo, "access", {{"method", "GET"}, {"status", 200}});
//
// It is formatted on the caller's thread (text by default; the API layer
// installs the JSON-lines formatter for --log-format json), appended to a
// bounded queue, and written by the logger's own thread with write(2). A
// record that would take the queue past `max_queued_bytes` is dropped and
// counted (dropped(), and `dropped_counter` when given: /metrics shows it), so
// a slow or blocked stderr costs memory up to the bound and never stalls the
// event loop. Records below `level` cost one comparison (Enabled()).
//
// Text format, one line per record:
//   2026-12-02T00:01:17.123Z info access method=GET path=/healthz status=200
// A string value is quoted ("...", with \" \\ \n \t and \xNN escapes) when
// it is empty or holds a space, '"', '=', '\\' or a byte outside printable
// ASCII. Doubles print with up to 3 decimals.
//
// Threads: Log, Enabled and dropped from any thread; the constructor starts
// the writer thread (all signals blocked in it, so SIGTERM stays the main
// thread's), the destructor writes what is queued and joins it.
// Memory: at most max_queued_bytes of formatted lines.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "common/metrics.h"
#include "common/mutex.h"

namespace tw {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };
const char* LogLevelName(LogLevel level);  // "error", "warn", "info", "debug"
// "error", "warn", "info" or "debug"; false for anything else.
bool ParseLogLevel(std::string_view s, LogLevel* out);

// One field of a record: a key and a string, integer, double or bool value.
// A field without a value (a null string view or const char*, an empty
// optional) is left out of the line. Holds views: valid for the duration of
// the Log call only.
struct LogField {
  enum class Kind { kNone, kString, kInt, kDouble, kBool };
  LogField(std::string_view k, std::string_view v)
      : key(k), kind(v.data() == nullptr ? Kind::kNone : Kind::kString), str(v) {}
  LogField(std::string_view k, const char* v)
      : key(k), kind(v == nullptr ? Kind::kNone : Kind::kString), str(v ? v : "") {}
  LogField(std::string_view k, const std::string& v) : key(k), kind(Kind::kString), str(v) {}
  LogField(std::string_view k, std::optional<double> v)
      : key(k), kind(v ? Kind::kDouble : Kind::kNone), d(v.value_or(0)) {}
  LogField(std::string_view k, std::optional<int64_t> v)
      : key(k), kind(v ? Kind::kInt : Kind::kNone), i(v.value_or(0)) {}
  LogField(std::string_view k, int v) : key(k), kind(Kind::kInt), i(v) {}
  LogField(std::string_view k, long v) : key(k), kind(Kind::kInt), i(v) {}
  LogField(std::string_view k, long long v) : key(k), kind(Kind::kInt), i(v) {}
  LogField(std::string_view k, unsigned v) : key(k), kind(Kind::kInt), i(v) {}
  LogField(std::string_view k, unsigned long v)
      : key(k), kind(Kind::kInt), i(static_cast<int64_t>(v)) {}
  LogField(std::string_view k, unsigned long long v)
      : key(k), kind(Kind::kInt), i(static_cast<int64_t>(v)) {}
  LogField(std::string_view k, double v) : key(k), kind(Kind::kDouble), d(v) {}
  LogField(std::string_view k, bool v) : key(k), kind(Kind::kBool), b(v) {}

  std::string_view key;
  Kind kind;
  std::string_view str;
  int64_t i = 0;
  double d = 0;
  bool b = false;
};

struct LogRecord {
  int64_t unix_ms = 0;  // wall clock
  LogLevel level = LogLevel::kInfo;
  std::string_view event;
  const LogField* fields = nullptr;
  size_t n_fields = 0;
};

// Appends one record as a line, '\n' included.
using LogFormatter = std::function<void(const LogRecord&, std::string* out)>;
void FormatLogText(const LogRecord& r, std::string* out);
// "2026-12-02T00:01:17.123Z"
void AppendLogTimestamp(int64_t unix_ms, std::string* out);

struct LogOptions {
  LogLevel level = LogLevel::kInfo;
  LogFormatter format;                   // empty: FormatLogText
  int fd = 2;                            // stderr
  size_t max_queued_bytes = 1 << 20;     // --log-buffer-bytes
  Counter* dropped_counter = nullptr;    // also counts dropped records
  // --log-exit-flush-ms: at the end (FlushFor, the destructor) the writer
  // gives up on what the sink has not taken by then; it is dropped and
  // counted, so a stderr nobody reads cannot keep the process from exiting.
  int64_t exit_flush_ms = 1000;
};

class Logger {
 public:
  explicit Logger(LogOptions options);
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  bool Enabled(LogLevel level) const { return level <= options_.level; }
  void Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields);
  // Blocks until every record logged before the call is written (start-up
  // summary before "listening", tests).
  void Flush();
  // The end of the process: as Flush, for at most options.exit_flush_ms;
  // false if that ran out (the destructor then gives up at once and drops
  // what is left). The destructor alone waits the same bound.
  bool FlushForExit();
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  void Run();
  // Writes `bytes`, in pieces the sink takes without blocking (a pipe: at
  // most PIPE_BUF after poll says it has room), until done or the give-up
  // time has passed; returns the bytes written.
  size_t WriteAll(const std::string& bytes);
  bool PastGiveUp() const;

  const LogOptions options_;
  std::atomic<uint64_t> dropped_{0};
  Mutex mu_;
  std::condition_variable cv_;       // records queued, or stopping
  std::condition_variable written_;  // the writer finished a batch
  std::deque<std::string> queue_ TW_GUARDED_BY(mu_);
  size_t queued_bytes_ TW_GUARDED_BY(mu_) = 0;
  uint64_t enqueued_ TW_GUARDED_BY(mu_) = 0;  // records accepted so far
  uint64_t written_count_ TW_GUARDED_BY(mu_) = 0;  // of them, written
  bool stopping_ TW_GUARDED_BY(mu_) = false;
  bool exit_overdue_ TW_GUARDED_BY(mu_) = false;  // FlushForExit ran out of time
  size_t chunk_bytes_ = 1 << 20;  // largest single write: PIPE_BUF for a pipe or socket
  // steady_clock nanoseconds after which the writer drops what is left
  // (max: never; set at exit).
  std::atomic<int64_t> give_up_at_ns_{INT64_MAX};
  std::thread thread_;
};

// Logs through `log` when it is set and the level is enabled (a null logger
// says nothing: tests and tools that run the layers without an App).
inline void LogIf(Logger* log, LogLevel level, std::string_view event,
                  std::initializer_list<LogField> fields) {
  if (log != nullptr && log->Enabled(level)) log->Log(level, event, fields);
}

}  // namespace tw
