// cudaemu: a CUDA-on-CPU emulator for this project's kernels and runner.
// This header stands in for the CUDA toolkit's <cuda_runtime.h> when the
// kernels (kernels/*.cu) are compiled as C++ by the emulator build (`make
// test-gpu-emu`, build/emu/; -Itests/cudaemu puts this file first). It
// declares the part of the runtime API the project calls, the device
// built-ins (threadIdx, __syncthreads, the warp shuffles, atomics, loads,
// the float intrinsics) and the hooks the emulator's own tests use.
//
// What runs and how (tests/cudaemu/README.md says it at length):
//   - every CUDA thread is a fiber with its own stack (fiber.cc); the
//     threads of one block run on one host thread and switch only at
//     barriers; __syncthreads, __syncwarp, the __shfl_*_sync family,
//     __ballot_sync and mma.sync are real barriers over the threads (the
//     mask) they name. A barrier that can never complete, or a mask naming a
//     lane that has exited, aborts naming the kernel, block and threads;
//   - blocks run one after another in a seeded random order; after each
//     barrier the waiting threads resume in a seeded random order
//     (TWEMU_SEED, default 1);
//   - shared memory (static and dynamic) and cudaMalloc memory start as
//     seeded garbage (but see TWEMU_GARBAGE_MAX_MIB); device allocations and dynamic shared memory end at a
//     guard page, so a read or write past them faults and is reported with
//     the kernel, block and thread;
//   - streams are asynchronous as on a GPU: queued work runs only when the
//     host waits (a stream, event or device sync, a blocking copy), so a
//     pinned host buffer rewritten before the device copied it gives wrong
//     results here too; stream capture records and graph launch replays;
//   - the inline PTX the kernels use (kernels/ptx.cuh) is emulated from the
//     PTX ISA by cudaemu::Asm; any other PTX aborts with its text.
// It checks function, not speed: there is no timing, no hardware memory
// model (a store is visible to every later load at once), and CPU libm and
// one rounding per mma stand in for the GPU's arithmetic.
//
// Threads: the runtime calls may come from any host thread; device work
// runs on the host thread that waits for it, one at a time (a process-wide
// lock). Memory: device and pinned allocations are mmap'd regions (freed by
// cudaFree / cudaFreeHost); at most TWEMU_DEVICE_MIB (default 16384) MiB of
// device memory at once, beyond which cudaMalloc fails as on a full GPU. An
// allocation over TWEMU_GARBAGE_MAX_MIB (default 256) starts as zero pages
// instead of garbage, so a pool sized for a GPU costs only what is touched.
#pragma once

#include <math.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#if !defined(TW_CUDA_EMULATOR)
#error "tests/cudaemu/cuda_runtime.h is the emulator's header: build with -DTW_CUDA_EMULATOR=1 (make test-gpu-emu)"
#endif

// ---- qualifiers ----------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// A block's shared variables: static storage in one linker section, which
// the emulator refills with garbage before every block (one block runs at a
// time). Clang honours the section for function-local statics in templates;
// GCC ignores it there, so the emulator build compiles .cu files with clang.
#define __shared__ static __attribute__((section("twemu_shared")))

// ---- vector types --------------------------------------------------------
struct uint3 { unsigned int x, y, z; };
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
struct __align__(8) float2 { float x, y; };
struct float3 { float x, y, z; };
struct __align__(16) float4 { float x, y, z, w; };
struct __align__(8) int2 { int x, y; };
struct __align__(16) int4 { int x, y, z, w; };
struct __align__(8) uint2 { unsigned int x, y; };
struct __align__(16) uint4 { unsigned int x, y, z, w; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float3 make_float3(float x, float y, float z) { return {x, y, z}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

// ---- runtime types -------------------------------------------------------
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInsufficientDriver = 35,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorIllegalState = 401,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorNotSupported = 801,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureUnmatched = 903,
  cudaErrorStreamCaptureWrongThread = 908,
  cudaErrorUnknown = 999,
};

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};

enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrL2CacheSize = 38,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};

constexpr unsigned int cudaStreamDefault = 0x0;
constexpr unsigned int cudaStreamNonBlocking = 0x1;
constexpr unsigned int cudaEventDefault = 0x0;

struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
using cudaStream_t = CUstream_st*;
using cudaEvent_t = CUevent_st*;
using cudaGraph_t = CUgraph_st*;
using cudaGraphExec_t = CUgraphExec_st*;

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  size_t sharedMemPerBlockOptin;
  int regsPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int major;
  int minor;
  int multiProcessorCount;
  int l2CacheSize;
  int memoryBusWidth;
};

// ---- the runtime API (runtime.cc) ----------------------------------------
const char* cudaGetErrorName(cudaError_t e);
const char* cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaDriverGetVersion(int* version);
cudaError_t cudaRuntimeGetVersion(int* version);
cudaError_t cudaDeviceSynchronize();

cudaError_t cudaMalloc(void** ptr, size_t bytes);
template <typename T>
cudaError_t cudaMalloc(T** ptr, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(ptr), bytes);
}
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMallocHost(void** ptr, size_t bytes);
template <typename T>
cudaError_t cudaMallocHost(T** ptr, size_t bytes) {
  return cudaMallocHost(reinterpret_cast<void**>(ptr), bytes);
}
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaMemset(void* dst, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream = nullptr);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);

cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);

cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
// The host time between the two events' execution here: no GPU timing.
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop);

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);

namespace cudaemu {

// ---- what the device side reads ------------------------------------------
// The thread and block running now (the scheduler sets them before each
// switch to a thread).
struct ThreadView {
  uint3 idx;
};
struct BlockView {
  uint3 idx;
  dim3 dim;
  dim3 grid;
};
extern const ThreadView* g_thread;
extern const BlockView* g_block;

// Barriers and warp collectives (scheduler.cc). Each blocks the calling
// fiber until every thread it names has arrived.
void SyncThreads();
int SyncThreadsCount(int pred);  // __syncthreads_count; _and/_or follow from it
void SyncWarp(unsigned mask);
uint64_t Shuffle(int kind, unsigned mask, uint64_t bits, int arg, int width);
unsigned Ballot(unsigned mask, int pred);
unsigned ActiveMask();
void ThreadFence();  // a scheduling point; no memory model
// The offset of a shared-memory address in the emulated shared window
// (aborts naming the address if it is not shared memory).
size_t SharedOffset(const void* p);
void* DynamicShared();  // this block's dynamic shared memory

// One operand of an inline-PTX statement: %N of the text is ops[N].
struct AsmOperand {
  char type;         // 'f' (f32 register), 'r' (b32), 'l' (b64)
  bool output;       // "+f"/"=f": written back through ptr
  void* ptr;         // output: where the value lives
  uint64_t bits;     // input: the value's bits
};
inline AsmOperand AsmInOut(float& v) {
  AsmOperand o{'f', true, &v, 0};
  std::memcpy(&o.bits, &v, sizeof v);
  return o;
}
inline AsmOperand AsmIn(uint32_t v) { return AsmOperand{'r', false, nullptr, v}; }
inline AsmOperand AsmIn(const void* p) { return AsmOperand{'l', false, nullptr, reinterpret_cast<uintptr_t>(p)}; }
// Executes `text` (the exact string the CUDA build's asm statement has)
// with its operands; aborts with the text when it is not one of the forms
// the emulator knows (ptx.cc).
void Asm(const char* text, std::initializer_list<AsmOperand> ops);

// ---- launching -------------------------------------------------------------
// A launch as the runtime queues it: the kernel's name and the call with
// its arguments bound (copied when the launch is made, as CUDA copies
// kernel parameters).
struct KernelCall {
  const char* name;
  const void* fn;
  dim3 grid, block;
  size_t dynamic_shared;
  std::function<void()> body;  // runs the kernel for the current thread
};
cudaError_t Enqueue(std::shared_ptr<KernelCall> call, cudaStream_t stream);

// "tw::kernels::(anonymous namespace)::GemmKernel<true>" from the pretty
// function name of KernelName<&GemmKernel<true>>.
const char* KernelNameFrom(const char* pretty);
template <auto K>
const char* KernelName() {
  static const char* name = KernelNameFrom(__PRETTY_FUNCTION__);
  return name;
}

template <typename... P, typename... A>
cudaError_t Launch(const char* name, void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                   A&&... args) {
  auto bound = std::make_shared<std::tuple<std::decay_t<P>...>>(std::forward<A>(args)...);
  auto call = std::make_shared<KernelCall>();
  call->name = name;
  call->fn = reinterpret_cast<const void*>(kernel);
  call->grid = grid;
  call->block = block;
  call->dynamic_shared = smem;
  call->body = [kernel, bound] { std::apply(kernel, *bound); };  // each thread gets its own copies
  return Enqueue(std::move(call), stream);
}

cudaError_t SetFunctionAttribute(const void* fn, cudaFuncAttribute attr, int value);

// ---- hooks for the emulator's tests -----------------------------------------
struct Counters {
  long long launches = 0;        // kernels executed
  long long blocks = 0;          // blocks executed
  long long captures = 0;        // stream captures begun
  long long graph_launches = 0;  // cudaGraphLaunch calls
  long long live_streams = 0;
  long long live_events = 0;
  long long live_graphs = 0;
  long long live_graph_execs = 0;
  long long live_device_allocations = 0;
  long long live_host_allocations = 0;
  long long device_bytes = 0;
};
Counters GetCounters();
// A later call of `api` (e.g. "cudaEventCreate") fails with `error`: the
// one after `skip` calls that succeed. The APIs that can be made to fail:
// cudaGetDeviceCount, cudaMalloc, cudaMallocHost, cudaStreamBeginCapture,
// cudaStreamEndCapture, cudaEventCreate, cudaEventRecord,
// cudaGraphInstantiate, cudaGraphLaunch.
void FailNext(const char* api, cudaError_t error, int skip = 0);
// The seed of the block order, the resume order and the shared-memory
// garbage; the launches after it follow the same order as after any other
// SetSeed(seed) (TWEMU_SEED sets it at start-up).
void SetSeed(uint64_t seed);
uint64_t Seed();

}  // namespace cudaemu

