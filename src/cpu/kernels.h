// CPU kernels for the GPT-2 forward pass: float32 matmul with bias, layer
// norm, GELU (tanh form), softmax, residual add, and attention that reads K/V
// in place from the paged KV cache.
//
// Dispatch: each kernel exists at three instruction-set levels (scalar,
// AVX2+FMA, AVX-512F), compiled from one generic implementation
// (kernels_simd.inc) into three translation units with different target
// pragmas. The level is chosen at run time from __builtin_cpu_supports, so
// one static binary runs on any x86-64; ForceIsa() pins a level for tests
// and benchmarks. The environment variable TW_CPU_MAX_ISA (scalar, avx2,
// avx512) caps the level a process treats as the CPU's best (BestIsa), to run
// everything as a machine without AVX-512 (or without AVX2) would.
//
// Weights for Matmul are repacked once at load time ("panel-major": for each
// panel of kPanelWidth = 16 output columns, `in` rows of 16 floats; the last
// panel is zero-padded). A (in, out) matrix therefore occupies
// PackedWeightFloats(in, out) floats; in bf16 or q8 (WeightFormat) the same
// order holds 2- or 1-byte elements (q8 adds a float32 scale per 32 rows of
// a column), widened to float32 in registers. The kernel keeps MR x NP panels of
// accumulators in registers (AVX-512: 12 rows x 32 columns, or 8 x 48,
// whichever pads the row count less; AVX2: 6 x 16, or 2 x 48 for one or
// two rows) over K (in passes of about 1024 starting at multiples of 32,
// each continuing from the stored value), so each output is one FMA chain
// over k (q8: one per block, then one FMA per block; kQ8) whatever the
// number of rows: a row's result does not depend on the other rows in the
// batch. The chain is the same at avx2 and avx512 (only the tiles differ),
// so a float32 Matmul gives the same bits at both levels (tested:
// MatmulIsaContract); the scalar level multiplies and adds separately.
//
// Threading: the kernels are pure functions of their arguments; Matmul,
// LayerNorm and GeluTanh split their work over the given ThreadPool (may be
// null: run on the caller). ForceIsa/ResetIsa must not race with kernels.
// Allocation: none; a bf16 / q8 matmul over more than 32 rows (a prefill
// pass) widens its panels into float32 scratch the caller owns, one slice of
// kMatmulScratchFloats per thread (Matmul's `scratch`). Never: allocates,
// throws, or reads outside the stated shapes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "cpu/thread_pool.h"

