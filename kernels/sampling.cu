// Sampling on the GPU (sampling.h): one block per row. Development versions,
// the CPU reference and timings: kernels/dev/sampling.cu (which includes
// this file to time the kernel's variants).
//
// A row goes through these steps, each a pass over its logits (all
// reductions exact: integers, or max/min):
//   1. max, the first id at the max, and the count of non-NaN logits;
//      greedy (or a degenerate distribution) ends here;
//   2. min_p (when on): the count of ids at or above its threshold, which
//      becomes (or lowers) top-k;
//   3. top-k: radix select (4 passes) of the k-th key by count, then the
//      cut among the ties at it (search in id order);
//   4. the kept weight (one pass);
//   5. top-p: radix select (4 passes) of the cut's key by weight, then the
//      cut among its ties; the kept total follows exactly;
//   6. the draw: the first kept id whose running weight exceeds u * total.
// The logit edits (ApplyLogitEdits) are a kernel of their own, run before.
#include "kernels/sampling.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "kernels/common.cuh"
#include "common/counter_rng.h"

namespace tw::kernels {

namespace {

using u64 = unsigned long long;

constexpr int kSampleThreads = 1024;  // the production block size
constexpr int kBins = 256;            // radix digit: 8 bits, 4 passes over 32-bit keys
constexpr int kCopies = 8;            // histogram copies (lane & 7): fewer same-address atomics in a warp
constexpr int kTileIds = 128;         // ids per tile of the id-order search: 4 per lane
constexpr int kMaxTiles = kSampleMaxVocab / kTileIds;
constexpr float kWeightScale = 1099511627776.0f;  // 2^40: weight w in (0, 1] -> round(w * 2^40)
static_assert(kBins == 32 * 8, "the bin search gives each lane of one warp 8 bins");
static_assert(kTileIds == 32 * 4, "the tile search gives each lane 4 ids");

struct SampleShared {
  union {
    u64 hist[kBins * kCopies];  // radix select: (bin, copy)
    u64 tile[kMaxTiles];        // id-order search: each tile's sum
  } u;
  u64 bin_total[kBins];
  u64 warp_u64[32];
  float warp_max[32];
  int warp_id[32];
  unsigned warp_count[32];
  // Results one thread finds and the block reads.
  u64 res_u64;
  int res_bin;
  int res_tile;
  int res_id;
};

// Floats as unsigned keys in the order of their values: larger value,
// larger key; -0 and +0 the same key (the CPU compares floats, so they tie);
// NaN is 0, below every number (-inf is 0x007fffff), and never counted.
__device__ __forceinline__ uint32_t OrderKey(float x) {
  if (x != x) return 0u;
  uint32_t b = __float_as_uint(x);
  if ((b << 1) == 0u) b = 0u;
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ float FromOrderKey(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

// An id's weight in fixed point: round(exp((x - mx) * inv_t) * 2^40), 0
// for NaN and where the exponent is <= -87 (cpu::ExpWeights' cut).
__device__ __forceinline__ u64 Weight(float x, float mx, float inv_t) {
  const float z = (x - mx) * inv_t;
  if (!(z > -87.0f)) return 0;
  return __float2ull_rn(expf(z) * kWeightScale);
}

__device__ __forceinline__ u64 WarpSumU64(u64 v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ u64 WarpInclusiveScanU64(u64 v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const u64 t = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += t;
  }
  return v;
}

// The block's sum of v (every thread gets it).
template <int kThreads>
__device__ u64 BlockSumU64(u64 v, SampleShared& sh) {
  v = WarpSumU64(v);
  if ((threadIdx.x & 31) == 0) sh.warp_u64[threadIdx.x >> 5] = v;
  __syncthreads();
  u64 total = 0;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) total += sh.warp_u64[w];
  __syncthreads();  // read before warp_u64 is written again
  return total;
}

// The sum of v over the threads before this one (in thread order).
template <int kThreads>
__device__ u64 BlockExclusiveScanU64(u64 v, SampleShared& sh) {
  const int warp = threadIdx.x >> 5;
  const u64 incl = WarpInclusiveScanU64(v);
  if ((threadIdx.x & 31) == 31) sh.warp_u64[warp] = incl;
  __syncthreads();
  u64 before = 0;
  for (int w = 0; w < warp; ++w) before += sh.warp_u64[w];
  __syncthreads();
  return before + incl - v;
}

// (value, id) a is better than b: larger value, then lower id. Values are
// never NaN here; the no-value sentinel is (-inf, V), which any real id beats.
__device__ __forceinline__ bool Better(float va, int ia, float vb, int ib) {
  return va > vb || (va == vb && ia < ib);
}

// Radix select by weight: with value(i, x, key) >= 0 the weight of id i
// (its logit x, key OrderKey(x)), finds the key T with
//   sum of value over keys > T  <  target  <=  sum over keys >= T
// and that first sum as *above. False when the total is below target
// (never, for the targets the kernel asks for). The block calls it together.
template <int kThreads, class Value>
__device__ bool RadixSelect(const float* row, int V, u64 target, const Value& value, SampleShared& sh, uint32_t* T,
                            u64* above) {
  const int lane = threadIdx.x & 31;
  uint32_t prefix = 0;  // the key's digits found so far
  u64 m = 0;            // weight of the keys above the prefix's range
  for (int d = 0; d < 4; ++d) {
    const int shift = 24 - 8 * d;
    for (int j = threadIdx.x; j < kBins * kCopies; j += kThreads) sh.u.hist[j] = 0;
    if (threadIdx.x == 0) sh.res_bin = -1;
    __syncthreads();
    for (int i = threadIdx.x; i < V; i += kThreads) {
      const float x = row[i];
      const uint32_t key = OrderKey(x);
      if (d > 0 && (key >> (shift + 8)) != (prefix >> (shift + 8))) continue;
      const u64 v = value(i, x, key);
      if (v != 0) atomicAdd(&sh.u.hist[((key >> shift) & 0xffu) * kCopies + (lane & (kCopies - 1))], v);
    }
    __syncthreads();
    for (int bin = threadIdx.x; bin < kBins; bin += kThreads) {
      u64 s = 0;
#pragma unroll
      for (int c = 0; c < kCopies; ++c) s += sh.u.hist[bin * kCopies + c];
      sh.bin_total[bin] = s;
    }
    __syncthreads();
    if (threadIdx.x < 32) {
      // Lane l holds bins 255 - 8l down to 248 - 8l: lane order is key
      // order, largest first. The lane whose range crosses `need` walks it.
      const u64 need = target - m;
      u64 own = 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) own += sh.bin_total[255 - 8 * lane - j];
      const u64 incl = WarpInclusiveScanU64(own);
      const u64 excl = incl - own;
      if (excl < need && need <= incl) {
        u64 acc = excl;
        for (int j = 0; j < 8; ++j) {
          const int bin = 255 - 8 * lane - j;
          const u64 t = sh.bin_total[bin];
          if (acc + t >= need) {
            sh.res_bin = bin;
            sh.res_u64 = m + acc;
            break;
          }
          acc += t;
        }
      }
    }
    __syncthreads();
    const int bin = sh.res_bin;
    const u64 m_next = sh.res_u64;
    __syncthreads();  // read before the next pass writes them
    if (bin < 0) return false;  // the same for every thread
    prefix |= static_cast<uint32_t>(bin) << shift;
    m = m_next;
  }
  *T = prefix;
  *above = m;
  return true;
}

// The first id i in [0, V) at which the running sum f(0) + ... + f(i)
// exceeds tau (f(i) >= 0; such an id has f(i) > 0); -1 when the whole sum
// is <= tau. Tiles of 128 ids: each tile's sum (a warp each), a block scan
// over the tiles, then a warp scan inside the tile holding tau.
template <int kThreads, class F>
__device__ int FindInIdOrder(int V, u64 tau, const F& f, SampleShared& sh) {
  constexpr int kWarps = kThreads / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int tiles = (V + kTileIds - 1) / kTileIds;
  if (threadIdx.x == 0) {
    sh.res_tile = -1;
    sh.res_id = -1;
  }
  for (int t = warp; t < tiles; t += kWarps) {
    u64 s = 0;
#pragma unroll
    for (int m = 0; m < kTileIds / 32; ++m) {
      const int i = t * kTileIds + m * 32 + lane;
      if (i < V) s += f(i);
    }
    s = WarpSumU64(s);
    if (lane == 0) sh.u.tile[t] = s;
  }
  __syncthreads();
  // Thread th scans tiles [th * per, th * per + per) in order.
  const int per = (tiles + kThreads - 1) / kThreads;
  const int t0 = threadIdx.x * per, t1 = min(tiles, t0 + per);
  u64 own = 0;
  for (int t = t0; t < t1; ++t) own += sh.u.tile[t];
  u64 acc = BlockExclusiveScanU64<kThreads>(own, sh);
  for (int t = t0; t < t1; ++t) {
    const u64 s = sh.u.tile[t];
    if (acc <= tau && tau < acc + s) {
      sh.res_tile = t;
      sh.res_u64 = acc;
    }
    acc += s;
  }
  __syncthreads();
  if (warp == 0) {
    const int t = sh.res_tile;  // the same for the whole warp
    if (t >= 0) {
      const u64 base = sh.res_u64;
      const int i0 = t * kTileIds + 4 * lane;  // lane l: ids i0 .. i0 + 3, in order
      u64 v[4];
      u64 mine = 0;
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        v[m] = i0 + m < V ? f(i0 + m) : 0;
        mine += v[m];
      }
      const u64 incl = WarpInclusiveScanU64(mine);
      u64 run = base + incl - mine;
      if (run <= tau && tau < run + mine) {
#pragma unroll
        for (int m = 0; m < 4; ++m) {
          if (tau < run + v[m]) {
            sh.res_id = i0 + m;
            break;
          }
          run += v[m];
        }
      }
    }
  }
  __syncthreads();
  const int id = sh.res_id;
  __syncthreads();  // read before a later search resets it
  return id;
}

// One block per row. kStage: the row is first copied to dynamic shared
// memory (vocab floats), and every pass reads it there (a development
// variant: kernels/dev/sampling.cu; the launcher uses kStage = false).
template <int kThreads, bool kStage>
__global__ void __launch_bounds__(kThreads) SampleKernel(const float* logits, int V, size_t row_stride,
                                                         const SampleParams* params, int32_t* ids) {
  __shared__ SampleShared sh;
  const int r = blockIdx.x;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const float* row = logits + static_cast<size_t>(r) * row_stride;  // (V)
  if constexpr (kStage) {
    TW_DYNAMIC_SHARED(float, staged);  // (V)
    for (int i = tid; i < V; i += kThreads) staged[i] = row[i];
    __syncthreads();
    row = staged;
  }
  const SampleParams p = params[r];

  // 1. max, first id at the max, count of non-NaN.
  float mx = -INFINITY;
  int arg = V;  // none yet
  unsigned count = 0;
  for (int i = tid; i < V; i += kThreads) {
    const float x = row[i];
    if (x != x) continue;
    ++count;
    if (Better(x, i, mx, arg)) {
      mx = x;
      arg = i;
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, mx, o);
    const int a2 = __shfl_xor_sync(0xffffffffu, arg, o);
    count += __shfl_xor_sync(0xffffffffu, count, o);
    if (Better(m2, a2, mx, arg)) {
      mx = m2;
      arg = a2;
    }
  }
  if (lane == 0) {
    sh.warp_max[warp] = mx;
    sh.warp_id[warp] = arg;
    sh.warp_count[warp] = count;
  }
  __syncthreads();
  mx = -INFINITY;
  arg = V;
  count = 0;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) {
    count += sh.warp_count[w];
    if (Better(sh.warp_max[w], sh.warp_id[w], mx, arg)) {
      mx = sh.warp_max[w];
      arg = sh.warp_id[w];
    }
  }
  __syncthreads();
  const int greedy = arg < V ? arg : 0;  // every logit NaN: 0
  const float inv_t = 1.0f / p.temperature;
  if (!(p.temperature > 0.0f) || !isfinite(mx) || !isfinite(inv_t)) {
    if (tid == 0) ids[r] = greedy;
    return;
  }

