// Logger (common/log.h): the text format, levels, and the bounded queue that
// drops (and counts) instead of blocking when the sink does not take lines.
#include "common/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace tw {
namespace {

// A pipe: the logger writes into it, the test reads what came out.
struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
    r = fds[0];
    w = fds[1];
  }
  ~Pipe() {
    close(r);
    close(w);
  }
  // Everything readable now (the writer has flushed).
  std::string ReadAvailable() {
    fcntl(r, F_SETFL, O_NONBLOCK);
    std::string s;
    char buf[65536];
    for (;;) {
      ssize_t n = read(r, buf, sizeof buf);
      if (n <= 0) break;
      s.append(buf, static_cast<size_t>(n));
    }
    return s;
  }
};

size_t CountLines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(LogText, FormatsTimestampLevelEventAndFields) {
  LogField fields[] = {{"method", "GET"},        {"path", "/v1/streams"}, {"status", 200},
                       {"ms", 1.25},             {"ok", true},            {"msg", "bad \"json\"\n"},
                       {"empty", std::string()}, {"eq", "a=b"}};
  LogRecord r;
  r.unix_ms = 1764633677123;  // 2025-12-02T00:01:17.123Z
  r.level = LogLevel::kWarn;
  r.event = "access";
  r.fields = fields;
  r.n_fields = sizeof fields / sizeof fields[0];
  std::string out;
  FormatLogText(r, &out);
  EXPECT_EQ(out,
            "2025-12-02T00:01:17.123Z warn access method=GET path=/v1/streams status=200 ms=1.250 "
            "ok=true msg=\"bad \\\"json\\\"\\n\" empty=\"\" eq=\"a=b\"\n");
}

TEST(LogText, ControlBytesAreEscapedAndUtf8PassesThrough) {
  LogField fields[] = {{"s", std::string_view("a\x01z\xc3\xa9", 5)}};
  LogRecord r;
  r.event = "e";
  r.fields = fields;
  r.n_fields = 1;
  std::string out;
  FormatLogText(r, &out);
  EXPECT_NE(out.find(" e s=\"a\\x01z\xc3\xa9\"\n"), std::string::npos) << out;
}

TEST(LogLevels, ParseAndNames) {
  LogLevel l;
  ASSERT_TRUE(ParseLogLevel("debug", &l));
  EXPECT_EQ(l, LogLevel::kDebug);
  ASSERT_TRUE(ParseLogLevel("error", &l));
  EXPECT_EQ(l, LogLevel::kError);
  EXPECT_FALSE(ParseLogLevel("verbose", &l));
  EXPECT_FALSE(ParseLogLevel("", &l));
  EXPECT_STREQ(LogLevelName(LogLevel::kWarn), "warn");
}

TEST(Logger, WritesRecordsAtOrAboveItsLevelInOrder) {
  Pipe p;
  LogOptions o;
  o.fd = p.w;
  o.level = LogLevel::kWarn;
  Logger log(o);
  log.Log(LogLevel::kInfo, "hidden", {{"n", 1}});
  log.Log(LogLevel::kWarn, "first", {{"n", 2}});
  log.Log(LogLevel::kDebug, "hidden", {{"n", 3}});
  log.Log(LogLevel::kError, "second", {{"n", 4}});
  EXPECT_FALSE(log.Enabled(LogLevel::kInfo));
  EXPECT_TRUE(log.Enabled(LogLevel::kError));
  log.Flush();
  std::string out = p.ReadAvailable();
  EXPECT_EQ(CountLines(out), 2u) << out;
  size_t a = out.find(" warn first n=2\n"), b = out.find(" error second n=4\n");
  ASSERT_NE(a, std::string::npos) << out;
  ASSERT_NE(b, std::string::npos) << out;
  EXPECT_LT(a, b);
  EXPECT_EQ(out.find("hidden"), std::string::npos);
  EXPECT_EQ(log.dropped(), 0u);
}

TEST(Logger, AFormatterReplacesTheTextFormat) {
  Pipe p;
  LogOptions o;
  o.fd = p.w;
  o.format = [](const LogRecord& r, std::string* out) {
    *out += "<" + std::string(r.event) + ":" + std::to_string(r.n_fields) + ">\n";
  };
  Logger log(o);
  log.Log(LogLevel::kInfo, "startup", {{"a", 1}, {"b", "x"}});
  log.Flush();
  EXPECT_EQ(p.ReadAvailable(), "<startup:2>\n");
}

// The sink stops taking bytes (a pipe nobody reads, 64 KiB in the kernel):
// Log keeps returning, the queue stops at its bound, the rest is dropped and
// counted, and once the sink reads again every accepted record arrives.
TEST(Logger, AFullSinkDropsAndCountsInsteadOfBlocking) {
  Pipe p;
  Counter dropped_metric;
  LogOptions o;
  o.fd = p.w;
  o.max_queued_bytes = 16 << 10;
  o.dropped_counter = &dropped_metric;
  Logger log(o);
  const std::string payload(200, 'x');
  const int kRecords = 5000;  // ~1.2 MB of lines: far more than pipe + queue
  for (int i = 0; i < kRecords; i++) log.Log(LogLevel::kInfo, "line", {{"i", i}, {"p", payload}});
  // All 5000 calls returned although nothing read the pipe.
  EXPECT_GT(log.dropped(), 0u);
  EXPECT_EQ(dropped_metric.value(), log.dropped());
  // Read until every accepted record is out (the writer may be blocked in
  // write until we read).
  std::string out;
  std::thread reader([&] {
    char buf[65536];
    for (;;) {
      ssize_t n = read(p.r, buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
      if (CountLines(out) + log.dropped() >= static_cast<size_t>(kRecords)) break;
    }
  });
  log.Flush();
  reader.join();
  EXPECT_EQ(CountLines(out) + log.dropped(), static_cast<size_t>(kRecords));
  // Accepted ≈ pipe capacity + queue bound: far fewer than offered.
  EXPECT_LT(CountLines(out), static_cast<size_t>(kRecords) / 2);
}

}  // namespace
}  // namespace tw
