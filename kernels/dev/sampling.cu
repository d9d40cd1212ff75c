// Development program for sampling on the GPU (kernels/sampling.{h,cu}):
// the kernel's variants against a double-precision CPU reference of the CPU
// sampler's rules (src/model/sampling.cc), then timed.
//
//   build/cuda/dev/sampling            every version
//   build/cuda/dev/sampling <1|2|3>    one version
//   ... --no-timing                    the validations only
//
// Validation: every version at vocabulary sizes 1, 7, 1000, 1025 (around
// the 512 and 1024 threads of a block and the 128-id tiles) and 50257,
// each with every distribution and parameter set at B = 1, 7 and 32, then
// batch invariance (B 1, 7 and 32). TW_GPU_TEST_SHAPES=ci (validation only,
// for the CPU emulator): B = 3 instead, 4099 (33 tiles, the last of 3 ids)
// in 50257's place, 50257 itself at B = 1 (every distribution and
// parameter set), batch invariance at B = 12.
//
// Floors at GPT-2's vocabulary (V = 50257), fp32 logits, ~4.3 TB/s copy
// rate (so ~2.15 TB/s for a read alone, counted as read + write below as the
// harness does) on an H200:
//   bytes: the logits read once, B * V * 4: B = 1: 201 KB -> 0.05 us;
//   B = 8: 1.6 MB -> 0.37 us; B = 32: 6.4 MB -> 1.5 us. Flops: ~10 per
//   logit for a weight (expf) -> B = 32 is 16 MFLOP, 0.3 us at 60 TFLOP/s.
//   One block per row means one SM per row: a row's passes are bound by one
//   SM's share of L2/memory bandwidth (roughly 100-200 GB/s), so B = 1
//   sits far above the floor (~1-2 us per pass, several passes for top-k /
//   top-p), and B = 32 reaches at most 32/132 of the machine.
//
// Versions (the same kernel template, sampling.cu, included below):
//   v1  512 threads per row, every pass reading the row from global memory
//       (L2 after the first pass).
//   v2  1024 threads per row (the launcher, SampleTokens): twice the loads
//       in flight per SM, so it should be faster per pass at B <= 132
//       where each row has an SM to itself.
//   v3  v2 with the row copied once into shared memory (201 KB of the
//       H200's 227 KB per block; skipped where it does not fit, e.g. an
//       A100): later passes read shared memory instead of L2, which should
//       help top-k / top-p (9-14 passes) and not greedy (1 pass plus the
//       copy).
// Measured on an H200, 2026-12-04 (bench/results/gpu-2026-12-04/kernels.log):
// greedy v1 0.018 ms, v2 0.013, v3 0.013 at B = 1; T=1 v1 0.078, v2 0.039,
// v3 0.038; top-k 40 or top-p 0.9 about 0.31 ms in v2 and v3 (0.33-0.39 in
// v1), whatever B: the selection passes, not bytes, cost the time, and a
// sampled step pays about a third of a B = 1 decode step for them.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/dev/common.h"
#include "kernels/dev/cpu_reference.h"
// The kernel templates themselves (anonymous namespace), so that their
// variants can be timed; the launcher SampleTokens comes with them, and
// kernels.a's copy of sampling.o is then never linked in.
#include "kernels/sampling.cu"

using tw::dev::Benchmark;
using tw::dev::DeviceAlloc;
using tw::dev::Poison;
using tw::dev::RandomFloats;
using tw::dev::Report;
using tw::dev::ToDevice;
using tw::kernels::SampleParams;

