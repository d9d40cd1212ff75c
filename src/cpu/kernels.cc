#include "cpu/kernels.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cpu/kernel_table.h"

namespace tw::cpu {

namespace {

bool CpuHas(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  switch (isa) {
    case Isa::kScalar:
      return true;
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
             __builtin_cpu_supports("fma");
  }
  return false;
#else
  return isa == Isa::kScalar;
#endif
}

std::atomic<int> g_forced{-1};  // -1: BestIsa()

const internal::KernelTable& Table() {
  switch (ActiveIsa()) {
    case Isa::kAvx512:
      return internal::Avx512Table();
    case Isa::kAvx2:
      return internal::Avx2Table();
    case Isa::kScalar:
      break;
  }
  return internal::ScalarTable();
}

// A matmul's columns (n panels) split into pool tasks on multiples of
// `align` panels, "guided": one big contiguous range per thread holding about
// three quarters of the columns, then small ranges (two per thread) that
// balance whatever is left. The pool hands tasks out from the highest index
// down, so the big ranges go first. Few, long ranges keep each thread's
// weight stream (and its prefetch of the next panel group) going; a task's
// first group is always a cold start (measured at batch 32 with cold
// GPT-2-small weights: one range per thread ~30 ms per decode step, four
// equal ranges per thread ~33 ms); the small tail absorbs a thread that was
// preempted.
class ColumnSplit {
 public:
  ColumnSplit(int n, int threads, int align) : n_(n), align_(align) {
    const int units = (n + align - 1) / align;
    if (threads <= 1 || units < threads * 4) {  // one range per unit, or one in all
      small_ = threads <= 1 ? (units < 1 ? 1 : units) : 1;
      small_total_ = units;
      smalls_ = (units + small_ - 1) / small_;
      bigs_ = 0;
      return;
    }
    big_ = units * 3 / 4 / threads;
    bigs_ = threads;
    small_total_ = units - big_ * bigs_;
    small_ = small_total_ / (threads * 2);
    if (small_ < 1) small_ = 1;
    smalls_ = (small_total_ + small_ - 1) / small_;
  }
  int tasks() const { return smalls_ + bigs_; }
  // Panels [*p0, *p1) of task i.
  void Range(int i, int* p0, int* p1) const {
    int u0, u1;
    if (i < smalls_) {
      u0 = i * small_;
      u1 = u0 + small_ < small_total_ ? u0 + small_ : small_total_;
    } else {
      u0 = small_total_ + (i - smalls_) * big_;
      u1 = u0 + big_;
    }
    *p0 = u0 * align_ < n_ ? u0 * align_ : n_;
    *p1 = u1 * align_ < n_ ? u1 * align_ : n_;
  }

 private:
  int n_, align_;
  int small_ = 1, small_total_ = 0, smalls_ = 0;
  int big_ = 0, bigs_ = 0;
};

// Below this much work (multiply-adds, or floats touched) a kernel runs on the
// calling thread: waking the pool would cost more than it saves.
constexpr double kMinParallelFma = 256 * 1024;
constexpr size_t kMinParallelFloats = 32 * 1024;

}  // namespace

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "unknown";
}

bool IsaSupported(Isa isa) { return CpuHas(isa) && static_cast<int>(isa) <= static_cast<int>(BestIsa()); }

namespace {
// TW_CPU_MAX_ISA=scalar|avx2|avx512 caps the level this process treats as the
// CPU's best, so a machine with AVX-512 can run everything (tests, benches,
// the server) as an AVX2-only or scalar machine would.
Isa DetectBest() {
  Isa best = CpuHas(Isa::kAvx512) ? Isa::kAvx512 : CpuHas(Isa::kAvx2) ? Isa::kAvx2 : Isa::kScalar;
  if (const char* cap = std::getenv("TW_CPU_MAX_ISA")) {
    for (Isa i : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
      if (std::strcmp(cap, IsaName(i)) == 0 && static_cast<int>(i) < static_cast<int>(best)) best = i;
    }
  }
  return best;
}
}  // namespace