  // The kept ids: key > cut_key, or key == cut_key and id <= cut_last; NaN
  // (key 0) never. At first every non-NaN id.
  uint32_t cut_key = 0;
  int cut_last = V;
  auto kept = [&](int i, uint32_t key) { return key != 0 && (key > cut_key || (key == cut_key && i <= cut_last)); };
  bool ok = true;

  // 2. min_p: the ids at or above its threshold are the top-k of their count.
  long long top_k = p.top_k > 0 ? p.top_k : 0;
  if (p.min_p_log < 0.0f) {
    const float floor = MinPThreshold(mx, p.temperature, p.min_p_log);
    u64 mine = 0;
    for (int i = tid; i < V; i += kThreads) mine += row[i] >= floor ? 1 : 0;  // NaN: false
    const long long kept = static_cast<long long>(BlockSumU64<kThreads>(mine, sh));
    top_k = top_k > 0 && top_k < kept ? top_k : kept;
  }

  // 3. top-k: the k-th key by count, then the lowest ids among its ties.
  if (top_k > 0 && static_cast<unsigned long long>(top_k) < count) {
    uint32_t T = 0;
    u64 above = 0;
    ok = RadixSelect<kThreads>(
        row, V, static_cast<u64>(top_k), [](int, float, uint32_t key) -> u64 { return key != 0 ? 1 : 0; }, sh, &T,
        &above);
    if (ok) {
      const u64 n = static_cast<u64>(top_k) - above;  // >= 1 ties at T are kept
      const int last = FindInIdOrder<kThreads>(
          V, n - 1, [&](int i) -> u64 { return OrderKey(row[i]) == T ? 1 : 0; }, sh);
      ok = last >= 0;
      cut_key = T;
      cut_last = last;
    }
  }

