// cudaemu's runtime API: the emulated device's memory, streams, events,
// graphs and errors (cuda_runtime.h says what is emulated and how).
//
// Streams are queues: a launch, an asynchronous copy or memset, or an
// event record is appended to its stream and runs only when the host waits
// for it (cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize,
// cudaMemcpy, an asynchronous copy into pageable memory, cudaFree). Copies
// read their source when they run, as the GPU's DMA does: from pinned memory
// (cudaMallocHost) then, so rewriting a pinned buffer before the wait is
// seen; a pageable source is copied at the call, as the CUDA runtime stages
// it. A capturing stream records into its graph instead; cudaGraphLaunch
// appends the graph's operations to a stream.
//
// Threads: every entry point takes g_mu, the device lock, and device work
// runs with it held, so one host thread at a time drives the device.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "emu.h"

struct CUevent_st {
  bool recorded = false;
  bool done = false;
  uint64_t record_seq = 0;
  CUstream_st* stream = nullptr;
  std::chrono::steady_clock::time_point when;
};

namespace cudaemu {

// One queued or captured operation of a stream.
struct Op {
  enum Kind { kKernel, kCopy, kMemset, kEvent } kind = kKernel;
  uint64_t seq = 0;
  std::shared_ptr<KernelCall> call;
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
  int value = 0;
  std::shared_ptr<std::vector<char>> staged;  // a pageable source, copied at the call
  CUevent_st* event = nullptr;
};

}  // namespace cudaemu

struct CUgraph_st {
  std::vector<cudaemu::Op> ops;
};
struct CUgraphExec_st {
  std::vector<cudaemu::Op> ops;
};
struct CUstream_st {
  unsigned flags = 0;
  std::deque<cudaemu::Op> queue;
  CUgraph_st* capture = nullptr;  // capturing into this graph
  bool capture_invalid = false;
  cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;
  std::thread::id capture_thread;
};

