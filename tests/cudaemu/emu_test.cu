// The emulator's own suite (build/emu/tests/cudaemu_tests, the first step
// of make test-gpu-emu): each property the kernels' tests rely on, shown on
// small kernels written for it, including the failures the emulator must
// report (death tests: the message names the kernel, block and threads).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <set>
#include <vector>

#include "kernels/common.cuh"
#include "kernels/ptx.cuh"

namespace {

using tw::kernels::Launch;

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

template <typename T>
T* DeviceAlloc(size_t n) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess);
  return static_cast<T*>(p);
}

template <typename T>
std::vector<T> ToHost(const T* d, size_t n) {
  std::vector<T> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

// ---- threads, blocks and their order ------------------------------------------------
__global__ void WriteIds(uint32_t* out) {
  const uint32_t t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const uint32_t b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const uint32_t n = blockDim.x * blockDim.y * blockDim.z;
  out[b * n + t] = (b << 16) | t;
}

TEST(Emulator, EveryThreadOfEveryBlockRunsOnceWithItsIndices) {
  const dim3 grid(3, 2, 2), block(5, 4, 3);
  const size_t n = 12 * 60;
  uint32_t* d = DeviceAlloc<uint32_t>(n);
  Launch<WriteIds>(grid, block, 0, nullptr, d);
  CUDA_OK(cudaGetLastError());
  const std::vector<uint32_t> h = ToHost(d, n);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(h[i], ((i / 60) << 16) | (i % 60)) << i;
  CUDA_OK(cudaFree(d));
}

__global__ void RecordBlockOrder(int* counter, int* order) {
  if (threadIdx.x == 0) order[atomicAdd(counter, 1)] = static_cast<int>(blockIdx.x);
}

std::vector<int> BlockOrder(uint64_t seed, int blocks) {
  cudaemu::SetSeed(seed);
  int* d = DeviceAlloc<int>(static_cast<size_t>(blocks) + 1);
  EXPECT_EQ(cudaMemset(d, 0, sizeof(int)), cudaSuccess);
  Launch<RecordBlockOrder>(blocks, 32, 0, nullptr, d, d + 1);
  std::vector<int> h = ToHost(d + 1, static_cast<size_t>(blocks));
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  cudaemu::SetSeed(1);
  return h;
}

TEST(Emulator, BlocksRunInASeededRandomOrder) {
  const std::vector<int> a = BlockOrder(7, 64), b = BlockOrder(7, 64), c = BlockOrder(8, 64);
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> ids(64);
  std::iota(ids.begin(), ids.end(), 0);
  EXPECT_EQ(sorted, ids);  // each block once
  EXPECT_NE(a, ids);       // not in index order
  EXPECT_EQ(a, b);         // the same seed, the same order ...
  EXPECT_NE(a, c);         // ... not across seeds
}

// Each thread takes a ticket after the barrier: the order in which the
// block's threads resume.
__global__ void ResumeOrder(int* out) {
  __shared__ int next;
  if (threadIdx.x == 0) next = 0;
  __syncthreads();
  const int ticket = atomicAdd(&next, 1);
  out[blockIdx.x * blockDim.x + ticket] = static_cast<int>(threadIdx.x);
}

TEST(Emulator, ThreadsResumeFromABarrierInARandomOrderThatDiffersBetweenBlocks) {
  int* d = DeviceAlloc<int>(2 * 128);
  Launch<ResumeOrder>(2, 128, 0, nullptr, d);
  const std::vector<int> h = ToHost(d, 256);
  std::vector<int> b0(h.begin(), h.begin() + 128), b1(h.begin() + 128, h.end());
  std::vector<int> ids(128);
  std::iota(ids.begin(), ids.end(), 0);
  EXPECT_NE(b0, ids);
  EXPECT_NE(b0, b1);
  std::sort(b0.begin(), b0.end());
  EXPECT_EQ(b0, ids);
  CUDA_OK(cudaFree(d));
}

// ---- barriers and shared memory ---------------------------------------------------------
// out[t] = the value thread t + 1 stored, read after __syncthreads (kSync)
// or without one.
template <bool kSync>
__global__ void NeighbourThroughShared(int* out) {
  __shared__ int sh[256];
  sh[threadIdx.x] = static_cast<int>(threadIdx.x) * 3;
  if (kSync) __syncthreads();
  out[threadIdx.x] = sh[(threadIdx.x + 1) % 256];
}

TEST(Emulator, SyncthreadsIsARealBarrierAndAMissingOneIsSeen) {
  int* d = DeviceAlloc<int>(256);
  Launch<NeighbourThroughShared<true>>(1, 256, 0, nullptr, d);
  std::vector<int> h = ToHost(d, 256);
  for (int t = 0; t < 256; ++t) EXPECT_EQ(h[t], ((t + 1) % 256) * 3);
  Launch<NeighbourThroughShared<false>>(1, 256, 0, nullptr, d);
  h = ToHost(d, 256);
  int wrong = 0;
  for (int t = 0; t < 256; ++t) wrong += h[t] != ((t + 1) % 256) * 3;
  EXPECT_GT(wrong, 64) << "without the barrier, threads that run before their neighbour read garbage";
  CUDA_OK(cudaFree(d));
}

// Reads shared memory no thread of the block wrote (static and dynamic).
__global__ void ReadUnwritten(uint32_t* out) {
  __shared__ uint32_t s[4];
  TW_DYNAMIC_SHARED(uint32_t, dyn);
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = s[blockIdx.x % 4];
    out[2 * blockIdx.x + 1] = dyn[blockIdx.x % 8];
    s[blockIdx.x % 4] = 0;
    dyn[blockIdx.x % 8] = 0;
  }
}

