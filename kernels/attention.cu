// Paged attention kernels (kernels/attention.h): AppendKv, the decode chunk
// kernel with its in-kernel merge, the prefill chunk kernel and the merge
// kernel. The order of every float operation is the one written out in
// src/cuda/attention_plan.h; each is an explicit correctly rounded
// intrinsic (kernels::attn_math), so nvcc never contracts or reorders them.
//
// One chunk CTA = 128 threads = S groups of G = head_dim/4 lanes; lane g of
// a group owns dims 4g..4g+3 (one float4) of q, of each key and value it
// reads, and of its output. Group s takes the chunk's keys s, s+S, ...
// (head_dim 64: G = 16, S = 8, 16 keys per group; head_dim 16: G = 4,
// S = 32, 4 keys per group). A warp's float4 loads of one key row are 256
// contiguous bytes (head_dim 64), and the rows of a block are contiguous.
#include "kernels/attention.h"

#include <cuda_runtime.h>

#include <string>

#include "kernels/common.cuh"
#include "kernels/ptx.cuh"

namespace tw::kernels {
namespace {

using kernels::KvShape;
using namespace kernels::attn_math;

constexpr int kChunk = kernels::kAttnChunkTokens;
constexpr int kThreads = kernels::kAttnThreads;
constexpr int kWarps = kThreads / 32;
constexpr int kTile = kernels::kAttnPrefillRowsPerTile;
constexpr unsigned kFull = 0xffffffffu;

template <int HD>
struct Geo {
  static constexpr int G = HD / 4;        // lanes per key
  static constexpr int S = kThreads / G;  // groups per CTA
  static constexpr int TPG = kChunk / S;  // keys per group per chunk
  static_assert(HD % 4 == 0 && G >= 1 && G <= 32 && 32 % G == 0, "head_dim must be 4 * (a divisor of 32)");
  static_assert(kChunk % S == 0 && kWarps >= 1 && (kWarps & (kWarps - 1)) == 0, "chunk and warps must tile");
};

__device__ __forceinline__ float NanF() { return __int_as_float(0x7fffffff); }
__device__ __forceinline__ float4 Nan4() { return make_float4(NanF(), NanF(), NanF(), NanF()); }

// A row's key count is usable when it is in [1, max_chunks * kChunk] and
// within its block table (stride * block_size tokens).
__device__ __forceinline__ bool LenOk(int64_t len, int max_chunks, int64_t table_tokens) {
  return len >= 1 && len <= static_cast<int64_t>(max_chunks) * kChunk && len <= table_tokens;
}

// q . k over one group's G lanes: the lane's fma chain over its 4 dims, then
// the xor tree G/2, .., 1 (every lane of the group ends with the same sum).
// Every lane of the warp must call it.
template <int HD>
__device__ __forceinline__ float GroupDot(float4 q, float4 k) {
  float a = Fma(q.x, k.x, 0.0f);
  a = Fma(q.y, k.y, a);
  a = Fma(q.z, k.z, a);
  a = Fma(q.w, k.w, a);
#pragma unroll
  for (int off = Geo<HD>::G / 2; off >= 1; off >>= 1) a = Add(a, __shfl_xor_sync(kFull, a, off));
  return a;
}

// The CTA's max of v (exact, so any order). red: kWarps floats; the caller
// syncs before red is written again.
__device__ __forceinline__ float BlockMax(float v, float* red) {
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) v = Max(v, __shfl_xor_sync(kFull, v, off));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float m = red[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) m = Max(m, red[w]);
  return m;
}

// Sums the S groups' (o, l) in the tree of strides 1, 2, .., S/2 (inside a
// warp by shuffles, then across the warps in shared memory). Thread
// tid < HD gets dim tid of the sum in *o_d and the sum of l in *l_sum.
// red_o: kWarps * HD floats (16-byte aligned), red_l: kWarps floats.
template <int HD>
__device__ __forceinline__ void CombineGroups(float4 o, float l, float* red_o, float* red_l, float* o_d,
                                              float* l_sum) {
  constexpr int G = Geo<HD>::G;
#pragma unroll
  for (int off = G; off < 32; off <<= 1) {
    o.x = Add(o.x, __shfl_xor_sync(kFull, o.x, off));
    o.y = Add(o.y, __shfl_xor_sync(kFull, o.y, off));
    o.z = Add(o.z, __shfl_xor_sync(kFull, o.z, off));
    o.w = Add(o.w, __shfl_xor_sync(kFull, o.w, off));
    l = Add(l, __shfl_xor_sync(kFull, l, off));
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane < G) reinterpret_cast<float4*>(red_o + warp * HD)[lane] = o;
  if (lane == 0) red_l[warp] = l;
  __syncthreads();
  if (threadIdx.x < HD) {
    float x[kWarps], y[kWarps];
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      x[w] = red_o[w * HD + threadIdx.x];
      y[w] = red_l[w];
    }
#pragma unroll
    for (int st = 1; st < kWarps; st <<= 1) {
#pragma unroll
      for (int w = 0; w < kWarps; w += 2 * st) {
        x[w] = Add(x[w], x[w + st]);
        y[w] = Add(y[w], y[w + st]);
      }
    }
    *o_d = x[0];
    *l_sum = y[0];
  }
}

