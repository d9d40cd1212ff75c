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
#include "forward/random_gpt2.h"
#include "lib/floors.h"
#include "engine/block_allocator.h"
#include "model/forward.h"
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

}  // namespace

int main(int argc, char** argv) {
  int threads = tw::cpu::ThreadPool::HardwareThreads();
  bool quick = false;
  std::string out_path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--quick") quick = true;
    else if (a == "--out" && i + 1 < argc) out_path = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--threads N] [--quick] [--out FILE.json]\n", argv[0]);
      return 2;
    }
  }
  using namespace tw;
  const int kPrompt = 200;
  const std::vector<int> batches = {1, 8, 32};

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
  std::unique_ptr<model::Gpt2Forward> fwd;
  s = model::Gpt2Forward::Create(model, kv.get(), &pool, model::ForwardLimits{32, 256}, &fwd);
  if (!s.ok()) return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
  std::printf("model ready in %.1f s (params %.1f MB, packed %.1f MB, KV pool %.1f MB, isa %s, threads %d)\n",
              Seconds(t0, Clock::now()), model.parameter_bytes() / 1e6, fwd->packed_weight_bytes() / 1e6,
              kv->bytes() / 1e6, cpu::IsaName(cpu::ActiveIsa()), threads);

  engine::BlockAllocator alloc(kv->num_blocks());
  std::vector<model::SeqState> seqs(32);
  for (auto& q : seqs) alloc.Alloc(blocks_per_seq, &q.block_table);
  std::vector<int32_t> prompt(kPrompt);
  for (int i = 0; i < kPrompt; ++i) prompt[i] = (i * 7919 + 13) % cfg.vocab_size;
  std::vector<float> logits(static_cast<size_t>(32) * cfg.vocab_size);

  const bench::MachineFloors floors_before = bench::MeasureFloors(&pool, quick ? 3 : 7);

  // (i) prefill, last-position logits.
  Timing prefill = Time(quick ? 3 : 9, 1, [&] {
    seqs[0].length = 0;
    Status st = fwd->Prefill(&seqs[0], prompt.data(), kPrompt, logits.data());
    if (!st.ok()) std::fprintf(stderr, "%s\n", st.message().c_str()), std::exit(1);
  });
  std::printf("prefill %d tokens: median %.2f ms (min %.2f, max %.2f)\n", kPrompt, prefill.median_s * 1e3,
              prefill.min_s * 1e3, prefill.max_s * 1e3);
  // Every sequence gets the same 200-token context (copy of sequence 0's blocks).
  for (int b = 1; b < 32; ++b) {
    for (int i = 0; i < blocks_per_seq; ++i) {
      std::memcpy(kv->block(seqs[b].block_table[i]), kv->block(seqs[0].block_table[i]),
                  kv->FloatsPerBlock() * sizeof(float));
    }
  }
  // (ii)/(iii) one decode step with 200 tokens of context.
  std::vector<Timing> decode;
  for (int B : batches) {
    std::vector<model::SeqState*> ptrs;
    for (int b = 0; b < B; ++b) ptrs.push_back(&seqs[b]);
    std::vector<int32_t> toks(B);
    for (int b = 0; b < B; ++b) toks[b] = (b * 101 + 5) % cfg.vocab_size;
    int reps = B <= 8 ? (quick ? 5 : 21) : (quick ? 3 : 11);
    Timing t = Time(reps, 2, [&] {
      for (int b = 0; b < B; ++b) seqs[b].length = kPrompt;
      Status st = fwd->DecodeBatch(ptrs.data(), toks.data(), B, logits.data());
      if (!st.ok()) std::fprintf(stderr, "%s\n", st.message().c_str()), std::exit(1);
    });
    std::printf("decode B=%2d ctx %d: median %.2f ms (min %.2f, max %.2f) -> %.1f tok/s aggregate\n", B, kPrompt,
                t.median_s * 1e3, t.min_s * 1e3, t.max_s * 1e3, B / t.median_s);
    decode.push_back(t);
  }

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
  std::printf("floors: read bandwidth %.1f GB/s, fp32 FMA peak %.1f GFLOP/s (%s, %d threads; best of before "
              "and after)\n", bw / 1e9, peak / 1e9, cpu::IsaSupported(cpu::Isa::kAvx512) ? "avx512" : "avx2",
              threads);

  // Work per operation (what a perfect implementation must read / compute).
  const bench::Gpt2Work work(cfg);
  const double weight_bytes = work.weight_bytes();
  const double kv_bytes_per_seq = work.kv_bytes_per_position() * (kPrompt + 1);
  const double prefill_flops = kPrompt * work.layer_flops((kPrompt + 1) / 2.0) + work.lm_head_flops();
  const double prefill_floor_s = work.PrefillFloorSeconds(1, kPrompt, floors);
  std::vector<double> decode_floor_s;
  for (int B : batches) decode_floor_s.push_back(work.DecodeFloorSeconds(B, kPrompt + 1, floors));

  std::string j = "{\n";
  char line[512];
  std::snprintf(line, sizeof line,
                "  \"threads\": %d,\n  \"isa\": \"%s\",\n  \"prompt_tokens\": %d,\n  \"quick\": %s,\n"
                "  \"read_bandwidth_bytes_per_s\": %.4g,\n  \"fma_peak_flops\": %.4g,\n"
                "  \"weight_bytes_per_step\": %.6g,\n  \"kv_bytes_per_seq\": %.6g,\n",
                threads, cpu::IsaName(cpu::ActiveIsa()), kPrompt, quick ? "true" : "false", bw, peak, weight_bytes,
                kv_bytes_per_seq);
  j += line;
  std::snprintf(line, sizeof line,
                "  \"prefill\": {\"median_ms\": %.3f, \"min_ms\": %.3f, \"max_ms\": %.3f, \"reps\": %d, "
                "\"flops\": %.6g, \"floor_ms\": %.3f},\n",
                prefill.median_s * 1e3, prefill.min_s * 1e3, prefill.max_s * 1e3, prefill.reps, prefill_flops,
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