TEST(Emulator, SharedAndDeviceMemoryStartAsGarbageInEveryBlock) {
  uint32_t* d = DeviceAlloc<uint32_t>(64);
  const std::vector<uint32_t> fresh = ToHost(d, 64);  // never written: cudaMalloc's garbage
  EXPECT_GT(std::set<uint32_t>(fresh.begin(), fresh.end()).size(), 60u);
  Launch<ReadUnwritten>(32, 32, 64, nullptr, d);
  const std::vector<uint32_t> h = ToHost(d, 64);
  // The zeros a block wrote never reach the next block: each read is fresh garbage.
  EXPECT_EQ(std::count(h.begin(), h.end(), 0u), 0);
  EXPECT_GT(std::set<uint32_t>(h.begin(), h.end()).size(), 60u);
  CUDA_OK(cudaFree(d));
}

// ---- warp collectives ---------------------------------------------------------------
struct ShuffleOut {
  int xor_, up, down, idx, half_xor;
  unsigned ballot;
};

__global__ void Shuffles(ShuffleOut* out) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int v = static_cast<int>(threadIdx.x) * 10;
  ShuffleOut o;
  o.xor_ = __shfl_xor_sync(0xffffffffu, v, 5);
  o.up = __shfl_up_sync(0xffffffffu, v, 3);
  o.down = __shfl_down_sync(0xffffffffu, v, 3);
  o.idx = __shfl_sync(0xffffffffu, v, 7);
  o.half_xor = __shfl_xor_sync(0xffffffffu, v, 8, 16);
  o.ballot = __ballot_sync(0xffffffffu, lane % 3 == 0);
  // Two halves of the warp shuffle with disjoint masks at once.
  const unsigned half = lane < 16 ? 0x0000ffffu : 0xffff0000u;
  o.half_xor += __shfl_xor_sync(half, 1, 1) - 1;
  out[threadIdx.x] = o;
}

