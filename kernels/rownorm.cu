// The row kernels (rownorm.h): one templated warp-per-row kernel for the
// embedding, the residual add and layer norm in their plain and fused forms,
// and an elementwise GELU. Development versions, the CPU reference and
// timings: kernels/dev/rownorm.cu.
#include "kernels/rownorm.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "kernels/common.cuh"

namespace tw::kernels {

namespace {

constexpr int kRowsPerBlock = 4;                 // one warp per row
constexpr int kRowThreads = 32 * kRowsPerBlock;  // 128
constexpr int kMaxVec = kRowMaxC / 128;          // float4s per lane (16)
static_assert(kRowMaxC % 128 == 0, "kRowMaxC must be a multiple of 32 lanes x 4 floats");

// Where a row's values come from before the (optional) layer norm.
enum class Source {
  kX,         // x as it is (LayerNorm)
  kResidual,  // x + bias + delta parts, written back to x
  kEmbed,     // wte[token] + wpe[pos], written to x
};

struct RowArgs {
  float* x = nullptr;  // (rows, C)
  // kResidual
  const float* delta = nullptr;  // (parts, rows, C), parts part_stride floats apart
  int parts = 0;
  size_t part_stride = 0;
  const float* bias = nullptr;  // (C) or null
  // kEmbed
  const int32_t* tokens = nullptr;     // (rows)
  const int32_t* positions = nullptr;  // (rows)
  const float* wte = nullptr;          // (vocab, C)
  const float* wpe = nullptr;          // (n_ctx, C)
  int vocab = 0;
  int n_ctx = 0;
  // layer norm
  const float* w = nullptr;  // (C)
  const float* b = nullptr;  // (C)
  float eps = 0.0f;
  float* out = nullptr;  // (rows, C)
  int rows = 0;
  int C = 0;
};

__device__ __forceinline__ float4 Add4(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

// One warp per row: the row's C floats in registers (lane l holds the
// float4s l, l + 32, l + 64, ...), then, if kNorm, out = LayerNorm(row).
template <Source kSrc, bool kNorm>
__global__ void __launch_bounds__(kRowThreads) RowKernel(const RowArgs a) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= a.rows) return;  // the whole warp leaves together
  const int C4 = a.C >> 2;
  const size_t base4 = static_cast<size_t>(row) * C4;  // the row's first float4

