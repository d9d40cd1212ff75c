#include "common/log.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <utility>

namespace tw {

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError: return "error";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kInfo: return "info";
    case LogLevel::kDebug: return "debug";
  }
  return "info";
}

bool ParseLogLevel(std::string_view s, LogLevel* out) {
  for (LogLevel l : {LogLevel::kError, LogLevel::kWarn, LogLevel::kInfo, LogLevel::kDebug}) {
    if (s == LogLevelName(l)) {
      *out = l;
      return true;
    }
  }
  return false;
}

void AppendLogTimestamp(int64_t unix_ms, std::string* out) {
  time_t secs = static_cast<time_t>(unix_ms / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[32];
  int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                        static_cast<int>(unix_ms % 1000));
  out->append(buf, static_cast<size_t>(n));
}

namespace {

bool NeedsQuotes(std::string_view s) {
  if (s.empty()) return true;
  for (unsigned char c : s) {
    if (c <= ' ' || c >= 0x7f || c == '"' || c == '=' || c == '\\') return true;
  }
  return false;
}

void AppendTextValue(std::string_view s, std::string* out) {
  if (!NeedsQuotes(s)) {
    out->append(s);
    return;
  }
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (c < ' ' || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out->append(buf);
        } else {
          out->push_back(static_cast<char>(c));  // UTF-8 passes through
        }
    }
  }
  out->push_back('"');
}

}  // namespace

void FormatLogText(const LogRecord& r, std::string* out) {
  AppendLogTimestamp(r.unix_ms, out);
  out->push_back(' ');
  out->append(LogLevelName(r.level));
  out->push_back(' ');
  out->append(r.event);
  char buf[40];
  for (size_t k = 0; k < r.n_fields; k++) {
    const LogField& f = r.fields[k];
    if (f.kind == LogField::Kind::kNone) continue;
    out->push_back(' ');
    out->append(f.key);
    out->push_back('=');
    switch (f.kind) {
      case LogField::Kind::kNone: break;
      case LogField::Kind::kString: AppendTextValue(f.str, out); break;
      case LogField::Kind::kInt:
        out->append(buf, static_cast<size_t>(std::snprintf(buf, sizeof buf, "%" PRId64, f.i)));
        break;
      case LogField::Kind::kDouble:
        out->append(buf, static_cast<size_t>(std::snprintf(buf, sizeof buf, "%.3f", f.d)));
        break;
      case LogField::Kind::kBool: out->append(f.b ? "true" : "false"); break;
    }
  }
  out->push_back('\n');
}

namespace {

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Logger::Logger(LogOptions options) : options_(std::move(options)) {
  struct stat st;
  if (::fstat(options_.fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) chunk_bytes_ = PIPE_BUF;
  thread_ = std::thread([this] { Run(); });
}

Logger::~Logger() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    const int64_t bound = exit_overdue_ ? 0 : options_.exit_flush_ms * 1000000;
    give_up_at_ns_.store(SteadyNowNs() + bound);
  }
  cv_.notify_one();
  thread_.join();
}

bool Logger::PastGiveUp() const { return SteadyNowNs() >= give_up_at_ns_.load(); }

void Logger::Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) {
  if (!Enabled(level)) return;
  LogRecord r;
  r.unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  r.level = level;
  r.event = event;
  r.fields = fields.begin();
  r.n_fields = fields.size();
  std::string line;
  if (options_.format) {
    options_.format(r, &line);
  } else {
    FormatLogText(r, &line);
  }
  {
    MutexLock lock(mu_);
    if (queued_bytes_ + line.size() <= options_.max_queued_bytes) {
      queued_bytes_ += line.size();
      queue_.push_back(std::move(line));
      enqueued_++;
      lock.Unlock();
      cv_.notify_one();
      return;
    }
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  if (options_.dropped_counter != nullptr) options_.dropped_counter->Inc();
}

void Logger::Flush() {
  MutexLock lock(mu_);
  const uint64_t target = enqueued_;
  while (written_count_ < target) lock.Wait(written_);
}

bool Logger::FlushForExit() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.exit_flush_ms);
  MutexLock lock(mu_);
  const uint64_t target = enqueued_;
  while (written_count_ < target) {
    if (!lock.WaitUntil(written_, deadline) && written_count_ < target) {
      exit_overdue_ = true;
      return false;
    }
  }
  return true;
}

size_t Logger::WriteAll(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    // Wait for room in slices of 100 ms, so a give-up set meanwhile (the
    // end of the process) is seen.
    const int64_t give_up = give_up_at_ns_.load();
    const int64_t left_ms = give_up == INT64_MAX ? 100 : (give_up - SteadyNowNs()) / 1000000;
    if (left_ms <= 0 && give_up != INT64_MAX) return off;
    pollfd p{options_.fd, POLLOUT, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, 100)));
    if (ready < 0 && errno != EINTR) return off;
    if (ready <= 0) continue;
    if ((p.revents & (POLLERR | POLLNVAL)) != 0) return off;  // the sink is gone: nobody to tell
    ssize_t n = ::write(options_.fd, bytes.data() + off, std::min(bytes.size() - off, chunk_bytes_));
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
      continue;
    } else {
      return off;  // the sink is gone: nobody to tell
    }
  }
  return off;
}

void Logger::Run() {
  // The process's signals belong to the thread that waits for them.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  std::deque<std::string> batch;
  std::string out;
  for (;;) {
    bool stop;
    {
      MutexLock lock(mu_);
      while (queue_.empty() && !stopping_) lock.Wait(cv_);
      batch.swap(queue_);
      queued_bytes_ = 0;
      stop = stopping_;
    }
    out.clear();
    for (const std::string& line : batch) out += line;
    const size_t written = WriteAll(out);
    if (written < out.size()) {
      // Given up at exit: the lines not written whole are dropped.
      size_t end = 0;
      uint64_t lost = 0;
      for (const std::string& line : batch) {
        end += line.size();
        lost += end > written ? 1 : 0;
      }
      dropped_.fetch_add(lost, std::memory_order_relaxed);
      if (options_.dropped_counter != nullptr) options_.dropped_counter->Inc(lost);
    }
    {
      MutexLock lock(mu_);
      written_count_ += batch.size();
    }
    written_.notify_all();
    batch.clear();
    if (stop) {
      MutexLock lock(mu_);
      if (queue_.empty()) return;
      if (PastGiveUp()) {
        // Past the exit bound with lines still queued: drop them too.
        dropped_.fetch_add(queue_.size(), std::memory_order_relaxed);
        if (options_.dropped_counter != nullptr) options_.dropped_counter->Inc(queue_.size());
        written_count_ += queue_.size();
        queue_.clear();
        queued_bytes_ = 0;
        return;
      }
    }
  }
}

}  // namespace tw
