// TW_HOST_DEVICE: marks an inline function that both host C++ and CUDA
// device code call (`__host__ __device__` when nvcc compiles it, plain
// `inline` otherwise), so one definition serves the CPU and the GPU.
#pragma once

#if defined(__CUDACC__)
#define TW_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define TW_HOST_DEVICE inline
#endif