// Dim d of the merge of one (row, head)'s nc chunk partials, in chunk
// order. ml: (nc, 2) (max, sum); o: (nc, HD). Read through L2 (ld.cg): the
// partials were written by other CTAs of this launch.
template <int HD>
__device__ __forceinline__ float MergeDim(const float* ml, const float* o, int nc, int d) {
  float mx = __ldcg(ml);
  for (int c = 1; c < nc; ++c) mx = Max(mx, __ldcg(ml + 2 * c));
  const float w0 = Exp(Sub(__ldcg(ml), mx));
  float L = Mul(__ldcg(ml + 1), w0);
  float O = Mul(__ldcg(o + d), w0);
  for (int c = 1; c < nc; ++c) {
    const float w = Exp(Sub(__ldcg(ml + 2 * c), mx));
    L = Fma(__ldcg(ml + 2 * c + 1), w, L);
    O = Fma(__ldcg(o + c * HD + d), w, O);
  }
  return Div(O, L);
}

// ---- decode ------------------------------------------------------------
// CTA (chunk c, head h, row b): keys [c*kChunk, c*kChunk + n) of row b,
// loaded straight from the pool into registers (each thread's TPG keys and
// values all in flight at once), reduced to the chunk's (m, l, o), written
// to the workspace. kFusedMerge: the last of the row's chunk CTAs (integer
// ticket) merges them into att; otherwise MergeKernel does.
template <int HD, bool kFusedMerge>
__global__ void __launch_bounds__(kThreads) DecodeChunkKernel(
    const float* __restrict__ qkv,     // (rows, 3C)
    const int32_t* __restrict__ lens,  // (rows)
    const int32_t* __restrict__ tables, int table_stride, KvShape kv, int layer, float scale,
    const float* __restrict__ pool,      // (num_blocks, FloatsPerBlock)
    float* __restrict__ partial_o,       // (max_rows, H, max_chunks, HD)
    float* __restrict__ partial_ml,      // (max_rows, H, max_chunks, 2)
    int32_t* __restrict__ tickets,       // (max_rows, H)
    int max_chunks,
    float* __restrict__ att) {           // (rows, C)
  using Gm = Geo<HD>;
  const int c = blockIdx.x, h = blockIdx.y, row = blockIdx.z;
  const int tid = threadIdx.x, g = tid % Gm::G, s = tid / Gm::G;
  const int H = kv.n_head, C = H * HD;
  const int bs = kv.block_size;
  const int len = lens[row];
  float* out = att + static_cast<size_t>(row) * C + h * HD;  // (HD)
  if (!LenOk(len, max_chunks, static_cast<int64_t>(table_stride) * bs)) {
    if (c == 0 && tid < HD) out[tid] = NanF();
    return;
  }
  const int first = c * kChunk;
  if (first >= len) return;  // a padded chunk of this row
  const int n = min(kChunk, len - first);
  const int nc = (len + kChunk - 1) / kChunk;

  const float4 q = *reinterpret_cast<const float4*>(qkv + static_cast<size_t>(row) * 3 * C + h * HD + 4 * g);
  const int32_t* table = tables + static_cast<size_t>(row) * table_stride;  // (table_stride)
  const int64_t fpb = kv.FloatsPerBlock();
  const int64_t k_off = kv.HeadOffset(layer, 0, h) + 4 * g;
  const int64_t v_off = kv.HeadOffset(layer, 1, h) + 4 * g;

  float4 kr[Gm::TPG], vr[Gm::TPG];
#pragma unroll
  for (int i = 0; i < Gm::TPG; ++i) {
    const int t = s + i * Gm::S;
    kr[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    vr[i] = kr[i];
    if (t < n) {
      const int j = first + t;
      const int blk = __ldg(table + j / bs);
      if (blk >= 0 && blk < kv.num_blocks) {
        const float* base = pool + static_cast<int64_t>(blk) * fpb + static_cast<int64_t>(j % bs) * HD;
        kr[i] = __ldg(reinterpret_cast<const float4*>(base + k_off));
        vr[i] = __ldg(reinterpret_cast<const float4*>(base + v_off));
      } else {
        kr[i] = Nan4();  // a bad block id: the row's output becomes NaN
        vr[i] = Nan4();
      }
    }
  }

  __shared__ float red_m[kWarps];
  __shared__ float red_l[kWarps];
  __shared__ __align__(16) float red_o[kWarps * HD];
  __shared__ int is_last;

  float sc[Gm::TPG];
  float mloc = -INFINITY;
#pragma unroll
  for (int i = 0; i < Gm::TPG; ++i) {
    sc[i] = Mul(scale, GroupDot<HD>(q, kr[i]));
    if (s + i * Gm::S < n) mloc = Max(mloc, sc[i]);
  }
  const float m = BlockMax(mloc, red_m);
  float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  float l = 0.0f;
#pragma unroll
  for (int i = 0; i < Gm::TPG; ++i) {
    if (s + i * Gm::S < n) {
      const float p = Exp(Sub(sc[i], m));
      o.x = Fma(p, vr[i].x, o.x);
      o.y = Fma(p, vr[i].y, o.y);
      o.z = Fma(p, vr[i].z, o.z);
      o.w = Fma(p, vr[i].w, o.w);
      l = Add(l, p);
    }
  }
  float o_d = 0.0f, l_c = 0.0f;
  CombineGroups<HD>(o, l, red_o, red_l, &o_d, &l_c);

  const size_t pair = static_cast<size_t>(row) * H + h;
  float* pml = partial_ml + pair * max_chunks * 2;   // (max_chunks, 2)
  float* po = partial_o + pair * max_chunks * HD;    // (max_chunks, HD)
  if (tid < HD) {
    po[c * HD + tid] = o_d;
    if (tid == 0) {
      pml[2 * c] = m;
      pml[2 * c + 1] = l_c;
    }
  }
  if constexpr (!kFusedMerge) return;

  // The last chunk CTA of (row, head) merges: each CTA fences its partial,
  // then takes a ticket; the one that takes ticket nc-1 sees every
  // partial and resets the ticket for the next launch.
  if (nc > 1) {
    __threadfence();
    __syncthreads();
    if (tid == 0) {
      const int ticket = atomicAdd(tickets + pair, 1);
      is_last = ticket == nc - 1;
      if (is_last) tickets[pair] = 0;
    }
    __syncthreads();
    if (!is_last) return;
    __threadfence();
  } else {
    __syncthreads();  // this CTA's own partial, written by threads 0..HD-1
  }
  if (tid < HD) out[tid] = MergeDim<HD>(pml, po, nc, tid);
}

// ---- merge (prefill, and the two-launch decode of kernels/dev) ----------
// Thread (pair, d): dim d of one (row, head). Rows' lengths are lens[r], or
// pos[r] + 1 when pos_plus_one. 128 / HD pairs per CTA.
template <int HD>
__global__ void __launch_bounds__(kThreads) MergeKernel(
    int rows, const int32_t* __restrict__ lens_or_pos, bool pos_plus_one, int H, int max_chunks,
    int64_t table_tokens,
    const float* __restrict__ partial_o,   // (max_rows, H, max_chunks, HD)
    const float* __restrict__ partial_ml,  // (max_rows, H, max_chunks, 2)
    float* __restrict__ att) {             // (rows, C)
  constexpr int kPer = kThreads / HD;
  const int64_t pair = static_cast<int64_t>(blockIdx.x) * kPer + threadIdx.x / HD;
  const int d = threadIdx.x % HD;
  if (pair >= static_cast<int64_t>(rows) * H) return;
  const int row = static_cast<int>(pair / H), h = static_cast<int>(pair % H);
  const int64_t len = static_cast<int64_t>(lens_or_pos[row]) + (pos_plus_one ? 1 : 0);
  float* out = att + static_cast<size_t>(row) * H * HD + h * HD;  // (HD)
  if (!LenOk(len, max_chunks, table_tokens)) {
    out[d] = NanF();
    return;
  }
  const int nc = static_cast<int>((len + kChunk - 1) / kChunk);
  out[d] = MergeDim<HD>(partial_ml + pair * max_chunks * 2, partial_o + pair * max_chunks * HD, nc, d);
}

// ---- prefill -------------------------------------------------------------
// This thread's cp.async copies, committed and waited for.
__device__ __forceinline__ void CopyAsyncWaitAll() {
  CopyAsyncCommit();
  CopyAsyncWaitAllGroups();
}

// Copies one head's K (or V: head_off) rows of keys [first, first + n) of a
// sequence into dst (n, HD); a key in a bad block id is NaN there. The
// caller syncs after.
template <int HD>
__device__ __forceinline__ void StageChunk(float* dst, const float* pool, const int32_t* table, const KvShape& kv,
                                           int64_t head_off, int first, int n) {
  constexpr int G = Geo<HD>::G;
  const int bs = kv.block_size;
  const int64_t fpb = kv.FloatsPerBlock();
  for (int e = threadIdx.x; e < n * G; e += kThreads) {
    const int t = e / G, g = e % G, j = first + t;
    const int blk = __ldg(table + j / bs);
    float* d = dst + t * HD + 4 * g;
    if (blk >= 0 && blk < kv.num_blocks) {
      CopyAsync16(d, pool + static_cast<int64_t>(blk) * fpb + head_off + static_cast<int64_t>(j % bs) * HD + 4 * g);
    } else {
      *reinterpret_cast<float4*>(d) = Nan4();
    }
  }
  CopyAsyncWaitAll();
}

// CTA (chunk c, head h, tile of up to kTile rows). The tile's rows are
// taken in runs of one sequence; per run, the chunk's keys are staged in
// shared memory once and every row of the run computes its scores from
// them, then the values are staged and every row reduces its chunk: the
// same operations, in the same order, as DecodeChunkKernel's for that row.
template <int HD>
__global__ void __launch_bounds__(kThreads) PrefillChunkKernel(
    const float* __restrict__ qkv,        // (rows, 3C)
    int rows,
    const int32_t* __restrict__ row_table,  // (rows) or null
    const int32_t* __restrict__ pos,        // (rows)
    const int32_t* __restrict__ tables, int table_count, int table_stride, KvShape kv, int layer, float scale,
    const float* __restrict__ pool,
    float* __restrict__ partial_o,   // (max_rows, H, max_chunks, HD)
    float* __restrict__ partial_ml,  // (max_rows, H, max_chunks, 2)
    int max_chunks) {
  using Gm = Geo<HD>;
  const int c = blockIdx.x, h = blockIdx.y;
  const int r0 = blockIdx.z * kTile, r1 = min(rows, r0 + kTile);
  const int tid = threadIdx.x, g = tid % Gm::G, s = tid / Gm::G;
  const int H = kv.n_head, C = H * HD;
  const int first = c * kChunk;
  const int64_t table_tokens = static_cast<int64_t>(table_stride) * kv.block_size;

  __shared__ __align__(16) float kv_s[kChunk * HD];  // (n, HD): the chunk's K, then its V
  __shared__ float sc_s[kTile * kChunk];             // (run rows, n) scores
  __shared__ float red_m[kWarps];
  __shared__ float red_l[kWarps];
  __shared__ __align__(16) float red_o[kWarps * HD];

  // Row r's key count, or 0 when it is unusable (MergeKernel writes NaN).
  auto row_len = [&](int r) -> int {
    const int64_t len = static_cast<int64_t>(pos[r]) + 1;
    return LenOk(len, max_chunks, table_tokens) ? static_cast<int>(len) : 0;
  };
  auto row_seq = [&](int r) -> int { return row_table ? row_table[r] : r; };

  for (int rs = r0; rs < r1;) {
    const int seq = row_seq(rs);
    int re = rs + 1, max_len = row_len(rs);
    while (re < r1 && row_seq(re) == seq) max_len = max(max_len, row_len(re++));
    const int run_rs = rs;
    rs = re;
    if (seq < 0 || seq >= table_count) {
      // A bad table row: write NaN partials for the rows of the run that
      // have this chunk, so the merge turns them into NaN.
      for (int r = run_rs; r < re; ++r) {
        const int len = row_len(r);
        if (len <= first) continue;
        const size_t pair = static_cast<size_t>(r) * H + h;
        if (tid < HD) partial_o[(pair * max_chunks + c) * HD + tid] = NanF();
        if (tid == 0) partial_ml[(pair * max_chunks + c) * 2] = NanF();
        if (tid == 0) partial_ml[(pair * max_chunks + c) * 2 + 1] = NanF();
      }
      continue;
    }
    if (max_len <= first) continue;  // no row of the run reaches this chunk
    const int n = min(kChunk, max_len - first);
    const int32_t* table = tables + static_cast<size_t>(seq) * table_stride;

    __syncthreads();  // the previous run is done with kv_s and sc_s
    StageChunk<HD>(kv_s, pool, table, kv, kv.HeadOffset(layer, 0, h), first, n);
    __syncthreads();
    for (int r = run_rs; r < re; ++r) {
      const int len = row_len(r);
      if (len <= first) continue;
      const int nr = min(kChunk, len - first);
      const float4 q = *reinterpret_cast<const float4*>(qkv + static_cast<size_t>(r) * 3 * C + h * HD + 4 * g);
#pragma unroll
      for (int i = 0; i < Gm::TPG; ++i) {
        const int t = s + i * Gm::S;
        float4 k = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (t < nr) k = *reinterpret_cast<const float4*>(kv_s + t * HD + 4 * g);
        const float score = Mul(scale, GroupDot<HD>(q, k));
        if (t < nr && g == 0) sc_s[(r - run_rs) * kChunk + t] = score;
      }
    }
    __syncthreads();  // scores written; K no longer needed
    StageChunk<HD>(kv_s, pool, table, kv, kv.HeadOffset(layer, 1, h), first, n);
    __syncthreads();
    for (int r = run_rs; r < re; ++r) {
      const int len = row_len(r);
      if (len <= first) continue;
      const int nr = min(kChunk, len - first);
      const float* sc = sc_s + (r - run_rs) * kChunk;  // (nr)
      float mloc = -INFINITY;
#pragma unroll
      for (int i = 0; i < Gm::TPG; ++i) {
        const int t = s + i * Gm::S;
        if (t < nr) mloc = Max(mloc, sc[t]);
      }
      const float m = BlockMax(mloc, red_m);
      float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      float l = 0.0f;
#pragma unroll
      for (int i = 0; i < Gm::TPG; ++i) {
        const int t = s + i * Gm::S;
        if (t < nr) {
          const float p = Exp(Sub(sc[t], m));
          const float4 v = *reinterpret_cast<const float4*>(kv_s + t * HD + 4 * g);
          o.x = Fma(p, v.x, o.x);
          o.y = Fma(p, v.y, o.y);
          o.z = Fma(p, v.z, o.z);
          o.w = Fma(p, v.w, o.w);
          l = Add(l, p);
        }
      }
      float o_d = 0.0f, l_c = 0.0f;
      CombineGroups<HD>(o, l, red_o, red_l, &o_d, &l_c);
      const size_t pair = static_cast<size_t>(r) * H + h;
      if (tid < HD) {
        partial_o[(pair * max_chunks + c) * HD + tid] = o_d;
        if (tid == 0) {
          partial_ml[(pair * max_chunks + c) * 2] = m;
          partial_ml[(pair * max_chunks + c) * 2 + 1] = l_c;
        }
      }
      __syncthreads();  // red_m / red_o / red_l are reused by the next row
    }
  }
}

// ---- append ----------------------------------------------------------------
// CTA per row: its 2C floats of k | v as float4s, each to its (kv, head)
// rows of the block at its slot.
__global__ void __launch_bounds__(kThreads) AppendKvKernel(
    const float* __restrict__ qkv,  // (rows, 3C)
    const int32_t* __restrict__ row_table, const int32_t* __restrict__ pos,
    const int32_t* __restrict__ tables, int table_count, int table_stride, KvShape kv, int layer,
    float* __restrict__ pool) {
  const int row = blockIdx.x;
  const int p = pos[row];
  const int seq = row_table ? row_table[row] : row;
  const int bs = kv.block_size, hd = kv.head_dim, C = kv.n_head * hd;
  if (p < 0 || static_cast<int64_t>(p) >= static_cast<int64_t>(table_stride) * bs) return;
  if (seq < 0 || seq >= table_count) return;
  const int blk = tables[static_cast<size_t>(seq) * table_stride + p / bs];
  if (blk < 0 || blk >= kv.num_blocks) return;
  float* base = pool + static_cast<int64_t>(blk) * kv.FloatsPerBlock() + static_cast<int64_t>(p % bs) * hd;
  const float* src = qkv + static_cast<size_t>(row) * 3 * C + C;  // (2C): k then v
  for (int e = threadIdx.x * 4; e < 2 * C; e += kThreads * 4) {
    const int which = e / C, rem = e % C, h = rem / hd, d = rem % hd;
    *reinterpret_cast<float4*>(base + kv.HeadOffset(layer, which, h) + d) =
        *reinterpret_cast<const float4*>(src + e);
  }
}

// ---- launchers' checks -------------------------------------------------------
std::string Str(long long v) { return std::to_string(v); }

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

Status CheckCommon(const char* who, const float* qkv, int rows, const BlockTables& tables, const KvShape& kv,
                   int layer, const float* pool) {
  const std::string w = who;
  if (Status s = kernels::CheckKvShape(kv); !s.ok()) return Status::Error(w + ": " + s.message());
  if (layer < 0 || layer >= kv.n_layer) {
    return Status::Error(w + ": layer = " + Str(layer) + " outside [0, n_layer=" + Str(kv.n_layer) + ")");
  }
  if (rows < 1 || rows > 65535) return Status::Error(w + ": rows = " + Str(rows) + ", want 1..65535");
  if (qkv == nullptr || pool == nullptr || tables.ids == nullptr) {
    return Status::Error(w + ": null " + (qkv == nullptr ? "qkv" : pool == nullptr ? "pool" : "tables.ids"));
  }
  if (!Aligned16(qkv)) return Status::Error(w + ": qkv is not 16-byte aligned");
  if (!Aligned16(pool)) return Status::Error(w + ": pool is not 16-byte aligned");
  if (tables.count < 1 || tables.stride < 1) {
    return Status::Error(w + ": tables.count = " + Str(tables.count) + ", tables.stride = " + Str(tables.stride) +
                         ", want both >= 1");
  }
  if (static_cast<int64_t>(kv.n_head) * 3 * kv.head_dim * rows > (int64_t{1} << 40)) {
    return Status::Error(w + ": rows x 3C = " + Str(static_cast<long long>(rows) * 3 * kv.n_head * kv.head_dim) +
                         " floats is too large");
  }
  return Status::Ok();
}

Status CheckWorkspace(const char* who, const AttentionWorkspace& ws, int rows, const KvShape& kv, bool tickets,
                      const float* att) {
  const std::string w = who;
  if (att == nullptr) return Status::Error(w + ": null att");
  if (!Aligned16(att)) return Status::Error(w + ": att is not 16-byte aligned");
  if (ws.partial_o == nullptr || ws.partial_ml == nullptr || (tickets && ws.tickets == nullptr)) {
    return Status::Error(w + ": the workspace has a null part (partial_o, partial_ml" +
                         std::string(tickets ? ", tickets)" : ")"));
  }
  if (ws.max_chunks < 1) return Status::Error(w + ": ws.max_chunks = " + Str(ws.max_chunks) + ", want >= 1");
  if (rows > ws.max_rows) {
    return Status::Error(w + ": rows = " + Str(rows) + " exceeds the workspace's max_rows = " + Str(ws.max_rows));
  }
  if (ws.n_head != kv.n_head || ws.head_dim != kv.head_dim) {
    return Status::Error(w + ": the workspace was planned for n_head " + Str(ws.n_head) + ", head_dim " +
                         Str(ws.head_dim) + " but the pool has " + Str(kv.n_head) + ", " + Str(kv.head_dim));
  }
  return Status::Ok();
}

}  // namespace