TEST(Emulator, ShufflesAndBallotFollowTheirDefinitions) {
  ShuffleOut* d = DeviceAlloc<ShuffleOut>(64);
  Launch<Shuffles>(1, 64, 0, nullptr, d);
  const std::vector<ShuffleOut> h = ToHost(d, 64);
  unsigned ballot = 0;
  for (int l = 0; l < 32; ++l) ballot |= (l % 3 == 0 ? 1u : 0u) << l;
  for (int t = 0; t < 64; ++t) {
    const int lane = t % 32, base = t - lane;
    EXPECT_EQ(h[t].xor_, (base + (lane ^ 5)) * 10) << t;
    EXPECT_EQ(h[t].up, (lane >= 3 ? t - 3 : t) * 10) << t;
    EXPECT_EQ(h[t].down, (lane + 3 < 32 ? t + 3 : t) * 10) << t;
    EXPECT_EQ(h[t].idx, (base + 7) * 10) << t;
    const int seg = lane & ~15;
    EXPECT_EQ(h[t].half_xor, (base + ((lane ^ 8) < seg + 16 ? (lane ^ 8) : lane)) * 10) << t;
    EXPECT_EQ(h[t].ballot, ballot) << t;
  }
  CUDA_OK(cudaFree(d));
}

// ---- what must abort -------------------------------------------------------------------
__global__ void LaneSkipsTheShuffle(int* out) {
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x == 5) {
    __syncthreads();  // lane 5 never reaches the shuffle the others wait in
  } else {
    v = __shfl_xor_sync(0xffffffffu, v, 1);
  }
  out[threadIdx.x] = v;
}

__global__ void ShuffleNamesExitedLanes(int* out) {
  if (threadIdx.x < 16) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, static_cast<int>(threadIdx.x), 1);
}

__global__ void ShuffleReadsOutsideItsMask(int* out) {
  if (threadIdx.x < 16) out[threadIdx.x] = __shfl_sync(0x0000ffffu, static_cast<int>(threadIdx.x), 20);
}

__global__ void MaskWithoutTheCaller(int* out) {
  out[threadIdx.x] = __shfl_xor_sync(0x1u, 1, 1);
}

// n + 24 floats is 4096 bytes into a 4000-byte allocation: the first byte of
// its guard page (the allocation is rounded to 256 bytes); every thread
// writes inside that page, so the first to run faults, whichever it is.
__global__ void StoresPastTheEnd(float* out, int n) { out[n + 24 + threadIdx.x] = 1.0f; }

__global__ void UnknownPtx(int*) { cudaemu::Asm("bar.sync 0;\n", {}); }

using EmulatorDeathTest = ::testing::Test;

// Under AddressSanitizer its own handler reports the fault (the emulator's
// is not installed there), as a SEGV, or as a stack overflow when the
// guard page lies next to a fiber's stack.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kUnderAsan = true;
#else
constexpr bool kUnderAsan = false;
#endif
#else
constexpr bool kUnderAsan = false;
#endif

TEST(EmulatorDeathTest, ABarrierThatCannotCompleteAbortsNamingTheKernelBlockAndThreads) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  int* d = DeviceAlloc<int>(32);
  EXPECT_DEATH(
      {
        Launch<LaneSkipsTheShuffle>(1, 32, 0, nullptr, d);
        (void)cudaDeviceSynchronize();
      },
      "deadlock in kernel .*LaneSkipsTheShuffle, block \\(0, 0, 0\\).*\n.*threads 5 wait at __syncthreads"
      "(.|\n)*lanes 0-4, 6-31 wait in __shfl_xor_sync \\(mask 0xffffffff\\), lanes 5 never arrive");
  CUDA_OK(cudaFree(d));
}

TEST(EmulatorDeathTest, AMaskNamingExitedLanesAborts) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  int* d = DeviceAlloc<int>(32);
  EXPECT_DEATH(
      {
        Launch<ShuffleNamesExitedLanes>(1, 32, 0, nullptr, d);
        (void)cudaDeviceSynchronize();
      },
      "__shfl_xor_sync with mask 0xffffffff in warp 0 names lanes? [0-9, -]+, which (have exited|exits while)(.|\n)*"
      "ShuffleNamesExitedLanes, block \\(0, 0, 0\\), thread \\(");
  CUDA_OK(cudaFree(d));
}