template <typename F>
cudaError_t cudaFuncSetAttribute(F* fn, cudaFuncAttribute attr, int value) {
  return cudaemu::SetFunctionAttribute(reinterpret_cast<const void*>(fn), attr, value);
}

// The typed form the CUDA headers also provide: args[i] points at the i-th
// parameter's value.
template <typename... P>
cudaError_t cudaLaunchKernel(void (*kernel)(P...), dim3 grid, dim3 block, void** args, size_t smem = 0,
                             cudaStream_t stream = nullptr) {
  return [&]<size_t... I>(std::index_sequence<I...>) {
    return cudaemu::Launch("(cudaLaunchKernel)", kernel, grid, block, smem, stream,
                           *static_cast<std::decay_t<P>*>(args[I])...);
  }(std::index_sequence_for<P...>{});
}

// ---- built-in variables ------------------------------------------------------
#define threadIdx (::cudaemu::g_thread->idx)
#define blockIdx (::cudaemu::g_block->idx)
#define blockDim (::cudaemu::g_block->dim)
#define gridDim (::cudaemu::g_block->grid)
constexpr int warpSize = 32;

// ---- barriers and warp collectives -------------------------------------------
inline void __syncthreads() { cudaemu::SyncThreads(); }
inline int __syncthreads_count(int pred) { return cudaemu::SyncThreadsCount(pred); }
inline int __syncthreads_and(int pred) {
  const int n = static_cast<int>(blockDim.x * blockDim.y * blockDim.z);
  return cudaemu::SyncThreadsCount(pred) == n;  // exited threads count as true
}
inline int __syncthreads_or(int pred) { return cudaemu::SyncThreadsCount(pred) != 0; }
inline void __syncwarp(unsigned mask = 0xffffffffu) { cudaemu::SyncWarp(mask); }
inline unsigned __ballot_sync(unsigned mask, int pred) { return cudaemu::Ballot(mask, pred); }
inline int __any_sync(unsigned mask, int pred) { return (cudaemu::Ballot(mask, pred) & mask) != 0; }
inline int __all_sync(unsigned mask, int pred) { return (cudaemu::Ballot(mask, pred) & mask) == mask; }
inline unsigned __activemask() { return cudaemu::ActiveMask(); }
inline void __threadfence() { cudaemu::ThreadFence(); }
inline void __threadfence_block() { cudaemu::ThreadFence(); }