Isa BestIsa() {
  static const Isa best = DetectBest();
  return best;
}

Isa ActiveIsa() {
  int f = g_forced.load(std::memory_order_relaxed);
  return f < 0 ? BestIsa() : static_cast<Isa>(f);
}

Status ForceIsa(Isa isa) {
  if (!CpuHas(isa) || static_cast<int>(isa) > static_cast<int>(BestIsa())) {
    return Status::Error(std::string("ForceIsa: this CPU does not support ") + IsaName(isa) +
                         " (best available: " + IsaName(BestIsa()) + ")");
  }
  g_forced.store(static_cast<int>(isa), std::memory_order_relaxed);
  return Status::Ok();
}

void ResetIsa() { g_forced.store(-1, std::memory_order_relaxed); }

// ---- packing ----------------------------------------------------------------

size_t PackedWeightFloats(int in, int out) {
  size_t panels = (static_cast<size_t>(out) + kPanelWidth - 1) / kPanelWidth;
  return panels * static_cast<size_t>(in) * kPanelWidth;
}

void PackWeightPanels(const float* w, int in, int out, bool transposed, int panel_begin, int panel_end,
                      float* dst) {
  for (int p = panel_begin; p < panel_end; ++p) {
    float* d = dst + static_cast<size_t>(p) * in * kPanelWidth;  // (in, 16)
    if (transposed) {
      for (int j = 0; j < kPanelWidth; ++j) {
        const int col = p * kPanelWidth + j;
        const float* s = w + static_cast<size_t>(col) * in;  // row col of (out, in)
        for (int k = 0; k < in; ++k) d[static_cast<size_t>(k) * kPanelWidth + j] = col < out ? s[k] : 0.0f;
      }
      continue;
    }
    for (int k = 0; k < in; ++k) {
      const float* s = w + static_cast<size_t>(k) * out;  // row k of (in, out)
      for (int j = 0; j < kPanelWidth; ++j) {
        const int col = p * kPanelWidth + j;
        d[static_cast<size_t>(k) * kPanelWidth + j] = col < out ? s[col] : 0.0f;
      }
    }
  }
}

void PackWeight(const float* w, int in, int out, float* dst) {
  PackWeightPanels(w, in, out, /*transposed=*/false, 0, (out + kPanelWidth - 1) / kPanelWidth, dst);
}

void PackWeightTransposed(const float* wt, int in, int out, float* dst) {
  PackWeightPanels(wt, in, out, /*transposed=*/true, 0, (out + kPanelWidth - 1) / kPanelWidth, dst);
}

// ---- weight formats ---------------------------------------------------------

const char* WeightFormatName(WeightFormat f) {
  switch (f) {
    case WeightFormat::kF32:
      return "f32";
    case WeightFormat::kBf16:
      return "bf16";
    case WeightFormat::kQ8:
      return "q8";
  }
  return "unknown";
}

Status ParseWeightFormat(const char* name, WeightFormat* out) {
  for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kBf16, WeightFormat::kQ8}) {
    if (name && std::strcmp(name, WeightFormatName(f)) == 0) {
      *out = f;
      return Status::Ok();
    }
  }
  return Status::Error(std::string("unknown weight format '") + (name ? name : "") + "' (f32, bf16 or q8)");
}

uint16_t Bf16FromFloat(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // NaN stays a (quiet) NaN
  }
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest, ties to even
  return static_cast<uint16_t>(bits >> 16);
}

float FloatFromBf16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

namespace {

size_t RoundUp64(size_t bytes) { return (bytes + 63) / 64 * 64; }

// One column's block of up to kQ8Block weights (w[i * stride], i < n):
// its scale (max|w| / 127, 0 for an all-zero block) and int8 values.
float QuantizeQ8Block(const float* w, size_t stride, int n, int8_t* q, size_t q_stride) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(w[i * stride]));
  const float scale = amax / 127.0f;
  for (int i = 0; i < n; ++i) {
    const float v = scale > 0.0f ? std::nearbyint(w[i * stride] / scale) : 0.0f;
    q[i * q_stride] = static_cast<int8_t>(std::min(127.0f, std::max(-127.0f, v)));
  }
  return scale;
}

}  // namespace

