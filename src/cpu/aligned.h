// Cache-line-aligned float buffers for weights, the KV pool and scratch.
// Allocation happens only where a caller asks (start-up); any thread.
#pragma once

#include <cstddef>
#include <memory>

namespace tw::cpu {

constexpr size_t kBufferAlignment = 64;  // bytes: one cache line / one zmm

struct AlignedFree {
  void operator()(float* p) const;
};
using AlignedFloats = std::unique_ptr<float[], AlignedFree>;

// `floats` floats aligned to kBufferAlignment, uninitialised; null on failure.
AlignedFloats AllocAligned(size_t floats);

}  // namespace tw::cpu