namespace tw::cpu {

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

const char* IsaName(Isa isa);  // "scalar", "avx2", "avx512"
bool IsaSupported(Isa isa);    // by this CPU and this build (and TW_CPU_MAX_ISA)
Isa BestIsa();                 // the widest supported level
Isa ActiveIsa();               // what the kernels use now (BestIsa() by default)
Status ForceIsa(Isa isa);      // error if this CPU lacks it
void ResetIsa();               // back to BestIsa()

constexpr int kPanelWidth = 16;  // output columns per packed panel

// How a matmul's weights are stored (chosen at load: --weights). Every
// format uses the same panel-major order; only the element differs, and
// the kernels widen each element to float32 in registers, so the math
// (activations, accumulators, bias, residual) stays float32 in all three.
// - kF32:  float32, the exact reference.
// - kBf16: the float32 weight rounded to its top 16 bits (bfloat16, round to
//          nearest, ties to even); widened by a 16-bit shift (exact).
// - kQ8:   symmetric 8-bit with one float32 scale per block of kQ8Block
//          consecutive weights of one output column (along `in`, like
//          llama.cpp's Q8_0 with a float32 scale): scale = max|w| / 127,
//          q = round-to-nearest-even(w / scale) in [-127, 127]. The
//          matmul multiplies x by float(q) (exact) in an FMA chain over each
//          block's k from zero, then adds that partial sum times the block's
//          scale to the output in one FMA (total = fma(partial, scale,
//          total), blocks in k order, total starting from the bias / y):
//          one multiply by the scale per block, not per weight.
enum class WeightFormat { kF32 = 0, kBf16 = 1, kQ8 = 2 };
constexpr int kQ8Block = 32;  // weights per Q8 scale

const char* WeightFormatName(WeightFormat f);  // "f32", "bf16", "q8"
// "f32", "bf16" or "q8" -> *out; anything else is an error naming the choices.
Status ParseWeightFormat(const char* name, WeightFormat* out);

// A weight of logical shape (in, out), packed by PackWeight* or
// PackWeightAs. Exactly one of data / bf16 / q8 is set, by `format`.
struct PackedWeight {
  const float* data = nullptr;  // f32: (ceil(out/16), in, 16)
  int in = 0;
  int out = 0;
  WeightFormat format = WeightFormat::kF32;
  const uint16_t* bf16 = nullptr;     // bf16: (ceil(out/16), in, 16), the top halves of float32
  const int8_t* q8 = nullptr;         // q8: (ceil(out/16), in, 16)
  const float* q8_scales = nullptr;   // q8: (ceil(out/16), ceil(in/32), 16)
};

size_t PackedWeightFloats(int in, int out);
// w: (in, out) row-major, Hugging Face Conv1D layout.
void PackWeight(const float* w, int in, int out, float* dst);
// wt: (out, in) row-major (e.g. the tied LM head wte, (V, C)); packs wt^T.
void PackWeightTransposed(const float* wt, int in, int out, float* dst);
// Only panels [panel_begin, panel_end) of PackWeight (or, with `transposed`,
// PackWeightTransposed) into their place in dst (the whole packed buffer):
// ranges that tile [0, ceil(out/16)) write the same bytes as one whole
// pack, so a caller may pack one matrix on several threads (the trainer
// repacks its weights and gradients every step).
void PackWeightPanels(const float* w, int in, int out, bool transposed, int panel_begin, int panel_end,
                      float* dst);

// Bytes PackWeightAs writes for an (in, out) weight in `format` (a multiple
// of 64: each part starts 64-byte aligned).
size_t PackedWeightBytes(WeightFormat format, int in, int out);
// Packs w (in, out) row-major, or with `transposed` wt (out, in) row-major
// (packing wt^T), in `format` into dst (64-byte aligned,
// PackedWeightBytes(format, in, out) bytes) and returns the view of it.
// f32 is bit for bit PackWeight / PackWeightTransposed.
PackedWeight PackWeightAs(WeightFormat format, const float* w, int in, int out, bool transposed, void* dst);

// The float32 value a weight stands for in `format`: f32 unchanged, bf16
// rounded (what the kernels multiply by), q8 float(q) * scale of its block
// rounded once (the kernels apply the scale per block: kQ8). For tests and
// weights_tool: w (in, out) row-major -> out (in, out).
void DequantizedWeight(WeightFormat format, const float* w, int in, int out, float* dst);
// One float32 rounded to bfloat16 (nearest, ties to even; NaN stays NaN).
uint16_t Bf16FromFloat(float f);
float FloatFromBf16(uint16_t h);

// Floats of widening scratch one thread of a bf16 / q8 Matmul uses (the
// widest register tile's 3 panels x (1024 + 32) rows x 16 floats: 198 KB).
constexpr size_t kMatmulScratchFloats = 3 * (1024 + kQ8Block) * kPanelWidth;

// y (rows, w.out) = x (rows, w.in) @ W + bias   (accumulate=false)
// y (rows, w.out) += x (rows, w.in) @ W + bias  (accumulate=true: residual)
// bias may be null. x and y must not overlap.
// scratch: null, or 64-byte aligned kMatmulScratchFloats floats per thread
// of pool (one without a pool), not shared with a concurrent call. With it
// a bf16 / q8 weight over more than 32 rows is widened to float32 once per
// panel group instead of once per row tile (a prefill pass's speed); the
// result is the same bit for bit with or without it.
void Matmul(ThreadPool* pool, const float* x, int rows, const PackedWeight& w,
            const float* bias, float* y, bool accumulate, float* scratch = nullptr);

// out (rows, C) = (x - mean) / sqrt(var + eps) * w + b, per row. In place ok.
void LayerNorm(ThreadPool* pool, const float* x, int rows, int C, const float* w,
               const float* b, float eps, float* out);

// x = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in place, n floats.
void GeluTanh(ThreadPool* pool, float* x, size_t n);

// out = a + b, n floats (out may alias a or b).
void Add(const float* a, const float* b, float* out, size_t n);

// x = softmax(x), n >= 1 floats, in place (max-subtracted).
void Softmax(float* x, int n);

// The largest non-NaN value of x[0..n) (n >= 0), -infinity if there is none.
float MaxValue(const float* x, int n);

// Unnormalised softmax weights at temperature 1/inv_t, for sampling:
//   out[i] = exp((x[i] - mx) * inv_t), or exactly 0 where x[i] is NaN or the
//   exponent is <= -87 (the weight would be below ~1e-38);
//   block_sums[k] = sum of out[i] for i in [k*kWeightBlock, (k+1)*kWeightBlock).
// mx should be the largest value (MaxValue), so every weight is <= 1.
// block_sums holds (n + kWeightBlock - 1) / kWeightBlock floats.
constexpr int kWeightBlock = 256;
void ExpWeights(const float* x, int n, float mx, float inv_t, float* out, float* block_sums);

// For top-k / top-p thresholds (a NaN x[i] never counts):
// the sum of w[i] over the i with x[i] >= t; with w null, how many there are.
float SumAtLeast(const float* x, const float* w, int n, float t);
// How many i have x[i] >= t; the first `cap` of those i, in increasing order,
// are written to ids.
int CollectAtLeast(const float* x, int n, float t, int32_t* ids, int cap);
// w[i] = 0 where x[i] < t; block_sums as ExpWeights' for the new w.
void KeepAtLeast(const float* x, int n, float t, float* w, float* block_sums);

// Where one (layer, head) of one sequence lives in the paged KV pool:
// token j's key is at pool + block_table[j / block_size] * block_stride
//                            + k_offset + (j % block_size) * head_dim,
// and its value likewise at v_offset.
struct PagedKvHead {
  const float* pool = nullptr;
  const int32_t* block_table = nullptr;
  int block_size = 0;       // tokens per block
  size_t block_stride = 0;  // floats per block
  size_t k_offset = 0;      // floats from a block's start to this (layer, head)'s K
  size_t v_offset = 0;      // ... and V
  int head_dim = 0;
  // Software-prefetch the keys and values ahead of use: for K/V coming from
  // memory (written by earlier steps); off where they were just written and
  // are still in cache (a prompt's first prefill pass), where the prefetch
  // instructions only cost time.
  bool prefetch = true;
};

// One query attends to tokens [0, len) of one head:
//   out (head_dim) = softmax(scale * q . K^T) V
// scores: caller scratch of len floats.
void Attend(const float* q, const PagedKvHead& kv, int len, float scale, float* scores,
            float* out);

// m queries of one sequence at consecutive positions, query i (at q +
// i * q_stride) attending to tokens [0, len0 + i) into out + i * out_stride:
// each output is bit for bit Attend's for that query alone, but the K/V
// blocks are read once for all of them (a prompt's rows in a prefill pass).
// scores: caller scratch of m * (len0 + m - 1) floats.
void AttendRows(const float* q, size_t q_stride, int m, const PagedKvHead& kv, int len0, float scale,
                float* scores, float* out, size_t out_stride);

// One query of `heads` adjacent heads (q and out: heads x head_dim floats)
// attending to tokens [0, len) of each: kv describes the first head, and
// head h's keys and values sit h * head_stride floats further in every
// block. The blocks are walked once for a group of heads: a block's keys of
// every head in it (one contiguous run in the cache's layout), then after
// the softmaxes its values likewise; a group's values fit in half of a 1 MB
// L2, so those asked for during the keys' pass are still there for the
// sums. Each head's output is bit for bit Attend's for that head alone (a
// decode step's rows).
// scores: caller scratch of heads * len floats.
void AttendHeads(const float* q, int heads, const PagedKvHead& kv, size_t head_stride, int len, float scale,
                 float* scores, float* out);

}  // namespace tw::cpu
