// The emulator's execution of a kernel: blocks one after another in a
// seeded random order; inside a block every CUDA thread is a fiber, and the
// scheduler runs one runnable fiber at a time, picked at random, until it
// waits at a barrier or exits. Barriers:
//   __syncthreads: completes when every thread of the block that has not
//     exited waits there (exited threads count as arrived, as on sm_70+);
//   warp collectives (__shfl_*_sync, __ballot_sync, __syncwarp, mma.sync):
//     complete when every lane of the mask waits in the same intrinsic with
//     the same mask. A mask that does not name the caller, names a lane
//     beyond the block or a lane that has exited, or two masks that overlap
//     without being equal, abort; so does a block in which no thread can run.
// Shared memory (the `twemu_shared` section and the dynamic window) is
// refilled with garbage before every block.
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "emu.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TWEMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TWEMU_ASAN 1
#endif
#if defined(TWEMU_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

// The static shared variables of every kernel (see __shared__ in
// cuda_runtime.h). Weak: a program without any has no such section.
extern "C" char __start_twemu_shared[] __attribute__((weak));
extern "C" char __stop_twemu_shared[] __attribute__((weak));

namespace cudaemu {

const ThreadView* g_thread = nullptr;
const BlockView* g_block = nullptr;

namespace {

enum class Wait : uint8_t { kRunnable, kSyncThreads, kWarp, kExited };
enum class Coll : uint8_t { kShflIdx, kShflUp, kShflDown, kShflXor, kBallot, kSyncWarp, kMma };

const char* CollName(Coll c) {
  switch (c) {
    case Coll::kShflIdx: return "__shfl_sync";
    case Coll::kShflUp: return "__shfl_up_sync";
    case Coll::kShflDown: return "__shfl_down_sync";
    case Coll::kShflXor: return "__shfl_xor_sync";
    case Coll::kBallot: return "__ballot_sync";
    case Coll::kSyncWarp: return "__syncwarp";
    case Coll::kMma: return "mma.sync";
  }
  return "?";
}

// What the scheduler touches at every switch, kept small (the inline PTX's
// state is in g_ptx, beside it).
struct Thread {
  ThreadView view;
  int tid = 0, lane = 0, warp = 0;
  void* sp = nullptr;
  Wait wait = Wait::kRunnable;
  // The warp collective this thread waits in, its inputs and its result.
  Coll coll = Coll::kSyncWarp;
  unsigned mask = 0;
  uint64_t in = 0;
  int arg = 0, width = 32;
  uint64_t out = 0;
  int pred = 0;  // __syncthreads_count's argument, then its result
};

// Lanes of one warp waiting in one collective.
struct Round {
  Coll kind;
  unsigned mask;
  unsigned arrived;
};

struct Warp {
  unsigned exists = 0;  // lanes the block has
  unsigned live = 0;    // lanes that have not exited
  // Open rounds: their masks are disjoint (overlapping masks abort), so a
  // warp has at most 32.
  Round rounds[32];
  int nrounds = 0;
};

struct Block {
  BlockView view;
  const KernelCall* call = nullptr;
  int nthreads = 0;
  int live = 0;
  int at_sync = 0;
  int sync_pred = 0;
  std::vector<Warp> warps;
  std::vector<int> runnable;
  Rng rng{0};
};

// State below belongs to the host thread running device work (one at a
// time: runtime.cc holds its lock around RunKernel).
Block g_b;
std::vector<Thread> g_threads;
std::vector<PtxThreadState> g_ptx;  // g_ptx[tid]: thread tid's cp.async groups and mma fragments
std::vector<Stack> g_stacks;
Thread* g_t = nullptr;  // the running fiber's thread, or null
void* g_sched_sp = nullptr;  // the host thread's context while a block runs
void* g_exited_sp = nullptr;  // where an exited fiber's context goes (never resumed)
size_t g_stack_bytes = 0;
#if defined(TWEMU_ASAN)
const void* g_sched_bottom = nullptr;
size_t g_sched_size = 0;
#endif

// The dynamic shared memory window: [g_dyn_lo, g_dyn_end), a guard page at
// g_dyn_end; a launch's dynamic memory ends at the guard.
constexpr size_t kMaxDynamicShared = 232448;  // 227 KiB, sm_90's opt-in maximum
constexpr uint32_t kDynamicOffset = 1u << 24;  // shared offsets of the dynamic window start here
char* g_dyn_lo = nullptr;
char* g_dyn_end = nullptr;
char* g_dyn_base = nullptr;  // this launch's dynamic shared memory

std::string Ranges(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!s.empty()) s += ", ";
    s += std::to_string(v[i]);
    if (j > i) s += "-" + std::to_string(v[j]);
    i = j + 1;
  }
  return s;
}

