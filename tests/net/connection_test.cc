#include "net/connection.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace tw::net {
namespace {

struct Recorder : ConnectionHandler {
  std::string data;
  int drained = 0;
  int closed = 0;
  void OnData(const char* d, size_t n) override { data.append(d, n); }
  void OnDrained() override { ++drained; }
  void OnClosed() override { ++closed; }
};

// Reads everything the peer end has right now.
std::string DrainPeer(int fd) {
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) break;
    out.append(buf, n);
  }
  return out;
}

class ConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(loop_.Init().ok());
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv_), 0);
    int small = 4096;
    ::setsockopt(sv_[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  }
  void TearDown() override {
    if (sv_[1] >= 0) ::close(sv_[1]);
  }
  // Runs loop iterations until cond or ~2 s.
  template <typename F>
  bool Spin(F cond) {
    bool ok = false;
    auto check = loop_.AddRepeatingTimer(1, [&] {
      if (cond()) {
        ok = true;
        loop_.Stop();
      }
    });
    auto guard = loop_.AddTimer(2000, [&] { loop_.Stop(); });
    (void)loop_.Run();
    loop_.CancelTimer(check);
    loop_.CancelTimer(guard);
    return ok;
  }
  EventLoop loop_;
  int sv_[2] = {-1, -1};
};

// Corked: what one loop iteration writes leaves in one send at its end.
TEST_F(ConnectionTest, CorkedWritesOfOneIterationLeaveInOneSend) {
  ConnectionLimits lim;
  Recorder h;
  Connection c(&loop_, sv_[0], lim, nullptr, nullptr);
  c.SetCorked(true);
  ASSERT_TRUE(c.Start(&h).ok());
  loop_.AddTimer(0, [&] {
    EXPECT_EQ(c.Write("one "), WriteResult::kQueued);
    EXPECT_EQ(c.Write("two "), WriteResult::kQueued);
    std::string_view parts[2] = {"thr", "ee"};
    EXPECT_EQ(c.Write(parts, 2), WriteResult::kQueued);
    EXPECT_EQ(c.sends(), 0u) << "nothing is sent inside the iteration";
  });
  std::string got;
  ASSERT_TRUE(Spin([&] {
    got += DrainPeer(sv_[1]);
    return got.size() == 13;
  }));
  EXPECT_EQ(got, "one two three");
  EXPECT_EQ(c.sends(), 1u);
  // The next iteration's writes: one more send.
  loop_.AddTimer(0, [&] {
    c.Write("four ");
    c.Write("five");
  });
  ASSERT_TRUE(Spin([&] {
    got += DrainPeer(sv_[1]);
    return got.size() == 22;
  }));
  EXPECT_EQ(got, "one two threefour five");
  EXPECT_EQ(c.sends(), 2u);
}

// A corked connection sends at most max_write_per_flush_bytes per iteration;
// the rest follows in later iterations, in order.
TEST_F(ConnectionTest, CorkedFlushSendsAtMostItsCapPerIteration) {
  ConnectionLimits lim;
  lim.max_write_per_flush_bytes = 1000;
  lim.max_output_bytes = 1 << 20;
  Recorder h;
  Connection c(&loop_, sv_[0], lim, nullptr, nullptr);
  c.SetCorked(true);
  ASSERT_TRUE(c.Start(&h).ok());
  std::string big;
  for (int i = 0; i < 10000; i++) big += static_cast<char>('a' + i % 26);
  loop_.AddTimer(0, [&] { EXPECT_EQ(c.Write(big), WriteResult::kQueued); });
  std::string got;
  ASSERT_TRUE(Spin([&] {
    got += DrainPeer(sv_[1]);
    return got.size() == big.size();
  }));
  EXPECT_EQ(got, big);
  EXPECT_LE(c.largest_send_bytes(), 1000u);
  EXPECT_GE(c.sends(), 10u);
}