TEST(EmulatorDeathTest, MasksThatLeaveOutTheCallerOrTheSourceLaneAbort) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  int* d = DeviceAlloc<int>(32);
  EXPECT_DEATH(
      {
        Launch<MaskWithoutTheCaller>(1, 32, 0, nullptr, d);
        (void)cudaDeviceSynchronize();
      },
      "__shfl_xor_sync with mask 0x00000001, which does not name the calling lane");
  EXPECT_DEATH(
      {
        Launch<ShuffleReadsOutsideItsMask>(1, 32, 0, nullptr, d);
        (void)cudaDeviceSynchronize();
      },
      "__shfl_sync in warp 0: lane 0 reads lane 20, which is not in the mask 0x0000ffff");
  CUDA_OK(cudaFree(d));
}

TEST(EmulatorDeathTest, AccessPastADeviceAllocationIsReportedWithTheThread) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  float* d = DeviceAlloc<float>(1000);
  EXPECT_DEATH(
      {
        Launch<StoresPastTheEnd>(1, 4, 0, nullptr, d, 1000);
        (void)cudaDeviceSynchronize();
      },
      kUnderAsan ? "ERROR: AddressSanitizer: (SEGV|stack-overflow)(.|\n)*StoresPastTheEnd"
                 : "illegal memory access \\(SIGSEGV at 0x[0-9a-f]+: [0-9]+ bytes past the end of a 4000-byte device "
                   "allocation.*\\) in kernel .*StoresPastTheEnd, block \\(0, 0, 0\\), thread \\([0-3], 0, 0\\)");
  CUDA_OK(cudaFree(d));
}

TEST(EmulatorDeathTest, PtxTheEmulatorDoesNotKnowAbortsWithItsText) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_DEATH(
      {
        Launch<UnknownPtx>(1, 32, 0, nullptr, nullptr);
        (void)cudaDeviceSynchronize();
      },
      "unsupported inline PTX \\(not one of the forms the emulator knows\\): \"bar.sync 0;");
}

// ---- atomics and a split ticket across blocks ------------------------------------------------
// Every block adds its partial; the last block to take a ticket sums them
// all (the gemm's split-K pattern).
__global__ void LastBlockSums(const float* x, float* partial, unsigned* ticket, float* total) {
  __shared__ float red[64];
  __shared__ bool last;
  red[threadIdx.x] = x[blockIdx.x * 64 + threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0;
    for (int i = 0; i < 64; ++i) s += red[i];
    partial[blockIdx.x] = s;
    __threadfence();
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (last && threadIdx.x == 0) {
    float s = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) s += __ldcg(partial + b);
    *total = s;
    atomicExch(ticket, 0u);
  }
}

TEST(Emulator, AtomicsAndFencesCarryTheLastBlockPattern) {
  std::vector<float> x(16 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7);
  float* dx = DeviceAlloc<float>(x.size());
  float* part = DeviceAlloc<float>(16);
  unsigned* ticket = DeviceAlloc<unsigned>(1);
  float* total = DeviceAlloc<float>(1);
  CUDA_OK(cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(ticket, 0, 4));
  for (int rep = 0; rep < 3; ++rep) {
    Launch<LastBlockSums>(16, 64, 0, nullptr, dx, part, ticket, total);
    EXPECT_EQ(ToHost(total, 1)[0], std::accumulate(x.begin(), x.end(), 0.0f));
    EXPECT_EQ(ToHost(ticket, 1)[0], 0u);
  }
  for (void* p : {static_cast<void*>(dx), static_cast<void*>(part), static_cast<void*>(ticket),
                  static_cast<void*>(total)}) {
    CUDA_OK(cudaFree(p));
  }
}

// ---- streams run when the host waits --------------------------------------------------------------
__global__ void AddOne(int* x) { x[threadIdx.x] += 1; }

