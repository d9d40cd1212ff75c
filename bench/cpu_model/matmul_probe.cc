// Where the matmul time goes, per kernel level and weight format: the
// GPT-2-small matrices (12 layers x 4, and the LM head) each multiplied by
// one row, as a batch-1 decode step does, against two bounds measured in the
// same run; and one layer's matrices multiplied by a prefill's rows.
//
// - cold: one pass over all 49 matrices (weights from memory, the pool's
//   threads), against the read floor: packed bytes / read bandwidth.
// - hot: one thread, one 768 x 256 matrix over and over (786 KB in f32: it
//   stays in a 1 MB L2 in every format), against the FMA peak of that level on one
//   thread: "of FMA" is weights per second over FMA lanes per second, so 1.0
//   means one FMA lane per weight at the peak, and a tile that spends more
//   vector instructions per weight than the FMA (widening bf16, converting
//   q8) shows below it.
// - prefill: the pool's threads, one layer's 4 matrices multiplied by
//   --prefill-rows rows (200) with Matmul's widening scratch, as a prefill
//   pass does, against the FMA peak of that level; each format's time is
//   also given as f32's time over it at the same level (below 1: slower).
// A format whose hot rate covers its bytes at the read floor with room to
// spare is bound by memory at batch 1; one whose hot rate is about that of
// the read floor is bound by both, and the two overlap only in part.
//
// Usage: build/matmul_probe [--threads N] [--weights f32,bf16,q8]
//                           [--isa avx512,avx2] [--rounds R]
//                           [--prefill-rows N] [--out FILE.json]
// Rounds interleave every (level, format) pair; medians over the rounds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/aligned.h"
#include "cpu/kernels.h"
#include "cpu/thread_pool.h"
#include "lib/cpu_args.h"
#include "lib/floors.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Shape {
  int in, out;
};

// One weight format's packed copies of every matrix.
struct Packed {
  tw::cpu::WeightFormat format;
  std::vector<tw::cpu::AlignedFloats> buffers;
  std::vector<tw::cpu::PackedWeight> weights;  // 12 x (attn, attn_proj, fc, proj), then the LM head
  double bytes = 0;        // of those
  tw::cpu::PackedWeight hot;  // (768, 256), in the last buffer
};