Status AppendKv(const float* qkv, int rows, const int32_t* row_table, const int32_t* pos, const BlockTables& tables,
                const KvShape& kv, int layer, float* pool, void* stream) {
  if (Status s = CheckCommon("AppendKv", qkv, rows, tables, kv, layer, pool); !s.ok()) return s;
  if (pos == nullptr) return Status::Error("AppendKv: null pos");
  Launch<AppendKvKernel>(rows, kThreads, 0, AsStream(stream), qkv, row_table, pos, tables.ids, tables.count,
                        tables.stride, kv, layer, pool);
  TW_LAUNCH_CHECK("AppendKv: AppendKvKernel launch");
  return Status::Ok();
}

Status DecodeAttention(const float* qkv, int rows, const int32_t* lens, const BlockTables& tables, const KvShape& kv,
                       int layer, const float* pool, const AttentionWorkspace& ws, float* att, void* stream) {
  if (Status s = CheckCommon("DecodeAttention", qkv, rows, tables, kv, layer, pool); !s.ok()) return s;
  if (Status s = CheckWorkspace("DecodeAttention", ws, rows, kv, /*tickets=*/true, att); !s.ok()) return s;
  if (lens == nullptr) return Status::Error("DecodeAttention: null lens");
  if (tables.count < rows) {
    return Status::Error("DecodeAttention: tables.count = " + Str(tables.count) + " < rows = " + Str(rows) +
                         " (row b reads table b)");
  }
  const dim3 grid(ws.max_chunks, kv.n_head, rows);
  const float scale = kernels::AttnScale(kv.head_dim);
  cudaStream_t st = AsStream(stream);
  if (kv.head_dim == 64) {
    Launch<DecodeChunkKernel<64, true>>(grid, kThreads, 0, st, qkv, lens, tables.ids, tables.stride, kv, layer, scale,
                                                           pool, ws.partial_o, ws.partial_ml, ws.tickets,
                                                           ws.max_chunks, att);
  } else {
    Launch<DecodeChunkKernel<16, true>>(grid, kThreads, 0, st, qkv, lens, tables.ids, tables.stride, kv, layer, scale,
                                                           pool, ws.partial_o, ws.partial_ml, ws.tickets,
                                                           ws.max_chunks, att);
  }
  TW_LAUNCH_CHECK("DecodeAttention: DecodeChunkKernel launch");
  return Status::Ok();
}