TEST(Emulator, StreamWorkRunsOnlyWhenTheHostWaits) {
  cudaStream_t s = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* d = DeviceAlloc<int>(4);
  int* pinned = nullptr;
  CUDA_OK(cudaMallocHost(&pinned, 4 * sizeof(int)));
  std::vector<int> pageable = {1, 2, 3, 4};
  // From pinned memory: the copy reads the buffer when it runs, after the
  // host has rewritten it (the hazard a real DMA has).
  for (int i = 0; i < 4; ++i) pinned[i] = 100;
  CUDA_OK(cudaMemcpyAsync(d, pinned, 16, cudaMemcpyHostToDevice, s));
  for (int i = 0; i < 4; ++i) pinned[i] = 200;
  Launch<AddOne>(1, 4, 0, s, d);
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(ToHost(d, 4), std::vector<int>(4, 201));
  // From pageable memory the runtime stages the source at the call.
  CUDA_OK(cudaMemcpyAsync(d, pageable.data(), 16, cudaMemcpyHostToDevice, s));
  pageable.assign(4, -1);
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(ToHost(d, 4), (std::vector<int>{1, 2, 3, 4}));
  // Into pinned memory the host sees nothing until it waits.
  for (int i = 0; i < 4; ++i) pinned[i] = 7;
  Launch<AddOne>(1, 4, 0, s, d);
  CUDA_OK(cudaMemcpyAsync(pinned, d, 16, cudaMemcpyDeviceToHost, s));
  EXPECT_EQ(std::vector<int>(pinned, pinned + 4), std::vector<int>(4, 7));
  const cudaemu::Counters before = cudaemu::GetCounters();
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(cudaemu::GetCounters().launches, before.launches + 1);
  EXPECT_EQ(std::vector<int>(pinned, pinned + 4), (std::vector<int>{2, 3, 4, 5}));
  CUDA_OK(cudaFreeHost(pinned));
  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(Emulator, EventsOrderTheHostAfterTheirStream) {
  cudaStream_t s = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* d = DeviceAlloc<int>(4);
  CUDA_OK(cudaMemsetAsync(d, 0, 16, s));
  cudaEvent_t a = nullptr, b = nullptr;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  CUDA_OK(cudaEventRecord(a, s));
  Launch<AddOne>(1, 4, 0, s, d);
  CUDA_OK(cudaEventRecord(b, s));
  Launch<AddOne>(1, 4, 0, s, d);
  float ms = 0;
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaErrorNotReady);
  CUDA_OK(cudaEventSynchronize(b));
  CUDA_OK(cudaEventElapsedTime(&ms, a, b));
  EXPECT_GE(ms, 0.0f);
  int host[4];
  std::memcpy(host, d, sizeof host);  // device memory is host memory here: the second launch has not run
  EXPECT_EQ(host[0], 1);
  CUDA_OK(cudaStreamSynchronize(s));
  std::memcpy(host, d, sizeof host);
  EXPECT_EQ(host[0], 2);
  CUDA_OK(cudaEventDestroy(a));
  CUDA_OK(cudaEventDestroy(b));
  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaStreamDestroy(s));
}

// ---- graphs ----------------------------------------------------------------------------------------
TEST(Emulator, CaptureRecordsAndEachGraphLaunchReplays) {
  cudaStream_t s = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* d = DeviceAlloc<int>(4);
  CUDA_OK(cudaMemsetAsync(d, 0, 16, s));
  CUDA_OK(cudaStreamSynchronize(s));
  const cudaemu::Counters c0 = cudaemu::GetCounters();
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  Launch<AddOne>(1, 4, 0, s, d);
  Launch<AddOne>(1, 4, 0, s, d);
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
  CUDA_OK(cudaGraphDestroy(g));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(cudaemu::GetCounters().launches, c0.launches);  // capture ran nothing
  for (int i = 0; i < 3; ++i) CUDA_OK(cudaGraphLaunch(exec, s));
  CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(ToHost(d, 4), std::vector<int>(4, 6));
  EXPECT_EQ(cudaemu::GetCounters().launches, c0.launches + 6);
  CUDA_OK(cudaGraphExecDestroy(exec));

  // What a capture forbids fails and invalidates it.
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  Launch<AddOne>(1, 4, 0, s, d);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 16), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(g, nullptr);
  (void)cudaGetLastError();
  const cudaemu::Counters c1 = cudaemu::GetCounters();
  EXPECT_EQ(c1.live_graphs, c0.live_graphs);
  EXPECT_EQ(c1.live_graph_execs, c0.live_graph_execs);
  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaStreamDestroy(s));
}

