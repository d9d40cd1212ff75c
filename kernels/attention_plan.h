// Attention plan: the numbers that the CUDA attention kernels
// (kernels/attention.h) and their callers share, and the kernels' arithmetic
// emulated on the CPU.
//
// What it owns:
//   - KvShape: the paged KV pool's layout (model::KvPool's, byte for byte):
//     num_blocks blocks of (n_layer, 2 {K,V}, n_head, block_size, head_dim)
//     floats, with the 64-bit offset formula (block ids times FloatsPerBlock
//     overflow int32 past ~7,281 GPT-2-small blocks).
//   - The chunking: a row's keys are cut into chunks of kAttnChunkTokens
//     (a constant: never derived from the batch, the context or the device),
//     each chunk reduced by kAttnThreads threads in fixed trees, the chunks
//     merged in chunk order. So a row's bits depend on its own q, keys and
//     values only (not on the batch, the other rows of a prefill pass, or
//     whether it is a decode or a prefill row).
//   - AttentionPlan: chunk counts, grids and the workspace sizes for given
//     (max rows, max context, heads, head_dim).
//   - EmulateAttentionRow: the kernels' float operations in the kernels'
//     order, on the CPU. Every operation is a correctly rounded IEEE add,
//     multiply, divide or fma, and exp is AttnExp below (the same source on
//     both sides), so the emulation gives the GPU's bits, not just its
//     accuracy (tests/gpu/attention_test.cc checks that).
//
// The arithmetic of one (row, head) with len keys, nc = ceil(len / CH)
// chunks (CH = kAttnChunkTokens), chunk c holding keys [c*CH, c*CH + n):
//   G = head_dim / 4 lanes per key (lane g owns dims 4g..4g+3), S =
//   kAttnThreads / G groups of G lanes; group s takes the chunk's keys
//   t = s, s+S, s+2S, ... in that order.
//   score_t: lane g: a_g = fma(q3,k3, fma(q2,k2, fma(q1,k1, fma(q0,k0, 0))))
//            over its 4 dims; then for o = G/2, G/4, .., 1: a_g += a_(g^o);
//            score_t = scale * a_0.
//   m = max_t score_t (exact: order-free).
//   group s: o_s = 0, l_s = 0; per key: p = exp(score_t - m);
//            o_s[d] = fma(p, v_t[d], o_s[d]); l_s = l_s + p.
//   groups: for st = 1, 2, .., S/2: x_s += x_(s^st) (x = o, l); the chunk's
//            partial is (m, l_0, o_0).
//   merge:  M = max_c m_c; w_c = exp(m_c - M); L = l_0 w_0, O = o_0 w_0;
//            for c = 1..nc-1: L = fma(l_c, w_c, L), O = fma(o_c, w_c, O);
//            out = O / L.
// Keys at or beyond len are never read (a stale slot may hold NaN).
//
// Threads: pure functions; any thread. Memory: the emulation allocates a
// few host vectors per call (tests only). Never: includes a CUDA header
// (this builds in the CPU-only build; the attn_math functions are
// __host__ __device__ only when nvcc compiles them).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/host_device.h"
#include "common/status.h"

namespace tw::kernels {

// Keys per chunk. 128: at n_ctx 1024 a row has at most 8 chunks; a chunk
// is 64 KB of K and V for head_dim 64, enough bytes in flight per CTA.
inline constexpr int kAttnChunkTokens = 128;
// Threads that reduce one chunk (4 warps). Part of the arithmetic: the
// group count S = kAttnThreads / (head_dim / 4) fixes the trees above.
inline constexpr int kAttnThreads = 128;
// Prefill: query rows per CTA that share one load of a chunk's K and V.
inline constexpr int kAttnPrefillRowsPerTile = 16;
// Tokens per block the kernels accept (the engine allows 1..256).
inline constexpr int kAttnMaxBlockSize = 256;

inline bool AttnHeadDimSupported(int head_dim) { return head_dim == 16 || head_dim == 64; }
inline int AttnChunkCount(int len) { return (len + kAttnChunkTokens - 1) / kAttnChunkTokens; }
// 1 / sqrt(head_dim), as the CPU forward pass computes it.
inline float AttnScale(int head_dim) { return 1.0f / std::sqrt(static_cast<float>(head_dim)); }

// The paged pool's shape (the same layout as model::KvPool).
struct KvShape {
  int n_layer = 0;
  int n_head = 0;
  int head_dim = 0;    // 16 or 64 (AttnHeadDimSupported)
  int block_size = 0;  // tokens per block, 1..kAttnMaxBlockSize
  int num_blocks = 0;  // blocks in the pool; ids outside [0, num_blocks) are never dereferenced

