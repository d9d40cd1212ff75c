// Helpers for the GPU suites (make test-gpu): skip without a device, move
// vectors to and from device memory, poison outputs, compare with a CPU
// reference.
//
// Every suite starts with TW_REQUIRE_GPU(): on a machine without a usable
// GPU (or driver) the test is skipped with the runtime's reason, so the
// binary still runs (and says why) in a CPU-only build environment.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/counter_rng.h"
#include "kernels/device.h"

#define TW_REQUIRE_GPU()                                              \
  do {                                                                \
    std::string tw_why_;                                              \
    if (::tw::kernels::DeviceCount(&tw_why_) == 0) {                     \
      GTEST_SKIP() << "no usable GPU: " << tw_why_;                   \
    }                                                                 \
  } while (0)

#define TW_ASSERT_OK(expr)                                            \
  do {                                                                \
    ::tw::Status tw_s_ = (expr);                                      \
    ASSERT_TRUE(tw_s_.ok()) << #expr << ": " << tw_s_.message();      \
  } while (0)

namespace tw::testing {

// The suites' sizes. "full" (the default, for a GPU) runs GPT-2 small's
// matrices, contexts up to 1024 and the 50,257-token vocabulary wherever a
// test is about them. "ci" (TW_GPU_TEST_SHAPES=ci, which make test-gpu-emu
// sets: the CPU emulator runs a kernel about 10^5 times slower than a GPU)
// keeps every property and every code path (both matmul paths, split-K,
// ragged tiles and panels, chunk boundaries, empty chunks, the sampler's
// tiles and ties) on smaller shapes; each test says what it shrinks.
inline bool CiShapes() {
  const char* s = std::getenv("TW_GPU_TEST_SHAPES");
  return s != nullptr && std::string(s) == "ci";
}

// A device copy of a host vector (or `n` poisoned elements: 0xFF bytes,
// NaN for floats), freed on destruction.
template <typename T>
class DeviceVector {
 public:
  explicit DeviceVector(const std::vector<T>& host) : n_(host.size()) {
    Status s = buf_.Allocate(n_ * sizeof(T));
    EXPECT_TRUE(s.ok()) << s.message();
    if (s.ok() && n_ > 0) s = kernels::CopyToDevice(buf_.get(), host.data(), n_ * sizeof(T));
    EXPECT_TRUE(s.ok()) << s.message();
  }
  explicit DeviceVector(size_t n) : n_(n) {
    Status s = buf_.Allocate(n_ * sizeof(T));
    EXPECT_TRUE(s.ok()) << s.message();
    if (s.ok() && n_ > 0) s = kernels::Memset(buf_.get(), 0xFF, n_ * sizeof(T));
    EXPECT_TRUE(s.ok()) << s.message();
  }
  T* get() const { return buf_.as<T>(); }
  size_t size() const { return n_; }
  std::vector<T> ToHost() const {
    std::vector<T> out(n_);
    Status s = kernels::DeviceSync();
    if (s.ok() && n_ > 0) s = kernels::CopyToHost(out.data(), buf_.get(), n_ * sizeof(T));
    if (s.ok()) s = kernels::DeviceSync();
    EXPECT_TRUE(s.ok()) << s.message();
    return out;
  }

 private:
  size_t n_;
  kernels::DeviceBuffer buf_;
};

// Every element: |got - want| <= atol + rtol * |want|, no NaN. Reports the
// first few failures with their index.
inline ::testing::AssertionResult AllClose(const std::vector<float>& got, const std::vector<float>& want,
                                           float atol, float rtol) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  }
  size_t bad = 0;
  std::string first;
  double max_err = 0;
  for (size_t i = 0; i < got.size(); i++) {
    double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    bool ok = !std::isnan(got[i]) && !std::isnan(want[i]) && d <= atol + rtol * std::fabs(want[i]);
    if (!std::isnan(d)) max_err = std::max(max_err, d);
    if (!ok) {
      if (bad < 5) first += " [" + std::to_string(i) + "] got " + std::to_string(got[i]) + " want " + std::to_string(want[i]) + ";";
      bad++;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess() << "max |d| " << max_err;
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements differ (max |d| " << max_err << "):" << first;
}

// Reproducible random floats in [lo, hi) (common/counter_rng.h), never
// exactly zero.
inline std::vector<float> RandomVector(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) {
    v[i] = lo + (hi - lo) * CounterUniform(seed, i);
    if (v[i] == 0.0f) v[i] = 1e-3f;
  }
  return v;
}

}  // namespace tw::testing