// ---- launch limits -----------------------------------------------------------------------------------
__global__ void Nothing(int) {}
__global__ void UsesDynamicShared(int* out) {
  TW_DYNAMIC_SHARED(int, dyn);
  dyn[threadIdx.x] = 1;
  out[0] = 0;
}

TEST(Emulator, LaunchLimitsAreChecked) {
  (void)cudaGetLastError();
  Launch<Nothing>(1, 1025, 0, nullptr, 0);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  Launch<Nothing>(dim3(1, 65536), 32, 0, nullptr, 0);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  Launch<Nothing>(dim3(1, 1, 1), dim3(1, 1, 65), 0, nullptr, 0);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  int* d = DeviceAlloc<int>(1);
  Launch<UsesDynamicShared>(1, 32, 64 * 1024, nullptr, d);  // over 48 KB without the attribute
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  CUDA_OK(cudaFuncSetAttribute(UsesDynamicShared, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
  Launch<UsesDynamicShared>(1, 32, 64 * 1024, nullptr, d);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaFuncSetAttribute(UsesDynamicShared, cudaFuncAttributeMaxDynamicSharedMemorySize, 300 * 1024),
            cudaErrorInvalidValue);
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaFree(d));
}

// ---- the inline PTX ---------------------------------------------------------------------------------------
// One m16n8k8 tf32 mma by a warp: A (16 x 8) and B (8 x 8) given in their
// logical layouts, loaded into fragments as the PTX ISA lays them out.
template <bool kSwapB>
__global__ void OneMma(const float* A, const float* B, const float* C, float* D) {
  const int lane = static_cast<int>(threadIdx.x), g = lane / 4, t = lane % 4;
  const uint32_t a[4] = {__float_as_uint(A[g * 8 + t]), __float_as_uint(A[(g + 8) * 8 + t]),
                         __float_as_uint(A[g * 8 + t + 4]), __float_as_uint(A[(g + 8) * 8 + t + 4])};
  uint32_t b0 = __float_as_uint(B[t * 8 + g]), b1 = __float_as_uint(B[(t + 4) * 8 + g]);
  if (kSwapB) {
    const uint32_t x = b0;
    b0 = b1;
    b1 = x;
  }
  float d[4] = {C[g * 8 + 2 * t], C[g * 8 + 2 * t + 1], C[(g + 8) * 8 + 2 * t], C[(g + 8) * 8 + 2 * t + 1]};
  tw::kernels::MmaTf32(d, a, b0, b1);
  D[g * 8 + 2 * t] = d[0];
  D[g * 8 + 2 * t + 1] = d[1];
  D[(g + 8) * 8 + 2 * t] = d[2];
  D[(g + 8) * 8 + 2 * t + 1] = d[3];
}

float Tf32Truncated(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  u &= 0xFFFFE000u;
  std::memcpy(&v, &u, 4);
  return v;
}

template <bool kSwapB>
std::vector<float> RunMma(const std::vector<float>& A, const std::vector<float>& B, const std::vector<float>& C) {
  float* d = DeviceAlloc<float>(128 + 64 + 128 + 128);
  EXPECT_EQ(cudaMemcpy(d, A.data(), 128 * 4, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d + 128, B.data(), 64 * 4, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d + 192, C.data(), 128 * 4, cudaMemcpyHostToDevice), cudaSuccess);
  Launch<OneMma<kSwapB>>(1, 32, 0, nullptr, d, d + 128, d + 192, d + 320);
  std::vector<float> out = ToHost(d + 320, 128);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  return out;
}