  float4 v[kMaxVec];
#pragma unroll
  for (int i = 0; i < kMaxVec; ++i) v[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

  if constexpr (kSrc == Source::kX) {
    const float4* x4 = reinterpret_cast<const float4*>(a.x) + base4;
#pragma unroll
    for (int i = 0; i < kMaxVec; ++i) {
      const int c = lane + 32 * i;
      if (c < C4) v[i] = x4[c];
    }
  } else if constexpr (kSrc == Source::kResidual) {
    // x + bias first, then the parts in order: the CPU's residual matmul
    // also starts its accumulators from y + bias.
    float4* x4 = reinterpret_cast<float4*>(a.x) + base4;
    const float4* bias4 = reinterpret_cast<const float4*>(a.bias);
#pragma unroll
    for (int i = 0; i < kMaxVec; ++i) {
      const int c = lane + 32 * i;
      if (c < C4) v[i] = bias4 != nullptr ? Add4(x4[c], bias4[c]) : x4[c];
    }
    for (int p = 0; p < a.parts; ++p) {
      const float4* d4 = reinterpret_cast<const float4*>(a.delta + p * a.part_stride) + base4;
#pragma unroll
      for (int i = 0; i < kMaxVec; ++i) {
        const int c = lane + 32 * i;
        if (c < C4) v[i] = Add4(v[i], d4[c]);
      }
    }
#pragma unroll
    for (int i = 0; i < kMaxVec; ++i) {
      const int c = lane + 32 * i;
      if (c < C4) x4[c] = v[i];
    }
  } else {  // Source::kEmbed
    const int tok = a.tokens[row], pos = a.positions[row];
    const bool ok = tok >= 0 && tok < a.vocab && pos >= 0 && pos < a.n_ctx;
    // Out-of-range ids read row 0 (in bounds) and write NaN.
    const float4* te = reinterpret_cast<const float4*>(a.wte) + static_cast<size_t>(ok ? tok : 0) * C4;
    const float4* pe = reinterpret_cast<const float4*>(a.wpe) + static_cast<size_t>(ok ? pos : 0) * C4;
    const float nan = __int_as_float(0x7fc00000);
    float4* x4 = reinterpret_cast<float4*>(a.x) + base4;
#pragma unroll
    for (int i = 0; i < kMaxVec; ++i) {
      const int c = lane + 32 * i;
      if (c < C4) {
        v[i] = ok ? Add4(te[c], pe[c]) : make_float4(nan, nan, nan, nan);
        x4[c] = v[i];
      }
    }
  }

  if constexpr (kNorm) {
    // Mean, then the variance around it (two passes over the registers).
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxVec; ++i) {
      if (lane + 32 * i < C4) sum += (v[i].x + v[i].y) + (v[i].z + v[i].w);
    }
    const float inv_c = 1.0f / static_cast<float>(a.C);
    const float mean = WarpSum(sum) * inv_c;
    float sq = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxVec; ++i) {
      if (lane + 32 * i < C4) {
        const float dx = v[i].x - mean, dy = v[i].y - mean, dz = v[i].z - mean, dw = v[i].w - mean;
        sq = fmaf(dx, dx, sq);
        sq = fmaf(dy, dy, sq);
        sq = fmaf(dz, dz, sq);
        sq = fmaf(dw, dw, sq);
      }
    }
    const float var = WarpSum(sq) * inv_c;
    const float rstd = 1.0f / sqrtf(var + a.eps);
    const float4* w4 = reinterpret_cast<const float4*>(a.w);
    const float4* b4 = reinterpret_cast<const float4*>(a.b);
    float4* o4 = reinterpret_cast<float4*>(a.out) + base4;
#pragma unroll
    for (int i = 0; i < kMaxVec; ++i) {
      const int c = lane + 32 * i;
      if (c < C4) {
        const float4 w = w4[c], b = b4[c];
        float4 o;
        o.x = fmaf((v[i].x - mean) * rstd, w.x, b.x);
        o.y = fmaf((v[i].y - mean) * rstd, w.y, b.y);
        o.z = fmaf((v[i].z - mean) * rstd, w.z, b.z);
        o.w = fmaf((v[i].w - mean) * rstd, w.w, b.w);
        o4[c] = o;
      }
    }
  }
}

// 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3),
// in the CPU's operation order (cpu GeluT).
__device__ __forceinline__ float GeluOne(float x) {
  const float x3 = x * x * x;
  const float u = fmaf(x3, 0.044715f, x);
  const float e = expf(u * (-2.0f * 0.7978845608028654f));
  return x / (1.0f + e);
}

constexpr int kGeluThreads = 256;
constexpr int kGeluMaxBlocks = 4096;  // grid-stride beyond this

// x 16-byte aligned: n / 4 float4s, then the n % 4 last floats.
__global__ void __launch_bounds__(kGeluThreads) GeluVec4Kernel(float* x, size_t n) {
  const size_t n4 = n / 4;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float4* x4 = reinterpret_cast<float4*>(x);
  for (size_t i = first; i < n4; i += stride) {
    float4 t = x4[i];
    t.x = GeluOne(t.x);
    t.y = GeluOne(t.y);
    t.z = GeluOne(t.z);
    t.w = GeluOne(t.w);
    x4[i] = t;
  }
  for (size_t i = n4 * 4 + first; i < n; i += stride) x[i] = GeluOne(x[i]);
}

__global__ void __launch_bounds__(kGeluThreads) GeluScalarKernel(float* x, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) x[i] = GeluOne(x[i]);
}

// ---- launchers' checks ---------------------------------------------------

std::string PtrText(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

Status NotNull(const char* fn, const char* name, const void* p) {
  if (p == nullptr) return Status::Error(std::string("kernels::") + fn + ": " + name + " is null");
  return Status::Ok();
}

Status Aligned16(const char* fn, const char* name, const void* p) {
  if (p == nullptr) return Status::Error(std::string("kernels::") + fn + ": " + name + " is null");
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0) {
    return Status::Error(std::string("kernels::") + fn + ": " + name + " = " + PtrText(p) +
                         " is not 16-byte aligned (the row kernels load float4s)");
  }
  return Status::Ok();
}

Status CheckRows(const char* fn, int rows, int C) {
  if (rows < 0) return Status::Error(std::string("kernels::") + fn + ": rows = " + std::to_string(rows) + " < 0");
  if (C < 4 || C > kRowMaxC || C % 4 != 0) {
    return Status::Error(std::string("kernels::") + fn + ": C = " + std::to_string(C) +
                         " is not a multiple of 4 in [4, " + std::to_string(kRowMaxC) + "]");
  }
  return Status::Ok();
}