namespace {

// How far (as a fraction of the kept weight) a GPU draw may land from the
// reference's interval, and how close a top-p cut may come to its target
// before either neighbouring cut is accepted: the kernel's weights are
// within ~3e-7 of exact (expf's 2 ulp, 2^-40 fixed point); 2e-6 leaves
// room and still fails any real error.
constexpr double kMargin = 2e-6;

// ---- CPU reference: the CPU sampler's rules in double (cpu_reference.h) ------

using tw::dev::RefSampler;

// ---- inputs ----------------------------------------------------------------------

enum class Dist { kUniform, kGpt2Like, kPeaked, kFlat, kTies, kNanInf };
const char* DistName(Dist d) {
  switch (d) {
    case Dist::kUniform: return "uniform";
    case Dist::kGpt2Like: return "gpt2-like";
    case Dist::kPeaked: return "peaked";
    case Dist::kFlat: return "flat";
    case Dist::kTies: return "ties";
    case Dist::kNanInf: return "nan-inf";
  }
  return "?";
}

std::vector<float> MakeRow(Dist d, int V, uint64_t seed) {
  std::vector<float> x;
  switch (d) {
    case Dist::kUniform: x = RandomFloats(V, seed, -8.0f, 8.0f); break;
    case Dist::kGpt2Like: {
      // GPT-2's logits sit far below zero with a tail of likely tokens.
      x = RandomFloats(V, seed, -75.0f, -60.0f);
      std::vector<float> hi = RandomFloats(64, seed + 1, -62.0f, -50.0f);
      for (int j = 0; j < 64 && j < V; ++j) x[(j * 7919 + 13) % V] = hi[j];
      break;
    }
    case Dist::kPeaked:
      x = RandomFloats(V, seed, -4.0f, 4.0f);
      x[(seed * 31) % V] = 12.0f;
      break;
    case Dist::kFlat: x.assign(V, 0.5f); break;
    case Dist::kTies:
      x = RandomFloats(V, seed, 0.0f, 5.0f);
      for (float& v : x) v = std::floor(v) - 2.0f;  // {-2, -1, 0, 1, 2}
      break;
    case Dist::kNanInf:
      x = RandomFloats(V, seed, -3.0f, 3.0f);
      for (int i = 0; i < V; ++i) {
        if (i % 7 == 3) x[i] = NAN;
        else if (i % 5 == 1) x[i] = -INFINITY;
        else if (i % 11 == 2) x[i] = (i % 2) ? -0.0f : 0.0f;
      }
      break;
  }
  return x;
}

struct ParamSet {
  const char* name;
  float temperature;
  int top_k;
  float top_p;
};
const ParamSet kParamSets[] = {
    {"greedy", 0.0f, 0, 1.0f},         {"T=1", 1.0f, 0, 1.0f},
    {"T=0.7 k=40", 0.7f, 40, 1.0f},    {"T=1 p=0.9", 1.0f, 0, 0.9f},
    {"T=1.3 k=40 p=0.9", 1.3f, 40, 0.9f}, {"T=1 k=1", 1.0f, 1, 1.0f},
    {"T=1 p=0", 1.0f, 0, 0.0f},        {"T=1 k=V-1", 1.0f, -1, 1.0f},  // -1: V - 1
    {"T=0.5 p=0.5", 0.5f, 0, 0.5f},    {"T=1e-30", 1e-30f, 0, 1.0f},
};

SampleParams Params(const ParamSet& ps, int V, uint64_t counter) {
  SampleParams p{};
  p.temperature = ps.temperature;
  p.top_k = ps.top_k < 0 ? V - 1 : ps.top_k;
  p.top_p = ps.top_p;
  p.min_p_log = 0.0f;  // off
  p.seed = 0x5EED0000ull + static_cast<uint64_t>(V);
  p.counter = counter;
  return p;
}

// ---- the versions ----------------------------------------------------------------

size_t OptinSharedBytes() {
  int dev = 0, bytes = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return static_cast<size_t>(bytes);
}

bool VersionFits(int version, int V) {
  if (version != 3) return true;
  return sizeof(tw::kernels::SampleShared) + static_cast<size_t>(V) * sizeof(float) <= OptinSharedBytes();
}

void RunVersion(int version, const float* logits, int rows, int V, size_t stride, const SampleParams* params,
                int32_t* ids) {
  tw::Status s = tw::kernels::CheckSampleArgs(logits, rows, V, stride, params, ids);
  if (s.ok()) {
    switch (version) {
      case 1: s = tw::kernels::LaunchSample<512, false>(logits, rows, V, stride, params, ids, nullptr); break;
      case 2: s = tw::kernels::SampleTokens(logits, rows, V, stride, params, ids, nullptr); break;
      default: s = tw::kernels::LaunchSample<1024, true>(logits, rows, V, stride, params, ids, nullptr); break;
    }
  }
  if (!s.ok()) {
    std::fprintf(stderr, "v%d: %s\n", version, s.message().c_str());
    std::exit(1);
  }
}

std::vector<int32_t> IdsToHost(const int32_t* d, int n) {
  std::vector<int32_t> h(n);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(h.data(), d, n * sizeof(int32_t), cudaMemcpyDeviceToHost));
  return h;
}

