// The kernel development harness (llm.c's dev/cuda way): what every
// kernels/dev/<kernel>.cu program shares.
//
//   CUDA_CHECK(call)           exit with the call, file and line on an error
//   RandomFloats(n, seed)      reproducible inputs in [lo, hi) (never zeros)
//   ToDevice / Poison          copy inputs over; fill an output with NaN
//                              first, so an element nobody wrote fails
//   Validate(...)              every element against the CPU reference:
//                              |gpu - ref| <= atol + rtol * |ref|, NaN never
//                              passes; prints the worst elements
//   Benchmark(repeats, fn)     warm-up, then `repeats` timed runs with CUDA
//                              events, the L2 flushed before each run;
//                              returns the median in ms
//   Ceilings()                 device-to-device copy bandwidth and FMA rate
//                              measured once on this device (the floors)
//   Report(...)                one table line: ms, GB/s and TFLOP/s, and
//                              their fraction of the measured ceilings
//   ParseOptions(...)          the command line every program takes: at
//                              most one part to run (a version number, or a
//                              name such as "launchers") and --no-timing
//   CiShapes()                 TW_GPU_TEST_SHAPES=ci: validate the smaller
//                              CI shapes (see below)
//
// Dev programs are standalone (`make CUDA=1 kernels-dev`, then
// build/cuda/dev/<name> [version] [--no-timing]); they may exit on error.
// Nothing here is used by the server.
//
// As checkers (CI on the CPU emulator, tests/cudaemu: `make CUDA=emu
// build/emu/dev/<name>`, then TW_GPU_TEST_SHAPES=ci build/emu/dev/<name>
// --no-timing): --no-timing validates only (no ceilings, no timed runs), and
// CiShapes() swaps each program's shapes for smaller ones that reach the
// same code paths (each program's header says which) and validates only;
// the emulator runs a kernel about 10^5 times slower than a GPU. Every
// program ends with "all validations passed" and exit status 0, or "SOME
// VALIDATIONS FAILED" and 1.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "common/counter_rng.h"
#include "kernels/common.cuh"
#include "kernels/device.h"

#define CUDA_CHECK(call)                                                                   \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

namespace tw::dev {

// TW_GPU_TEST_SHAPES=ci: the switch tests/gpu/gpu_test_util.h's CiShapes()
// reads, with the same meaning (every code path, smaller shapes).
inline bool CiShapes() {
  const char* s = std::getenv("TW_GPU_TEST_SHAPES");
  return s != nullptr && std::strcmp(s, "ci") == 0;
}

// What to run: `only` is one of the program's parts (empty: every part);
// `timing` is false with --no-timing or CiShapes() (validation only).
struct Options {
  std::string only;
  bool timing = true;
};

// Parses `[part] [--no-timing]` (either order), where `parts` lists the
// accepted part names (e.g. {"1", "2", "3"}) and `parts_help` says what
// one is. Prints the usage and exits on -h / --help (status 0) or anything
// else it does not know (status 2). Under CiShapes() it says so and turns
// timing off.
inline Options ParseOptions(int argc, char** argv, const std::vector<std::string>& parts, const char* parts_help) {
  std::string alternatives;
  for (const std::string& p : parts) alternatives += (alternatives.empty() ? "" : "|") + p;
  auto usage = [&](FILE* to, int status) {
    const char* env = "TW_GPU_TEST_SHAPES=ci";
    const int w = static_cast<int>(std::max(alternatives.size(), std::strlen(env)));
    std::fprintf(to,
                 "usage: %s [%s] [--no-timing]\n"
                 "  %-*s  %s (default: all)\n"
                 "  %-*s  validate only: no ceilings, no timed runs\n"
                 "  %-*s  this message\n"
                 "  %-*s  (environment) validate smaller shapes that reach the same code paths,\n"
                 "  %-*s  without timing (CI on the CPU emulator)\n",
                 argv[0], alternatives.c_str(), w, alternatives.c_str(), parts_help, w, "--no-timing", w,
                 "-h, --help", w, env, w, "");
    std::exit(status);
  };
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-timing") {
      o.timing = false;
    } else if (a == "-h" || a == "--help") {
      usage(stdout, 0);
    } else if (o.only.empty() && std::find(parts.begin(), parts.end(), a) != parts.end()) {
      o.only = a;
    } else {
      usage(stderr, 2);
    }
  }
  if (CiShapes()) {
    // Timings at the CI shapes would be compared with floors computed for
    // the full ones: the CI shapes are for validation only.
    o.timing = false;
    std::printf("CI shapes (TW_GPU_TEST_SHAPES=ci): validation only\n");
  }
  return o;
}

// Reproducible uniform floats in [lo, hi) (common/counter_rng.h), never zero.
inline std::vector<float> RandomFloats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) {
    v[i] = lo + (hi - lo) * tw::CounterUniform(seed, i);
    if (v[i] == 0.0f) v[i] = 1e-3f;
  }
  return v;
}

