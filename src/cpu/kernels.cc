#include "cpu/kernels.h"

#include <algorithm>
#include <atomic>
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

void PackWeight(const float* w, int in, int out, float* dst) {
  const int panels = (out + kPanelWidth - 1) / kPanelWidth;
  for (int p = 0; p < panels; ++p) {
    for (int k = 0; k < in; ++k) {
      float* d = dst + (static_cast<size_t>(p) * in + k) * kPanelWidth;  // (16)
      const float* s = w + static_cast<size_t>(k) * out;                  // row k of (in, out)
      for (int j = 0; j < kPanelWidth; ++j) {
        int col = p * kPanelWidth + j;
        d[j] = col < out ? s[col] : 0.0f;
      }
    }
  }
}

void PackWeightTransposed(const float* wt, int in, int out, float* dst) {
  const int panels = (out + kPanelWidth - 1) / kPanelWidth;
  for (int p = 0; p < panels; ++p) {
    float* d = dst + static_cast<size_t>(p) * in * kPanelWidth;  // (in, 16)
    for (int j = 0; j < kPanelWidth; ++j) {
      int col = p * kPanelWidth + j;
      const float* s = wt + static_cast<size_t>(col) * in;  // row col of (out, in)
      for (int k = 0; k < in; ++k) d[static_cast<size_t>(k) * kPanelWidth + j] = col < out ? s[k] : 0.0f;
    }
  }
}

// ---- kernels ----------------------------------------------------------------

void Matmul(ThreadPool* pool, const float* x, int rows, const PackedWeight& w, const float* bias,
            float* y, bool accumulate) {
  const internal::KernelTable& t = Table();
  const int K = w.in, N = w.out;
  const int panels = (N + kPanelWidth - 1) / kPanelWidth;
  const int threads = pool ? pool->threads() : 1;
  const ColumnSplit split(panels, threads, t.tile_panels);
  auto task = [&](int i, int /*worker*/) {
    int p0 = 0, p1 = 0;
    split.Range(i, &p0, &p1);
    t.gemm_panels(x, rows, K, w.data, p0, p1, N, bias, accumulate, y);
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