namespace cudaemu {
namespace {

std::recursive_mutex g_mu;  // the device lock (recursive: Fatal may describe state while held)
using Lock = std::lock_guard<std::recursive_mutex>;

thread_local cudaError_t t_last_error = cudaSuccess;

struct Allocation {
  char* base = nullptr;
  size_t bytes = 0;
  char* map = nullptr;
  size_t map_bytes = 0;
  bool device = false;  // else pinned host memory
};

struct Device {
  uint64_t seed = 1;
  uint64_t next_seq = 1;
  uint64_t launches = 0;
  size_t memory_limit = 0;
  size_t garbage_max_bytes = 0;
  int sm_count = 132;
  int device_count = 1;
  std::map<uintptr_t, Allocation> allocations;  // by base address
  std::vector<CUstream_st*> streams;             // live streams, the null stream first
  CUstream_st null_stream;
  struct Injection {
    cudaError_t error;
    int skip;  // successful calls before the failing one
  };
  std::map<std::string, Injection> fail_next;
  std::map<const void*, int> max_dynamic_shared;  // kernel -> cudaFuncAttributeMaxDynamicSharedMemorySize
  Counters counters;
  Rng garbage{0};
};

Device& Dev() {
  static Device* d = [] {
    auto* dev = new Device;
    if (const char* s = std::getenv("TWEMU_SEED")) dev->seed = std::strtoull(s, nullptr, 0);
    const char* mib = std::getenv("TWEMU_DEVICE_MIB");
    dev->memory_limit = static_cast<size_t>(mib != nullptr && std::atol(mib) > 0 ? std::atol(mib) : 16384) << 20;
    const char* gmib = std::getenv("TWEMU_GARBAGE_MAX_MIB");
    dev->garbage_max_bytes = static_cast<size_t>(gmib != nullptr && std::atol(gmib) >= 0 ? std::atol(gmib) : 256) << 20;
    if (const char* s = std::getenv("TWEMU_SMS"); s != nullptr && std::atoi(s) > 0) dev->sm_count = std::atoi(s);
    if (const char* s = std::getenv("TWEMU_DEVICES")) dev->device_count = std::atoi(s);
    dev->garbage = Rng{Mix(dev->seed ^ 0x6761726261676500ull)};
    dev->streams.push_back(&dev->null_stream);
    return dev;
  }();
  return *d;
}

cudaError_t Fail(cudaError_t e) {
  t_last_error = e;
  return e;
}

// True (and the error in *e) when a test asked `api` to fail.
bool Injected(const char* api, cudaError_t* e) {
  Device& d = Dev();
  auto it = d.fail_next.find(api);
  if (it == d.fail_next.end()) return false;
  if (it->second.skip > 0) {
    --it->second.skip;
    return false;
  }
  *e = it->second.error;
  d.fail_next.erase(it);
  t_last_error = *e;
  return true;
}

#define TWEMU_INJECT(api)                   \
  do {                                      \
    cudaError_t inj_;                       \
    if (Injected(api, &inj_)) return inj_;  \
  } while (0)

CUstream_st* Resolve(cudaStream_t s) { return s != nullptr ? s : &Dev().null_stream; }

bool KnownStream(CUstream_st* s) {
  const auto& v = Dev().streams;
  return std::find(v.begin(), v.end(), s) != v.end();
}

// A call that CUDA forbids while a stream captures in global mode (from any
// thread) or thread-local mode (from the capturing thread): it fails and
// invalidates that capture.
bool CaptureForbids() {
  bool forbidden = false;
  for (CUstream_st* s : Dev().streams) {
    if (s->capture == nullptr) continue;
    if (s->capture_mode == cudaStreamCaptureModeGlobal ||
        (s->capture_mode == cudaStreamCaptureModeThreadLocal && s->capture_thread == std::this_thread::get_id())) {
      s->capture_invalid = true;
      forbidden = true;
    }
  }
  return forbidden;
}

// ---- memory --------------------------------------------------------------------
const Allocation* Find(const void* p) {
  auto& m = Dev().allocations;
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = m.upper_bound(a);
  if (it == m.begin()) return nullptr;
  --it;
  const Allocation& al = it->second;
  if (a >= reinterpret_cast<uintptr_t>(al.map) && a < reinterpret_cast<uintptr_t>(al.map) + al.map_bytes) return &al;
  return nullptr;
}

enum class Where { kDevice, kPinned, kPageable, kBad };

// What [p, p + bytes) is: inside one device or pinned allocation, or no
// allocation's memory (pageable host memory), or partly an allocation's.
Where Classify(const void* p, size_t bytes) {
  const Allocation* a = Find(p);
  const auto lo = reinterpret_cast<uintptr_t>(p);
  if (a == nullptr) {
    // No allocation may start inside the range either.
    auto& m = Dev().allocations;
    auto it = m.lower_bound(lo);
    if (it != m.end() && it->first < lo + bytes) return Where::kBad;
    return Where::kPageable;
  }
  const auto base = reinterpret_cast<uintptr_t>(a->base);
  if (lo < base || lo + bytes > base + a->bytes) return Where::kBad;
  return a->device ? Where::kDevice : Where::kPinned;
}

cudaError_t Allocate(void** ptr, size_t bytes, bool device) {
  *ptr = nullptr;
  if (bytes == 0) return cudaSuccess;
  Device& d = Dev();
  if (device && d.counters.device_bytes + static_cast<long long>(bytes) > static_cast<long long>(d.memory_limit)) {
    return Fail(cudaErrorMemoryAllocation);
  }
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t rounded = (bytes + 255) / 256 * 256;
  const size_t body = (rounded + page - 1) / page * page;
  Allocation a;
  a.map_bytes = body + page;
  void* m = ::mmap(nullptr, a.map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return Fail(cudaErrorMemoryAllocation);
  a.map = static_cast<char*>(m);
  // The buffer ends (256-byte rounded) at a guard page.
  if (::mprotect(a.map + body, page, PROT_NONE) != 0) Fatal("mprotect: %s", std::strerror(errno));
  a.base = a.map + body - rounded;
  a.bytes = bytes;
  a.device = device;
  // Garbage, except in very large allocations (a pool sized for a GPU):
  // their untouched pages stay zero and cost no memory.
  if (rounded <= d.garbage_max_bytes) FillGarbage(a.base, rounded, d.garbage);
  d.allocations[reinterpret_cast<uintptr_t>(a.base)] = a;
  if (device) {
    d.counters.device_bytes += static_cast<long long>(bytes);
    ++d.counters.live_device_allocations;
  } else {
    ++d.counters.live_host_allocations;
  }
  *ptr = a.base;
  return cudaSuccess;
}

cudaError_t Release(void* ptr, bool device) {
  if (ptr == nullptr) return cudaSuccess;
  Device& d = Dev();
  auto it = d.allocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == d.allocations.end() || it->second.device != device) return Fail(cudaErrorInvalidValue);
  ::munmap(it->second.map, it->second.map_bytes);
  if (device) {
    d.counters.device_bytes -= static_cast<long long>(it->second.bytes);
    --d.counters.live_device_allocations;
  } else {
    --d.counters.live_host_allocations;
  }
  d.allocations.erase(it);
  return cudaSuccess;
}

// ---- execution -------------------------------------------------------------------
void RunOp(const Op& op) {
  switch (op.kind) {
    case Op::kKernel:
      ++Dev().counters.launches;
      RunKernel(*op.call, Mix(Dev().seed ^ Mix(++Dev().launches)));
      break;
    case Op::kCopy:
      std::memmove(op.dst, op.staged ? op.staged->data() : op.src, op.bytes);
      break;
    case Op::kMemset:
      std::memset(op.dst, op.value, op.bytes);
      break;
    case Op::kEvent:
      op.event->done = true;
      op.event->when = std::chrono::steady_clock::now();
      break;
  }
}

// Runs `s`'s queued work up to and including the operation `last_seq`
// (all of it by default).
void Drain(CUstream_st* s, uint64_t last_seq = UINT64_MAX) {
  while (!s->queue.empty() && s->queue.front().seq <= last_seq) {
    Op op = std::move(s->queue.front());
    s->queue.pop_front();
    RunOp(op);
  }
}

// Runs every stream's work in the order it was queued.
void DrainAll() {
  Device& d = Dev();
  for (;;) {
    CUstream_st* next = nullptr;
    for (CUstream_st* s : d.streams) {
      if (!s->queue.empty() && (next == nullptr || s->queue.front().seq < next->queue.front().seq)) next = s;
    }
    if (next == nullptr) return;
    Op op = std::move(next->queue.front());
    next->queue.pop_front();
    RunOp(op);
  }
}

// Queues `op` on `s`, or records it into the graph `s` is capturing.
cudaError_t Submit(CUstream_st* s, Op op) {
  if (s->capture != nullptr) {
    if (!s->capture_invalid) s->capture->ops.push_back(std::move(op));
    return cudaSuccess;
  }
  op.seq = Dev().next_seq++;
  s->queue.push_back(std::move(op));
  return cudaSuccess;
}

cudaError_t CopyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, CUstream_st* s, bool* wait) {
  *wait = false;
  if (bytes == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return Fail(cudaErrorInvalidValue);
  const Where wd = Classify(dst, bytes), ws = Classify(src, bytes);
  if (wd == Where::kBad || ws == Where::kBad) return Fail(cudaErrorInvalidValue);
  const bool dd = wd == Where::kDevice, sd = ws == Where::kDevice;
  switch (kind) {
    case cudaMemcpyHostToDevice: if (!dd || sd) return Fail(cudaErrorInvalidValue); break;
    case cudaMemcpyDeviceToHost: if (dd || !sd) return Fail(cudaErrorInvalidValue); break;
    case cudaMemcpyDeviceToDevice: if (!dd || !sd) return Fail(cudaErrorInvalidValue); break;
    case cudaMemcpyHostToHost: if (dd || sd) return Fail(cudaErrorInvalidValue); break;
    case cudaMemcpyDefault: break;
    default: return Fail(cudaErrorInvalidMemcpyDirection);
  }
  Op op;
  op.kind = Op::kCopy;
  op.dst = dst;
  op.src = src;
  op.bytes = bytes;
  if (ws == Where::kPageable) {
    if (s->capture != nullptr) {
      s->capture_invalid = true;  // a graph cannot hold a pageable copy
      return Fail(cudaErrorStreamCaptureUnsupported);
    }
    op.staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src), static_cast<const char*>(src) + bytes);
  }
  // Into pageable memory the call returns only when the copy is done.
  if (wd == Where::kPageable) {
    if (s->capture != nullptr) {
      s->capture_invalid = true;
      return Fail(cudaErrorStreamCaptureUnsupported);
    }
    *wait = true;
  }
  return Submit(s, std::move(op));
}

}  // namespace

