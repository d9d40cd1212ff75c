// CPU forward-pass benchmark on a GPT-2-small-shaped (124M) random model:
// prefill of a 200-token prompt, and one decode step at batch 1, 8 and 32
// with 200 tokens of context per sequence (medians over several runs), the
// cost of sampling one row of logits (greedy, temperature, top-k, top-p), next
// to the machine's floors: memory read bandwidth (a STREAM-like read loop of
// our own) and float32 FMA peak, both measured here on the same threads
// before and after the operations (the better of each counts).
//
// Usage: build/bench_cpu_model [--threads N] [--quick] [--out FILE.json]
// Prints a human-readable summary and writes the raw numbers as JSON.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cpu/aligned.h"
#include "cpu/kernels.h"
#include "cpu/thread_pool.h"
#include "model/random_gpt2.h"
#include "lib/cpu_args.h"
#include "lib/floors.h"
#include "engine/block_allocator.h"
#include "model/forward.h"
#include "support/seq_state.h"
#include "model/kv_cache.h"
#include "model/sampling.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Timing {
  double median_s = 0, min_s = 0, max_s = 0;
  int reps = 0;
};

template <typename Fn>
Timing Time(int reps, int warm, const Fn& fn) {
  for (int i = 0; i < warm; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = Clock::now();
    fn();
    t.push_back(Seconds(a, Clock::now()));
  }
  Timing r;
  r.median_s = Median(t);
  r.min_s = *std::min_element(t.begin(), t.end());
  r.max_s = *std::max_element(t.begin(), t.end());
  r.reps = reps;
  return r;
}

// One (kernel level, weight format) pair: its forward pass and its samples.
struct Variant {
  tw::cpu::Isa isa;
  tw::cpu::WeightFormat format;
  std::unique_ptr<tw::model::Gpt2Forward> fwd;
  std::vector<double> prefill_s;
  std::vector<std::vector<double>> decode_s;  // per batch size
};

Timing Summarize(const std::vector<double>& t) {
  Timing r;
  r.median_s = Median(t);
  r.min_s = *std::min_element(t.begin(), t.end());
  r.max_s = *std::max_element(t.begin(), t.end());
  r.reps = static_cast<int>(t.size());
  return r;
}