Status PrefillAttention(const float* qkv, int rows, const int32_t* row_table, const int32_t* pos,
                        const BlockTables& tables, const KvShape& kv, int layer, const float* pool,
                        const AttentionWorkspace& ws, float* att, void* stream) {
  if (Status s = CheckCommon("PrefillAttention", qkv, rows, tables, kv, layer, pool); !s.ok()) return s;
  if (Status s = CheckWorkspace("PrefillAttention", ws, rows, kv, /*tickets=*/false, att); !s.ok()) return s;
  if (pos == nullptr) return Status::Error("PrefillAttention: null pos");
  const dim3 grid(ws.max_chunks, kv.n_head, (rows + kTile - 1) / kTile);
  const int pairs_per_cta = kThreads / kv.head_dim;
  const unsigned merge_grid = static_cast<unsigned>((static_cast<int64_t>(rows) * kv.n_head + pairs_per_cta - 1) /
                                                    pairs_per_cta);
  const float scale = kernels::AttnScale(kv.head_dim);
  const int64_t table_tokens = static_cast<int64_t>(tables.stride) * kv.block_size;
  cudaStream_t st = AsStream(stream);
  if (kv.head_dim == 64) {
    Launch<PrefillChunkKernel<64>>(grid, kThreads, 0, st, qkv, rows, row_table, pos, tables.ids, tables.count,
                                                      tables.stride, kv, layer, scale, pool, ws.partial_o,
                                                      ws.partial_ml, ws.max_chunks);
  } else {
    Launch<PrefillChunkKernel<16>>(grid, kThreads, 0, st, qkv, rows, row_table, pos, tables.ids, tables.count,
                                                      tables.stride, kv, layer, scale, pool, ws.partial_o,
                                                      ws.partial_ml, ws.max_chunks);
  }
  TW_LAUNCH_CHECK("PrefillAttention: PrefillChunkKernel launch");
  if (kv.head_dim == 64) {
    Launch<MergeKernel<64>>(merge_grid, kThreads, 0, st, rows, pos, /*pos_plus_one=*/true, kv.n_head, ws.max_chunks,
                                                     table_tokens, ws.partial_o, ws.partial_ml, att);
  } else {
    Launch<MergeKernel<16>>(merge_grid, kThreads, 0, st, rows, pos, /*pos_plus_one=*/true, kv.n_head, ws.max_chunks,
                                                     table_tokens, ws.partial_o, ws.partial_ml, att);
  }
  TW_LAUNCH_CHECK("PrefillAttention: MergeKernel launch");
  return Status::Ok();
}

}  // namespace tw::kernels