TEST(Emulator, MmaTf32FollowsThePtxFragmentLayoutsAndIgnoresTheLow13Bits) {
  std::vector<float> A(128), B(64), C(128);
  for (int i = 0; i < 128; ++i) A[i] = std::sin(0.37f * i + 0.1f) * 3.0f;
  for (int i = 0; i < 64; ++i) B[i] = std::cos(0.71f * i) * 2.0f;
  for (int i = 0; i < 128; ++i) C[i] = 0.25f * (i % 9) - 1.0f;
  const std::vector<float> D = RunMma<false>(A, B, C);
  double worst = 0;
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 8; ++j) {
      double want = C[i * 8 + j];
      for (int k = 0; k < 8; ++k) want += static_cast<double>(Tf32Truncated(A[i * 8 + k])) * Tf32Truncated(B[k * 8 + j]);
      worst = std::max(worst, std::fabs(D[i * 8 + j] - want));
    }
  }
  EXPECT_LT(worst, 4e-6) << "against a float64 product of the tf32 inputs";
  // The inputs' low 13 bits do not matter ...
  std::vector<float> A2 = A, B2 = B;
  for (float& v : A2) v = Tf32Truncated(v);
  for (float& v : B2) v = Tf32Truncated(v);
  EXPECT_EQ(RunMma<false>(A2, B2, C), D);
  // ... while B's two fragment registers swapped give another product.
  const std::vector<float> swapped = RunMma<true>(A, B, C);
  int differ = 0;
  for (int i = 0; i < 128; ++i) differ += swapped[i] != D[i];
  EXPECT_GT(differ, 100);
}

// Each thread stages 16 bytes with cp.async; kWait: committed and waited
// for before the barrier; otherwise read without the wait.
template <bool kWait>
__global__ void StageWithCpAsync(const float* src, float* out) {
  __shared__ __align__(16) float tile[32 * 4];
  tw::kernels::CopyAsync16(tile + 4 * threadIdx.x, src + 4 * threadIdx.x);
  tw::kernels::CopyAsyncCommit();
  if (kWait) tw::kernels::CopyAsyncWaitAllGroups();
  __syncthreads();
  const int other = (static_cast<int>(threadIdx.x) + 7) % 32;
  for (int i = 0; i < 4; ++i) out[4 * threadIdx.x + i] = tile[4 * other + i];
}

TEST(Emulator, CpAsyncLandsOnlyAfterItsWaitGroup) {
  std::vector<float> x(128);
  for (int i = 0; i < 128; ++i) x[i] = static_cast<float>(i);
  float* d = DeviceAlloc<float>(256);
  CUDA_OK(cudaMemcpy(d, x.data(), 512, cudaMemcpyHostToDevice));
  Launch<StageWithCpAsync<true>>(1, 32, 0, nullptr, d, d + 128);
  std::vector<float> h = ToHost(d + 128, 128);
  for (int t = 0; t < 32; ++t) {
    for (int i = 0; i < 4; ++i) EXPECT_EQ(h[4 * t + i], x[4 * ((t + 7) % 32) + i]);
  }
  Launch<StageWithCpAsync<false>>(1, 32, 0, nullptr, d, d + 128);
  h = ToHost(d + 128, 128);
  int right = 0;
  for (int t = 0; t < 32; ++t) {
    for (int i = 0; i < 4; ++i) right += h[4 * t + i] == x[4 * ((t + 7) % 32) + i];
  }
  EXPECT_EQ(right, 0) << "without the wait no copy has landed when the others read";
  CUDA_OK(cudaFree(d));
}

// ---- test hooks -------------------------------------------------------------------------------------------
TEST(Emulator, InjectedFailuresAndLiveObjectCounts) {
  const cudaemu::Counters c0 = cudaemu::GetCounters();
  cudaemu::FailNext("cudaEventCreate", cudaErrorMemoryAllocation);
  cudaEvent_t e = nullptr;
  EXPECT_EQ(cudaEventCreate(&e), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  CUDA_OK(cudaEventCreate(&e));
  EXPECT_EQ(cudaemu::GetCounters().live_events, c0.live_events + 1);
  CUDA_OK(cudaEventDestroy(e));
  EXPECT_EQ(cudaemu::GetCounters().live_events, c0.live_events);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, size_t{64} << 30), cudaErrorMemoryAllocation);  // beyond TWEMU_DEVICE_MIB
  (void)cudaGetLastError();
}

}  // namespace