  // 4. the kept weight.
  u64 total = 0;
  if (ok) {
    u64 mine = 0;
    for (int i = tid; i < V; i += kThreads) {
      const float x = row[i];
      if (kept(i, OrderKey(x))) mine += Weight(x, mx, inv_t);
    }
    total = BlockSumU64<kThreads>(mine, sh);  // >= 2^40: the max is kept with weight 1
  }

  // 5. top-p: the smallest prefix of the order reaching top_p * total.
  if (ok && p.top_p < 1.0f) {
    const double want = std::ceil(static_cast<double>(p.top_p) * static_cast<double>(total));
    const u64 target = want < 1.0 ? 1 : want >= static_cast<double>(total) ? total : static_cast<u64>(want);
    uint32_t T = 0;
    u64 above = 0;
    ok = RadixSelect<kThreads>(
        row, V, target,
        [&](int i, float x, uint32_t key) -> u64 { return kept(i, key) ? Weight(x, mx, inv_t) : 0; }, sh, &T, &above);
    if (ok) {
      // Every kept id at T weighs qT (the same logit): the first n of them
      // in id order complete the prefix.
      const u64 qT = Weight(FromOrderKey(T), mx, inv_t);
      ok = qT > 0;
      if (ok) {
        const u64 n = (target - above + qT - 1) / qT;
        const int last = FindInIdOrder<kThreads>(
            V, n - 1,
            [&](int i) -> u64 {
              const uint32_t key = OrderKey(row[i]);
              return key == T && kept(i, key) ? 1 : 0;
            },
            sh);
        ok = last >= 0;
        total = above + n * qT;
        cut_key = T;
        cut_last = last;
      }
    }
  }

