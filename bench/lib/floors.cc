#include "floors.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "cpu/aligned.h"
#include "cpu/kernels.h"

namespace tw::bench {

namespace {

using Clock = std::chrono::steady_clock;

// Median seconds of `reps` runs of fn, after one unmeasured run.
template <typename Fn>
double MedianSeconds(int reps, const Fn& fn) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(Clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  const size_t n = t.size();
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

__attribute__((target("avx2"))) float ReadSum(const float* p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

constexpr int kPeakIters = 20 * 1000 * 1000;

__attribute__((target("avx512f"))) float FmaLoop512() {
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(0.001f * i);
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
  // Fully unrolled so that the 16 accumulators stay in registers (otherwise
  // the loop measures store-to-load forwarding, not the FMA units).
  for (int it = 0; it < kPeakIters / 16; ++it)
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(acc[i], m, a);
  __m512 s = acc[0];
  for (int i = 1; i < 16; ++i) s = _mm512_add_ps(s, acc[i]);
  float out[16];
  _mm512_storeu_ps(out, s);
  return out[0] + out[15];
}

__attribute__((target("avx2,fma"))) float FmaLoop256() {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(0.001f * i);
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
  for (int it = 0; it < kPeakIters / 12; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], m, a);
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}

// What one decode step of `batch` sequences at context `ctx` must compute
// and read.
struct StepWork {
  double flops, bytes;
};

StepWork DecodeWork(const Gpt2Work& w, int batch, double ctx) {
  return {batch * (w.layer_flops(ctx) + w.lm_head_flops()),
          w.weight_bytes() + batch * ctx * w.kv_bytes_per_position()};
}

}  // namespace

double MeasureReadBandwidth(cpu::ThreadPool* pool, int reps) {
  const size_t floats = size_t(1) << 28;  // 1 GiB
  cpu::AlignedFloats buf = cpu::AllocAligned(floats);
  if (!buf) return 0;
  const int tasks = pool->threads() * 8;
  const size_t chunk = floats / tasks;
  pool->ParallelFor(tasks, [&](int t, int) {
    for (size_t i = t * chunk; i < (t + 1) * chunk; ++i) buf[i] = 1.0f;
  });
  std::vector<float> sink(tasks);
  const double s = MedianSeconds(reps, [&] {
    pool->ParallelFor(tasks, [&](int i, int) { sink[i] = ReadSum(buf.get() + i * chunk, chunk); });
  });
  if (sink[0] < 1.0f) std::fprintf(stderr, "(impossible)\n");  // keeps the sums
  return floats * sizeof(float) / s;
}

double MeasureFmaPeak(cpu::ThreadPool* pool, bool avx512) {
  std::vector<float> sink(pool->threads());
  const double lanes = avx512 ? 16 : 8;
  const double fmas = avx512 ? double(kPeakIters / 16) * 16 : double(kPeakIters / 12) * 12;
  const double s = MedianSeconds(3, [&] {
    pool->ParallelFor(pool->threads(), [&](int i, int) { sink[i] = avx512 ? FmaLoop512() : FmaLoop256(); });
  });
  if (sink[0] == 12345.0f) std::fprintf(stderr, "(impossible)\n");
  return pool->threads() * fmas * lanes * 2 / s;
}

double MeasureFmaPeak(cpu::ThreadPool* pool) {
  return MeasureFmaPeak(pool, cpu::IsaSupported(cpu::Isa::kAvx512));
}

MachineFloors MeasureFloors(cpu::ThreadPool* pool, int read_reps) {
  MachineFloors m{MeasureReadBandwidth(pool, read_reps), MeasureFmaPeak(pool), 0};
  m.fma_avx2_flops_per_s = cpu::IsaSupported(cpu::Isa::kAvx512) ? MeasureFmaPeak(pool, false) : m.fma_flops_per_s;
  return m;
}

MachineFloors Best(const MachineFloors& a, const MachineFloors& b) {
  return MachineFloors{std::max(a.read_bytes_per_s, b.read_bytes_per_s), std::max(a.fma_flops_per_s, b.fma_flops_per_s),
                       std::max(a.fma_avx2_flops_per_s, b.fma_avx2_flops_per_s)};
}

MachineFloors AtLevel(const MachineFloors& m, cpu::Isa isa) {
  MachineFloors r = m;
  if (isa != cpu::Isa::kAvx512 && m.fma_avx2_flops_per_s > 0) r.fma_flops_per_s = m.fma_avx2_flops_per_s;
  return r;
}

Gpt2Work::Gpt2Work(const model::Gpt2Config& cfg, double bytes_per_weight)
    : C_(cfg.n_embd), L_(cfg.n_layer), V_(cfg.vocab_size),
      layer_macs_(C_ * 3 * C_ + C_ * C_ + 2 * C_ * 4 * C_), bytes_per_weight_(bytes_per_weight) {}

double Gpt2Work::weight_bytes() const { return bytes_per_weight_ * (L_ * layer_macs_ + C_ * V_); }

double Gpt2Work::layer_flops(double ctx) const { return 2 * L_ * layer_macs_ + 2 * 2 * L_ * C_ * ctx; }

double Gpt2Work::lm_head_flops() const { return 2 * C_ * V_; }

double Gpt2Work::kv_bytes_per_position() const { return 4 * L_ * 2 * C_; }

double Gpt2Work::DecodeFloorSeconds(int batch, double ctx, const MachineFloors& m) const {
  const StepWork s = DecodeWork(*this, batch, ctx);
  return std::max(s.flops / m.fma_flops_per_s, s.bytes / m.read_bytes_per_s);
}

bool Gpt2Work::DecodeComputeBound(int batch, double ctx, const MachineFloors& m) const {
  const StepWork s = DecodeWork(*this, batch, ctx);
  return s.flops / m.fma_flops_per_s > s.bytes / m.read_bytes_per_s;
}

double Gpt2Work::PrefillFloorSeconds(int seqs, int tokens, const MachineFloors& m) const {
  // Token i of a prompt attends to i + 1 positions: on average (tokens + 1) / 2.
  const double flops = seqs * (tokens * layer_flops((tokens + 1) / 2.0) + lm_head_flops());
  return std::max(flops / m.fma_flops_per_s, weight_bytes() / m.read_bytes_per_s);
}

}  // namespace tw::bench