// Rows r = 0..B-1 of one launch: logits row r % 4 of four distinct rows,
// counter r. Returns false on any draw the reference does not allow.
bool ValidateCase(int version, int V, Dist dist, const ParamSet& ps, int B, int* exact, int* tolerated,
                  int* ambiguous) {
  constexpr int kDistinct = 4;
  std::vector<std::vector<float>> rows(kDistinct);
  for (int k = 0; k < kDistinct; ++k) rows[k] = MakeRow(dist, V, 1000 + 17 * k + V);
  // Padded rows (stride V + 3) with NaN in the padding, which must be ignored.
  const size_t stride = static_cast<size_t>(V) + 3;
  std::vector<float> logits(stride * B, NAN);
  std::vector<SampleParams> params(B);
  for (int r = 0; r < B; ++r) {
    std::memcpy(&logits[stride * r], rows[r % kDistinct].data(), V * sizeof(float));
    params[r] = Params(ps, V, static_cast<uint64_t>(r) * 977 + 5);
  }
  float* dl = ToDevice(logits);
  SampleParams* dp = ToDevice(params);
  int32_t* dids = DeviceAlloc<int32_t>(B);
  Poison(dids, B * sizeof(int32_t));
  RunVersion(version, dl, B, V, stride, dp, dids);
  std::vector<int32_t> ids = IdsToHost(dids, B);
  bool ok = true;
  std::vector<RefSampler> refs;
  for (int r = 0; r < B; ++r) {
    if (r < kDistinct) refs.emplace_back(rows[r].data(), V, params[r]);
    const RefSampler& ref = refs[r % kDistinct];
    const float u = tw::CounterUniform(params[r].seed, params[r].counter);
    if (!ref.Allows(ids[r], u, kMargin)) {
      if (ok) {
        std::printf("    FAIL V %d %s %s B %d: row %d got %d, reference %d (u %.7f)\n", V, DistName(dist), ps.name, B, r,
                    ids[r], ref.Draw(u), u);
      }
      ok = false;
    } else if (ref.Ambiguous(kMargin)) {
      ++*ambiguous;
    } else if (ids[r] == ref.Draw(u)) {
      ++*exact;
    } else {
      ++*tolerated;
    }
  }
  CUDA_CHECK(cudaFree(dl));
  CUDA_CHECK(cudaFree(dp));
  CUDA_CHECK(cudaFree(dids));
  return ok;
}

// Each row alone, and rows 3..9 as a batch of 7, against the batch of B
// (>= 10): the same ids bit for bit.
bool ValidateBatchInvariance(int version, int V, int B) {
  std::vector<float> logits;
  std::vector<SampleParams> params;
  for (int r = 0; r < B; ++r) {
    std::vector<float> row = MakeRow(static_cast<Dist>(r % 6), V, 77 + r);
    logits.insert(logits.end(), row.begin(), row.end());
    params.push_back(Params(kParamSets[r % (sizeof kParamSets / sizeof kParamSets[0])], V, r));
  }
  float* dl = ToDevice(logits);
  SampleParams* dp = ToDevice(params);
  int32_t* dids = DeviceAlloc<int32_t>(B);
  Poison(dids, B * sizeof(int32_t));
  RunVersion(version, dl, B, V, V, dp, dids);
  const std::vector<int32_t> all = IdsToHost(dids, B);
  bool ok = true;
  for (int r = 0; r < B; ++r) {
    Poison(dids, sizeof(int32_t));
    RunVersion(version, dl + static_cast<size_t>(r) * V, 1, V, V, dp + r, dids);
    ok &= IdsToHost(dids, 1)[0] == all[r];
  }
  Poison(dids, 7 * sizeof(int32_t));
  RunVersion(version, dl + 3 * static_cast<size_t>(V), 7, V, V, dp + 3, dids);
  const std::vector<int32_t> seven = IdsToHost(dids, 7);
  for (int r = 0; r < 7; ++r) ok &= seven[r] == all[3 + r];
  const std::string name = "batch invariance V " + std::to_string(V) + " (B 1, 7, " + std::to_string(B) + ")";
  std::printf("  %-44s %s\n", name.c_str(), ok ? "ok" : "FAIL");
  CUDA_CHECK(cudaFree(dl));
  CUDA_CHECK(cudaFree(dp));
  CUDA_CHECK(cudaFree(dids));
  return ok;
}

// What a run validates: each vocabulary size with every distribution and
// parameter set at each of its batch sizes, then batch invariance at a
// batch of invariance_b rows.
struct VocabCase {
  int V;
  std::vector<int> batches;
};
struct Sizes {
  std::vector<VocabCase> vocabs;
  int invariance_b;
};
const Sizes kFullSizes = {
    {{1, {1, 7, 32}}, {7, {1, 7, 32}}, {1000, {1, 7, 32}}, {1025, {1, 7, 32}}, {50257, {1, 7, 32}}}, 32};
// CI: one batch of 3 (a block per row, rows 0..2 of different logits and
// counters: larger batches reach no other code), 4099 (33 tiles of the
// id-order search, the last of 3 ids) where the full run has GPT-2's
// vocabulary, which it validates at B = 1 only; batch invariance at 12 rows
// (every distribution and parameter set).
const Sizes kCiSizes = {{{1, {3}}, {7, {3}}, {1000, {3}}, {1025, {3}}, {4099, {3}}, {50257, {1}}}, 12};

