// Paged attention, development versions (llm.c's dev/cuda way).
//
//   make CUDA=1 build/cuda/dev/attention
//   build/cuda/dev/attention [1|2|3|4] [--no-timing]     (no version: all)
//
// Decode attention over the paged KV cache: B rows, row b attends its
// lens[b] keys, read in place through its block table. Every version is
// validated against a CPU reference (double) over a list of shapes and
// lengths (1, 15, 16, 17, 127, 128, 129, 256, 1000, 1024; block sizes 1, 16,
// 32; head_dim 64 and 16; a batch of 40 random lengths), on pools whose
// unused slots and blocks are NaN and with shuffled block ids, outputs
// poisoned first; then timed for GPT-2 small (12 layers, 12 heads,
// head_dim 64, 16-token blocks) at B = 1, 8, 32 and contexts 200 and 1024,
// one timed run = the 12 layers' launches, the L2 flushed before each.
// The shipped PrefillAttention and AppendKv are validated and timed too.
// --no-timing: the validations only (the GPT-2 shapes' included).
//
// TW_GPU_TEST_SHAPES=ci (validation only, for the CPU emulator): head_dim
// 64 at 3 heads instead of 12 and contexts up to 384 keys (3 chunks)
// instead of 1024 (8): lengths 1, 15, 16, 17, 127, 128, 129, 256, 300, 384
// at block sizes 1, 16 and 32 (multiples of the chunk and of the blocks,
// chunk + 1, empty chunks behind short rows), 1, 255, 256, 257, 384 at
// block size 256, 12 random lengths; head_dim 16 (4 heads) at the same
// lengths; the tiny golden model, AppendKv and the multi-prompt prefill as
// in the full run (at 3 heads where it has 12); the GPT-2 part at 3 heads,
// B = 1 and 3, contexts 200 and 384, prefill of 64 rows at positions 0..
// and 320.. (layers 0, 5 and 11 of 12, as in the full run).
//
// Floors (GPT-2 small, per decode step = 12 layers):
//   bytes: the K and V of every context key, 12 layers x 2 x 768 floats =
//     73,728 B per key per row (6,144 B per layer). At 4.3 TB/s:
//       ctx  200: B=1 14.7 MB 3.4 us | B=8 118 MB 27 us  | B=32 472 MB 110 us
//       ctx 1024: B=1 75.5 MB 18 us  | B=8 604 MB 140 us | B=32 2.42 GB 562 us
//     (q and the output are 2 x 768 floats per row and layer: negligible.)
//   flops: 4 x 768 x ctx x B x 12 (q.k and p.v), 1.2 GFLOP at B=32 ctx 1024
//     = 18 us at 67 TFLOP/s: memory-bound by ~30x at every shape.
//   At B=1 one layer's K/V (1.2 MB at ctx 200) is a few microseconds of
//   bandwidth, less than a launch: small shapes are latency-bound, and
//   what counts there is the number of dependent memory round trips and
//   the CTAs in flight (B x 12 heads x chunks).
//
// Versions (none has run on a GPU yet: every figure below is an
// expectation, not a measurement):
//   v1  one CTA of 128 threads per (row, head) over the whole context: scores
//       in shared memory, softmax, then thread d sums p_j v_j[d] (only
//       head_dim of 128 threads in the value pass). B x 12 CTAs: 12 at B=1
//       on 132 SMs, and each walks up to 1024 keys serially - expected far
//       below bandwidth except at large B. Plain expf; its own reduction
//       order (not bitwise equal to the others).
//   v2  fixed 128-key chunks (kernels::kAttnChunkTokens), grid (8, 12, B) of
//       128 threads: each thread issues its 16 keys' and values' float4
//       loads at once (all in flight), group-of-16-lane dot products with
//       xor trees, the chunk's (max, sum, output) to a workspace; then a
//       merge kernel in chunk order. 8x the CTAs of v1 at ctx 1024, one
//       round trip for K and V together. Should approach bandwidth at B=32
//       ctx 1024 (3,072 CTAs, 3 resident per SM at 168 registers).
//   v3  v2 with the merge done by the last chunk CTA of each (row, head),
//       found with an integer ticket (no float atomics): one launch per
//       layer instead of two (~2-3 us each without graphs, ~1.3 us with).
//       This is the shipped DecodeAttention. Bits equal to v2's.
//   v4  the shipped PrefillAttention on the decode rows (pos = len - 1):
//       K then V staged in shared memory with cp.async (two round trips
//       per chunk), then the merge kernel. Expected slower than v3 for
//       decode; shown to price the prefill path. Bits equal to v3's (the
//       same per-row arithmetic).
//
// The shipped kernels are compiled into this program (#include of
// kernels/attention.cu below) so that v2 can call the chunk and merge
// kernels directly; the archive's copy is then never linked.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.cu"
#include "kernels/dev/common.h"
#include "kernels/dev/cpu_reference.h"