// ---- the public hooks -----------------------------------------------------------
void FillGarbage(void* p, size_t bytes, Rng& rng) {
  // A 64-bit LCG seeded from rng, its words' high bits folded down: cheap
  // (a block's whole shared section is refilled before every block) and
  // different at every word and every call.
  auto* c = static_cast<unsigned char*>(p);
  uint64_t x = rng.Next() | 1;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t v = x ^ (x >> 29);
    std::memcpy(c + i, &v, 8);
  }
  if (i < bytes) {
    const uint64_t v = rng.Next();
    std::memcpy(c + i, &v, bytes - i);
  }
}

void Fatal(const char* fmt, ...) {
  char msg[8192];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const std::string where = RunningWhere();
  std::fprintf(stderr, "cudaemu: %s%s%s (TWEMU_SEED=%llu)\n", msg, where.empty() ? "" : "\n  in ", where.c_str(),
               static_cast<unsigned long long>(Seed()));
  std::fflush(stderr);
  std::abort();
}

std::string DescribeAddress(const void* addr) {
  const Allocation* a = Find(addr);
  if (a == nullptr) return "";
  const char* p = static_cast<const char*>(addr);
  char buf[256];
  if (p >= a->base + a->bytes) {
    std::snprintf(buf, sizeof buf, "%zu bytes past the end of a %zu-byte %s allocation at %p",
                  static_cast<size_t>(p - (a->base + a->bytes)), a->bytes, a->device ? "device" : "pinned host",
                  static_cast<void*>(a->base));
    return buf;
  }
  return "";
}