bool ValidateVersion(int version, const Sizes& sizes) {
  std::printf("v%d: validation\n", version);
  bool all = true;
  for (const auto& [V, batches] : sizes.vocabs) {
    if (!VersionFits(version, V)) {
      std::printf("  V %d: does not fit in shared memory here, skipped\n", V);
      continue;
    }
    int exact = 0, tolerated = 0, ambiguous = 0, cases = 0, failed = 0;
    for (Dist d : {Dist::kUniform, Dist::kGpt2Like, Dist::kPeaked, Dist::kFlat, Dist::kTies, Dist::kNanInf}) {
      for (const ParamSet& ps : kParamSets) {
        for (int B : batches) {
          const bool ok = ValidateCase(version, V, d, ps, B, &exact, &tolerated, &ambiguous);
          ++cases;
          failed += !ok;
          all &= ok;
        }
      }
    }
    std::printf(
        "  V %-6d %s  %d cases, %d failed; draws equal to the reference %d, within %.0e of a boundary %d, "
        "in rows whose top-p cut is that close to its target %d\n",
        V, failed == 0 ? "ok  " : "FAIL", cases, failed, exact, kMargin, tolerated, ambiguous);
    all &= ValidateBatchInvariance(version, V, sizes.invariance_b);
  }
  return all;
}

// ---- timing ----------------------------------------------------------------------

struct Row {
  std::string name;
  int B;
  bool ok;
  float ms;
  double gbps;
};
std::vector<Row> g_table;

void TimeVersion(int version, bool ok) {
  const int V = 50257;
  if (!VersionFits(version, V)) {
    std::printf("v%d: V = %d does not fit in shared memory here; not timed\n", version, V);
    return;
  }
  const ParamSet modes[] = {
      {"greedy", 0.0f, 0, 1.0f}, {"T=1", 1.0f, 0, 1.0f}, {"T=1 k=40", 1.0f, 40, 1.0f}, {"T=1 p=0.9", 1.0f, 0, 0.9f}};
  for (const ParamSet& ps : modes) {
    for (int B : {1, 8, 32}) {
      std::vector<float> logits;
      std::vector<SampleParams> params;
      for (int r = 0; r < B; ++r) {
        std::vector<float> row = MakeRow(Dist::kGpt2Like, V, 500 + r);
        logits.insert(logits.end(), row.begin(), row.end());
        params.push_back(Params(ps, V, r));
      }
      float* dl = ToDevice(logits);
      SampleParams* dp = ToDevice(params);
      int32_t* dids = DeviceAlloc<int32_t>(B);
      char label[64];
      std::snprintf(label, sizeof label, "v%d %s", version, ps.name);
      const std::string name = label;
      const double bytes = static_cast<double>(B) * V * 4;
      if (ok) {
        const float ms = Benchmark(30, [&] { RunVersion(version, dl, B, V, V, dp, dids); });
        std::snprintf(label, sizeof label, "v%d %s B=%d", version, ps.name, B);
        Report(label, ms, bytes, 10.0 * B * V);
        g_table.push_back({name, B, true, ms, bytes / (ms * 1e-3) / 1e9});
      } else {
        g_table.push_back({name, B, false, 0.0f, 0.0});
      }
      CUDA_CHECK(cudaFree(dl));
      CUDA_CHECK(cudaFree(dp));
      CUDA_CHECK(cudaFree(dids));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const tw::dev::Options opt = tw::dev::ParseOptions(argc, argv, {"1", "2", "3"}, "only this version");
  int dev = 0;
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s, %d SMs, %zu bytes of opt-in shared memory per block\n", prop.name,
              prop.multiProcessorCount, OptinSharedBytes());
  if (opt.timing) tw::dev::MeasuredCeilings();
  bool all_ok = true;
  for (int v = 1; v <= 3; ++v) {
    if (!opt.only.empty() && opt.only != std::to_string(v)) continue;
    const bool ok = ValidateVersion(v, tw::dev::CiShapes() ? kCiSizes : kFullSizes);
    all_ok &= ok;
    if (opt.timing) TimeVersion(v, ok);
  }
  if (opt.timing) {
    std::printf("\n%-26s %4s %10s %9s\n", "version / mode", "B", "ms", "GB/s");
    for (const Row& r : g_table) {
      if (r.ok) std::printf("%-26s %4d %10.4f %9.0f\n", r.name.c_str(), r.B, r.ms, r.gbps);
      else std::printf("%-26s %4d %10s %9s\n", r.name.c_str(), r.B, "FAIL", "-");
    }
  }
  std::printf("%s\n", all_ok ? "all validations passed" : "SOME VALIDATIONS FAILED");
  return all_ok ? 0 : 1;
}