std::string Hex(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

std::string LaneList(unsigned mask) {
  std::vector<int> v;
  for (int l = 0; l < 32; ++l) {
    if (mask & (1u << l)) v.push_back(l);
  }
  return "lanes " + Ranges(v);
}

// Switches from the context saved in *save (a fiber, or the scheduler when
// from_sched) to `next`, or to the scheduler when next is null. Fibers
// switch to each other directly: one switch per hand-over.
void SwitchTo(void** save, Thread* next, bool exiting) {
#if defined(TWEMU_ASAN)
  void* fake = nullptr;
  if (next != nullptr) {
    const Stack& st = g_stacks[static_cast<size_t>(next->tid)];
    __sanitizer_start_switch_fiber(exiting ? nullptr : &fake, st.lo, static_cast<size_t>(st.hi - st.lo));
  } else {
    __sanitizer_start_switch_fiber(exiting ? nullptr : &fake, g_sched_bottom, g_sched_size);
  }
#else
  (void)exiting;
#endif
  g_t = next;
  g_thread = next != nullptr ? &next->view : nullptr;
  twemu_switch(save, next != nullptr ? next->sp : g_sched_sp);
#if defined(TWEMU_ASAN)
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

[[noreturn]] void Deadlock();

// Takes a random runnable thread off the list, or null when none is.
Thread* PickRunnable() {
  if (g_b.runnable.empty()) return nullptr;
  const uint32_t pick = g_b.rng.Below(static_cast<uint32_t>(g_b.runnable.size()));
  const int tid = g_b.runnable[pick];
  g_b.runnable[pick] = g_b.runnable.back();
  g_b.runnable.pop_back();
  return &g_threads[static_cast<size_t>(tid)];
}

// The running thread gives way (it has set its wait state, and may have made
// itself runnable again): the next runnable thread, picked at random, runs;
// returns when this thread is picked again.
void Park() {
  Thread& self = *g_t;
  Thread* next = PickRunnable();
  if (next == &self) return;  // picked itself: nothing to switch
  if (next == nullptr) Deadlock();  // this thread waits, and nobody can run
  SwitchTo(&self.sp, next, /*exiting=*/false);
}

void MakeRunnable(Thread& t) {
  t.wait = Wait::kRunnable;
  g_b.runnable.push_back(t.tid);
}

void ReleaseSync() {
  const int sum = g_b.sync_pred;
  for (int i = 0; i < g_b.nthreads; ++i) {
    Thread& t = g_threads[static_cast<size_t>(i)];
    if (t.wait == Wait::kSyncThreads) {
      t.pred = sum;
      MakeRunnable(t);
    }
  }
  g_b.at_sync = 0;
  g_b.sync_pred = 0;
}

Thread& LaneThread(int warp, int lane) { return g_threads[static_cast<size_t>(warp * 32 + lane)]; }

void CompleteRound(int warp, const Round& r) {
  const int base = warp * 32;
  if (r.kind == Coll::kMma) {
    PtxThreadState* lanes[32];
    for (int l = 0; l < 32; ++l) lanes[l] = &g_ptx[static_cast<size_t>(warp * 32 + l)];
    MmaM16N8K8Tf32(lanes);
  } else if (r.kind == Coll::kBallot) {
    unsigned ballot = 0;
    for (int l = 0; l < 32; ++l) {
      if ((r.mask & (1u << l)) && LaneThread(warp, l).in != 0) ballot |= 1u << l;
    }
    for (int l = 0; l < 32; ++l) {
      if (r.mask & (1u << l)) LaneThread(warp, l).out = ballot;
    }
  } else if (r.kind != Coll::kSyncWarp) {
    for (int l = 0; l < 32; ++l) {
      if (!(r.mask & (1u << l))) continue;
      Thread& t = LaneThread(warp, l);
      const int w = t.width;
      const int seg = l & ~(w - 1);  // first lane of this lane's segment
      int src = l;
      switch (r.kind) {
        case Coll::kShflIdx: src = seg + (t.arg & (w - 1)); break;
        case Coll::kShflUp: src = l - t.arg >= seg ? l - t.arg : l; break;
        case Coll::kShflDown: src = l + t.arg < seg + w ? l + t.arg : l; break;
        case Coll::kShflXor: src = (l ^ t.arg) < seg + w ? (l ^ t.arg) : l; break;
        default: break;
      }
      if (src < 0 || src > 31 || !(r.mask & (1u << src))) {
        Fatal("%s in warp %d: lane %d reads lane %d, which is not in the mask 0x%08x", CollName(r.kind), warp, l,
              src, r.mask);
      }
      t.out = LaneThread(warp, src).in;
    }
  }
  for (int l = 0; l < 32; ++l) {
    if (r.mask & (1u << l)) MakeRunnable(g_threads[static_cast<size_t>(base + l)]);
  }
}

uint64_t Collective(Coll kind, unsigned mask, uint64_t in, int arg, int width) {
  Thread& t = *g_t;
  Warp& w = g_b.warps[static_cast<size_t>(t.warp)];
  const unsigned bit = 1u << t.lane;
  if (width < 1 || width > 32 || (width & (width - 1)) != 0) {
    Fatal("%s with width %d (want a power of two up to 32)", CollName(kind), width);
  }
  if (!(mask & bit)) Fatal("%s with mask 0x%08x, which does not name the calling lane %d", CollName(kind), mask, t.lane);
  if (mask & ~w.exists) {
    Fatal("%s with mask 0x%08x names %s of warp %d, beyond the block's %d threads", CollName(kind), mask,
          LaneList(mask & ~w.exists).c_str(), t.warp, g_b.nthreads);
  }
  if (mask & ~w.live) {
    Fatal("%s with mask 0x%08x in warp %d names %s, which have exited: they can never arrive", CollName(kind), mask,
          t.warp, LaneList(mask & ~w.live).c_str());
  }
  Round* round = nullptr;
  for (int i = 0; i < w.nrounds; ++i) {
    Round& r = w.rounds[i];
    if (r.mask == mask) {
      round = &r;
    } else if (r.mask & mask) {
      Fatal("warp %d: lane %d enters %s with mask 0x%08x while %s wait in %s with the overlapping mask 0x%08x",
            t.warp, t.lane, CollName(kind), mask, LaneList(r.arrived).c_str(), CollName(r.kind), r.mask);
    }
  }
  if (round == nullptr) {
    round = &w.rounds[w.nrounds++];
    *round = Round{kind, mask, 0};
  } else if (round->kind != kind) {
    Fatal("warp %d, mask 0x%08x: lane %d enters %s while %s wait in %s", t.warp, mask, t.lane, CollName(kind),
          LaneList(round->arrived).c_str(), CollName(round->kind));
  }
  t.wait = Wait::kWarp;
  t.coll = kind;
  t.mask = mask;
  t.in = in;
  t.arg = arg;
  t.width = width;
  round->arrived |= bit;
  if (round->arrived == mask) {
    const Round done = *round;
    *round = w.rounds[--w.nrounds];
    CompleteRound(t.warp, done);
  }
  Park();
  return t.out;
}

[[noreturn]] void Deadlock() {
  std::string msg;
  std::vector<int> at_sync;
  for (int i = 0; i < g_b.nthreads; ++i) {
    if (g_threads[static_cast<size_t>(i)].wait == Wait::kSyncThreads) at_sync.push_back(i);
  }
  if (!at_sync.empty()) msg += "\n  threads " + Ranges(at_sync) + " wait at __syncthreads";
  for (size_t wi = 0; wi < g_b.warps.size(); ++wi) {
    const Warp& w = g_b.warps[wi];
    for (const Round& r : std::vector<Round>(w.rounds, w.rounds + w.nrounds)) {
      msg += "\n  warp " + std::to_string(wi) + ": " + LaneList(r.arrived) + " wait in " + CollName(r.kind) +
             " (mask 0x" + Hex(r.mask) + "), " + LaneList(r.mask & ~r.arrived) + " never arrive";
    }
  }
  std::vector<int> exited;
  for (int i = 0; i < g_b.nthreads; ++i) {
    if (g_threads[static_cast<size_t>(i)].wait == Wait::kExited) exited.push_back(i);
  }
  if (!exited.empty()) msg += "\n  threads " + Ranges(exited) + " have exited";
  Fatal("deadlock in kernel %s, block (%u, %u, %u): no thread can run:%s", g_b.call->name, g_b.view.idx.x,
        g_b.view.idx.y, g_b.view.idx.z, msg.c_str());
}

[[noreturn]] void ThreadExit() {
  Thread& t = *g_t;
  DropAsyncCopies(g_ptx[static_cast<size_t>(t.tid)]);
  Warp& w = g_b.warps[static_cast<size_t>(t.warp)];
  const unsigned bit = 1u << t.lane;
  for (int i = 0; i < w.nrounds; ++i) {
    const Round& r = w.rounds[i];
    if (r.mask & bit) {
      Fatal("%s with mask 0x%08x in warp %d names lane %d, which exits while %s wait in it", CollName(r.kind), r.mask,
            t.warp, t.lane, LaneList(r.arrived).c_str());
    }
  }
  w.live &= ~bit;
  t.wait = Wait::kExited;
  --g_b.live;
  if (g_b.at_sync > 0 && g_b.at_sync == g_b.live) ReleaseSync();
  Thread* next = PickRunnable();
  if (next == nullptr && g_b.live > 0) Deadlock();
  SwitchTo(&g_exited_sp, next, /*exiting=*/true);  // next == null: the block is done
  Fatal("an exited thread was resumed");
}

void FiberEntry() {
#if defined(TWEMU_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
  g_b.call->body();
  ThreadExit();
}

// ---- faults --------------------------------------------------------------------
// (Under AddressSanitizer its own handler reports faults instead.)
[[maybe_unused]] void OnFault(int sig, siginfo_t* info, void*) {
  char buf[1024];
  int n = 0;
  if (g_t != nullptr) {
    const Thread& t = *g_t;
    const char* where = "";
    std::string what = DescribeAddress(info->si_addr);
    const Stack& st = g_stacks[static_cast<size_t>(t.tid)];
    const char* a = static_cast<const char*>(info->si_addr);
    if (a >= st.map && a < st.lo) where = " (the thread's stack overflowed: raise TWEMU_STACK_KIB)";
    if (a >= g_dyn_end && a < g_dyn_end + 4096) what = "past the end of the launch's dynamic shared memory";
    n = std::snprintf(buf, sizeof buf,
                      "cudaemu: illegal memory access (%s at %p%s%s%s) in kernel %s, block (%u, %u, %u), thread "
                      "(%u, %u, %u) (TWEMU_SEED=%llu)\n",
                      sig == SIGSEGV ? "SIGSEGV" : "SIGBUS", info->si_addr, what.empty() ? "" : ": ", what.c_str(),
                      where, g_b.call->name, g_b.view.idx.x, g_b.view.idx.y, g_b.view.idx.z, t.view.idx.x,
                      t.view.idx.y, t.view.idx.z, static_cast<unsigned long long>(Seed()));
    if (n > 0) (void)!::write(2, buf, static_cast<size_t>(std::min<int>(n, sizeof buf - 1)));
  }
  ::signal(sig, SIG_DFL);
  if (g_t != nullptr) std::abort();
}

void InstallFaultHandler() {
#if !defined(TWEMU_ASAN)
  static bool installed = false;
  thread_local bool alt_stack = false;
  if (!alt_stack) {
    stack_t ss{};
    ss.ss_size = 1 << 16;
    ss.ss_sp = std::malloc(ss.ss_size);  // kept for the thread's life
    ::sigaltstack(&ss, nullptr);
    alt_stack = true;
  }
  if (installed) return;
  struct sigaction sa {};
  sa.sa_sigaction = OnFault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  ::sigaction(SIGSEGV, &sa, nullptr);
  ::sigaction(SIGBUS, &sa, nullptr);
  installed = true;
#endif
}

void SetUpDynamicShared(size_t bytes) {
  if (g_dyn_lo == nullptr) {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t window = (kMaxDynamicShared + page - 1) / page * page;
    void* m = ::mmap(nullptr, window + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) Fatal("mmap of the dynamic shared window: %s", std::strerror(errno));
    g_dyn_lo = static_cast<char*>(m);
    g_dyn_end = g_dyn_lo + window;
    if (::mprotect(g_dyn_end, page, PROT_NONE) != 0) Fatal("mprotect: %s", std::strerror(errno));
  }
  g_dyn_base = g_dyn_end - (bytes + 15) / 16 * 16;
}

void RunBlock(const KernelCall& call, const uint3& idx, Rng& rng) {
  g_b.view.idx = idx;
  g_b.live = g_b.nthreads;
  g_b.at_sync = 0;
  g_b.sync_pred = 0;
  g_b.runnable.clear();
  g_b.rng = Rng{rng.Next()};
  if (__start_twemu_shared != nullptr) {
    FillGarbage(__start_twemu_shared, static_cast<size_t>(__stop_twemu_shared - __start_twemu_shared), g_b.rng);
  }
  FillGarbage(g_dyn_base, static_cast<size_t>(g_dyn_end - g_dyn_base), g_b.rng);
  for (Warp& w : g_b.warps) {
    w.live = w.exists;
    w.nrounds = 0;
  }
  for (int i = 0; i < g_b.nthreads; ++i) {
    Thread& t = g_threads[static_cast<size_t>(i)];
    t.wait = Wait::kRunnable;
    g_ptx[static_cast<size_t>(i)].uncommitted.clear();
    g_ptx[static_cast<size_t>(i)].groups.clear();
#if defined(TWEMU_ASAN)
    // A fiber that exited never unwound: its frames' redzones are still
    // poisoned in ASan's shadow of the stack this thread reuses.
    const Stack& st = g_stacks[static_cast<size_t>(i)];
    ASAN_UNPOISON_MEMORY_REGION(st.lo, static_cast<size_t>(st.hi - st.lo));
#endif
    t.sp = PrepareStack(g_stacks[static_cast<size_t>(i)], &FiberEntry);
    g_b.runnable.push_back(i);
  }
  // The fibers hand over to each other; the last to exit comes back here.
  SwitchTo(&g_sched_sp, PickRunnable(), /*exiting=*/false);
  if (g_b.live != 0) Fatal("a block ended with %d threads still live", g_b.live);
  (void)call;
}

}  // namespace

void RunKernel(const KernelCall& call, uint64_t seed) {
  InstallFaultHandler();
#if defined(TWEMU_ASAN)
  {  // the host thread's stack, which the last fiber of a block switches back to
    pthread_attr_t attr;
    void* addr = nullptr;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      pthread_attr_getstack(&attr, &addr, &size);
      pthread_attr_destroy(&attr);
    }
    g_sched_bottom = addr;
    g_sched_size = size;
  }
#endif
  if (g_stack_bytes == 0) {
    const char* env = std::getenv("TWEMU_STACK_KIB");
    g_stack_bytes = static_cast<size_t>(env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : 128) * 1024;
  }
  const int nthreads = static_cast<int>(call.block.x * call.block.y * call.block.z);
  const uint64_t nblocks = uint64_t{call.grid.x} * call.grid.y * call.grid.z;
  if (nblocks > (uint64_t{1} << 26)) Fatal("kernel %s: %llu blocks is more than the emulator runs", call.name,
                                          static_cast<unsigned long long>(nblocks));
  while (g_stacks.size() < static_cast<size_t>(nthreads)) g_stacks.push_back(NewStack(g_stack_bytes));
  if (g_threads.size() < static_cast<size_t>(nthreads)) {
    g_threads.resize(static_cast<size_t>(nthreads));
    g_ptx.resize(static_cast<size_t>(nthreads));
  }
  g_b.call = &call;
  g_b.nthreads = nthreads;
  g_b.view.dim = call.block;
  g_b.view.grid = call.grid;
  g_block = &g_b.view;
  g_b.warps.assign(static_cast<size_t>((nthreads + 31) / 32), Warp{});
  for (int i = 0; i < nthreads; ++i) {
    Thread& t = g_threads[static_cast<size_t>(i)];
    t.tid = i;
    t.lane = i % 32;
    t.warp = i / 32;
    t.view.idx = uint3{static_cast<unsigned>(i) % call.block.x, static_cast<unsigned>(i) / call.block.x % call.block.y,
                       static_cast<unsigned>(i) / (call.block.x * call.block.y)};
    g_b.warps[static_cast<size_t>(t.warp)].exists |= 1u << t.lane;
  }
  SetUpDynamicShared(call.dynamic_shared);

  Rng rng{seed};
  std::vector<uint32_t> order(static_cast<size_t>(nblocks));
  for (uint64_t i = 0; i < nblocks; ++i) order[static_cast<size_t>(i)] = static_cast<uint32_t>(i);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(static_cast<uint32_t>(i))]);
  for (uint32_t b : order) {
    const uint3 idx{b % call.grid.x, b / call.grid.x % call.grid.y, b / (call.grid.x * call.grid.y)};
    RunBlock(call, idx, rng);
  }
  g_block = nullptr;
  g_b.call = nullptr;
}