size_t PackedWeightBytes(WeightFormat format, int in, int out) {
  const size_t elems = PackedWeightFloats(in, out);
  switch (format) {
    case WeightFormat::kF32:
      return RoundUp64(elems * sizeof(float));
    case WeightFormat::kBf16:
      return RoundUp64(elems * sizeof(uint16_t));
    case WeightFormat::kQ8: {
      const size_t panels = (static_cast<size_t>(out) + kPanelWidth - 1) / kPanelWidth;
      const size_t blocks = (static_cast<size_t>(in) + kQ8Block - 1) / kQ8Block;
      return RoundUp64(elems) + RoundUp64(panels * blocks * kPanelWidth * sizeof(float));
    }
  }
  return 0;
}

PackedWeight PackWeightAs(WeightFormat format, const float* w, int in, int out, bool transposed, void* dst) {
  PackedWeight pw;
  pw.in = in;
  pw.out = out;
  pw.format = format;
  const int panels = (out + kPanelWidth - 1) / kPanelWidth;
  const size_t panel_elems = static_cast<size_t>(in) * kPanelWidth;
  // Weight (k, col) of the logical (in, out) matrix; 0 past the last column.
  auto at = [&](int k, int col) {
    if (col >= out) return 0.0f;
    return transposed ? w[static_cast<size_t>(col) * in + k] : w[static_cast<size_t>(k) * out + col];
  };
  switch (format) {
    case WeightFormat::kF32: {
      float* d = static_cast<float*>(dst);
      if (transposed) PackWeightTransposed(w, in, out, d);
      else PackWeight(w, in, out, d);
      pw.data = d;
      break;
    }
    case WeightFormat::kBf16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int p = 0; p < panels; ++p)
        for (int k = 0; k < in; ++k)
          for (int j = 0; j < kPanelWidth; ++j)
            d[p * panel_elems + static_cast<size_t>(k) * kPanelWidth + j] = Bf16FromFloat(at(k, p * kPanelWidth + j));
      pw.bf16 = d;
      break;
    }
    case WeightFormat::kQ8: {
      int8_t* q = static_cast<int8_t*>(dst);
      float* scales = reinterpret_cast<float*>(static_cast<char*>(dst) + RoundUp64(PackedWeightFloats(in, out)));
      const int blocks = (in + kQ8Block - 1) / kQ8Block;
      float col[kQ8Block];
      for (int p = 0; p < panels; ++p) {
        for (int blk = 0; blk < blocks; ++blk) {
          const int k0 = blk * kQ8Block, n = std::min(kQ8Block, in - k0);
          for (int j = 0; j < kPanelWidth; ++j) {
            for (int i = 0; i < n; ++i) col[i] = at(k0 + i, p * kPanelWidth + j);
            scales[(static_cast<size_t>(p) * blocks + blk) * kPanelWidth + j] =
                QuantizeQ8Block(col, 1, n, q + p * panel_elems + static_cast<size_t>(k0) * kPanelWidth + j, kPanelWidth);
          }
        }
      }
      pw.q8 = q;
      pw.q8_scales = scales;
      break;
    }
  }
  return pw;
}

void DequantizedWeight(WeightFormat format, const float* w, int in, int out, float* dst) {
  const size_t n = static_cast<size_t>(in) * out;
  switch (format) {
    case WeightFormat::kF32:
      std::memcpy(dst, w, n * sizeof(float));
      return;
    case WeightFormat::kBf16:
      for (size_t i = 0; i < n; ++i) dst[i] = FloatFromBf16(Bf16FromFloat(w[i]));
      return;
    case WeightFormat::kQ8: {
      int8_t q[kQ8Block];
      for (int col = 0; col < out; ++col) {
        for (int k0 = 0; k0 < in; k0 += kQ8Block) {
          const int m = std::min(kQ8Block, in - k0);
          const float scale = QuantizeQ8Block(w + static_cast<size_t>(k0) * out + col, out, m, q, 1);
          for (int i = 0; i < m; ++i) dst[static_cast<size_t>(k0 + i) * out + col] = static_cast<float>(q[i]) * scale;
        }
      }
      return;
    }
  }
}

