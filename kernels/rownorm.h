// Row kernels of the GPT-2 forward pass on the GPU: the embedding, layer
// norm, the residual add (with a fixed-order reduction of split-K partials),
// their fused forms, and GELU (tanh form). The CPU semantics they follow are
// cpu::Add, cpu::LayerNorm and cpu::GeluTanh (src/cpu/kernels.h) as called by
// model::Gpt2Forward (src/model/forward.cc).
//
// How a row is computed: one warp per row (4 rows per 128-thread block),
// the row held in registers as float4s (lane l holds columns 4l..4l+3,
// 4(l+32).., ...); the mean and the variance are two passes over those
// registers, each lane summing its own elements in column order and the 32
// lane sums added by a fixed xor tree (WarpSum). Nothing depends on how many
// rows there are or which: a row's result is bitwise the same alone or in
// any batch. No atomics.
//
// Numerics (no fast-math intrinsics): rstd = 1.0f / sqrtf(var + eps) with
// IEEE sqrt and division (the CPU's form), population variance, out =
// fmaf((x - mean) * rstd, w, b) (the CPU's vector form). GELU is computed as
// x / (1 + expf(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3): the CPU's form,
// equal to 0.5 x (1 + tanh(u)) but without its cancellation for negative x;
// expf is the accurate one (not __expf). Results agree with the CPU to
// float rounding (the sums are taken in a different order), not bitwise.
//
// Supported shapes: C (n_embd) a multiple of 4 in [4, kRowMaxC] (GPT-2
// small 768, medium 1024, large 1280, xl 1600, the tiny test model 64);
// every float pointer 16-byte aligned (cudaMalloc'd, or offset by a multiple
// of 4 floats), except GeluTanh's, which takes any alignment. Others are
// refused with a Status naming the argument.
//
// Threads: any host thread; each call enqueues one kernel on `stream`
// (a cudaStream_t, nullptr for the default stream) and returns without
// waiting. Memory: none allocated. Never: synchronizes, allocates, or reads
// outside the stated shapes (token ids and positions are read on the
// device only: see Embed).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace tw::kernels {

// The largest row width the row kernels take (64 floats per lane).
constexpr int kRowMaxC = 2048;

// x (rows, C) = wte[tokens[r]] + wpe[positions[r]]   (the same float
// addition as the CPU: bitwise equal to cpu::Add's).
//   tokens (rows), positions (rows): int32 on the device
//   wte (vocab, C), wpe (n_ctx, C)
// The ids are on the device, so the launcher cannot check them: the caller
// must refuse out-of-range token ids and positions before they get here.
// Defensively, a row whose token is outside [0, vocab) or whose position
// is outside [0, n_ctx) is written as NaN (never a read out of bounds), so
// the mistake shows in the logits instead of reading another tensor.
// rows == 0 does nothing.
Status Embed(const int32_t* tokens, const int32_t* positions, int rows, const float* wte, int vocab,
             const float* wpe, int n_ctx, int C, float* x, void* stream);

// Embed, then out (rows, C) = LayerNorm(x) with (w, b) (C): layer 0's
// first two steps in one kernel. x and out must be different buffers.
Status EmbedLayerNorm(const int32_t* tokens, const int32_t* positions, int rows, const float* wte, int vocab,
                      const float* wpe, int n_ctx, int C, float* x, const float* w, const float* b, float eps,
                      float* out, void* stream);

// out (rows, C) = (x - mean) / sqrt(var + eps) * w + b per row (population
// variance), as cpu::LayerNorm. w, b (C). out may be x (in place).
Status LayerNorm(const float* x, int rows, int C, const float* w, const float* b, float eps, float* out,
                 void* stream);

// The residual add: x (rows, C) = x + bias + delta[0] + delta[1] + ... +
// delta[parts - 1], added in that order, per element.
//   delta: `parts` arrays of (rows, C), part p at delta + p * part_stride
//          (floats; ignored when parts == 1, else >= rows * C and a
//          multiple of 4): a matmul's output, or its split-K partial sums
//          (fixed order: the result does not depend on the batch)
//   bias (C) or nullptr
// parts in [1, kResidualMaxParts]. delta must not overlap x.
constexpr int kResidualMaxParts = 16;
Status ResidualAdd(float* x, const float* delta, int parts, size_t part_stride, const float* bias, int rows, int C,
                   void* stream);

// ResidualAdd, then out (rows, C) = LayerNorm(x) with (w, b): the residual
// stream x is updated in place and its normalised copy written to out (the
// next matmul's input). out must not be x or delta.
Status ResidualLayerNorm(float* x, const float* delta, int parts, size_t part_stride, const float* bias, int rows,
                         int C, const float* w, const float* b, float eps, float* out, void* stream);

// x (n) = GELU(x) in place, tanh form (see above), elementwise: any n >= 0,
// any 4-byte alignment (16-byte aligned x takes the float4 path).
Status GeluTanh(float* x, size_t n, void* stream);

}  // namespace tw::kernels