namespace tw::dev {
namespace {

using kernels::KvShape;
using kernels::AttentionWorkspace;
using kernels::BlockTables;

constexpr int kThreads = kernels::kAttnThreads;

// ---- data ---------------------------------------------------------------
// K/V value of (sequence, token, layer, K/V, head, dim): a hash in [-1, 1),
// never 0, the same on the host (reference) and the device (fill).
__host__ __device__ inline float KvValue(uint64_t seed, int seq, int t, int layer, int which, int h, int d) {
  uint64_t x = ((((static_cast<uint64_t>(seq) * 4096 + t) * 64 + layer) * 2 + which) * 256 + h) * 1024 + d;
  x = x * 0x9E3779B97F4A7C15ull + seed;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  const float u = static_cast<float>(x >> 40) * (1.0f / 16777216.0f);
  const float v = 2.0f * u - 1.0f;
  return v == 0.0f ? 1e-3f : v;
}

// Writes KvValue into tokens [0, fill_len[s]) of every table s, all layers.
// Grid (max fill length, tables); everything else in the pool is left as is.
__global__ void FillKvKernel(float* pool, const int32_t* tables, int stride, const int32_t* fill_len, KvShape kv,
                             uint64_t seed) {
  const int t = blockIdx.x, s = blockIdx.y;
  if (t >= fill_len[s]) return;
  const int hd = kv.head_dim, C = kv.n_head * hd;
  const int blk = tables[static_cast<size_t>(s) * stride + t / kv.block_size], slot = t % kv.block_size;
  for (int e = threadIdx.x; e < kv.n_layer * 2 * C; e += blockDim.x) {
    const int layer = e / (2 * C), which = (e / C) % 2, h = (e % C) / hd, d = e % hd;
    pool[kv.Offset(blk, layer, which, h, slot, d)] = KvValue(seed, s, t, layer, which, h, d);
  }
}

// A pool with tables of shuffled block ids, every sequence's first
// fill[s] tokens hashed in, everything else NaN.
struct Pool {
  KvShape kv;
  int n_seq = 0, stride = 0;
  uint64_t seed = 0;
  std::vector<int32_t> tables;  // (n_seq, stride); entries past a sequence's blocks are -1
  float* d = nullptr;           // (num_blocks, FloatsPerBlock)
  int32_t* tables_d = nullptr;
};

Pool MakePool(int n_layer, int n_head, int hd, int bs, const std::vector<int>& capacity, const std::vector<int>& fill,
              uint64_t seed) {
  Pool p;
  p.n_seq = static_cast<int>(capacity.size());
  p.seed = seed;
  int blocks = 0, max_blocks = 1;
  for (int c : capacity) {
    blocks += (c + bs - 1) / bs;
    max_blocks = std::max(max_blocks, (c + bs - 1) / bs);
  }
  p.kv = KvShape{n_layer, n_head, hd, bs, blocks + 3};  // 3 blocks nobody owns
  p.stride = max_blocks + 1;
  std::vector<int32_t> ids(p.kv.num_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::mt19937 gen(static_cast<uint32_t>(seed));
  std::shuffle(ids.begin(), ids.end(), gen);
  p.tables.assign(static_cast<size_t>(p.n_seq) * p.stride, -1);
  int next = 0;
  for (int s = 0; s < p.n_seq; ++s) {
    for (int j = 0; j < (capacity[s] + bs - 1) / bs; ++j) p.tables[static_cast<size_t>(s) * p.stride + j] = ids[next++];
  }
  const size_t bytes = static_cast<size_t>(p.kv.TotalFloats()) * sizeof(float);
  p.d = DeviceAlloc<float>(static_cast<size_t>(p.kv.TotalFloats()));
  Poison(p.d, bytes);
  p.tables_d = ToDevice(p.tables);
  int32_t* fill_d = ToDevice(std::vector<int32_t>(fill.begin(), fill.end()));
  const int max_fill = std::max(1, *std::max_element(fill.begin(), fill.end()));
  kernels::Launch<FillKvKernel>(dim3(max_fill, p.n_seq), 256, 0, nullptr, p.d, p.tables_d, p.stride, fill_d, p.kv,
                                seed);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaFree(fill_d));
  return p;
}

void FreePool(Pool* p) {
  CUDA_CHECK(cudaFree(p->d));
  CUDA_CHECK(cudaFree(p->tables_d));
  p->d = nullptr;
  p->tables_d = nullptr;
}

// A planned workspace: partials NaN, tickets zero.
struct Work {
  kernels::AttentionPlan plan;
  void* mem = nullptr;
  AttentionWorkspace ws;
};
Work MakeWork(int max_rows, int max_context, int n_head, int hd) {
  Work w;
  const Status s = kernels::MakeAttentionPlan(max_rows, max_context, n_head, hd, &w.plan);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    std::exit(1);
  }
  CUDA_CHECK(cudaMalloc(&w.mem, w.plan.workspace_bytes));
  Poison(w.mem, w.plan.workspace_bytes);
  CUDA_CHECK(cudaMemset(static_cast<char*>(w.mem) + w.plan.tickets_offset, 0, w.plan.tickets * 4));
  w.ws = kernels::CarveAttentionWorkspace(w.mem, w.plan);
  return w;
}

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.message().c_str());
    std::exit(1);
  }
}