cudaError_t Enqueue(std::shared_ptr<KernelCall> call, cudaStream_t stream) {
  Lock lock(g_mu);
  Device& d = Dev();
  CUstream_st* s = Resolve(stream);
  if (!KnownStream(s)) return Fail(cudaErrorInvalidResourceHandle);
  const dim3 b = call->block, g = call->grid;
  const uint64_t threads = uint64_t{b.x} * b.y * b.z;
  cudaError_t err = cudaSuccess;
  if (b.x < 1 || b.y < 1 || b.z < 1 || b.x > 1024 || b.y > 1024 || b.z > 64 || threads > 1024) {
    err = cudaErrorInvalidConfiguration;
  } else if (g.x < 1 || g.y < 1 || g.z < 1 || g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535) {
    err = cudaErrorInvalidConfiguration;
  } else if (call->dynamic_shared > 48 * 1024) {
    auto it = d.max_dynamic_shared.find(call->fn);
    const int allowed = it == d.max_dynamic_shared.end() ? 48 * 1024 : it->second;
    if (call->dynamic_shared > static_cast<size_t>(allowed)) err = cudaErrorInvalidValue;
  }
  if (err != cudaSuccess) {
    if (s->capture != nullptr) s->capture_invalid = true;
    return Fail(err);
  }
  Op op;
  op.kind = Op::kKernel;
  op.call = std::move(call);
  return Submit(s, std::move(op));
}

cudaError_t SetFunctionAttribute(const void* fn, cudaFuncAttribute attr, int value) {
  Lock lock(g_mu);
  if (fn == nullptr) return Fail(cudaErrorInvalidDeviceFunction);
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || value > 232448) return Fail(cudaErrorInvalidValue);
    Dev().max_dynamic_shared[fn] = value;
    return cudaSuccess;
  }
  if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) return cudaSuccess;
  return Fail(cudaErrorInvalidValue);
}