std::string RunningWhere() {
  if (g_b.call == nullptr) return "";
  char buf[512];
  if (g_t != nullptr) {
    std::snprintf(buf, sizeof buf, "kernel %s, block (%u, %u, %u), thread (%u, %u, %u)", g_b.call->name,
                  g_b.view.idx.x, g_b.view.idx.y, g_b.view.idx.z, g_t->view.idx.x, g_t->view.idx.y, g_t->view.idx.z);
  } else {
    std::snprintf(buf, sizeof buf, "kernel %s, block (%u, %u, %u)", g_b.call->name, g_b.view.idx.x, g_b.view.idx.y,
                  g_b.view.idx.z);
  }
  return buf;
}

// ---- the device built-ins ---------------------------------------------------------
void SyncThreads() { (void)SyncThreadsCount(0); }

int SyncThreadsCount(int pred) {
  Thread& t = *g_t;
  t.wait = Wait::kSyncThreads;
  ++g_b.at_sync;
  g_b.sync_pred += pred != 0 ? 1 : 0;
  if (g_b.at_sync == g_b.live) ReleaseSync();
  Park();
  return t.pred;
}

void SyncWarp(unsigned mask) { (void)Collective(Coll::kSyncWarp, mask, 0, 0, 32); }

uint64_t Shuffle(int kind, unsigned mask, uint64_t bits, int arg, int width) {
  static constexpr Coll kKinds[] = {Coll::kShflIdx, Coll::kShflUp, Coll::kShflDown, Coll::kShflXor};
  return Collective(kKinds[kind & 3], mask, bits, arg, width);
}

