// Counter-based random numbers for sampling: the uniform a request draws for
// its n-th token is a pure function of (seed, n), so it does not depend on
// which other requests share the batch, on which thread or device draws it,
// or on how many draws happened before. The CPU sampler and the CUDA
// sampling kernel call the same inline functions, so given the same logits
// they draw the same token.
//
// Mix64 is splitmix64's finaliser (Steele, Lea and Flood's constants); two
// rounds over the seed and the counter decorrelate neighbouring seeds and
// neighbouring counters. 24 bits make the float uniform exact.
//
// Threads: pure functions. Never allocates. Usable from host C++ and from
// CUDA device code (TW_HOST_DEVICE).
#pragma once

#include <cstdint>

#include "common/host_device.h"

namespace tw {

TW_HOST_DEVICE uint64_t Mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// 64 random bits for draw `counter` of the stream keyed by `seed`.
TW_HOST_DEVICE uint64_t CounterBits(uint64_t seed, uint64_t counter) {
  return Mix64(Mix64(seed) ^ (counter * 0xD1B54A32D192ED03ull));
}

// Uniform in [0, 1) with 24 random bits: k / 2^24.
TW_HOST_DEVICE float CounterUniform(uint64_t seed, uint64_t counter) {
  return static_cast<float>(CounterBits(seed, counter) >> 40) * (1.0f / 16777216.0f);
}

}  // namespace tw