namespace cudaemu {
enum ShuffleKind { kShflIdx = 0, kShflUp = 1, kShflDown = 2, kShflXor = 3 };
template <typename T>
T ShuffleAs(int kind, unsigned mask, T v, int arg, int width) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "shuffles move up to 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  bits = Shuffle(kind, mask, bits, arg, width);
  T out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}
}  // namespace cudaemu
template <typename T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return cudaemu::ShuffleAs(cudaemu::kShflIdx, mask, v, src, width);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return cudaemu::ShuffleAs(cudaemu::kShflUp, mask, v, static_cast<int>(delta), width);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return cudaemu::ShuffleAs(cudaemu::kShflDown, mask, v, static_cast<int>(delta), width);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return cudaemu::ShuffleAs(cudaemu::kShflXor, mask, v, lane_mask, width);
}

// ---- atomics (device work runs one thread at a time: plain operations) ---------
template <typename T>
T atomicAdd(T* p, T v) {
  T old = *p;
  *p = old + v;
  return old;
}
template <typename T>
T atomicSub(T* p, T v) {
  T old = *p;
  *p = old - v;
  return old;
}
template <typename T>
T atomicExch(T* p, T v) {
  T old = *p;
  *p = v;
  return old;
}
template <typename T>
T atomicCAS(T* p, T compare, T v) {
  T old = *p;
  if (old == compare) *p = v;
  return old;
}
template <typename T>
T atomicMax(T* p, T v) {
  T old = *p;
  if (v > old) *p = v;
  return old;
}
template <typename T>
T atomicMin(T* p, T v) {
  T old = *p;
  if (v < old) *p = v;
  return old;
}
template <typename T>
T atomicOr(T* p, T v) {
  T old = *p;
  *p = old | v;
  return old;
}
template <typename T>
T atomicAnd(T* p, T v) {
  T old = *p;
  *p = old & v;
  return old;
}

// ---- loads and stores with cache hints (no caches here) ------------------------
template <typename T> T __ldg(const T* p) { return *p; }
template <typename T> T __ldcg(const T* p) { return *p; }
template <typename T> T __ldca(const T* p) { return *p; }
template <typename T> T __ldcs(const T* p) { return *p; }
template <typename T> T __ldlu(const T* p) { return *p; }
template <typename T> T __ldcv(const T* p) { return *p; }
template <typename T> void __stcg(T* p, T v) { *p = v; }
template <typename T> void __stcs(T* p, T v) { *p = v; }
template <typename T> void __stwb(T* p, T v) { *p = v; }
inline size_t __cvta_generic_to_shared(const void* p) { return cudaemu::SharedOffset(p); }

// ---- arithmetic ---------------------------------------------------------------
// The _rn intrinsics are IEEE operations rounded to nearest: plain float
// arithmetic (the build passes -ffp-contract=off, so nothing is fused).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float rsqrtf(float a) { return 1.0f / sqrtf(a); }

template <typename To, typename From>
To TwemuBits(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To out;
  std::memcpy(&out, &v, sizeof out);
  return out;
}
inline unsigned int __float_as_uint(float v) { return TwemuBits<unsigned int>(v); }
inline int __float_as_int(float v) { return TwemuBits<int>(v); }
inline float __uint_as_float(unsigned int v) { return TwemuBits<float>(v); }
inline float __int_as_float(int v) { return TwemuBits<float>(v); }
inline long long __double_as_longlong(double v) { return TwemuBits<long long>(v); }
inline double __longlong_as_double(long long v) { return TwemuBits<double>(v); }

namespace cudaemu {
// cvt.rni with the PTX rules: round to nearest even, NaN to 0, clamped to
// the destination's range.
template <typename I>
I RoundToInt(double v) {
  if (v != v) return 0;
  const double r = nearbyint(v);
  if (r <= static_cast<double>(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  if (r >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(r);
}
}  // namespace cudaemu
inline unsigned long long __float2ull_rn(float v) { return cudaemu::RoundToInt<unsigned long long>(v); }
inline long long __float2ll_rn(float v) { return cudaemu::RoundToInt<long long>(v); }
inline unsigned int __float2uint_rn(float v) { return cudaemu::RoundToInt<unsigned int>(v); }
inline int __float2int_rn(float v) { return cudaemu::RoundToInt<int>(v); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
inline unsigned int __umulhi(unsigned int a, unsigned int b) {
  return static_cast<unsigned int>((static_cast<uint64_t>(a) * b) >> 32);
}
inline int __popc(unsigned int v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __clz(int v) { return v == 0 ? 32 : __builtin_clz(static_cast<unsigned>(v)); }
inline int __ffs(int v) { return __builtin_ffs(v); }

// CUDA's min and max (device overloads in the global namespace).
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