unsigned Ballot(unsigned mask, int pred) {
  return static_cast<unsigned>(Collective(Coll::kBallot, mask, pred != 0 ? 1 : 0, 0, 32));
}

unsigned ActiveMask() { return g_b.warps[static_cast<size_t>(g_t->warp)].live; }

void ThreadFence() {
  MakeRunnable(*g_t);
  Park();  // a scheduling point: another thread may run first
}

void WarpMma(const char*) {
  if (g_b.warps[static_cast<size_t>(g_t->warp)].exists != 0xffffffffu) {
    Fatal("mma.sync in warp %d, which has only %s (the block's %d threads)", g_t->warp,
          LaneList(g_b.warps[static_cast<size_t>(g_t->warp)].exists).c_str(), g_b.nthreads);
  }
  (void)Collective(Coll::kMma, 0xffffffffu, 0, 0, 32);
}

PtxThreadState& CurrentPtxState() {
  if (g_t == nullptr) Fatal("inline PTX outside a kernel");
  return g_ptx[static_cast<size_t>(g_t->tid)];
}

size_t SharedOffset(const void* p) {
  const char* c = static_cast<const char*>(p);
  if (__start_twemu_shared != nullptr && c >= __start_twemu_shared && c < __stop_twemu_shared) {
    return static_cast<size_t>(c - __start_twemu_shared);
  }
  if (g_dyn_lo != nullptr && c >= g_dyn_lo && c < g_dyn_end) return kDynamicOffset + static_cast<size_t>(c - g_dyn_lo);
  Fatal("__cvta_generic_to_shared(%p): not a shared-memory address", p);
}

void* SharedPointer(uint32_t offset, size_t bytes) {
  const size_t static_bytes =
      __start_twemu_shared != nullptr ? static_cast<size_t>(__stop_twemu_shared - __start_twemu_shared) : 0;
  if (offset < kDynamicOffset) {
    if (offset + bytes <= static_bytes) return __start_twemu_shared + offset;
  } else if (g_dyn_lo != nullptr) {
    char* p = g_dyn_lo + (offset - kDynamicOffset);
    if (p >= g_dyn_base && p + bytes <= g_dyn_end) return p;
  }
  Fatal("shared address 0x%x (%zu bytes) is outside the block's shared memory", offset, bytes);
}

void* DynamicShared() { return g_dyn_base; }

}  // namespace cudaemu
