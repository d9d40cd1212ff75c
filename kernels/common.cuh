// Shared device-side helpers of the kernels in kernels/ (CUDA code only).
//
// TW_LAUNCH_CHECK(what) after a launch turns the launch error into the
// launcher's Status; CeilDiv, warp reductions in a fixed order (xor
// butterflies: the same tree for every launch, so results are deterministic).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "common/status.h"

namespace tw::kernels {

inline Status CudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::Ok();
  return Status::Error(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

#define TW_LAUNCH_CHECK(what)                                               \
  do {                                                                      \
    cudaError_t tw_err_ = cudaGetLastError();                               \
    if (tw_err_ != cudaSuccess) return ::tw::kernels::CudaStatus(tw_err_, what); \
  } while (0)

__host__ __device__ constexpr int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// Sum over the 32 lanes of a warp, xor tree (every lane gets the total; the
// order of additions is fixed).
__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

inline cudaStream_t AsStream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace tw::kernels