  TW_HOST_DEVICE int64_t FloatsPerBlock() const {
    return static_cast<int64_t>(n_layer) * 2 * n_head * block_size * head_dim;
  }
  // Floats from a block's start to the K (kv = 0) or V (kv = 1) rows of
  // (layer, head): block_size x head_dim contiguous floats.
  TW_HOST_DEVICE int64_t HeadOffset(int layer, int kv, int head) const {
    return ((static_cast<int64_t>(layer) * 2 + kv) * n_head + head) * block_size * head_dim;
  }
  // Float offset of (block, layer, kv, head, slot, dim) in the pool.
  TW_HOST_DEVICE int64_t Offset(int64_t block, int layer, int kv, int head, int slot, int d) const {
    return block * FloatsPerBlock() + HeadOffset(layer, kv, head) + static_cast<int64_t>(slot) * head_dim + d;
  }
  int64_t TotalFloats() const { return static_cast<int64_t>(num_blocks) * FloatsPerBlock(); }
};

// Checks a pool shape against what the kernels support; the message names
// the field and its value. (Inline: the kernels' launchers call it too.)
inline Status CheckKvShape(const KvShape& kv) {
  auto bad = [&](const char* field, int value, const char* want) {
    return Status::Error(std::string("KvShape: ") + field + " = " + std::to_string(value) + ", want " + want);
  };
  if (kv.n_layer < 1) return bad("n_layer", kv.n_layer, ">= 1");
  if (kv.n_head < 1) return bad("n_head", kv.n_head, ">= 1");
  if (!AttnHeadDimSupported(kv.head_dim)) return bad("head_dim", kv.head_dim, "16 or 64 (the kernels' instances)");
  if (kv.block_size < 1 || kv.block_size > kAttnMaxBlockSize) return bad("block_size", kv.block_size, "1..256");
  if (kv.num_blocks < 1) return bad("num_blocks", kv.num_blocks, ">= 1");
  return Status::Ok();
}

// Sizes for up to max_rows rows (decode: one per sequence; prefill: every
// prompt row of a pass) of up to max_context keys.
struct AttentionPlan {
  int max_rows = 0;
  int max_context = 0;
  int n_head = 0;
  int head_dim = 0;
  int chunk_tokens = kAttnChunkTokens;
  int max_chunks = 0;  // AttnChunkCount(max_context): the grids' chunk axis

  // Workspace, one device allocation of workspace_bytes; each part starts
  // at a 256-byte-aligned offset.
  size_t partial_o_floats = 0;   // (max_rows, n_head, max_chunks, head_dim) chunk outputs
  size_t partial_ml_floats = 0;  // (max_rows, n_head, max_chunks, 2) chunk (max, sum)
  size_t tickets = 0;            // (max_rows, n_head) int32, zero at allocation (decode's merge)
  size_t partial_o_offset = 0, partial_ml_offset = 0, tickets_offset = 0;  // bytes
  size_t workspace_bytes = 0;