struct Variant {
  tw::cpu::Isa isa;
  const Packed* packed;
  std::vector<double> cold_s, hot_s, prefill_s;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace tw;
  int threads = cpu::ThreadPool::HardwareThreads();
  int rounds = 5, prefill_rows = 200;
  std::string weights_list = "f32,bf16,q8", out_path;
  std::string isa_list = cpu::IsaName(cpu::BestIsa());
  if (cpu::BestIsa() == cpu::Isa::kAvx512) isa_list += ",avx2";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (a == "--weights" && i + 1 < argc) weights_list = argv[++i];
    else if (a == "--isa" && i + 1 < argc) isa_list = argv[++i];
    else if (a == "--prefill-rows" && i + 1 < argc) prefill_rows = std::atoi(argv[++i]);
    else if (a == "--out" && i + 1 < argc) out_path = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: %s [--threads N] [--weights f32,bf16,q8] [--isa avx512,avx2] [--rounds R] "
                   "[--prefill-rows N] [--out FILE.json]\n",
                   argv[0]);
      return 2;
    }
  }
  if (threads < 1 || rounds < 1 || prefill_rows < 1) {
    return std::fprintf(stderr, "--threads, --rounds and --prefill-rows must be >= 1\n"), 2;
  }
  std::vector<cpu::Isa> isas;
  std::vector<cpu::WeightFormat> formats;
  if (Status st = bench::ParseIsaList(isa_list, &isas); !st.ok()) {
    return std::fprintf(stderr, "%s\n", st.message().c_str()), 2;
  }
  if (Status st = bench::ParseWeightList(weights_list, &formats); !st.ok()) {
    return std::fprintf(stderr, "%s\n", st.message().c_str()), 2;
  }

  // GPT-2 small's matrices; every layer gets its own copy (a pass reads
  // each from memory, as a step does) packed from the same source values.
  const int C = 768, V = 50257, kLayers = 12, kHotOut = 256;
  std::vector<Shape> shapes;
  for (int l = 0; l < kLayers; ++l) {
    for (Shape s : {Shape{C, 3 * C}, Shape{C, C}, Shape{C, 4 * C}, Shape{4 * C, C}}) shapes.push_back(s);
  }
  shapes.push_back({C, V});
  std::vector<float> source(static_cast<size_t>(C) * V);  // the largest matrix; smaller ones use its start
  uint32_t state = 12345;
  for (float& v : source) {
    state = state * 1664525u + 1013904223u;
    v = (static_cast<float>(state >> 8) / 16777216.0f - 0.5f) * 0.04f;
  }
  std::vector<Packed> packs;
  for (cpu::WeightFormat format : formats) {
    Packed p;
    p.format = format;
    for (const Shape& s : shapes) {
      const size_t bytes = cpu::PackedWeightBytes(p.format, s.in, s.out);
      p.buffers.push_back(cpu::AllocAligned(bytes / sizeof(float)));
      if (!p.buffers.back()) return std::fprintf(stderr, "cannot allocate %zu bytes\n", bytes), 1;
      p.weights.push_back(cpu::PackWeightAs(p.format, source.data(), s.in, s.out, false, p.buffers.back().get()));
      p.bytes += static_cast<double>(bytes);
    }
    p.buffers.push_back(cpu::AllocAligned(cpu::PackedWeightBytes(p.format, C, kHotOut) / sizeof(float)));
    if (!p.buffers.back()) return std::fprintf(stderr, "cannot allocate the hot matrix\n"), 1;
    p.hot = cpu::PackWeightAs(p.format, source.data(), C, kHotOut, false, p.buffers.back().get());
    packs.push_back(std::move(p));
  }
  std::vector<Variant> variants;
  for (cpu::Isa isa : isas) {
    for (const Packed& p : packs) variants.push_back(Variant{isa, &p, {}, {}, {}});
  }

  cpu::ThreadPool pool(threads);
  const bench::MachineFloors before = bench::MeasureFloors(&pool, 3);
  std::vector<float> x(4 * C, 0.5f), y(V + cpu::kPanelWidth);
  for (int i = 0; i < 4 * C; ++i) x[i] = 0.001f * static_cast<float>(i % 97) - 0.05f;
  const int kHotCalls = 200;
  // The prefill pass: rows of activations and outputs as wide as the widest
  // of layer 0's matrices, and Matmul's scratch for every thread.
  std::vector<float> px(static_cast<size_t>(prefill_rows) * 4 * C), py(static_cast<size_t>(prefill_rows) * 4 * C);
  for (size_t i = 0; i < px.size(); ++i) px[i] = 0.001f * static_cast<float>(i % 89) - 0.04f;
  cpu::AlignedFloats scratch = cpu::AllocAligned(static_cast<size_t>(threads) * cpu::kMatmulScratchFloats);
  if (!scratch) return std::fprintf(stderr, "cannot allocate the widening scratch\n"), 1;
  double prefill_weights = 0;  // layer 0's 4 matrices
  for (int m = 0; m < 4; ++m) prefill_weights += static_cast<double>(shapes[m].in) * shapes[m].out;
  for (int round = 0; round <= rounds; ++round) {  // round 0 warms up
    for (Variant& v : variants) {
      if (!cpu::ForceIsa(v.isa).ok()) return 1;
      auto a = Clock::now();
      for (const cpu::PackedWeight& w : v.packed->weights) cpu::Matmul(&pool, x.data(), 1, w, nullptr, y.data(), false);
      const double cold = Seconds(a, Clock::now());
      const cpu::PackedWeight& hot = v.packed->hot;
      for (int i = 0; i < 20; ++i) cpu::Matmul(nullptr, x.data(), 1, hot, nullptr, y.data(), false);
      std::vector<double> calls;
      for (int i = 0; i < kHotCalls; ++i) {
        a = Clock::now();
        cpu::Matmul(nullptr, x.data(), 1, hot, nullptr, y.data(), false);
        calls.push_back(Seconds(a, Clock::now()));
      }
      a = Clock::now();
      for (int m = 0; m < 4; ++m) {
        cpu::Matmul(&pool, px.data(), prefill_rows, v.packed->weights[m], nullptr, py.data(), false, scratch.get());
      }
      const double prefill = Seconds(a, Clock::now());
      if (round > 0) v.cold_s.push_back(cold), v.hot_s.push_back(Median(calls)), v.prefill_s.push_back(prefill);
    }
  }
  cpu::ResetIsa();
  const bench::MachineFloors floors = bench::Best(before, bench::MeasureFloors(&pool, 3));

  std::string json = "{\n  \"bench\": \"matmul_probe\",\n  \"threads\": " + std::to_string(threads) +
                     ",\n  \"rounds\": " + std::to_string(rounds) + ",\n";
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "  \"read_bytes_per_s\": %.4g,\n  \"fma_peak_flops\": %.4g,\n  \"fma_peak_avx2_flops\": %.4g,\n"
                "  \"prefill_rows\": %d,\n  \"rows\": [\n",
                floors.read_bytes_per_s, floors.fma_flops_per_s, floors.fma_avx2_flops_per_s, prefill_rows);
  json += buf;
  std::printf("floors: read %.1f GB/s; FMA peak %.0f GFLOP/s (avx2 %.0f), %d threads; %d rounds, medians\n",
              floors.read_bytes_per_s / 1e9, floors.fma_flops_per_s / 1e9, floors.fma_avx2_flops_per_s / 1e9, threads,
              rounds);
  double weights_per_pass = 0;
  for (const Shape& s : shapes) weights_per_pass += static_cast<double>(s.in) * s.out;
  for (size_t i = 0; i < variants.size(); ++i) {
    const Variant& v = variants[i];
    const double cold = Median(v.cold_s), hot = Median(v.hot_s), prefill = Median(v.prefill_s);
    // f32's prefill at the same level, if it ran.
    double f32_prefill = 0;
    for (const Variant& u : variants) {
      if (u.isa == v.isa && u.packed->format == cpu::WeightFormat::kF32) f32_prefill = Median(u.prefill_s);
    }
    const double prefill_flops = 2.0 * prefill_rows * prefill_weights / prefill;
    const double read_floor = v.packed->bytes / floors.read_bytes_per_s;
    const double hot_weights_per_s = static_cast<double>(C) * kHotOut / hot;
    // FMA lanes per second on one thread at this level's peak.
    const double lanes_per_s = bench::AtLevel(floors, v.isa).fma_flops_per_s / 2 / threads;
    // The pass at the hot rate on every thread: its compute alone.
    const double compute = weights_per_pass / (hot_weights_per_s * threads);
    std::printf("%-6s %-4s cold pass %6.2f ms (read floor %5.2f ms, %3.0f%%) | hot %5.1f Gweights/s per thread "
                "(%.2f of FMA) -> pass compute %5.2f ms | prefill %d rows %6.2f ms, %4.0f GFLOP/s (%2.0f%% of FMA "
                "peak), f32/this %.3f\n",
                cpu::IsaName(v.isa), cpu::WeightFormatName(v.packed->format), cold * 1e3, read_floor * 1e3,
                100 * read_floor / cold, hot_weights_per_s / 1e9, hot_weights_per_s / lanes_per_s, compute * 1e3,
                prefill_rows, prefill * 1e3, prefill_flops / 1e9,
                100 * prefill_flops / bench::AtLevel(floors, v.isa).fma_flops_per_s,
                f32_prefill > 0 ? f32_prefill / prefill : 0.0);
    std::snprintf(buf, sizeof buf,
                  "    {\"isa\": \"%s\", \"weights\": \"%s\", \"packed_bytes\": %.0f, \"cold_pass_s\": %.6g, "
                  "\"read_floor_s\": %.6g, \"hot_weights_per_s_per_thread\": %.6g, \"of_fma_peak\": %.4f, "
                  "\"pass_compute_s\": %.6g, \"prefill_s\": %.6g, \"prefill_flops_per_s\": %.6g, "
                  "\"prefill_f32_over_this\": %.4f}%s\n",
                  cpu::IsaName(v.isa), cpu::WeightFormatName(v.packed->format), v.packed->bytes, cold, read_floor,
                  hot_weights_per_s, hot_weights_per_s / lanes_per_s, compute, prefill, prefill_flops,
                  f32_prefill > 0 ? f32_prefill / prefill : 0.0, i + 1 < variants.size() ? "," : "");
    json += buf;
  }
  json += "  ]\n}\n";
  if (!out_path.empty()) {
    FILE* f = std::fopen(out_path.c_str(), "w");
    if (!f || std::fwrite(json.data(), 1, json.size(), f) != json.size() || std::fclose(f) != 0) {
      return std::fprintf(stderr, "cannot write %s\n", out_path.c_str()), 1;
    }
  }
  return 0;
}