Status CheckEps(const char* fn, float eps) {
  if (!(eps >= 0.0f) || !std::isfinite(eps)) {
    return Status::Error(std::string("kernels::") + fn + ": eps = " + std::to_string(eps) +
                         " is not a finite value >= 0");
  }
  return Status::Ok();
}

Status CheckResidual(const char* fn, const float* x, const float* delta, int parts, size_t part_stride,
                     const float* bias, int rows, int C) {
  Status s = Aligned16(fn, "x", x);
  if (s.ok()) s = Aligned16(fn, "delta", delta);
  if (s.ok() && bias != nullptr) s = Aligned16(fn, "bias", bias);
  if (!s.ok()) return s;
  if (parts < 1 || parts > kResidualMaxParts) {
    return Status::Error(std::string("kernels::") + fn + ": parts = " + std::to_string(parts) + " is not in [1, " +
                         std::to_string(kResidualMaxParts) + "]");
  }
  const size_t plane = static_cast<size_t>(rows) * C;
  if (parts > 1 && (part_stride < plane || part_stride % 4 != 0)) {
    return Status::Error(std::string("kernels::") + fn + ": part_stride = " + std::to_string(part_stride) +
                         " floats must be a multiple of 4 and >= rows * C = " + std::to_string(plane));
  }
  if (delta == x) return Status::Error(std::string("kernels::") + fn + ": delta is x (they must not overlap)");
  return Status::Ok();
}

Status CheckEmbed(const char* fn, const int32_t* tokens, const int32_t* positions, const float* wte, int vocab,
                  const float* wpe, int n_ctx, float* x) {
  Status s = NotNull(fn, "tokens", tokens);
  if (s.ok()) s = NotNull(fn, "positions", positions);
  if (s.ok()) s = Aligned16(fn, "wte", wte);
  if (s.ok()) s = Aligned16(fn, "wpe", wpe);
  if (s.ok()) s = Aligned16(fn, "x", x);
  if (!s.ok()) return s;
  if (vocab < 1) return Status::Error(std::string("kernels::") + fn + ": vocab = " + std::to_string(vocab) + " < 1");
  if (n_ctx < 1) return Status::Error(std::string("kernels::") + fn + ": n_ctx = " + std::to_string(n_ctx) + " < 1");
  return Status::Ok();
}

Status CheckNorm(const char* fn, const float* w, const float* b, float eps, const float* out) {
  Status s = Aligned16(fn, "w", w);
  if (s.ok()) s = Aligned16(fn, "b", b);
  if (s.ok()) s = Aligned16(fn, "out", out);
  if (s.ok()) s = CheckEps(fn, eps);
  return s;
}

template <Source kSrc, bool kNorm>
Status LaunchRows(const RowArgs& a, void* stream, const char* what) {
  if (a.rows == 0) return Status::Ok();
  const int blocks = CeilDiv(a.rows, kRowsPerBlock);
  Launch<RowKernel<kSrc, kNorm>>(blocks, kRowThreads, 0, AsStream(stream), a);
  TW_LAUNCH_CHECK(what);
  return Status::Ok();
}

}  // namespace

Status Embed(const int32_t* tokens, const int32_t* positions, int rows, const float* wte, int vocab,
             const float* wpe, int n_ctx, int C, float* x, void* stream) {
  Status s = CheckRows("Embed", rows, C);
  if (s.ok()) s = CheckEmbed("Embed", tokens, positions, wte, vocab, wpe, n_ctx, x);
  if (!s.ok()) return s;
  RowArgs a;
  a.x = x;
  a.tokens = tokens;
  a.positions = positions;
  a.wte = wte;
  a.vocab = vocab;
  a.wpe = wpe;
  a.n_ctx = n_ctx;
  a.rows = rows;
  a.C = C;
  return LaunchRows<Source::kEmbed, false>(a, stream, "kernels::Embed launch");
}