const char* KernelNameFrom(const char* pretty) {
  // GCC: "... [with auto K = GemmKernel<true>]"; clang: "... [K = &GemmKernel<true>]".
  std::string s = pretty;
  size_t at = s.find("K = ");
  if (at == std::string::npos) return strdup(pretty);
  s = s.substr(at + 4);
  if (!s.empty() && s.back() == ']') s.pop_back();
  if (!s.empty() && s.front() == '&') s.erase(0, 1);
  return strdup(s.c_str());  // kept for the process's life (one per kernel)
}

Counters GetCounters() {
  Lock lock(g_mu);
  return Dev().counters;
}

void FailNext(const char* api, cudaError_t error, int skip) {
  Lock lock(g_mu);
  Dev().fail_next[api] = Device::Injection{error, skip};
}

void SetSeed(uint64_t seed) {
  Lock lock(g_mu);
  Dev().seed = seed;
  Dev().launches = 0;  // the same seed replays the same sequence of launches
}

uint64_t Seed() { return Dev().seed; }

}  // namespace cudaemu

using cudaemu::Dev;
using cudaemu::Fail;
using cudaemu::Lock;
using cudaemu::g_mu;
using cudaemu::Injected;

// ---- errors and the device ----------------------------------------------------------
const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureUnmatched: return "cudaErrorStreamCaptureUnmatched";
    case cudaErrorStreamCaptureWrongThread: return "cudaErrorStreamCaptureWrongThread";
    case cudaErrorUnknown: return "cudaErrorUnknown";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalState: return "the operation is not permitted in the current state";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureWrongThread: return "attempt to terminate a thread-local capture sequence from another thread";
    default: return cudaGetErrorName(e);
  }
}

cudaError_t cudaGetLastError() {
  cudaError_t e = cudaemu::t_last_error;
  cudaemu::t_last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() { return cudaemu::t_last_error; }

cudaError_t cudaGetDeviceCount(int* count) {
  Lock lock(g_mu);
  TWEMU_INJECT("cudaGetDeviceCount");
  *count = Dev().device_count;
  return *count > 0 ? cudaSuccess : Fail(cudaErrorNoDevice);
}

cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : Fail(cudaErrorInvalidDevice); }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (device != 0) return Fail(cudaErrorInvalidDevice);
  Lock lock(g_mu);
  *p = cudaDeviceProp{};
  std::snprintf(p->name, sizeof p->name, "cudaemu (an sm_90 device emulated on the CPU)");
  p->totalGlobalMem = Dev().memory_limit;
  p->sharedMemPerBlock = 48 * 1024;
  p->sharedMemPerBlockOptin = 232448;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff;
  p->maxGridSize[1] = 65535;
  p->maxGridSize[2] = 65535;
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = Dev().sm_count;
  p->l2CacheSize = 50 << 20;
  p->memoryBusWidth = 6144;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  cudaDeviceProp p;
  if (cudaError_t e = cudaGetDeviceProperties(&p, device); e != cudaSuccess) return e;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = static_cast<int>(p.sharedMemPerBlock); break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = static_cast<int>(p.sharedMemPerBlockOptin); break;
    default: return Fail(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  Lock lock(g_mu);
  if (cudaemu::CaptureForbids()) return Fail(cudaErrorStreamCaptureUnsupported);
  cudaemu::DrainAll();
  return cudaSuccess;
}

// ---- memory ------------------------------------------------------------------------
cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  Lock lock(g_mu);
  *ptr = nullptr;
  TWEMU_INJECT("cudaMalloc");
  if (cudaemu::CaptureForbids()) return Fail(cudaErrorStreamCaptureUnsupported);
  return cudaemu::Allocate(ptr, bytes, /*device=*/true);
}

cudaError_t cudaFree(void* ptr) {
  Lock lock(g_mu);
  if (cudaemu::CaptureForbids()) return Fail(cudaErrorStreamCaptureUnsupported);
  cudaemu::DrainAll();  // cudaFree waits for the device, as CUDA's does
  return cudaemu::Release(ptr, /*device=*/true);
}

cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  Lock lock(g_mu);
  *ptr = nullptr;
  TWEMU_INJECT("cudaMallocHost");
  if (cudaemu::CaptureForbids()) return Fail(cudaErrorStreamCaptureUnsupported);
  return cudaemu::Allocate(ptr, bytes, /*device=*/false);
}

cudaError_t cudaFreeHost(void* ptr) {
  Lock lock(g_mu);
  if (cudaemu::CaptureForbids()) return Fail(cudaErrorStreamCaptureUnsupported);
  cudaemu::DrainAll();
  return cudaemu::Release(ptr, /*device=*/false);
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  Lock lock(g_mu);
  CUstream_st* s = cudaemu::Resolve(stream);
  if (!cudaemu::KnownStream(s)) return Fail(cudaErrorInvalidResourceHandle);
  if (bytes == 0) return cudaSuccess;
  if (cudaemu::Classify(dst, bytes) != cudaemu::Where::kDevice) return Fail(cudaErrorInvalidValue);
  cudaemu::Op op;
  op.kind = cudaemu::Op::kMemset;
  op.dst = dst;
  op.value = value;
  op.bytes = bytes;
  return cudaemu::Submit(s, std::move(op));
}

// CUDA's cudaMemset returns before the device has run it (it is ordered on
// the default stream): queued like cudaMemsetAsync.
cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  {
    Lock lock(g_mu);
    if (cudaemu::CaptureForbids()) return Fail(cudaErrorStreamCaptureUnsupported);
  }
  return cudaMemsetAsync(dst, value, bytes, nullptr);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  Lock lock(g_mu);
  CUstream_st* s = cudaemu::Resolve(stream);
  if (!cudaemu::KnownStream(s)) return Fail(cudaErrorInvalidResourceHandle);
  bool wait = false;
  if (cudaError_t e = cudaemu::CopyAsync(dst, src, bytes, kind, s, &wait); e != cudaSuccess) return e;
  if (wait) cudaemu::Drain(s);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  Lock lock(g_mu);
  if (cudaemu::CaptureForbids()) return Fail(cudaErrorStreamCaptureUnsupported);
  bool wait = false;
  if (cudaError_t e = cudaemu::CopyAsync(dst, src, bytes, kind, &Dev().null_stream, &wait); e != cudaSuccess) {
    return e;
  }
  cudaemu::DrainAll();  // synchronous: everything queued before it, then the copy
  return cudaSuccess;
}

// ---- streams ------------------------------------------------------------------------
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  Lock lock(g_mu);
  auto* s = new CUstream_st;
  s->flags = flags;
  Dev().streams.push_back(s);
  ++Dev().counters.live_streams;
  *stream = s;
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  Lock lock(g_mu);
  if (stream == nullptr || !cudaemu::KnownStream(stream)) return Fail(cudaErrorInvalidResourceHandle);
  // CUDA lets queued work finish after the call returns; running it now is one such order.
  cudaemu::Drain(stream);
  delete stream->capture;
  auto& v = Dev().streams;
  v.erase(std::find(v.begin(), v.end(), stream));
  delete stream;
  --Dev().counters.live_streams;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  Lock lock(g_mu);
  CUstream_st* s = cudaemu::Resolve(stream);
  if (!cudaemu::KnownStream(s)) return Fail(cudaErrorInvalidResourceHandle);
  if (s->capture != nullptr) {
    s->capture_invalid = true;
    return Fail(cudaErrorStreamCaptureUnsupported);
  }
  cudaemu::Drain(s);
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  Lock lock(g_mu);
  TWEMU_INJECT("cudaStreamBeginCapture");
  if (stream == nullptr) return Fail(cudaErrorStreamCaptureUnsupported);  // the legacy stream cannot capture
  if (!cudaemu::KnownStream(stream)) return Fail(cudaErrorInvalidResourceHandle);
  if (stream->capture != nullptr) return Fail(cudaErrorIllegalState);
  stream->capture = new CUgraph_st;
  stream->capture_invalid = false;
  stream->capture_mode = mode;
  stream->capture_thread = std::this_thread::get_id();
  ++Dev().counters.captures;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  Lock lock(g_mu);
  *graph = nullptr;
  if (stream == nullptr || !cudaemu::KnownStream(stream)) return Fail(cudaErrorInvalidResourceHandle);
  if (stream->capture == nullptr) return Fail(cudaErrorIllegalState);
  if (stream->capture_mode != cudaStreamCaptureModeRelaxed && stream->capture_thread != std::this_thread::get_id()) {
    return Fail(cudaErrorStreamCaptureWrongThread);
  }
  CUgraph_st* g = stream->capture;
  stream->capture = nullptr;
  if (stream->capture_invalid) {
    delete g;
    return Fail(cudaErrorStreamCaptureInvalidated);
  }
  if (cudaError_t e; Injected("cudaStreamEndCapture", &e)) {
    delete g;  // nothing is returned
    return e;
  }
  *graph = g;
  ++Dev().counters.live_graphs;
  return cudaSuccess;
}

