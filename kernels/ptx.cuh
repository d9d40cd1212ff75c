// The kernels' inline PTX, in one place: each instruction the kernels use
// is a small function here (CUDA code only).
//
// In the CUDA build each is an asm statement. In the CPU emulator's build
// (tests/cudaemu, `make test-gpu-emu`) the same statement text, a macro
// shared by both branches, goes with the same operands to cudaemu::Asm,
// which emulates exactly these forms from the PTX ISA and aborts on any
// other text: what the emulator checks is what ptxas assembles.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tw::kernels {

// d (16 x 8) += a (16 x 8, row) * b (8 x 8, col), tf32 inputs, fp32
// accumulate; a warp-wide instruction (every lane calls it together).
#define TW_PTX_MMA_M16N8K8_TF32                                                                      \
  "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, " \
  "{%0, %1, %2, %3};\n"
__device__ __forceinline__ void MmaTf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(TW_CUDA_EMULATOR)
  cudaemu::Asm(TW_PTX_MMA_M16N8K8_TF32,
               {cudaemu::AsmInOut(d[0]), cudaemu::AsmInOut(d[1]), cudaemu::AsmInOut(d[2]), cudaemu::AsmInOut(d[3]),
                cudaemu::AsmIn(a[0]), cudaemu::AsmIn(a[1]), cudaemu::AsmIn(a[2]), cudaemu::AsmIn(a[3]),
                cudaemu::AsmIn(b0), cudaemu::AsmIn(b1)});
#else
  asm(TW_PTX_MMA_M16N8K8_TF32
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// 16-byte global -> shared copy that bypasses the registers (sm_80+); it
// lands only after a CopyAsyncCommit and a CopyAsyncWait covering it.
#define TW_PTX_CP_ASYNC_16 "cp.async.cg.shared.global [%0], [%1], 16;\n"
__device__ __forceinline__ void CopyAsync16(float* smem_dst, const float* gmem_src) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
#if defined(TW_CUDA_EMULATOR)
  cudaemu::Asm(TW_PTX_CP_ASYNC_16, {cudaemu::AsmIn(dst), cudaemu::AsmIn(gmem_src)});
#else
  asm volatile(TW_PTX_CP_ASYNC_16 ::"r"(dst), "l"(gmem_src) : "memory");
#endif
}

// Closes the group of this thread's copies issued since the last commit.
#define TW_PTX_CP_ASYNC_COMMIT "cp.async.commit_group;\n"
__device__ __forceinline__ void CopyAsyncCommit() {
#if defined(TW_CUDA_EMULATOR)
  cudaemu::Asm(TW_PTX_CP_ASYNC_COMMIT, {});
#else
  asm volatile(TW_PTX_CP_ASYNC_COMMIT ::: "memory");
#endif
}

// Waits until this thread's copy groups are done (all of them: group count 0).
#define TW_PTX_CP_ASYNC_WAIT_ALL_GROUPS "cp.async.wait_group 0;\n"
__device__ __forceinline__ void CopyAsyncWaitAllGroups() {
#if defined(TW_CUDA_EMULATOR)
  cudaemu::Asm(TW_PTX_CP_ASYNC_WAIT_ALL_GROUPS, {});
#else
  asm volatile(TW_PTX_CP_ASYNC_WAIT_ALL_GROUPS ::: "memory");
#endif
}

}  // namespace tw::kernels