Status EmbedLayerNorm(const int32_t* tokens, const int32_t* positions, int rows, const float* wte, int vocab,
                      const float* wpe, int n_ctx, int C, float* x, const float* w, const float* b, float eps,
                      float* out, void* stream) {
  Status s = CheckRows("EmbedLayerNorm", rows, C);
  if (s.ok()) s = CheckEmbed("EmbedLayerNorm", tokens, positions, wte, vocab, wpe, n_ctx, x);
  if (s.ok()) s = CheckNorm("EmbedLayerNorm", w, b, eps, out);
  if (!s.ok()) return s;
  if (out == x) return Status::Error("kernels::EmbedLayerNorm: out is x (they must be different buffers)");
  RowArgs a;
  a.x = x;
  a.tokens = tokens;
  a.positions = positions;
  a.wte = wte;
  a.vocab = vocab;
  a.wpe = wpe;
  a.n_ctx = n_ctx;
  a.w = w;
  a.b = b;
  a.eps = eps;
  a.out = out;
  a.rows = rows;
  a.C = C;
  return LaunchRows<Source::kEmbed, true>(a, stream, "kernels::EmbedLayerNorm launch");
}

Status LayerNorm(const float* x, int rows, int C, const float* w, const float* b, float eps, float* out,
                 void* stream) {
  Status s = CheckRows("LayerNorm", rows, C);
  if (s.ok()) s = Aligned16("LayerNorm", "x", x);
  if (s.ok()) s = CheckNorm("LayerNorm", w, b, eps, out);
  if (!s.ok()) return s;
  RowArgs a;
  a.x = const_cast<float*>(x);  // only read (Source::kX)
  a.w = w;
  a.b = b;
  a.eps = eps;
  a.out = out;
  a.rows = rows;
  a.C = C;
  return LaunchRows<Source::kX, true>(a, stream, "kernels::LayerNorm launch");
}

Status ResidualAdd(float* x, const float* delta, int parts, size_t part_stride, const float* bias, int rows, int C,
                   void* stream) {
  Status s = CheckRows("ResidualAdd", rows, C);
  if (s.ok()) s = CheckResidual("ResidualAdd", x, delta, parts, part_stride, bias, rows, C);
  if (!s.ok()) return s;
  RowArgs a;
  a.x = x;
  a.delta = delta;
  a.parts = parts;
  a.part_stride = part_stride;
  a.bias = bias;
  a.rows = rows;
  a.C = C;
  return LaunchRows<Source::kResidual, false>(a, stream, "kernels::ResidualAdd launch");
}

Status ResidualLayerNorm(float* x, const float* delta, int parts, size_t part_stride, const float* bias, int rows,
                         int C, const float* w, const float* b, float eps, float* out, void* stream) {
  Status s = CheckRows("ResidualLayerNorm", rows, C);
  if (s.ok()) s = CheckResidual("ResidualLayerNorm", x, delta, parts, part_stride, bias, rows, C);
  if (s.ok()) s = CheckNorm("ResidualLayerNorm", w, b, eps, out);
  if (!s.ok()) return s;
  if (out == x || out == delta) {
    return Status::Error(std::string("kernels::ResidualLayerNorm: out is ") + (out == x ? "x" : "delta") +
                         " (it must be a buffer of its own)");
  }
  RowArgs a;
  a.x = x;
  a.delta = delta;
  a.parts = parts;
  a.part_stride = part_stride;
  a.bias = bias;
  a.w = w;
  a.b = b;
  a.eps = eps;
  a.out = out;
  a.rows = rows;
  a.C = C;
  return LaunchRows<Source::kResidual, true>(a, stream, "kernels::ResidualLayerNorm launch");
}

Status GeluTanh(float* x, size_t n, void* stream) {
  if (n == 0) return Status::Ok();
  if (x == nullptr) return Status::Error("kernels::GeluTanh: x is null");
  if (reinterpret_cast<uintptr_t>(x) % 4 != 0) {
    return Status::Error("kernels::GeluTanh: x = " + PtrText(x) + " is not 4-byte aligned");
  }
  const bool vec = reinterpret_cast<uintptr_t>(x) % 16 == 0;
  const size_t items = vec ? (n / 4 > 0 ? n / 4 : 1) : n;
  const size_t want = (items + kGeluThreads - 1) / kGeluThreads;
  const int blocks = static_cast<int>(want < kGeluMaxBlocks ? want : kGeluMaxBlocks);
  if (vec) {
    Launch<GeluVec4Kernel>(blocks, kGeluThreads, 0, AsStream(stream), x, n);
  } else {
    Launch<GeluScalarKernel>(blocks, kGeluThreads, 0, AsStream(stream), x, n);
  }
  TW_LAUNCH_CHECK("kernels::GeluTanh launch");
  return Status::Ok();
}

}  // namespace tw::kernels
