#include "cpu/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TW_CPU_RELAX() _mm_pause()
#else
#define TW_CPU_RELAX() ((void)0)
#endif

namespace tw::cpu {

namespace {
// How long an idle worker polls for the next job before sleeping: a decode
// step launches ~100 short jobs back to back and a condition-variable wake
// costs tens of microseconds, so a short spin pays for itself.
constexpr int kWorkerSpin = 4000;
// How long the caller polls for stragglers before it starts yielding its
// core (on a loaded machine the straggler may be waiting for that core).
constexpr int kCallerSpin = 2000;

uint32_t GenerationOf(uint64_t claim) { return static_cast<uint32_t>(claim >> 32); }
uint32_t UnclaimedOf(uint64_t claim) { return static_cast<uint32_t>(claim); }
}  // namespace

ThreadPool::ThreadPool(int threads) : threads_(threads < 1 ? 1 : threads) {
  workers_.reserve(threads_ - 1);
  for (int w = 1; w < threads_; ++w) workers_.emplace_back([this, w] { WorkerLoop(w); });
}

ThreadPool::~ThreadPool() {
  {
    MutexLock lock(mu_);
    stop_.store(true, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

int ThreadPool::HardwareThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

void ThreadPool::DrainTasks(uint32_t generation, int worker) {
  uint64_t c = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (GenerationOf(c) != generation || UnclaimedOf(c) == 0) return;
    if (!claim_.compare_exchange_weak(c, c - 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
      continue;  // c now holds the current value
    }
    job_fn_(job_ctx_, static_cast<int>(UnclaimedOf(c) - 1), worker);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
    c = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::Run(int n_tasks, TaskFn fn, const void* ctx) {
  if (n_tasks <= 0) return;
  if (threads_ == 1 || n_tasks == 1) {
    for (int t = 0; t < n_tasks; ++t) fn(ctx, t, 0);
    return;
  }
  job_fn_ = fn;
  job_ctx_ = ctx;
  pending_.store(n_tasks, std::memory_order_relaxed);
  const uint32_t gen = ++generation_;
  bool wake = false;
  {
    MutexLock lock(mu_);
    claim_.store((static_cast<uint64_t>(gen) << 32) | static_cast<uint32_t>(n_tasks),
                 std::memory_order_release);
    wake = sleepers_ > 0;
  }
  if (wake) wake_.notify_all();
  DrainTasks(gen, 0);
  // Wait for tasks other threads are still running; ctx lives on our stack.
  for (int i = 0; pending_.load(std::memory_order_acquire) != 0; ++i) {
    if (i < kCallerSpin) TW_CPU_RELAX();
    else std::this_thread::yield();
  }
}

void ThreadPool::WorkerLoop(int worker) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t gen = GenerationOf(claim_.load(std::memory_order_acquire));
    for (int i = 0; gen == seen && i < kWorkerSpin && !stop_.load(std::memory_order_relaxed); ++i) {
      TW_CPU_RELAX();
      gen = GenerationOf(claim_.load(std::memory_order_acquire));
    }
    if (gen == seen) {
      MutexLock lock(mu_);
      ++sleepers_;
      while (!stop_.load(std::memory_order_acquire) &&
             GenerationOf(claim_.load(std::memory_order_acquire)) == seen) {
        lock.Wait(wake_);
      }
      --sleepers_;
      gen = GenerationOf(claim_.load(std::memory_order_acquire));
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = gen;
    DrainTasks(gen, worker);
  }
}

}  // namespace tw::cpu