TEST_F(ConnectionTest, WritesAreTakenQueuedRefusedAndDrainedInOrder) {
  ConnectionLimits lim;
  lim.max_output_bytes = 64 << 10;
  lim.write_low_watermark_bytes = 8 << 10;
  Recorder h;
  Connection c(&loop_, sv_[0], lim, nullptr, nullptr);
  ASSERT_TRUE(c.Start(&h).ok());
  std::string expected;
  EXPECT_EQ(c.Write("abc"), WriteResult::kTaken);
  expected += "abc";
  WriteResult last = WriteResult::kTaken;
  int i = 0;
  bool saw_queued = false;
  while (last != WriteResult::kRefused && i < 10000) {
    std::string chunk(4000, static_cast<char>('a' + i++ % 26));
    last = c.Write(chunk);
    if (last == WriteResult::kQueued) saw_queued = true;
    if (last != WriteResult::kRefused) expected += chunk;
    if (saw_queued) {
      EXPECT_NE(last, WriteResult::kTaken);  // never Taken while bytes are queued
    }
  }
  EXPECT_TRUE(saw_queued);
  ASSERT_EQ(last, WriteResult::kRefused);
  EXPECT_LE(c.buffered_bytes(), lim.max_output_bytes);
  EXPECT_GT(c.buffered_bytes() + 4000, lim.max_output_bytes);
  // Unbounded writes (complete responses) pass the bound.
  EXPECT_EQ(c.WriteUnbounded(std::string(5000, 'Z')), WriteResult::kQueued);
  expected += std::string(5000, 'Z');
  std::string got;
  ASSERT_TRUE(Spin([&] {
    got += DrainPeer(sv_[1]);
    return h.drained > 0 && c.buffered_bytes() == 0 && got.size() == expected.size();
  }));
  EXPECT_EQ(h.drained, 1);
  EXPECT_TRUE(got == expected);
  EXPECT_EQ(h.closed, 0);
}

TEST_F(ConnectionTest, CloseAfterFlushDeliversEverythingThenEof) {
  Recorder h;
  ConnectionLimits lim;
  Connection c(&loop_, sv_[0], lim, nullptr, nullptr);
  ASSERT_TRUE(c.Start(&h).ok());
  std::string big(200000, 'q');
  EXPECT_EQ(c.WriteUnbounded(big), WriteResult::kQueued);
  c.CloseAfterFlush();
  EXPECT_EQ(c.Write("late"), WriteResult::kClosed);
  std::string got;
  bool eof = false;
  ASSERT_TRUE(Spin([&] {
    char buf[65536];
    ssize_t n;
    while ((n = ::recv(sv_[1], buf, sizeof buf, MSG_DONTWAIT)) > 0) got.append(buf, n);
    if (n == 0) eof = true;
    return eof;
  }));
  EXPECT_EQ(got.size(), big.size());
  EXPECT_EQ(h.closed, 0);  // lingering: waits for our EOF
  ::close(sv_[1]);
  sv_[1] = -1;
  ASSERT_TRUE(Spin([&] { return h.closed == 1; }));
  EXPECT_TRUE(c.closed());
}

TEST_F(ConnectionTest, PeerCloseIsSeenWhileReadingIsPausedAndOnClosedRunsOnce) {
  Recorder h;
  Connection c(&loop_, sv_[0], ConnectionLimits(), nullptr, nullptr);
  ASSERT_TRUE(c.Start(&h).ok());
  ASSERT_EQ(::write(sv_[1], "hi", 2), 2);
  ASSERT_TRUE(Spin([&] { return h.data == "hi"; }));
  c.SetReading(false);
  ASSERT_EQ(::write(sv_[1], "unread", 6), 6);
  ::close(sv_[1]);
  sv_[1] = -1;
  ASSERT_TRUE(Spin([&] { return h.closed == 1; }));
  EXPECT_EQ(h.data, "hi");
  c.Close();
  EXPECT_EQ(h.closed, 1);
  EXPECT_EQ(c.Write("x"), WriteResult::kClosed);
}

TEST_F(ConnectionTest, WriteToAResetPeerReportsClosedAndClosesFromTheLoop) {
  Recorder h;
  Connection c(&loop_, sv_[0], ConnectionLimits(), nullptr, nullptr);
  ASSERT_TRUE(c.Start(&h).ok());
  ::close(sv_[1]);
  sv_[1] = -1;
  WriteResult r = c.Write("x");  // EPIPE, not SIGPIPE
  EXPECT_EQ(r, WriteResult::kClosed);
  EXPECT_EQ(h.closed, 0);  // not inside the writer's call
  ASSERT_TRUE(Spin([&] { return h.closed == 1; }));
}

}  // namespace
}  // namespace tw::net
