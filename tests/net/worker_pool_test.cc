// WorkerPool: work off the loop, completions on it, a bounded queue, and a
// stop that drops what has not started.
#include "net/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "stream/loop_fixture.h"

namespace tw::net {
namespace {

using testing::LoopThread;
using testing::WaitFor;

// A gate the test opens: work blocked on it keeps a worker busy.
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(WorkerPool, WorkRunsOffTheLoopAndDoneOnItInOrder) {
  LoopThread lt;
  const std::thread::id loop_id = lt.Call([] { return std::this_thread::get_id(); });
  WorkerPool pool(lt.loop(), 1, 100);
  std::mutex mu;
  std::vector<int> done_order;            // guarded by mu
  std::atomic<int> work_on_loop{0}, done_off_loop{0};
  for (int i = 0; i < 20; i++) {
    bool ok = lt.Call([&, i] {
      return pool.Submit(
          [&] {
            if (std::this_thread::get_id() == loop_id) work_on_loop++;
          },
          [&, i] {
            if (std::this_thread::get_id() != loop_id) done_off_loop++;
            std::lock_guard<std::mutex> lock(mu);
            done_order.push_back(i);
          });
    });
    ASSERT_TRUE(ok);
  }
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return done_order.size() == 20;
  }));
  EXPECT_EQ(work_on_loop.load(), 0);
  EXPECT_EQ(done_off_loop.load(), 0);
  std::lock_guard<std::mutex> lock(mu);
  for (int i = 0; i < 20; i++) EXPECT_EQ(done_order[i], i);
}

// The loop stays free while work runs: a job blocked on a worker does not
// hold up the loop's other callbacks.
TEST(WorkerPool, ALongJobDoesNotBlockTheLoop) {
  LoopThread lt;
  WorkerPool pool(lt.loop(), 1, 4);
  Gate gate;
  std::atomic<bool> done{false};
  ASSERT_TRUE(lt.Call([&] { return pool.Submit([&] { gate.Wait(); }, [&] { done = true; }); }));
  ASSERT_TRUE(WaitFor([&] { return pool.running() == 1; }));
  for (int i = 0; i < 10; i++) EXPECT_EQ(lt.Call([i] { return i; }), i);  // the loop answers
  EXPECT_FALSE(done.load());
  gate.Open();
  ASSERT_TRUE(WaitFor([&] { return done.load(); }));
}

TEST(WorkerPool, TheQueueIsBoundedAndStopDropsWhatHasNotStarted) {
  LoopThread lt;
  auto pool = std::make_unique<WorkerPool>(lt.loop(), 1, 3);
  Gate gate;
  std::atomic<int> worked{0}, dones{0};
  auto submit = [&] {
    return lt.Call([&] {
      return pool->Submit(
          [&] {
            gate.Wait();
            worked++;
          },
          [&] { dones++; });
    });
  };
  ASSERT_TRUE(submit());
  ASSERT_TRUE(WaitFor([&] { return pool->running() == 1; }));  // the first is running
  EXPECT_TRUE(submit());
  EXPECT_TRUE(submit());
  EXPECT_TRUE(submit());
  EXPECT_EQ(pool->queued(), 3u);
  EXPECT_FALSE(submit()) << "a fourth waiting job is over max_queued";
  // Stop: the running job finishes, the three waiting are dropped.
  std::thread stopper([&] { pool->Stop(); });
  ASSERT_TRUE(WaitFor([&] { return pool->queued() == 0; }));  // Stop has dropped them
  gate.Open();
  stopper.join();
  EXPECT_EQ(worked.load(), 1);
  EXPECT_FALSE(submit()) << "a stopped pool takes nothing";
  lt.Call([] { return 0; });  // the posted done of the job that ran has run
  EXPECT_EQ(dones.load(), 1);
}

// Jobs queued behind a busy worker, in the order they start: the small
// ones (cost under large_cost) before the large ones, each kind in its
// submission order; and a large one passed over kMaxLargeSkips times starts
// next, however many small ones wait.
std::vector<int> StartOrder(const std::vector<std::pair<int, size_t>>& jobs) {
  LoopThread lt;
  WorkerPool pool(lt.loop(), 1, 64, /*large_cost=*/1000);
  Gate gate;
  Mutex mu;
  std::vector<int> order;
  EXPECT_TRUE(lt.Call([&] { return pool.Submit([&] { gate.Wait(); }, [] {}); }));
  EXPECT_TRUE(WaitFor([&] { return pool.running() == 1; }));
  for (const auto& [id, cost] : jobs) {
    const int n = id;
    EXPECT_TRUE(lt.Call([&] {
      return pool.Submit(
          [&, n] {
            MutexLock lock(mu);
            order.push_back(n);
          },
          [] {}, cost);
    }));
  }
  gate.Open();
  EXPECT_TRUE(WaitFor([&] {
    MutexLock lock(mu);
    return order.size() == jobs.size();
  }));
  MutexLock lock(mu);
  return order;
}

TEST(WorkerPool, SmallJobsStartBeforeLargeOnesWaiting) {
  // Ids: large 1-3 (a megabyte each), small 10-11.
  EXPECT_EQ(StartOrder({{1, 1 << 20}, {2, 1 << 20}, {10, 10}, {3, 1000}, {11, 999}}),
            (std::vector<int>{10, 11, 1, 2, 3}));
}

TEST(WorkerPool, ALargeJobIsPassedOverAtMostMaxLargeSkipsTimes) {
  std::vector<std::pair<int, size_t>> jobs = {{1, 1 << 20}};
  for (int i = 0; i < 20; i++) jobs.push_back({100 + i, 10});
  std::vector<int> expected;
  for (int i = 0; i < WorkerPool::kMaxLargeSkips; i++) expected.push_back(100 + i);
  expected.push_back(1);
  for (int i = WorkerPool::kMaxLargeSkips; i < 20; i++) expected.push_back(100 + i);
  EXPECT_EQ(StartOrder(jobs), expected);
}

}  // namespace
}  // namespace tw::net
