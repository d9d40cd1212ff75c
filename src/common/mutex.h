// Mutex, MutexLock and the thread-safety annotations clang checks.
//
// A member written as
//
//   Mutex mu_;
//   int count_ TW_GUARDED_BY(mu_);
//
// may only be touched while mu_ is held: clang's -Wthread-safety (run by
// `make thread-safety`, and in CI) rejects any access without it, and any
// call to a function marked TW_REQUIRES(mu_) from a caller that does not
// hold it. The comment "protected by mu_" becomes a checked fact. With g++
// the annotations expand to nothing and Mutex is a plain std::mutex.
//
// MutexLock is the only way to hold a Mutex (scoped, like std::lock_guard).
// Waiting on a condition variable goes through the lock, in a loop the
// analysis can see holds the mutex at every test of the condition:
//
//   MutexLock lock(mu_);
//   while (!ready_) lock.Wait(cv_);
//
// Thread-safe: Mutex and MutexLock are what make other things so.
// Memory: one std::mutex; MutexLock one std::unique_lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define TW_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define TW_THREAD_ANNOTATION(x)
#endif

#define TW_CAPABILITY(x) TW_THREAD_ANNOTATION(capability(x))
#define TW_SCOPED_CAPABILITY TW_THREAD_ANNOTATION(scoped_lockable)
#define TW_GUARDED_BY(x) TW_THREAD_ANNOTATION(guarded_by(x))
#define TW_REQUIRES(...) TW_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define TW_ACQUIRE(...) TW_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define TW_RELEASE(...) TW_THREAD_ANNOTATION(release_capability(__VA_ARGS__))

namespace tw {

class TW_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

 private:
  friend class MutexLock;
  std::mutex mu_;
};

class TW_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) TW_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() TW_RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Releases the mutex while blocked on cv and holds it again on return
  // (also on a spurious wake-up: callers wait in a loop on their condition).
  void Wait(std::condition_variable& cv) { cv.wait(lock_); }
  // The same, returning false once `deadline` has passed.
  template <typename Clock, typename Duration>
  bool WaitUntil(std::condition_variable& cv,
                 const std::chrono::time_point<Clock, Duration>& deadline) {
    return cv.wait_until(lock_, deadline) == std::cv_status::no_timeout;
  }

  // Lets go early (e.g. before notifying) and takes it again.
  void Unlock() TW_RELEASE() { lock_.unlock(); }
  void Lock() TW_ACQUIRE() { lock_.lock(); }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace tw
