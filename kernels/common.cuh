// Shared device-side helpers of the kernels in kernels/ (CUDA code only).
//
// Launch<Kernel>(grid, block, smem, stream, args...) launches a kernel;
// TW_LAUNCH_CHECK(what) after it turns the launch error into the
// launcher's Status; CeilDiv, warp reductions in a fixed order (xor
// butterflies: the same tree for every launch, so results are deterministic).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

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

// Kernel<<<grid, block, smem, stream>>>(args...), written as a function so
// that the CPU emulator's build (tests/cudaemu), which compiles these files
// as plain C++, runs the same call: each argument converted to the kernel's
// parameter type and copied at the launch, as <<<>>> does. The launch error,
// if any, is left for cudaGetLastError (TW_LAUNCH_CHECK).
// A kernel's dynamic shared memory as `type name[]`: extern __shared__ in
// the CUDA build; the emulator's C++ cannot declare that, and gets a pointer
// to the block's dynamic window.
#if defined(TW_CUDA_EMULATOR)
#define TW_DYNAMIC_SHARED(type, name) type* const name = static_cast<type*>(::cudaemu::DynamicShared())
#else
#define TW_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

template <typename... P, typename... A>
void LaunchKernel(const char* name, void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                  A&&... args) {
#if defined(TW_CUDA_EMULATOR)
  (void)cudaemu::Launch(name, kernel, grid, block, smem, stream, std::forward<A>(args)...);
#else
  (void)name;
  std::tuple<std::decay_t<P>...> params(std::forward<A>(args)...);
  std::apply(
      [&](auto&... p) {
        void* ptrs[] = {static_cast<void*>(&p)..., nullptr};
        (void)cudaLaunchKernel(kernel, grid, block, ptrs, smem, stream);
      },
      params);
#endif
}

template <auto Kernel, typename... A>
void Launch(dim3 grid, dim3 block, size_t smem, cudaStream_t stream, A&&... args) {
#if defined(TW_CUDA_EMULATOR)
  const char* name = cudaemu::KernelName<Kernel>();
#else
  const char* name = nullptr;
#endif
  LaunchKernel(name, Kernel, grid, block, smem, stream, std::forward<A>(args)...);
}

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