// softmax(q . K^T / sqrt(hd)) V in double for row `seq` of `pool` at layer,
// head, over keys [0, len); key t >= appended_from comes from `fresh`
// (row t - appended_from of a qkv (rows, 3C)) instead of the hash.
void ReferenceRow(const Pool& p, int seq, int layer, int h, int len, const float* q, float* out,
                  int appended_from = 1 << 30, const float* fresh = nullptr) {
  const int hd = p.kv.head_dim, C = p.kv.n_head * hd;
  auto kv_at = [&](int t, int which, int d) -> double {
    if (t >= appended_from) return fresh[static_cast<size_t>(t - appended_from) * 3 * C + C + which * C + h * hd + d];
    return KvValue(p.seed, seq, t, layer, which, h, d);
  };
  AttentionRowRef(
      q, len, hd, [&](int t, int d) { return kv_at(t, 0, d); }, [&](int t, int d) { return kv_at(t, 1, d); }, out);
}

// ---- v1: one CTA per (row, head), the whole context ---------------------
__device__ __forceinline__ float BlockReduceV1(float v, bool is_max, float* red) {
  v = is_max ? kernels::WarpMax(v) : kernels::WarpSum(v);
  __syncthreads();  // red may still be read from the previous reduction
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = red[0];
  for (int w = 1; w < kThreads / 32; ++w) r = is_max ? fmaxf(r, red[w]) : r + red[w];
  return r;
}

template <int HD>
__global__ void __launch_bounds__(kThreads) DecodeV1Kernel(
    const float* __restrict__ qkv,     // (rows, 3C)
    const int32_t* __restrict__ lens,  // (rows)
    const int32_t* __restrict__ tables, int stride, KvShape kv, int layer, float scale,
    const float* __restrict__ pool, float* __restrict__ att) {  // att (rows, C)
  TW_DYNAMIC_SHARED(float, sc);  // (len) scores, then weights
  __shared__ float qs[HD];
  __shared__ float red[kThreads / 32];
  const int h = blockIdx.x, row = blockIdx.y, tid = threadIdx.x;
  const int C = kv.n_head * HD, len = lens[row], bs = kv.block_size;
  const int32_t* table = tables + static_cast<size_t>(row) * stride;
  const int64_t fpb = kv.FloatsPerBlock();
  for (int d = tid; d < HD; d += kThreads) qs[d] = qkv[static_cast<size_t>(row) * 3 * C + h * HD + d];
  __syncthreads();
  float mx = -INFINITY;
  for (int t = tid; t < len; t += kThreads) {
    const float4* k = reinterpret_cast<const float4*>(pool + table[t / bs] * fpb + kv.HeadOffset(layer, 0, h) +
                                                      static_cast<int64_t>(t % bs) * HD);
    float dot = 0.0f;
#pragma unroll 1  // (unrolled, ptxas spilled a few bytes here)
    for (int i = 0; i < HD / 4; ++i) {
      const float4 kk = k[i];
      dot += qs[4 * i] * kk.x + qs[4 * i + 1] * kk.y + qs[4 * i + 2] * kk.z + qs[4 * i + 3] * kk.w;
    }
    sc[t] = dot * scale;
    mx = fmaxf(mx, sc[t]);
  }
  mx = BlockReduceV1(mx, true, red);
  float sum = 0.0f;
  for (int t = tid; t < len; t += kThreads) {
    sc[t] = expf(sc[t] - mx);
    sum += sc[t];
  }
  sum = BlockReduceV1(sum, false, red);  // its barriers also publish sc
  for (int d = tid; d < HD; d += kThreads) {
    float acc = 0.0f;
    for (int t = 0; t < len; ++t) {
      acc += sc[t] * pool[table[t / bs] * fpb + kv.HeadOffset(layer, 1, h) + static_cast<int64_t>(t % bs) * HD + d];
    }
    att[static_cast<size_t>(row) * C + h * HD + d] = acc / sum;
  }
}

// ---- the versions ----------------------------------------------------------
// Decode rows 0..rows-1 = tables 0..rows-1 of the pool at lens_d, layer.
struct DecodeArgs {
  const Pool* pool;
  int rows;
  const float* qkv;      // (rows, 3C) device
  const int32_t* lens;   // (rows) device
  const int32_t* pos;    // (rows) device: lens - 1 (v4)
  int max_context;
  const Work* work;
  float* att;            // (rows, C) device
};