  // Grids (x, y, z) for `rows` rows, as the launchers compute them. Every
  // CTA whose chunk is beyond its row's length exits at once (the chunk
  // axis is padded to max_chunks).
  struct Grid {
    int x = 1, y = 1, z = 1;
  };
  Grid DecodeGrid(int rows) const { return {max_chunks, n_head, rows}; }
  Grid PrefillGrid(int rows) const {
    return {max_chunks, n_head, (rows + kAttnPrefillRowsPerTile - 1) / kAttnPrefillRowsPerTile};
  }
  Grid MergeGrid(int rows) const {
    const int per_cta = kAttnThreads / head_dim;
    return {static_cast<int>((static_cast<int64_t>(rows) * n_head + per_cta - 1) / per_cta), 1, 1};
  }
};

// Fills *out for up to max_rows rows of up to max_context keys; refuses
// shapes the kernels do not support, naming the argument. (Inline: the
// kernels' dev programs, which link no src/cuda, call it too.)
inline Status MakeAttentionPlan(int max_rows, int max_context, int n_head, int head_dim, AttentionPlan* out) {
  auto bad = [](const char* what, long long value, const char* want) {
    return Status::Error(std::string("MakeAttentionPlan: ") + what + " = " + std::to_string(value) + ", want " +
                         want);
  };
  auto align256 = [](size_t bytes) { return (bytes + 255) / 256 * 256; };
  if (out == nullptr) return Status::Error("MakeAttentionPlan: out is null");
  if (max_rows < 1 || max_rows > 65535) return bad("max_rows", max_rows, "1..65535 (the decode grid's z)");
  if (max_context < 1) return bad("max_context", max_context, ">= 1");
  if (n_head < 1 || n_head > 65535) return bad("n_head", n_head, "1..65535 (the grids' y)");
  if (!AttnHeadDimSupported(head_dim)) return bad("head_dim", head_dim, "16 or 64");
  AttentionPlan p;
  p.max_rows = max_rows;
  p.max_context = max_context;
  p.n_head = n_head;
  p.head_dim = head_dim;
  p.chunk_tokens = kAttnChunkTokens;
  p.max_chunks = AttnChunkCount(max_context);
  const size_t pairs = static_cast<size_t>(max_rows) * n_head;  // (row, head) pairs
  p.partial_o_floats = pairs * p.max_chunks * head_dim;
  p.partial_ml_floats = pairs * p.max_chunks * 2;
  p.tickets = pairs;
  p.partial_o_offset = 0;
  p.partial_ml_offset = align256(p.partial_o_offset + p.partial_o_floats * sizeof(float));
  p.tickets_offset = align256(p.partial_ml_offset + p.partial_ml_floats * sizeof(float));
  p.workspace_bytes = align256(p.tickets_offset + p.tickets * sizeof(int32_t));
  *out = p;
  return Status::Ok();
}

// ---- the arithmetic, shared by the kernels and the emulation -------------
// Each function is one correctly rounded IEEE operation (never contracted:
// device intrinsics; the host compiles attention_plan.cc with
// fp-contract off), so both sides round identically.
namespace attn_math {

TW_HOST_DEVICE float Add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
TW_HOST_DEVICE float Sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
TW_HOST_DEVICE float Mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
TW_HOST_DEVICE float Div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
TW_HOST_DEVICE float Fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
// The larger of a and b; a NaN b is ignored (a NaN a is kept).
TW_HOST_DEVICE float Max(float a, float b) { return b > a ? b : a; }
TW_HOST_DEVICE float Pow2(int n) {  // 2^n for n in [-126, 127]
  const uint32_t bits = static_cast<uint32_t>(n + 127) << 23;
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}
TW_HOST_DEVICE float Rint(float x) {
#if defined(__CUDA_ARCH__)
  return rintf(x);
#else
  return std::nearbyint(x);  // round half to even, as rintf
#endif
}

// exp(x) for the softmax weights (x <= 0 there): Cody-Waite reduction
// x = n ln2 + r, |r| <= ln2/2, and Cephes' expf polynomial; max error about
// 1 ulp (attention_plan_test checks 2e-7 relative). 0 below -87 (where
// exp would be denormal, < 1.7e-38), +inf above 88, NaN for NaN; exactly 1
// at 0 (so a lone chunk's merge weight is 1).
TW_HOST_DEVICE float Exp(float x) {
  if (x != x) return x;
  if (x < -87.0f) return 0.0f;
  if (x > 88.0f) return INFINITY;
  const float n = Rint(Mul(x, 1.44269504088896341f));
  float r = Fma(-n, 0.693359375f, x);  // n * ln2_hi is exact (ln2_hi has 9 bits)
  r = Fma(-n, -2.12194440e-4f, r);     // - n * ln2_lo
  float p = 1.9875691500e-4f;
  p = Fma(p, r, 1.3981999507e-3f);
  p = Fma(p, r, 8.3334519073e-3f);
  p = Fma(p, r, 4.1665795894e-2f);
  p = Fma(p, r, 1.6666665459e-1f);
  p = Fma(p, r, 5.0000001201e-1f);
  float y = Fma(p, Mul(r, r), r);
  y = Add(y, 1.0f);
  return Mul(y, Pow2(static_cast<int>(n)));
}

}  // namespace attn_math

// ---- the CPU emulation ---------------------------------------------------
// One chunk: keys and values t in [0, n) (rows head_dim apart; 1 <= n <=
// kAttnChunkTokens). Writes the chunk's max *m, sum *l and o (head_dim).
void EmulateAttnChunk(const float* q, const float* k, const float* v, int n, int head_dim, float scale,
                      float* m, float* l, float* o);
// Merges nc chunks' (m, l, o) in chunk order into out (head_dim).
// m, l: (nc); o: (nc, head_dim).
void EmulateAttnMerge(const float* m, const float* l, const float* o, int nc, int head_dim, float* out);
// One (row, head) over keys and values [0, len) (rows head_dim apart):
// out (head_dim). max_chunks >= AttnChunkCount(len) is the padded chunk axis
// of the GPU's grid and workspace: the slots past the row's chunks are
// filled with NaN first and never merged (as on the GPU). Fails on bad
// sizes or an unsupported head_dim.
Status EmulateAttentionRow(const float* q, const float* k, const float* v, int len, int head_dim, float scale,
                           int max_chunks, float* out);

}  // namespace tw::kernels