// ---- events -------------------------------------------------------------------------
cudaError_t cudaEventCreate(cudaEvent_t* event) {
  Lock lock(g_mu);
  *event = nullptr;
  TWEMU_INJECT("cudaEventCreate");
  *event = new CUevent_st;
  ++Dev().counters.live_events;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  Lock lock(g_mu);
  if (event == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  // A queued record of this event still points at it: run the work first.
  cudaemu::DrainAll();
  delete event;
  --Dev().counters.live_events;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  Lock lock(g_mu);
  TWEMU_INJECT("cudaEventRecord");
  if (event == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  CUstream_st* s = cudaemu::Resolve(stream);
  if (!cudaemu::KnownStream(s)) return Fail(cudaErrorInvalidResourceHandle);
  cudaemu::Op op;
  op.kind = cudaemu::Op::kEvent;
  op.event = event;
  if (s->capture == nullptr) {
    event->recorded = true;
    event->done = false;
    event->stream = s;
    event->record_seq = Dev().next_seq;  // the seq Submit gives op
  }
  return cudaemu::Submit(s, std::move(op));
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  Lock lock(g_mu);
  if (event == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  if (!event->recorded || event->done) return cudaSuccess;
  if (event->stream->capture != nullptr) return Fail(cudaErrorStreamCaptureUnsupported);
  cudaemu::Drain(event->stream, event->record_seq);
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
  Lock lock(g_mu);
  if (start == nullptr || stop == nullptr) return Fail(cudaErrorInvalidResourceHandle);
  if (!start->recorded || !stop->recorded) return Fail(cudaErrorInvalidResourceHandle);
  if (!start->done || !stop->done) return Fail(cudaErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(stop->when - start->when).count();
  return cudaSuccess;
}

// ---- graphs -----------------------------------------------------------------------
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  Lock lock(g_mu);
  *exec = nullptr;
  TWEMU_INJECT("cudaGraphInstantiate");
  if (graph == nullptr) return Fail(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st{graph->ops};
  ++Dev().counters.live_graph_execs;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  Lock lock(g_mu);
  TWEMU_INJECT("cudaGraphLaunch");
  if (exec == nullptr) return Fail(cudaErrorInvalidValue);
  CUstream_st* s = cudaemu::Resolve(stream);
  if (!cudaemu::KnownStream(s)) return Fail(cudaErrorInvalidResourceHandle);
  if (s->capture != nullptr) return Fail(cudaErrorNotSupported);  // graphs inside captures: not emulated
  for (const cudaemu::Op& op : exec->ops) cudaemu::Submit(s, op);
  ++Dev().counters.graph_launches;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  Lock lock(g_mu);
  if (graph == nullptr) return Fail(cudaErrorInvalidValue);
  delete graph;
  --Dev().counters.live_graphs;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  Lock lock(g_mu);
  if (exec == nullptr) return Fail(cudaErrorInvalidValue);
  delete exec;
  --Dev().counters.live_graph_execs;
  return cudaSuccess;
}