double BytesPerWeight(tw::cpu::WeightFormat f) {
  switch (f) {
    case tw::cpu::WeightFormat::kF32:
      return 4;
    case tw::cpu::WeightFormat::kBf16:
      return 2;
    case tw::cpu::WeightFormat::kQ8:
      return 1 + 4.0 / tw::cpu::kQ8Block;
  }
  return 4;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = tw::cpu::ThreadPool::HardwareThreads();
  bool quick = false;
  std::string out_path;
  std::string weights_list = "f32";
  std::string isa_list = tw::cpu::IsaName(tw::cpu::BestIsa());
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--quick") quick = true;
    else if (a == "--out" && i + 1 < argc) out_path = argv[++i];
    else if (a == "--weights" && i + 1 < argc) weights_list = argv[++i];
    else if (a == "--isa" && i + 1 < argc) isa_list = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: %s [--threads N] [--quick] [--out FILE.json] [--weights f32,bf16,q8] "
                   "[--isa avx512,avx2,scalar]\n",
                   argv[0]);
      return 2;
    }
  }
  using namespace tw;
  const int kPrompt = 200;
  const std::vector<int> batches = {1, 8, 32};

  std::vector<cpu::WeightFormat> formats;
  std::vector<cpu::Isa> isas;
  if (Status st = bench::ParseWeightList(weights_list, &formats); !st.ok()) {
    return std::fprintf(stderr, "%s\n", st.message().c_str()), 2;
  }
  if (Status st = bench::ParseIsaList(isa_list, &isas); !st.ok()) {
    return std::fprintf(stderr, "%s\n", st.message().c_str()), 2;
  }

  model::Gpt2Config cfg;  // GPT-2 small: 12 layers, 12 heads, 768 wide, 1024 ctx, 50257 vocab
  std::printf("building random GPT-2 124M model...\n");
  auto t0 = Clock::now();
  testing::RandomGpt2Model model(cfg, 1);
  cpu::ThreadPool pool(threads);
  const int bs = 16;
  const int blocks_per_seq = model::BlocksFor(kPrompt + 1, bs);
  std::unique_ptr<model::KvPool> kv;
  Status s = model::KvPool::Create(cfg, model::KvCacheConfig{blocks_per_seq * 32, bs}, &kv);
  if (!s.ok()) return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
  // One forward pass per format (the packing is the only difference), all
  // over the same KV pool: they run one at a time.
  std::vector<std::unique_ptr<model::Gpt2Forward>> fwds;
  for (cpu::WeightFormat f : formats) {
    model::ForwardLimits fl{32, 256};
    fl.weights = f;
    std::unique_ptr<model::Gpt2Forward> fwd;
    s = model::Gpt2Forward::Create(model, kv.get(), &pool, fl, &fwd);
    if (!s.ok()) return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
    std::printf("weights %s: packed %.1f MB\n", cpu::WeightFormatName(f), fwd->packed_weight_bytes() / 1e6);
    fwds.push_back(std::move(fwd));
  }
  std::printf("model ready in %.1f s (params %.1f MB, KV pool %.1f MB, threads %d)\n", Seconds(t0, Clock::now()),
              model.parameter_bytes() / 1e6, kv->bytes() / 1e6, threads);
  std::vector<Variant> variants;
  for (cpu::Isa isa : isas) {
    for (size_t fi = 0; fi < formats.size(); ++fi) {
      Variant v{isa, formats[fi], nullptr, {}, std::vector<std::vector<double>>(batches.size())};
      variants.push_back(std::move(v));
    }
  }
  auto fwd_of = [&](const Variant& v) {
    for (size_t fi = 0; fi < formats.size(); ++fi)
      if (formats[fi] == v.format) return fwds[fi].get();
    return static_cast<model::Gpt2Forward*>(nullptr);
  };

  engine::BlockAllocator alloc(kv->num_blocks());
  std::vector<model::SeqState> seqs(32);
  for (auto& q : seqs) alloc.Alloc(blocks_per_seq, &q.block_table);
  std::vector<int32_t> prompt(kPrompt);
  for (int i = 0; i < kPrompt; ++i) prompt[i] = (i * 7919 + 13) % cfg.vocab_size;
  std::vector<float> logits(static_cast<size_t>(32) * cfg.vocab_size);

  const bench::MachineFloors floors_before = bench::MeasureFloors(&pool, quick ? 3 : 7);

  auto prefill = [&](model::Gpt2Forward* fwd) {
    seqs[0].length = 0;
    Status st = model::Prefill(*fwd, &seqs[0], prompt.data(), kPrompt, logits.data());
    if (!st.ok()) std::fprintf(stderr, "%s\n", st.message().c_str()), std::exit(1);
  };
  auto decode_step = [&](model::Gpt2Forward* fwd, int B) {
    std::vector<model::SeqState*> ptrs;
    std::vector<int32_t> toks(B);
    for (int b = 0; b < B; ++b) {
      ptrs.push_back(&seqs[b]);
      seqs[b].length = kPrompt;
      toks[b] = (b * 101 + 5) % cfg.vocab_size;
    }
    Status st = model::DecodeBatch(*fwd, ptrs.data(), toks.data(), B, logits.data());
    if (!st.ok()) std::fprintf(stderr, "%s\n", st.message().c_str()), std::exit(1);
  };
  auto timed = [&](const auto& fn) {
    auto a = Clock::now();
    fn();
    return Seconds(a, Clock::now());
  };
  // Every sequence gets the same 200-token context (copy of sequence 0's blocks).
  prefill(fwds[0].get());
  for (int b = 1; b < 32; ++b) {
    for (int i = 0; i < blocks_per_seq; ++i) {
      std::memcpy(kv->block(seqs[b].block_table[i]), kv->block(seqs[0].block_table[i]),
                  kv->FloatsPerBlock() * sizeof(float));
    }
  }
  // Rounds, each running every variant in turn (so a slow spell of the
  // shared host hits all of them alike): a prefill of 200 tokens, then
  // decode steps with 200 tokens of context at batch 1 and 8 (three each)
  // and 32 (two). Round 0 warms up and is not counted.
  const int rounds = quick ? 3 : 9;
  for (int round = 0; round <= rounds; ++round) {
    for (Variant& v : variants) {
      if (!cpu::ForceIsa(v.isa).ok()) return 1;
      model::Gpt2Forward* fwd = fwd_of(v);
      const double p = timed([&] { prefill(fwd); });
      if (round > 0) v.prefill_s.push_back(p);
      for (size_t bi = 0; bi < batches.size(); ++bi) {
        for (int r = 0; r < (batches[bi] <= 8 ? 3 : 2); ++r) {
          const double d = timed([&] { decode_step(fwd, batches[bi]); });
          if (round > 0) v.decode_s[bi].push_back(d);
        }
      }
    }
  }
  cpu::ResetIsa();
  for (const Variant& v : variants) {
    const Timing pt = Summarize(v.prefill_s);
    std::printf("%-6s %-4s prefill %d tokens: median %.2f ms", cpu::IsaName(v.isa), cpu::WeightFormatName(v.format),
                kPrompt, pt.median_s * 1e3);
    for (size_t bi = 0; bi < batches.size(); ++bi) {
      const Timing t = Summarize(v.decode_s[bi]);
      std::printf(" | B=%d %.2f ms (%.1f tok/s)", batches[bi], t.median_s * 1e3, batches[bi] / t.median_s);
    }
    std::printf("\n");
  }
  // The first variant is also reported in the single-run fields below.
  const Timing prefill_t = Summarize(variants[0].prefill_s);
  std::vector<Timing> decode;
  for (size_t bi = 0; bi < batches.size(); ++bi) decode.push_back(Summarize(variants[0].decode_s[bi]));

  // (iv) sampling the batch-32 step's logits (32 rows of the vocabulary), one
  // thread, per row: greedy, temperature alone, temperature with top-k, with
  // top-p (on the flat and on a peaked distribution).
  struct SamplingCase {
    const char* name;
    model::SamplingParams params;
  };
  const SamplingCase sampling_cases[] = {{"greedy", {0.0f, 0, 1.0f}},
                                         {"temperature 1", {1.0f, 0, 1.0f}},
                                         {"temperature 1, top-k 40", {1.0f, 40, 1.0f}},
                                         {"temperature 1, top-p 0.9", {1.0f, 0, 0.9f}},
                                         // The random weights' logits are flat (top-p 0.9 keeps ~38k
                                         // ids); at temperature 0.1 the nucleus is ~40 ids and the top
                                         // id holds ~19 %, the shape of a trained model's next-token
                                         // distribution.
                                         {"temperature 0.1 (peaked), top-p 0.9", {0.1f, 0, 0.9f}}};
  std::vector<Timing> sampling;
  {
    model::Sampler sampler(cfg.vocab_size);
    model::Rng rng(7);
    int64_t sink = 0;
    for (const SamplingCase& sc : sampling_cases) {
      Timing t = Time(quick ? 3 : 9, 1, [&] {
        for (int b = 0; b < 32; ++b) sink += sampler.Sample(logits.data() + static_cast<size_t>(b) * cfg.vocab_size, sc.params, &rng);
      });
      std::printf("sample one row (%s): median %.1f us\n", sc.name, t.median_s / 32 * 1e6);
      sampling.push_back(t);
    }
    if (sink < 0) std::printf("%lld\n", static_cast<long long>(sink));  // keep the draws
  }

  // Floors: measured before the operations and after them; the better of
  // each counts (the shared host's state moves during a run).
  const bench::MachineFloors floors = bench::Best(floors_before, bench::MeasureFloors(&pool, quick ? 3 : 7));
  const double bw = floors.read_bytes_per_s, peak = floors.fma_flops_per_s;
  std::printf("floors: read bandwidth %.1f GB/s, fp32 FMA peak %.1f GFLOP/s (%s; avx2 %.1f GFLOP/s; %d threads; "
              "best of before and after)\n", bw / 1e9, peak / 1e9,
              cpu::IsaSupported(cpu::Isa::kAvx512) ? "avx512" : "avx2", floors.fma_avx2_flops_per_s / 1e9, threads);

  // Work per operation (what a perfect implementation must read / compute).
  const bench::Gpt2Work work(cfg, BytesPerWeight(variants[0].format));
  const double weight_bytes = work.weight_bytes();
  const double kv_bytes_per_seq = work.kv_bytes_per_position() * (kPrompt + 1);
  const double prefill_flops = kPrompt * work.layer_flops((kPrompt + 1) / 2.0) + work.lm_head_flops();
  const bench::MachineFloors first_floors = bench::AtLevel(floors, variants[0].isa);
  const double prefill_floor_s = work.PrefillFloorSeconds(1, kPrompt, first_floors);
  std::vector<double> decode_floor_s;
  for (int B : batches) decode_floor_s.push_back(work.DecodeFloorSeconds(B, kPrompt + 1, first_floors));

  std::string j = "{\n";
  char line[512];
  std::snprintf(line, sizeof line,
                "  \"threads\": %d,\n  \"isa\": \"%s\",\n  \"weights\": \"%s\",\n  \"prompt_tokens\": %d,\n  \"quick\": %s,\n"
                "  \"read_bandwidth_bytes_per_s\": %.4g,\n  \"fma_peak_flops\": %.4g,\n  \"fma_peak_avx2_flops\": %.4g,\n"
                "  \"weight_bytes_per_step\": %.6g,\n  \"kv_bytes_per_seq\": %.6g,\n",
                threads, cpu::IsaName(variants[0].isa), cpu::WeightFormatName(variants[0].format), kPrompt, quick ? "true" : "false", bw, peak,
                floors.fma_avx2_flops_per_s, weight_bytes,
                kv_bytes_per_seq);
  j += line;
  std::snprintf(line, sizeof line,
                "  \"prefill\": {\"median_ms\": %.3f, \"min_ms\": %.3f, \"max_ms\": %.3f, \"reps\": %d, "
                "\"flops\": %.6g, \"floor_ms\": %.3f},\n",
                prefill_t.median_s * 1e3, prefill_t.min_s * 1e3, prefill_t.max_s * 1e3, prefill_t.reps, prefill_flops,
                prefill_floor_s * 1e3);
  j += line;
  j += "  \"decode\": [\n";
  for (size_t i = 0; i < batches.size(); ++i) {
    std::snprintf(line, sizeof line,
                  "    {\"batch\": %d, \"median_ms\": %.3f, \"min_ms\": %.3f, \"max_ms\": %.3f, \"reps\": %d, "
                  "\"tok_per_s\": %.2f, \"floor_ms\": %.3f}%s\n",
                  batches[i], decode[i].median_s * 1e3, decode[i].min_s * 1e3, decode[i].max_s * 1e3, decode[i].reps,
                  batches[i] / decode[i].median_s, decode_floor_s[i] * 1e3, i + 1 < batches.size() ? "," : "");
    j += line;
  }
  // Every (level, format) pair measured, with its own floors (the format's
  // weight bytes, the same FLOPs, at its level's FMA peak).
  j += "  ],\n  \"variants\": [\n";
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    const Variant& v = variants[vi];
    const bench::Gpt2Work vw(cfg, BytesPerWeight(v.format));
    const Timing pt = Summarize(v.prefill_s);
    const bench::MachineFloors vf = bench::AtLevel(floors, v.isa);
    std::snprintf(line, sizeof line,
                  "    {\"isa\": \"%s\", \"weights\": \"%s\", \"packed_bytes\": %zu, \"weight_bytes_per_step\": %.6g,\n"
                  "     \"fma_peak_flops\": %.4g,\n"
                  "     \"prefill\": {\"median_ms\": %.3f, \"min_ms\": %.3f, \"max_ms\": %.3f, \"reps\": %d, \"floor_ms\": %.3f},\n"
                  "     \"decode\": [",
                  cpu::IsaName(v.isa), cpu::WeightFormatName(v.format), fwd_of(v)->packed_weight_bytes(),
                  vw.weight_bytes(), vf.fma_flops_per_s, pt.median_s * 1e3, pt.min_s * 1e3, pt.max_s * 1e3, pt.reps,
                  vw.PrefillFloorSeconds(1, kPrompt, vf) * 1e3);
    j += line;
    for (size_t bi = 0; bi < batches.size(); ++bi) {
      const Timing t = Summarize(v.decode_s[bi]);
      std::snprintf(line, sizeof line,
                    "{\"batch\": %d, \"median_ms\": %.3f, \"min_ms\": %.3f, \"max_ms\": %.3f, \"reps\": %d, "
                    "\"tok_per_s\": %.2f, \"floor_ms\": %.3f}%s",
                    batches[bi], t.median_s * 1e3, t.min_s * 1e3, t.max_s * 1e3, t.reps, batches[bi] / t.median_s,
                    vw.DecodeFloorSeconds(batches[bi], kPrompt + 1, vf) * 1e3,
                    bi + 1 < batches.size() ? ", " : "");
      j += line;
    }
    j += vi + 1 < variants.size() ? "]},\n" : "]}\n";
  }
  j += "  ],\n  \"sampling_us_per_row\": [\n";
  for (size_t i = 0; i < sampling.size(); ++i) {
    std::snprintf(line, sizeof line, "    {\"case\": \"%s\", \"median_us\": %.2f, \"min_us\": %.2f, \"reps\": %d}%s\n",
                  sampling_cases[i].name, sampling[i].median_s / 32 * 1e6, sampling[i].min_s / 32 * 1e6,
                  sampling[i].reps, i + 1 < sampling.size() ? "," : "");
    j += line;
  }
  j += "  ]\n}\n";
  if (!out_path.empty()) {
    FILE* f = std::fopen(out_path.c_str(), "w");
    if (!f || std::fwrite(j.data(), 1, j.size(), f) != j.size() || std::fclose(f) != 0) {
      std::fprintf(stderr, "cannot write %s\n", out_path.c_str());
      return 1;
    }
  } else {
    std::fputs(j.c_str(), stdout);
  }
  return 0;
}