template <int HD>
void RunDecodeHd(int version, const DecodeArgs& a, int layer) {
  const KvShape& kv = a.pool->kv;
  const BlockTables bt{a.pool->tables_d, a.pool->n_seq, a.pool->stride};
  const float scale = kernels::AttnScale(HD);
  const AttentionWorkspace& ws = a.work->ws;
  switch (version) {
    case 1:
      kernels::Launch<DecodeV1Kernel<HD>>(dim3(kv.n_head, a.rows), kThreads, a.max_context * sizeof(float), nullptr,
          a.qkv, a.lens, bt.ids, bt.stride, kv, layer, scale, a.pool->d, a.att);
      break;
    case 2: {
      kernels::Launch<kernels::DecodeChunkKernel<HD, false>>(dim3(ws.max_chunks, kv.n_head, a.rows), kThreads, 0,
          nullptr, a.qkv, a.lens, bt.ids, bt.stride, kv, layer, scale, a.pool->d, ws.partial_o, ws.partial_ml, ws.tickets,
          ws.max_chunks, a.att);
      const int per = kThreads / HD;
      kernels::Launch<kernels::MergeKernel<HD>>((a.rows * kv.n_head + per - 1) / per, kThreads, 0, nullptr,
          a.rows, a.lens, false, kv.n_head, ws.max_chunks, static_cast<int64_t>(bt.stride) * kv.block_size,
          ws.partial_o, ws.partial_ml, a.att);
      break;
    }
    case 3:
      Check(kernels::DecodeAttention(a.qkv, a.rows, a.lens, bt, kv, layer, a.pool->d, ws, a.att, nullptr), "v3");
      break;
    case 4:
      Check(kernels::PrefillAttention(a.qkv, a.rows, nullptr, a.pos, bt, kv, layer, a.pool->d, ws, a.att, nullptr),
            "v4");
      break;
  }
  CUDA_CHECK(cudaGetLastError());
}

void RunDecode(int version, const DecodeArgs& a, int layer) {
  if (a.pool->kv.head_dim == 64) RunDecodeHd<64>(version, a, layer);
  else RunDecodeHd<16>(version, a, layer);
}

const char* kVersionName[] = {"", "v1 whole context", "v2 chunks + merge", "v3 chunks, last CTA merges",
                              "v4 prefill kernel"};

// ---- validation ---------------------------------------------------------------
struct ValidationCase {
  std::string name;
  int n_head, hd, bs, max_context;
  std::vector<int> lens;
};

