// cudaemu's internals, shared by its sources (runtime.cc: the API, memory,
// streams and graphs; scheduler.cc: blocks, fibers and barriers; ptx.cc:
// the inline PTX; fiber.cc: the context switch). Not for the kernels.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "cuda_runtime.h"

namespace cudaemu {

// Prints "cudaemu: <message>" with the kernel, block and thread running
// now (if any) and the seed, then aborts.
[[noreturn]] void Fatal(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// splitmix64: the emulator's one source of randomness.
inline uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
// The scheduler draws one number per switch: xorshift64* (Vigna), seeded
// through Mix so that nearby seeds give unrelated sequences.
struct Rng {
  explicit Rng(uint64_t seed) : state(Mix(seed) | 1) {}
  uint64_t state;
  uint64_t Next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1Dull;
  }
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>((Next() >> 32) * n >> 32); }
};
// Overwrites [p, p + bytes) with bytes drawn from `rng`.
void FillGarbage(void* p, size_t bytes, Rng& rng);

// ---- fibers (fiber.cc) -------------------------------------------------------
// A fiber's stack: mmap'd, with a guard page below it.
struct Stack {
  char* map = nullptr;  // the mapping (guard page first)
  size_t map_bytes = 0;
  char* lo = nullptr;   // usable [lo, hi)
  char* hi = nullptr;
};
Stack NewStack(size_t bytes);
// Prepares `stack` so that switching to the returned stack pointer calls
// entry() (which must never return).
void* PrepareStack(const Stack& stack, void (*entry)());
// Saves the running context's stack pointer in *save and resumes `next`.
extern "C" void twemu_switch(void** save, void* next);

// ---- the scheduler (scheduler.cc) ----------------------------------------------
// Runs every block of `call` (blocks in a seeded random order, each to
// completion) on the calling host thread. `seed` seeds this launch.
void RunKernel(const KernelCall& call, uint64_t seed);
// "kernel K, block (x, y, z), thread (x, y, z)" while a kernel thread runs,
// else "".
std::string RunningWhere();

// One 16-byte cp.async copy, deferred until its group is waited for.
struct AsyncCopy {
  void* dst;
  const void* src;
};

// What the inline PTX needs of the running thread (ptx.cc).
struct PtxThreadState {
  std::vector<AsyncCopy> uncommitted;               // cp.async since the last commit_group
  std::deque<std::vector<AsyncCopy>> groups;        // committed, oldest first
  uint32_t mma_a[4], mma_b[2];                      // this lane's mma fragments ...
  float mma_c[4], mma_d[4];                         // ... and accumulators
};
PtxThreadState& CurrentPtxState();
// mma.sync: every lane of the warp deposits its fragments in its
// PtxThreadState, then this warp collective computes all of d (ptx.cc's
// MmaM16N8K8Tf32 on the 32 lanes' states).
void WarpMma(const char* text);
void MmaM16N8K8Tf32(PtxThreadState* const lanes[32]);
// At thread exit: the copies the thread never waited for are dropped. Only
// its block could read them, and nothing orders such a read after them: on
// a GPU they may land after every reader has looked.
void DropAsyncCopies(PtxThreadState& s);
// The shared-memory window (SharedOffset's inverse), for cp.async.
void* SharedPointer(uint32_t offset, size_t bytes);

// ---- memory the fault handler can name (runtime.cc) ----------------------------
// Describes where `addr` lies ("12 bytes past the end of a 4096-byte device
// allocation"), or "" when it is no allocation's guard page.
std::string DescribeAddress(const void* addr);

}  // namespace cudaemu