template <typename T>
T* ToDevice(const std::vector<T>& host) {
  T* d = nullptr;
  CUDA_CHECK(cudaMalloc(&d, host.size() * sizeof(T)));
  CUDA_CHECK(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <typename T>
T* DeviceAlloc(size_t n) {
  T* d = nullptr;
  CUDA_CHECK(cudaMalloc(&d, n * sizeof(T)));
  return d;
}

// Fills with 0xFF bytes: a float NaN, an int -1.
inline void Poison(void* d, size_t bytes) { CUDA_CHECK(cudaMemset(d, 0xFF, bytes)); }

// Checks gpu (device, n floats) against ref (host). Prints the worst
// elements; returns true when every element passes.
inline bool Validate(const char* name, const float* gpu_device, const float* ref, size_t n,
                     float atol, float rtol) {
  std::vector<float> got(n);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(got.data(), gpu_device, n * sizeof(float), cudaMemcpyDeviceToHost));
  size_t bad = 0, nans = 0, worst = 0;
  double worst_excess = -1.0, max_abs = 0.0, sum_sq_err = 0.0, sum_sq_ref = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = std::fabs(static_cast<double>(got[i]) - ref[i]);
    sum_sq_err += d * d;
    sum_sq_ref += static_cast<double>(ref[i]) * ref[i];
    if (std::isnan(got[i]) || std::isnan(ref[i])) {
      nans++;
      bad++;
      continue;
    }
    max_abs = std::max(max_abs, d);
    double excess = d - (atol + rtol * std::fabs(ref[i]));
    if (excess > 0) bad++;
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
  }
  double rel = sum_sq_ref > 0 ? std::sqrt(sum_sq_err / sum_sq_ref) : std::sqrt(sum_sq_err);
  std::printf("  %-28s %s  max|d| %.3e  rel-l2 %.3e  bad %zu/%zu  NaN %zu  (worst [%zu] gpu %.7g ref %.7g)\n",
              name, bad == 0 ? "ok  " : "FAIL", max_abs, rel, bad, n, nans, worst, got[worst], ref[worst]);
  return bad == 0;
}

// A buffer twice the L2 size, rewritten before each timed run so that no
// input is still in the cache (llm.c's benchmark_kernel does the same).
inline void FlushL2() {
  static void* buf = nullptr;
  static size_t bytes = 0;
  if (buf == nullptr) {
    int dev = 0, l2 = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    bytes = static_cast<size_t>(std::max(l2, 1 << 20)) * 2;
    CUDA_CHECK(cudaMalloc(&buf, bytes));
  }
  CUDA_CHECK(cudaMemsetAsync(buf, 0, bytes));
}

// Median milliseconds of `repeats` runs of fn (after `warmup` untimed
// runs), each timed with events and preceded by an L2 flush.
inline float Benchmark(int repeats, const std::function<void()>& fn, int warmup = 3, bool flush_l2 = true) {
  for (int i = 0; i < warmup; i++) fn();
  CUDA_CHECK(cudaGetLastError());
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int i = 0; i < repeats; i++) {
    if (flush_l2) FlushL2();
    CUDA_CHECK(cudaEventRecord(a));
    fn();
    CUDA_CHECK(cudaEventRecord(b));
    CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventDestroy(a));
  CUDA_CHECK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Ceilings {
  double copy_gbps = 0;      // device-to-device copy, bytes read + written per second / 1e9
  double fp32_tflops = 0;    // FMA loop, 2 flops per FMA
};

// Measured once per process on this device (kernels::MeasureCeilings).
inline const Ceilings& MeasuredCeilings() {
  static Ceilings c = [] {
    Ceilings r;
    tw::Status s = tw::kernels::MeasureCeilings(&r.copy_gbps, &r.fp32_tflops);
    if (!s.ok()) {
      std::fprintf(stderr, "ceilings: %s\n", s.message().c_str());
      std::exit(1);
    }
    std::printf("ceilings: copy %.0f GB/s (read + write), fp32 FMA %.1f TFLOP/s\n", r.copy_gbps, r.fp32_tflops);
    return r;
  }();
  return c;
}

// One line: name, median ms, effective GB/s (`bytes` = the fewest bytes the
// kernel must move) and TFLOP/s, each with its fraction of the ceiling.
inline void Report(const char* name, float ms, double bytes, double flops) {
  const Ceilings& c = MeasuredCeilings();
  double gbps = bytes / (ms * 1e-3) / 1e9;
  double tflops = flops / (ms * 1e-3) / 1e12;
  std::printf("  %-36s %9.4f ms  %7.0f GB/s (%3.0f%%)  %6.2f TFLOP/s (%3.0f%%)\n", name, ms, gbps,
              100.0 * gbps / c.copy_gbps, tflops, 100.0 * tflops / c.fp32_tflops);
}

}  // namespace tw::dev