// Every version on one case at layer 1 (pools have 2 layers): against the
// reference, and v2 / v4 bit for bit against v3 (the shipped one).
bool ValidateCase(const ValidationCase& c, const std::vector<int>& versions, uint64_t seed) {
  const int rows = static_cast<int>(c.lens.size()), C = c.n_head * c.hd, layer = 1;
  std::printf("%s: %d rows, head_dim %d, %d heads, block_size %d\n", c.name.c_str(), rows, c.hd, c.n_head, c.bs);
  Pool pool = MakePool(2, c.n_head, c.hd, c.bs, c.lens, c.lens, seed);
  const std::vector<float> qkv = RandomFloats(static_cast<size_t>(rows) * 3 * C, seed + 1);
  std::vector<int32_t> lens(c.lens.begin(), c.lens.end()), pos(rows);
  for (int r = 0; r < rows; ++r) pos[r] = lens[r] - 1;
  float* qkv_d = ToDevice(qkv);
  int32_t* lens_d = ToDevice(lens);
  int32_t* pos_d = ToDevice(pos);
  float* att = DeviceAlloc<float>(static_cast<size_t>(rows) * C);
  Work work = MakeWork(rows, c.max_context, c.n_head, c.hd);
  std::vector<float> ref(static_cast<size_t>(rows) * C);
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < c.n_head; ++h)
      ReferenceRow(pool, r, layer, h, c.lens[r], &qkv[static_cast<size_t>(r) * 3 * C + h * c.hd],
                   &ref[static_cast<size_t>(r) * C + h * c.hd]);
  const DecodeArgs args{&pool, rows, qkv_d, lens_d, pos_d, c.max_context, &work, att};
  bool ok = true;
  std::vector<float> v3_bits;
  for (int v : {3, 1, 2, 4}) {  // v3 first: the others' bits are compared to it
    if (v != 3 && std::find(versions.begin(), versions.end(), v) == versions.end()) continue;
    Poison(att, static_cast<size_t>(rows) * C * sizeof(float));
    RunDecode(v, args, layer);
    ok &= Validate(kVersionName[v], att, ref.data(), ref.size(), 2e-6f, 1e-5f);
    std::vector<float> got(ref.size());
    CUDA_CHECK(cudaMemcpy(got.data(), att, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    if (v == 3) {
      v3_bits = got;
    } else if (v != 1) {
      const bool same = std::memcmp(got.data(), v3_bits.data(), got.size() * sizeof(float)) == 0;
      std::printf("  %-28s bits %s v3's\n", kVersionName[v], same ? "equal" : "DIFFER FROM");
      ok &= same;
    }
  }
  CUDA_CHECK(cudaFree(qkv_d));
  CUDA_CHECK(cudaFree(lens_d));
  CUDA_CHECK(cudaFree(pos_d));
  CUDA_CHECK(cudaFree(att));
  CUDA_CHECK(cudaFree(work.mem));
  FreePool(&pool);
  return ok;
}

// AppendKv into a NaN pool: every appended float is where it belongs, and
// nothing else was written (the pool's non-NaN count is exactly rows x 2C).
bool ValidateAppend(int hd, int n_head, int bs, uint64_t seed) {
  const int C = n_head * hd, layer = 1;
  const std::vector<int> capacity = {40, 3, 300, 17};
  std::vector<int> fill(capacity.size(), 0);
  Pool pool = MakePool(2, n_head, hd, bs, capacity, fill, seed);
  // Rows: sequence 2 positions 100..109, then one row each of 0, 1, 3.
  std::vector<int32_t> row_table, pos;
  for (int i = 0; i < 10; ++i) {
    row_table.push_back(2);
    pos.push_back(100 + i);
  }
  row_table.insert(row_table.end(), {0, 1, 3});
  pos.insert(pos.end(), {39, 0, 16});
  const int rows = static_cast<int>(pos.size());
  const std::vector<float> qkv = RandomFloats(static_cast<size_t>(rows) * 3 * C, seed + 2);
  float* qkv_d = ToDevice(qkv);
  int32_t* rt_d = ToDevice(row_table);
  int32_t* pos_d = ToDevice(pos);
  const BlockTables bt{pool.tables_d, pool.n_seq, pool.stride};
  Check(kernels::AppendKv(qkv_d, rows, rt_d, pos_d, bt, pool.kv, layer, pool.d, nullptr), "AppendKv");
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> host(static_cast<size_t>(pool.kv.TotalFloats()));
  CUDA_CHECK(cudaMemcpy(host.data(), pool.d, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  size_t bad = 0, written = 0;
  for (float x : host) written += !std::isnan(x);
  for (int r = 0; r < rows; ++r) {
    const int blk = pool.tables[static_cast<size_t>(row_table[r]) * pool.stride + pos[r] / bs];
    for (int which = 0; which < 2; ++which)
      for (int h = 0; h < n_head; ++h)
        for (int d = 0; d < hd; ++d) {
          const float want = qkv[static_cast<size_t>(r) * 3 * C + C + which * C + h * hd + d];
          const float got = host[static_cast<size_t>(pool.kv.Offset(blk, layer, which, h, pos[r] % bs, d))];
          bad += std::memcmp(&want, &got, sizeof(float)) != 0;
        }
  }
  const bool ok = bad == 0 && written == static_cast<size_t>(rows) * 2 * C;
  std::printf("  %-28s %s  head_dim %d block_size %d: %zu wrong, %zu written of %zu\n", "AppendKv", ok ? "ok  " : "FAIL",
              hd, bs, bad, written, static_cast<size_t>(rows) * 2 * C);
  CUDA_CHECK(cudaFree(qkv_d));
  CUDA_CHECK(cudaFree(rt_d));
  CUDA_CHECK(cudaFree(pos_d));
  FreePool(&pool);
  return ok;
}

// Several prompts in one prefill pass (cached prefixes hashed in, this
// pass's rows appended by AppendKv): against the reference, and every row
// bit for bit against a one-row DecodeAttention at the same position.
bool ValidatePrefill(int hd, int n_head, int bs, int max_context, uint64_t seed) {
  const int C = n_head * hd, layer = 1;
  // (cached, new rows) per prompt
  std::vector<std::pair<int, int>> prompts = {{40, 30}, {0, 5}, {120, 20}, {0, 257}, {250, 7}};
  if (max_context <= 128) prompts = {{0, 17}, {100, 28}, {0, 128}};
  std::vector<int> capacity, cached;
  std::vector<int32_t> row_table, pos;
  for (size_t p = 0; p < prompts.size(); ++p) {
    capacity.push_back(prompts[p].first + prompts[p].second);
    cached.push_back(prompts[p].first);
    for (int i = 0; i < prompts[p].second; ++i) {
      row_table.push_back(static_cast<int32_t>(p));
      pos.push_back(prompts[p].first + i);
    }
  }
  const int rows = static_cast<int>(pos.size());
  Pool pool = MakePool(2, n_head, hd, bs, capacity, cached, seed);
  const std::vector<float> qkv = RandomFloats(static_cast<size_t>(rows) * 3 * C, seed + 3);
  float* qkv_d = ToDevice(qkv);
  int32_t* rt_d = ToDevice(row_table);
  int32_t* pos_d = ToDevice(pos);
  std::vector<int32_t> lens(rows);
  for (int r = 0; r < rows; ++r) lens[r] = pos[r] + 1;
  int32_t* lens_d = ToDevice(lens);
  float* att = DeviceAlloc<float>(static_cast<size_t>(rows) * C);
  float* att1 = DeviceAlloc<float>(static_cast<size_t>(rows) * C);
  Poison(att, static_cast<size_t>(rows) * C * sizeof(float));
  Poison(att1, static_cast<size_t>(rows) * C * sizeof(float));
  Work work = MakeWork(rows, max_context, n_head, hd);
  const BlockTables bt{pool.tables_d, pool.n_seq, pool.stride};
  Check(kernels::AppendKv(qkv_d, rows, rt_d, pos_d, bt, pool.kv, layer, pool.d, nullptr), "AppendKv");
  Check(kernels::PrefillAttention(qkv_d, rows, rt_d, pos_d, bt, pool.kv, layer, pool.d, work.ws, att, nullptr),
        "PrefillAttention");
  // The same rows one at a time through DecodeAttention (table row_table[r]).
  for (int r = 0; r < rows; ++r) {
    const BlockTables one{pool.tables_d + static_cast<size_t>(row_table[r]) * pool.stride, 1, pool.stride};
    Check(kernels::DecodeAttention(qkv_d + static_cast<size_t>(r) * 3 * C, 1, lens_d + r, one, pool.kv, layer, pool.d,
                                   work.ws, att1 + static_cast<size_t>(r) * C, nullptr),
          "DecodeAttention");
  }
  std::vector<float> ref(static_cast<size_t>(rows) * C);
  int first_row = 0;
  for (size_t p = 0; p < prompts.size(); ++p) {
    for (int i = 0; i < prompts[p].second; ++i) {
      const int r = first_row + i;
      for (int h = 0; h < n_head; ++h)
        ReferenceRow(pool, static_cast<int>(p), layer, h, pos[r] + 1, &qkv[static_cast<size_t>(r) * 3 * C + h * hd],
                     &ref[static_cast<size_t>(r) * C + h * hd], prompts[p].first, &qkv[static_cast<size_t>(first_row) * 3 * C]);
    }
    first_row += prompts[p].second;
  }
  bool ok = Validate("PrefillAttention", att, ref.data(), ref.size(), 2e-6f, 1e-5f);
  std::vector<float> a(ref.size()), b(ref.size());
  CUDA_CHECK(cudaMemcpy(a.data(), att, a.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(b.data(), att1, b.size() * sizeof(float), cudaMemcpyDeviceToHost));
  const bool same = std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  std::printf("  %-28s bits %s one-row decode's (%d rows, head_dim %d, block_size %d)\n", "PrefillAttention",
              same ? "equal" : "DIFFER FROM", rows, hd, bs);
  ok &= same;
  for (void* ptr : {static_cast<void*>(qkv_d), static_cast<void*>(rt_d), static_cast<void*>(pos_d),
                    static_cast<void*>(lens_d), static_cast<void*>(att), static_cast<void*>(att1), work.mem}) {
    CUDA_CHECK(cudaFree(ptr));
  }
  FreePool(&pool);
  return ok;
}

// ---- timing -----------------------------------------------------------------
struct Row {
  std::string what;
  float ms;
  double gbps;
};
std::vector<Row> g_table;

void Time(const std::string& what, double bytes, double flops, const std::function<void()>& fn) {
  const float ms = Benchmark(20, fn);
  Report(what.c_str(), ms, bytes, flops);
  g_table.push_back({what, ms, bytes / (ms * 1e-3) / 1e9});
}

// The GPT-2 runs of TimeGpt2: 12 layers of head_dim 64 in 16-token blocks,
// `n_head` heads; decode at each batch size and context, prefill of `rows`
// rows of one prompt at positions base.. for each base.
struct Gpt2Shapes {
  const char* name;
  int n_head;
  int max_b, max_ctx;  // the pool: max_b sequences of max_ctx keys (and room for one more)
  std::vector<int> batches, contexts;
  int prefill_rows;
  std::vector<int> prefill_bases;
};
const Gpt2Shapes kGpt2 = {"GPT-2 small", 12, 32, 1024, {1, 8, 32}, {200, 1024}, 256, {0, 768}};
// CI: 3 heads, batches of 1 and 3 (odd: the merge kernel's last block part
// full), contexts of 2 and 3 chunks (the first with an empty third chunk),
// 64 prefill rows (4 row tiles) at the start and reaching the last chunk.
const Gpt2Shapes kCiGpt2 = {"GPT-2 small at 3 heads", 3, 3, 384, {1, 3}, {200, 384}, 64, {0, 320}};

bool TimeGpt2(const Gpt2Shapes& g, const std::vector<int>& versions, bool timing) {
  const int n_layer = 12, n_head = g.n_head, hd = 64, C = n_head * hd, bs = 16, max_b = g.max_b, max_ctx = g.max_ctx;
  const int rows = g.prefill_rows;
  // max_b sequences of max_ctx hashed keys, room for one more token each
  // (the append timing writes position max_ctx).
  Pool pool = MakePool(n_layer, n_head, hd, bs, std::vector<int>(max_b, max_ctx + 1), std::vector<int>(max_b, max_ctx),
                       7);
  const std::vector<float> qkv = RandomFloats(static_cast<size_t>(rows) * 3 * C, 8);
  float* qkv_d = ToDevice(qkv);
  float* att = DeviceAlloc<float>(static_cast<size_t>(rows) * C);
  Work work = MakeWork(rows, max_ctx, n_head, hd);
  bool ok = true;
  std::printf("\n%s decode, 12 layers per timed run:\n", g.name);
  for (int ctx : g.contexts) {
    for (int B : g.batches) {
      std::vector<int32_t> lens(B, ctx), pos(B, ctx - 1);
      int32_t* lens_d = ToDevice(lens);
      int32_t* pos_d = ToDevice(pos);
      const DecodeArgs args{&pool, B, qkv_d, lens_d, pos_d, max_ctx, &work, att};
      // Layers 0 and 11 checked against the reference for every version.
      std::vector<float> ref[2];
      for (int i = 0; i < 2; ++i) {
        ref[i].resize(static_cast<size_t>(B) * C);
        for (int r = 0; r < B; ++r)
          for (int h = 0; h < n_head; ++h)
            ReferenceRow(pool, r, i == 0 ? 0 : 11, h, ctx, &qkv[static_cast<size_t>(r) * 3 * C + h * hd],
                         &ref[i][static_cast<size_t>(r) * C + h * hd]);
      }
      std::printf("B=%d ctx=%d:\n", B, ctx);
      for (int v : versions) {
        for (int i = 0; i < 2; ++i) {
          const int layer = i == 0 ? 0 : 11;
          Poison(att, ref[i].size() * sizeof(float));
          RunDecode(v, args, layer);
          const std::string name = std::string(kVersionName[v]) + " L" + std::to_string(layer);
          ok &= Validate(name.c_str(), att, ref[i].data(), ref[i].size(), 2e-6f, 1e-5f);
        }
        if (!timing) continue;
        const double bytes = static_cast<double>(B) * ctx * n_layer * 2 * C * 4;
        const double flops = 4.0 * C * ctx * B * n_layer;
        char what[96];
        std::snprintf(what, sizeof what, "decode v%d B=%2d ctx=%4d", v, B, ctx);
        Time(what, bytes, flops, [&] {
          for (int layer = 0; layer < n_layer; ++layer) RunDecode(v, args, layer);
        });
      }
      CUDA_CHECK(cudaFree(lens_d));
      CUDA_CHECK(cudaFree(pos_d));
    }
  }
  // Prefill of `rows` rows of sequence 0 at positions base.. (GPT-2 small:
  // 0..255, then 768..1023).
  std::printf("\n%s prefill attention (%d rows of one prompt), 12 layers per timed run:\n", g.name, rows);
  const BlockTables bt{pool.tables_d, pool.n_seq, pool.stride};
  for (int base : g.prefill_bases) {
    std::vector<int32_t> pos(rows), zeros(rows, 0);
    std::iota(pos.begin(), pos.end(), base);
    int32_t* pos_d = ToDevice(pos);
    int32_t* rt_d = ToDevice(zeros);
    std::vector<float> ref(static_cast<size_t>(rows) * C);
    for (int r = 0; r < rows; r += 17) {  // every 17th row (and its heads)
      for (int h = 0; h < n_head; ++h)
        ReferenceRow(pool, 0, 5, h, pos[r] + 1, &qkv[static_cast<size_t>(r) * 3 * C + h * hd],
                     &ref[static_cast<size_t>(r) * C + h * hd]);
    }
    Poison(att, ref.size() * sizeof(float));
    Check(kernels::PrefillAttention(qkv_d, rows, rt_d, pos_d, bt, pool.kv, 5, pool.d, work.ws, att, nullptr),
          "PrefillAttention");
    std::vector<float> got(ref.size());
    CUDA_CHECK(cudaMemcpy(got.data(), att, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    std::vector<float> got_sub, ref_sub;
    for (int r = 0; r < rows; r += 17) {
      got_sub.insert(got_sub.end(), got.begin() + static_cast<size_t>(r) * C, got.begin() + static_cast<size_t>(r + 1) * C);
      ref_sub.insert(ref_sub.end(), ref.begin() + static_cast<size_t>(r) * C, ref.begin() + static_cast<size_t>(r + 1) * C);
    }
    float* got_sub_d = ToDevice(got_sub);
    const std::string name = "prefill L5 pos " + std::to_string(base) + "..";
    ok &= Validate(name.c_str(), got_sub_d, ref_sub.data(), ref_sub.size(), 2e-6f, 1e-5f);
    CUDA_CHECK(cudaFree(got_sub_d));
    if (timing) {
      const double bytes = static_cast<double>(base + rows) * n_layer * 2 * C * 4;  // each key read once at best
      double keys = 0;
      for (int p : pos) keys += p + 1;
      char what[96];
      std::snprintf(what, sizeof what, "prefill %d rows at pos %4d..%4d", rows, base, base + rows - 1);
      Time(what, bytes, 4.0 * C * keys * n_layer, [&] {
        for (int layer = 0; layer < n_layer; ++layer) {
          Check(kernels::PrefillAttention(qkv_d, rows, rt_d, pos_d, bt, pool.kv, layer, pool.d, work.ws, att, nullptr),
                "PrefillAttention");
        }
      });
    }
    CUDA_CHECK(cudaFree(pos_d));
    CUDA_CHECK(cudaFree(rt_d));
  }
  if (timing) {
    // AppendKv of max_b rows (position max_ctx of each sequence), 12 layers.
    std::printf("\nAppendKv, 12 layers per timed run:\n");
    std::vector<int32_t> pos(max_b, max_ctx);
    int32_t* pos_d = ToDevice(pos);
    Time("append B=" + std::to_string(max_b), max_b * 2.0 * C * 4 * 2 * n_layer, 0, [&] {
      for (int layer = 0; layer < n_layer; ++layer) {
        Check(kernels::AppendKv(qkv_d, max_b, nullptr, pos_d, bt, pool.kv, layer, pool.d, nullptr), "AppendKv");
      }
    });
    CUDA_CHECK(cudaFree(pos_d));
  }
  CUDA_CHECK(cudaFree(qkv_d));
  CUDA_CHECK(cudaFree(att));
  CUDA_CHECK(cudaFree(work.mem));
  FreePool(&pool);
  return ok;
}

// The validation cases at head_dim 64 (`heads` heads, contexts up to
// max_ctx; GPT-2's in the full run) and 16, block sizes 1 to 256: lengths at
// and around every block and chunk edge, random lengths, and the tiny golden
// model's.
std::vector<ValidationCase> Cases(bool ci, int heads, int max_ctx) {
  const std::string hd64 = ci ? std::to_string(heads) + " heads of 64" : "GPT-2 heads";
  const std::vector<int> edges = {1, 15, 16, 17, 127, 128, 129, 256, ci ? 300 : 1000, max_ctx};
  std::vector<int> random(ci ? 12 : 40);
  std::mt19937 gen(4);
  for (int& l : random) l = 1 + static_cast<int>(gen() % max_ctx);
  return {
      {hd64 + ", block 16", heads, 64, 16, max_ctx, edges},
      {hd64 + ", block 1", heads, 64, 1, max_ctx, edges},
      {hd64 + ", block 32", heads, 64, 32, max_ctx, edges},
      {hd64 + ", block 256", heads, 64, 256, max_ctx, {1, 255, 256, 257, max_ctx}},
      {hd64 + ", " + std::to_string(random.size()) + " random lengths", heads, 64, 16, max_ctx, random},
      {"head_dim 16, block 16", 4, 16, 16, max_ctx, edges},
      {"tiny golden model (n_ctx 128)", 4, 16, 16, 128, {1, 15, 16, 17, 127, 128}},
  };
}

int Main(int argc, char** argv) {
  const Options opt = ParseOptions(argc, argv, {"1", "2", "3", "4"}, "only this version");
  std::vector<int> versions = {1, 2, 3, 4};
  if (!opt.only.empty()) versions = {std::stoi(opt.only)};
  int dev = 0;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  if (opt.timing) MeasuredCeilings();

  // head_dim 64's heads and the longest context: GPT-2 small's, or at CI
  // shapes 3 heads (with an odd row count, the merge kernel's last block is
  // part full: never so at 12 heads) and 3 chunks.
  const bool ci = CiShapes();
  const int heads = ci ? 3 : 12, max_ctx = ci ? 384 : 1024;
  bool ok = true;
  uint64_t seed = 100;
  for (const ValidationCase& c : Cases(ci, heads, max_ctx)) ok &= ValidateCase(c, versions, seed++);
  std::printf("AppendKv and PrefillAttention:\n");
  for (int bs : {1, 16, 32}) ok &= ValidateAppend(64, heads, bs, seed++);
  ok &= ValidateAppend(16, 4, 16, seed++);
  ok &= ValidatePrefill(64, heads, 16, max_ctx, seed++);
  ok &= ValidatePrefill(64, heads, 1, max_ctx, seed++);
  ok &= ValidatePrefill(16, 4, 16, 128, seed++);
  ok &= TimeGpt2(ci ? kCiGpt2 : kGpt2, versions, opt.timing);

  if (!g_table.empty()) {
    const double copy = MeasuredCeilings().copy_gbps;
    std::printf("\nsummary (v1 whole context, v2 chunks + merge kernel, v3 chunks + last-CTA merge = shipped,\n"
                "v4 prefill kernel; GB/s = the K/V bytes a run must read / time)\n");
    std::printf("%-36s %9s %8s %6s\n", "", "ms", "GB/s", "%copy");
    for (const Row& r : g_table) std::printf("%-36s %9.4f %8.0f %5.0f%%\n", r.what.c_str(), r.ms, r.gbps, 100 * r.gbps / copy);
  }
  std::printf("\n%s\n", ok ? "all validations passed" : "SOME VALIDATIONS FAILED");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace tw::dev

int main(int argc, char** argv) { return tw::dev::Main(argc, argv); }
