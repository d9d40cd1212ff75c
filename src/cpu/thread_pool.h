// ThreadPool: a fixed set of worker threads running parallel-for loops.
//
// Purpose: the CPU kernels split a matmul or an attention pass into tasks
// (column tiles, (row, head) pairs) and run them on `threads` cores.
// Threading: ParallelFor() may be called by one thread at a time (the engine
// thread that owns the pool); the calling thread takes part in the work and
// returns only when every task has finished. Tasks must not call ParallelFor.
// Allocation: `threads - 1` std::threads at construction, nothing per call.
// Never: allocates, throws or blocks forever inside ParallelFor; idle workers
// spin briefly and then sleep on a condition variable.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <thread>
#include <vector>

#include "common/mutex.h"

namespace tw::cpu {

class ThreadPool {
 public:
  // `threads` counts the calling thread: 1 means "no workers, run inline".
  // Values < 1 are treated as 1.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }

  // Runs fn(task, worker) for task in [0, n_tasks); `worker` in [0, threads())
  // identifies the thread (for per-thread scratch). Tasks are claimed
  // dynamically, so their order and placement are unspecified.
  template <typename Fn>
  void ParallelFor(int n_tasks, const Fn& fn) {
    Run(n_tasks, [](const void* ctx, int task, int worker) {
      (*static_cast<const Fn*>(ctx))(task, worker);
    }, &fn);
  }

  // Number of hardware threads the OS reports (at least 1).
  static int HardwareThreads();

 private:
  using TaskFn = void (*)(const void* ctx, int task, int worker);
  void Run(int n_tasks, TaskFn fn, const void* ctx);
  void WorkerLoop(int worker);
  // Claims and runs tasks of job `generation` until none is left.
  void DrainTasks(uint32_t generation, int worker);

  const int threads_;
  std::vector<std::thread> workers_;

  // The current job: (generation << 32) | tasks not yet claimed. Tasks are
  // claimed by a compare-and-swap that also checks the generation, so a
  // worker that wakes late can never claim a task of a newer job. Task i is
  // claimed when the count drops from i+1 to i.
  std::atomic<uint64_t> claim_{0};
  // job_fn_/job_ctx_ are written by the caller before claim_ is published
  // (release) and read by a worker only while it holds a claimed task of
  // that job, during which the caller does not return.
  TaskFn job_fn_ = nullptr;
  const void* job_ctx_ = nullptr;
  std::atomic<int> pending_{0};  // tasks of the current job not yet finished
  uint32_t generation_ = 0;      // caller only
  std::atomic<bool> stop_{false};

  Mutex mu_;                      // the sleep/wake handshake
  std::condition_variable wake_;  // workers sleep here between jobs
  int sleepers_ TW_GUARDED_BY(mu_) = 0;
};

}  // namespace tw::cpu