  // 6. the draw: u = k / 2^24, the point floor(k * total / 2^24) < total.
  int id = -1;
  if (ok) {
    const u64 k24 = static_cast<u64>(CounterUniform(p.seed, p.counter) * 16777216.0f);
    const u64 point = ((k24 * total) >> 24) | (__umul64hi(k24, total) << 40);
    id = FindInIdOrder<kThreads>(
        V, point,
        [&](int i) -> u64 {
          const float x = row[i];
          return kept(i, OrderKey(x)) ? Weight(x, mx, inv_t) : 0;
        },
        sh);
  }
  if (tid == 0) ids[r] = id;
}

// Launches SampleKernel<kThreads, kStage> (kStage: V floats of dynamic
// shared memory, the caller having checked that they fit).
template <int kThreads, bool kStage>
Status LaunchSample(const float* logits, int rows, int vocab, size_t row_stride, const SampleParams* params,
                    int32_t* ids, void* stream) {
  if (rows == 0) return Status::Ok();
  size_t dynamic = 0;
  if constexpr (kStage) {
    // Raised once to the largest size asked for (the dev program's
    // variant only, single-threaded: not instantiated by the launcher).
    static size_t configured = 0;
    dynamic = static_cast<size_t>(vocab) * sizeof(float);
    if (dynamic > configured) {
      cudaError_t e = cudaFuncSetAttribute(SampleKernel<kThreads, kStage>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(dynamic));
      if (e != cudaSuccess) return CudaStatus(e, "kernels::SampleTokens: cudaFuncSetAttribute (staged row)");
      configured = dynamic;
    }
  }
  Launch<SampleKernel<kThreads, kStage>>(rows, kThreads, dynamic, AsStream(stream), logits, vocab, row_stride, params,
                                         ids);
  TW_LAUNCH_CHECK("kernels::SampleTokens launch");
  return Status::Ok();
}

