// Cache-line-aligned float buffers for weights, the KV pool and scratch.
// Allocation happens only where a caller asks (start-up); any thread.
#pragma once

#include <cstddef>
#include <memory>

namespace tw::cpu {

constexpr size_t kBufferAlignment = 64;  // bytes: one cache line / one zmm
constexpr size_t kHugePageBytes = 2 << 20;

struct AlignedFree {
  void* mapping = nullptr;  // set for buffers mapped whole (see AllocAligned)
  size_t mapped_bytes = 0;
  void operator()(float* p) const;
};
using AlignedFloats = std::unique_ptr<float[], AlignedFree>;

// `floats` floats aligned to kBufferAlignment, uninitialised; null on failure.
// Buffers of kHugePageBytes or more are mapped on their own (mmap), 2 MB
// aligned and advised for transparent huge pages.
AlignedFloats AllocAligned(size_t floats);

}  // namespace tw::cpu
