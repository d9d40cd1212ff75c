// The machine's floors, measured on the bench's own threads, and the work a
// GPT-2 forward pass cannot avoid: together they give the time no
// implementation can beat on this machine (a "floor"), which the benches print
// next to what they measured.
//
// - Read bandwidth: a STREAM-like read loop of our own over 1 GiB.
// - fp32 FMA peak: independent FMAs in registers on every thread (AVX-512
//   where the CPU has it, else AVX2; and AVX2's alone, for runs with the
//   kernels forced to that level). Short bursts: a long run of real
//   matmuls on every core sustains somewhat less.
// - Gpt2Work: bytes of weights a step must read and FLOPs it must do (the
//   four matrices of every layer and the LM head; attention's q.K and p.V).
//   A step's floor is max(FLOPs / peak, bytes / bandwidth): the two can at
//   best overlap completely.
//
// Thread-safety: the Measure* functions run tasks on `pool` (ParallelFor: one
// caller at a time). Gpt2Work is a value.
#pragma once

#include "cpu/kernels.h"
#include "cpu/thread_pool.h"
#include "model/gpt2.h"

namespace tw::bench {

// Bytes/s read from a 1 GiB buffer by all of the pool's threads (the median
// of `reps` passes).
double MeasureReadBandwidth(cpu::ThreadPool* pool, int reps);

// FLOP/s (2 per FMA lane) of independent FMAs on all of the pool's threads.
double MeasureFmaPeak(cpu::ThreadPool* pool);

struct MachineFloors {
  double read_bytes_per_s = 0;
  double fma_flops_per_s = 0;       // at the widest level (AVX-512 where the CPU has it)
  double fma_avx2_flops_per_s = 0;  // 8-lane AVX2 FMAs (on AVX-512 CPUs with full-width
                                    // units, e.g. Zen 5, half the above; Zen 4: the same)
};

// Both floors, measured now on the pool's threads (read bandwidth: the
// median of `read_reps` passes), the FMA peak at the widest level and at AVX2.
MachineFloors MeasureFloors(cpu::ThreadPool* pool, int read_reps);

// The floors a kernel level can reach: fma_flops_per_s becomes the AVX2
// peak for a level below AVX-512 (a run with the kernels forced to AVX2 is
// held to what AVX2 FMAs can do on this CPU, as on an AVX2-only machine).
MachineFloors AtLevel(const MachineFloors& m, cpu::Isa isa);

// The better of two measurements of each (on a shared host the state moves
// during a run; a floor is the best the machine was seen to do).
MachineFloors Best(const MachineFloors& a, const MachineFloors& b);

struct Gpt2Work {
  // bytes_per_weight: how the matrices are stored (4: float32; 2: bfloat16;
  // 1.125: q8, a byte and a 4-byte scale per 32 weights).
  explicit Gpt2Work(const model::Gpt2Config& cfg, double bytes_per_weight = 4);

  // Weight bytes read once by any pass: every layer's four matrices and the
  // LM head (tied to wte), at bytes_per_weight each.
  double weight_bytes() const;
  // FLOPs of one token through the layers' matrices at context `ctx` (its
  // attention over ctx positions included), without the LM head.
  double layer_flops(double ctx) const;
  double lm_head_flops() const;  // one row of logits
  // K/V bytes one token of context costs a step to read.
  double kv_bytes_per_position() const;

  // Floors of one decode step of `batch` sequences at context `ctx` each, and
  // of one prefill pass of `seqs` prompts of `tokens` tokens each (logits for
  // each prompt's last position only).
  double DecodeFloorSeconds(int batch, double ctx, const MachineFloors& m) const;
  double PrefillFloorSeconds(int seqs, int tokens, const MachineFloors& m) const;
  // Whether that decode step's floor is its FLOPs (else its reads).
  bool DecodeComputeBound(int batch, double ctx, const MachineFloors& m) const;

 private:
  double C_, L_, V_;
  double layer_macs_;  // per token: C x 3C + C x C + C x 4C + 4C x C
  double bytes_per_weight_;
};

}  // namespace tw::bench