// ---- kernels ----------------------------------------------------------------

void Matmul(ThreadPool* pool, const float* x, int rows, const PackedWeight& w, const float* bias,
            float* y, bool accumulate, float* scratch) {
  const internal::KernelTable& t = Table();
  const int K = w.in, N = w.out;
  const int panels = (N + kPanelWidth - 1) / kPanelWidth;
  const int threads = pool ? pool->threads() : 1;
  const ColumnSplit split(panels, threads, t.tile_panels);
  auto task = [&](int i, int worker) {
    int p0 = 0, p1 = 0;
    split.Range(i, &p0, &p1);
    t.gemm_panels(x, rows, w, p0, p1, bias, accumulate, y,
                  scratch ? scratch + static_cast<size_t>(worker) * kMatmulScratchFloats : nullptr);
  };
  if (pool && static_cast<double>(rows) * K * N >= kMinParallelFma) pool->ParallelFor(split.tasks(), task);
  else for (int i = 0; i < split.tasks(); ++i) task(i, 0);
}

void LayerNorm(ThreadPool* pool, const float* x, int rows, int C, const float* w, const float* b,
               float eps, float* out) {
  const internal::KernelTable& t = Table();
  auto task = [&](int r, int /*worker*/) {
    t.layernorm_row(x + static_cast<size_t>(r) * C, C, w, b, eps, out + static_cast<size_t>(r) * C);
  };
  if (pool && static_cast<size_t>(rows) * C >= kMinParallelFloats) pool->ParallelFor(rows, task);
  else for (int r = 0; r < rows; ++r) task(r, 0);
}

void GeluTanh(ThreadPool* pool, float* x, size_t n) {
  const internal::KernelTable& t = Table();
  constexpr size_t kChunk = 16384;  // floats per task
  const int tasks = static_cast<int>((n + kChunk - 1) / kChunk);
  auto task = [&](int i, int /*worker*/) {
    size_t begin = static_cast<size_t>(i) * kChunk;
    t.gelu(x + begin, std::min(kChunk, n - begin));
  };
  if (pool && tasks > 1) pool->ParallelFor(tasks, task);
  else for (int i = 0; i < tasks; ++i) task(i, 0);
}

void Add(const float* a, const float* b, float* out, size_t n) { Table().add(a, b, out, n); }

void Softmax(float* x, int n) { Table().softmax(x, n); }

float MaxValue(const float* x, int n) { return Table().max_value(x, n); }

void ExpWeights(const float* x, int n, float mx, float inv_t, float* out, float* block_sums) {
  Table().exp_weights(x, n, mx, inv_t, out, block_sums);
}

float SumAtLeast(const float* x, const float* w, int n, float t) { return Table().sum_at_least(x, w, n, t); }

int CollectAtLeast(const float* x, int n, float t, int32_t* ids, int cap) {
  return Table().collect_at_least(x, n, t, ids, cap);
}

void KeepAtLeast(const float* x, int n, float t, float* w, float* block_sums) {
  Table().keep_at_least(x, n, t, w, block_sums);
}

void Attend(const float* q, const PagedKvHead& kv, int len, float scale, float* scores, float* out) {
  Table().attend(q, kv, len, scale, scores, out);
}

void AttendRows(const float* q, size_t q_stride, int m, const PagedKvHead& kv, int len0, float scale,
                float* scores, float* out, size_t out_stride) {
  Table().attend_rows(q, q_stride, m, kv, len0, scale, scores, out, out_stride);
}

void AttendHeads(const float* q, int heads, const PagedKvHead& kv, size_t head_stride, int len, float scale,
                 float* scores, float* out) {
  Table().attend_heads(q, heads, kv, head_stride, len, scale, scores, out);
}

}  // namespace tw::cpu
