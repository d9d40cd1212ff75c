#include "net/event_loop.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "net/listener.h"

namespace tw::net {
namespace {

TEST(EventLoopTest, OneShotTimersFireInDeadlineOrder) {
  EventLoop loop;
  ASSERT_TRUE(loop.Init().ok());
  std::vector<int> order;
  int64_t start = EventLoop::NowMs();
  loop.AddTimer(30, [&] { order.push_back(30); loop.Stop(); });
  loop.AddTimer(10, [&] { order.push_back(10); });
  loop.AddTimer(20, [&] { order.push_back(20); });
  loop.AddTimer(0, [&] { order.push_back(0); });
  ASSERT_TRUE(loop.Run().ok());
  EXPECT_EQ(order, (std::vector<int>{0, 10, 20, 30}));
  EXPECT_GE(EventLoop::NowMs() - start, 30);
  EXPECT_EQ(loop.timer_count(), 0u);
}

TEST(EventLoopTest, CancelledTimersDoNotFire) {
  EventLoop loop;
  ASSERT_TRUE(loop.Init().ok());
  std::vector<int> fired;
  auto a = loop.AddTimer(5, [&] { fired.push_back(1); });
  auto b = loop.AddTimer(10, [&] { fired.push_back(2); });
  EventLoop::TimerId c = 0;
  // A timer that cancels a later one from its own callback.
  loop.AddTimer(1, [&] { EXPECT_TRUE(loop.CancelTimer(c)); });
  c = loop.AddTimer(15, [&] { fired.push_back(3); });
  loop.AddTimer(30, [&] { loop.Stop(); });
  EXPECT_TRUE(loop.CancelTimer(a));
  EXPECT_FALSE(loop.CancelTimer(a));  // already gone
  EXPECT_FALSE(loop.CancelTimer(12345));
  ASSERT_TRUE(loop.Run().ok());
  EXPECT_EQ(fired, (std::vector<int>{2}));
  EXPECT_FALSE(loop.CancelTimer(b));  // fired
}

TEST(EventLoopTest, RepeatingTimerRunsUntilItCancelsItself) {
  EventLoop loop;
  ASSERT_TRUE(loop.Init().ok());
  int ticks = 0;
  EventLoop::TimerId id = 0;
  int64_t start = EventLoop::NowMs();
  id = loop.AddRepeatingTimer(5, [&] {
    if (++ticks == 4) {
      EXPECT_TRUE(loop.CancelTimer(id));
      loop.AddTimer(20, [&] { loop.Stop(); });  // would see a 5th tick if not cancelled
    }
  });
  ASSERT_TRUE(loop.Run().ok());
  EXPECT_EQ(ticks, 4);
  EXPECT_GE(EventLoop::NowMs() - start, 20);
}

TEST(EventLoopTest, PostWakesABlockedLoopAndRunsOnTheLoopThread) {
  EventLoop loop;
  ASSERT_TRUE(loop.Init().ok());
  std::atomic<std::thread::id> loop_tid{};
  std::thread t([&] {
    loop_tid = std::this_thread::get_id();
    (void)loop.Run();  // no timers, no fds: blocks in epoll_wait(-1) until a Post
  });
  constexpr int kThreads = 4, kPosts = 500;
  std::atomic<int> ran{0}, on_loop{0};
  std::vector<std::thread> posters;
  for (int i = 0; i < kThreads; ++i) {
    posters.emplace_back([&] {
      for (int j = 0; j < kPosts; ++j) {
        loop.Post([&] {
          ++ran;
          if (loop.InLoopThread() && std::this_thread::get_id() == loop_tid.load()) ++on_loop;
        });
      }
    });
  }
  for (auto& p : posters) p.join();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (ran.load() < kThreads * kPosts && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  loop.Post([&] { loop.Stop(); });
  t.join();
  EXPECT_EQ(ran.load(), kThreads * kPosts);
  EXPECT_EQ(on_loop.load(), kThreads * kPosts);
}

TEST(EventLoopTest, PostedFunctionsRunInPostingOrder) {
  EventLoop loop;
  ASSERT_TRUE(loop.Init().ok());
  std::vector<int> order;
  for (int i = 0; i < 10; ++i) loop.Post([&order, i] { order.push_back(i); });
  loop.Post([&] { loop.Stop(); });
  ASSERT_TRUE(loop.Run().ok());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(EventLoopTest, FileEventCallbackMayRemoveItself) {
  EventLoop loop;
  ASSERT_TRUE(loop.Init().ok());
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  int calls = 0;
  std::string got;
  ASSERT_TRUE(loop.AddFileEvent(sv[0], kReadable, [&](int fd, int events) {
    ++calls;
    EXPECT_TRUE(events & kReadable);
    char buf[16];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) got.assign(buf, n);
    loop.RemoveFileEvent(fd);  // destroys this callback only after it returns
    loop.AddTimer(10, [&] { loop.Stop(); });
  }).ok());
  ASSERT_EQ(::write(sv[1], "ping", 4), 4);
  ASSERT_EQ(::write(sv[1], "more", 4), 4);  // still readable, but unregistered
  ASSERT_TRUE(loop.Run().ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(got, "pingmore");
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST(EventLoopTest, WritableInterestCanBeToggled) {
  EventLoop loop;
  ASSERT_TRUE(loop.Init().ok());
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  int writable = 0;
  ASSERT_TRUE(loop.AddFileEvent(sv[0], kWritable, [&](int fd, int events) {
    if (events & kWritable) ++writable;
    ASSERT_TRUE(loop.SetFileEventMask(fd, 0).ok());
  }).ok());
  loop.AddTimer(20, [&] { loop.Stop(); });
  ASSERT_TRUE(loop.Run().ok());
  EXPECT_EQ(writable, 1);  // level-triggered, but interest was dropped
  EXPECT_FALSE(loop.SetFileEventMask(999, kReadable).ok());
  loop.RemoveFileEvent(sv[0]);
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST(EventLoopTest, SyscallErrorsNameTheCall) {
  EventLoop loop;
  ASSERT_TRUE(loop.Init().ok());
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ::close(fd);  // a closed fd: epoll_ctl fails with EBADF
  Status s = loop.AddFileEvent(fd, kReadable, [](int, int) {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("epoll_ctl(ADD"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("Bad file descriptor"), std::string::npos) << s.message();
}

TEST(ListenerTest, PortZeroBindsAnEphemeralPortAndBadHostsFail) {
  EventLoop loop;
  ASSERT_TRUE(loop.Init().ok());
  Listener a(&loop);
  ASSERT_TRUE(a.Open("127.0.0.1", 0).ok());
  EXPECT_GT(a.port(), 0);
  Listener b(&loop);
  Status s = b.Open("127.0.0.1", a.port());  // taken
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("bind(127.0.0.1:" + std::to_string(a.port()) + ")"), std::string::npos)
      << s.message();
  Listener c(&loop);
  s = c.Open("example.com", 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("example.com"), std::string::npos);
}

}  // namespace
}  // namespace tw::net