// One block per row, a thread per edit: ids are distinct within a row.
__global__ void LogitEditKernel(float* logits, int V, size_t row_stride, const int32_t* edit_rows,
                                const LogitEdit* edits) {
  const int r = blockIdx.x;
  float* row = logits + static_cast<size_t>(r) * row_stride;
  const int end = edit_rows[r + 1];
  for (int j = edit_rows[r] + static_cast<int>(threadIdx.x); j < end; j += static_cast<int>(blockDim.x)) {
    const LogitEdit e = edits[j];
    if (e.id >= 0 && e.id < V) row[e.id] = ApplyLogitEdit(row[e.id], e);
  }
}

__global__ void TokenMaskKernel(float* logits, int V, size_t row_stride, const int32_t* mask_rows,
                                const uint64_t* masks, int mask_words) {
  const int r = blockIdx.x;
  const int m = mask_rows[r];
  if (m < 0) return;
  float* row = logits + static_cast<size_t>(r) * row_stride;
  const uint64_t* mask = masks + static_cast<size_t>(m) * static_cast<size_t>(mask_words);
  for (int id = static_cast<int>(threadIdx.x); id < V; id += static_cast<int>(blockDim.x)) {
    if (!TokenAllowed(mask, id)) row[id] = -INFINITY;
  }
}

Status CheckSampleArgs(const float* logits, int rows, int vocab, size_t row_stride, const SampleParams* params,
                       const int32_t* ids) {
  auto ptr = [](const void* q) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", q);
    return std::string(buf);
  };
  if (rows < 0) return Status::Error("kernels::SampleTokens: rows = " + std::to_string(rows) + " < 0");
  if (vocab < 1 || vocab > kSampleMaxVocab) {
    return Status::Error("kernels::SampleTokens: vocab = " + std::to_string(vocab) + " is not in [1, " +
                         std::to_string(kSampleMaxVocab) + "]");
  }
  if (row_stride < static_cast<size_t>(vocab)) {
    return Status::Error("kernels::SampleTokens: row_stride = " + std::to_string(row_stride) + " < vocab = " +
                         std::to_string(vocab));
  }
  if (logits == nullptr) return Status::Error("kernels::SampleTokens: logits is null");
  if (params == nullptr) return Status::Error("kernels::SampleTokens: params is null");
  if (ids == nullptr) return Status::Error("kernels::SampleTokens: ids is null");
  if (reinterpret_cast<uintptr_t>(logits) % 4 != 0) {
    return Status::Error("kernels::SampleTokens: logits = " + ptr(logits) + " is not 4-byte aligned");
  }
  if (reinterpret_cast<uintptr_t>(params) % 8 != 0) {
    return Status::Error("kernels::SampleTokens: params = " + ptr(params) + " is not 8-byte aligned");
  }
  if (reinterpret_cast<uintptr_t>(ids) % 4 != 0) {
    return Status::Error("kernels::SampleTokens: ids = " + ptr(ids) + " is not 4-byte aligned");
  }
  return Status::Ok();
}

}  // namespace

Status ApplyLogitEdits(float* logits, int rows, int vocab, size_t row_stride, const int32_t* edit_rows,
                       const LogitEdit* edits, void* stream) {
  if (rows < 0) return Status::Error("kernels::ApplyLogitEdits: rows = " + std::to_string(rows) + " < 0");
  if (rows == 0) return Status::Ok();
  if (vocab < 1 || row_stride < static_cast<size_t>(vocab)) {
    return Status::Error("kernels::ApplyLogitEdits: vocab = " + std::to_string(vocab) + ", row_stride = " +
                         std::to_string(row_stride));
  }
  if (logits == nullptr || edit_rows == nullptr || edits == nullptr) {
    return Status::Error("kernels::ApplyLogitEdits: a null pointer (logits, edit_rows or edits)");
  }
  Launch<LogitEditKernel>(rows, 128, 0, AsStream(stream), logits, vocab, row_stride, edit_rows, edits);
  TW_LAUNCH_CHECK("kernels::ApplyLogitEdits launch");
  return Status::Ok();
}

Status ApplyTokenMasks(float* logits, int rows, int vocab, size_t row_stride, const int32_t* mask_rows,
                       const uint64_t* masks, int mask_words, void* stream) {
  if (rows < 0) return Status::Error("kernels::ApplyTokenMasks: rows = " + std::to_string(rows) + " < 0");
  if (rows == 0) return Status::Ok();
  if (vocab < 1 || row_stride < static_cast<size_t>(vocab) || mask_words < (vocab + 63) / 64) {
    return Status::Error("kernels::ApplyTokenMasks: vocab = " + std::to_string(vocab) + ", row_stride = " +
                         std::to_string(row_stride) + ", mask_words = " + std::to_string(mask_words));
  }
  if (logits == nullptr || mask_rows == nullptr || masks == nullptr) {
    return Status::Error("kernels::ApplyTokenMasks: a null pointer (logits, mask_rows or masks)");
  }
  Launch<TokenMaskKernel>(rows, 256, 0, AsStream(stream), logits, vocab, row_stride, mask_rows, masks, mask_words);
  TW_LAUNCH_CHECK("kernels::ApplyTokenMasks launch");
  return Status::Ok();
}

Status SampleTokens(const float* logits, int rows, int vocab, size_t row_stride, const SampleParams* params,
                    int32_t* ids, void* stream) {
  Status s = CheckSampleArgs(logits, rows, vocab, row_stride, params, ids);
  if (!s.ok()) return s;
  return LaunchSample<kSampleThreads, false>(logits, rows, vocab, row_stride, params, ids, stream);
}

}  // namespace tw::kernels
