// gpu_bench: the CUDA runner's step times on a GPT-2-small-shaped model,
// beside the floors measured in the same run and, when given, the PyTorch
// peer's times on the same GPU (bench/gpu/torch_gpt2_gpu.py --out FILE).
//
//   build/cuda/bench/gpu_bench --model DIR [--torch torch.json] [--out FILE]
//                              [--steps N] [--context 200]
//
// Measured per matmul path (fp32, 3xtf32), wall clock around the runner's
// calls (each ends when its token ids are on the host), medians:
//   prefill of a 200-token prompt (B = 1);
//   one decode step at B = 1, 8 and 32 with `context` tokens cached per
//   sequence (the step packs, copies, replays its graph, samples, copies back).
// Floors (same run): the weights' bytes plus the K/V bytes a step reads, at
// the device-to-device copy rate (read + write counted, as the issue's
// 4.3-4.8 TB/s), and the step's FLOPs at the FMA rate; the floor is the
// larger. Output: the bench/results convention (bench/loadgen/report.h),
// rendered into RESULTS.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "app/backends.h"
#include "cuda/cuda_runner.h"
#include "engine/block_allocator.h"
#include "json/json.h"
#include "kernels/device.h"
#include "lib/result.h"
#include "model/gpt2.h"

namespace {

using namespace tw;

double NowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Seq {
  std::vector<int32_t> table, prompt;
  int cached = 0, produced = 0;
  int32_t last = 0;
};

engine::SeqView PrefillView(const Seq& s) {
  engine::SeqView v;
  v.block_table = s.table.data();
  v.num_blocks = static_cast<int>(s.table.size());
  v.tokens = s.prompt.data();
  v.n = static_cast<int>(s.prompt.size());
  return v;
}

engine::SeqView DecodeView(const Seq& s) {
  engine::SeqView v;
  v.block_table = s.table.data();
  v.num_blocks = static_cast<int>(s.table.size());
  v.cached = s.cached;
  v.tokens = &s.last;
  v.n = 1;
  v.sampling.counter = static_cast<uint64_t>(s.produced);
  return v;
}

struct Timing {
  double prefill_ms = 0;
  std::map<int, double> decode_ms;  // batch -> median step
};

Status Measure(const std::shared_ptr<const model::Gpt2Model>& m, bool tf32, int context, int steps, Timing* t) {
  engine::RunnerLimits l;
  l.max_batch = 32;
  l.block_size_tokens = 16;
  l.max_step_tokens = 256;
  const int per_seq = engine::BlocksFor(context + steps + 1, 16);
  l.num_kv_blocks = 32 * per_seq + per_seq;
  std::unique_ptr<engine::ModelRunner> r;
  app::RunnerOptions ro;
  ro.cuda_matmul = tf32 ? "3xtf32" : "fp32";
  if (Status s = app::MakeRunner("cuda", m, l, ro, &r); !s.ok()) return s;
  const int V = m->config().vocab_size;
  engine::BlockAllocator alloc(l.num_kv_blocks);
  auto make = [&](int i, int len) {
    Seq s;
    for (int k = 0; k < len; k++) s.prompt.push_back((i * 104729 + k * 7919 + 11) % V);
    alloc.Alloc(per_seq, &s.table);
    return s;
  };
  // Prefill of 200 tokens, B = 1 (the first runs warm up and capture nothing).
  {
    Seq s = make(0, 200);
    std::vector<double> ms;
    for (int rep = 0; rep < 12; rep++) {
      engine::SeqView v = PrefillView(s);
      engine::SampledToken tok;
      double t0 = NowMs();
      if (Status st = r->Step(&v, 1, &tok); !st.ok()) return st;
      if (rep >= 2) ms.push_back(NowMs() - t0);
    }
    t->prefill_ms = Median(ms);
    alloc.Free(s.table);
  }
  for (int B : {1, 8, 32}) {
    std::vector<Seq> seqs;
    for (int i = 0; i < B; i++) {
      seqs.push_back(make(i + 1, context));
      engine::SeqView v = PrefillView(seqs.back());
      engine::SampledToken tok;
      if (Status st = r->Step(&v, 1, &tok); !st.ok()) return st;
      seqs.back().cached = context;
      seqs.back().last = tok.id;
      seqs.back().produced = 1;
    }
    std::vector<double> ms;
    std::vector<engine::SeqView> views;
    std::vector<engine::SampledToken> toks(B);
    for (int step = 0; step < steps; step++) {
      views.clear();
      for (Seq& s : seqs) views.push_back(DecodeView(s));
      double t0 = NowMs();
      if (Status st = r->Step(views.data(), B, toks.data()); !st.ok()) return st;
      if (step >= 3) ms.push_back(NowMs() - t0);  // the first step captures the bucket's graph
      for (int i = 0; i < B; i++) {
        seqs[i].cached++;
        seqs[i].produced++;
        seqs[i].last = toks[i].id;
      }
    }
    t->decode_ms[B] = Median(ms);
    for (Seq& s : seqs) alloc.Free(s.table);
  }
  return Status::Ok();
}

std::string Fixed(double v, int d) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", d, v);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, torch_file, out;  // out: the result file, in a run's folder (bench/gpu/run.sh OUTDIR)
  int steps = 40, context = 200;
  std::string command;
  for (int i = 0; i < argc; i++) command += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i + 1 < argc; i++) {
    std::string a = argv[i];
    if (a == "--model") dir = argv[++i];
    else if (a == "--torch") torch_file = argv[++i];
    else if (a == "--out") out = argv[++i];
    else if (a == "--steps") steps = std::atoi(argv[++i]);
    else if (a == "--context") context = std::atoi(argv[++i]);
  }
  if (dir.empty() || out.empty()) {
    std::fprintf(stderr, "usage: gpu_bench --model DIR --out FILE [--torch torch.json]\n");
    return 2;
  }
  std::unique_ptr<model::Gpt2Model> loaded;
  if (Status s = model::LoadGpt2(dir, &loaded); !s.ok()) {
    std::fprintf(stderr, "gpu_bench: %s\n", s.message().c_str());
    return 1;
  }
  std::shared_ptr<const model::Gpt2Model> m(std::move(loaded));
  const model::Gpt2Config& c = m->config();
  double copy_gbps = 0, tflops = 0;
  if (Status s = kernels::MeasureCeilings(&copy_gbps, &tflops); !s.ok()) {
    std::fprintf(stderr, "gpu_bench: %s\n", s.message().c_str());
    return 1;
  }
  std::printf("device: %s\nceilings: copy %.0f GB/s, fp32 FMA %.1f TFLOP/s\n", kernels::DeviceSummary().c_str(),
              copy_gbps, tflops);
  // The matmul weights (4 per layer and the LM head) and the K/V a step reads.
  const double C = c.n_embd, L = c.n_layer, V = c.vocab_size;
  const double matmul_params = L * (C * 3 * C + C * C + C * 4 * C + 4 * C * C) + C * V;
  const double kv_bytes_per_token = 2 * L * C * 4;
  auto floor_ms = [&](int B, int rows_per_seq, int ctx) {
    const double bytes = matmul_params * 4 + B * (ctx * kv_bytes_per_token);
    const double flops = 2 * matmul_params * B * rows_per_seq + 4 * L * C * B * rows_per_seq * ctx;
    return std::max(bytes / (copy_gbps * 1e9), flops / (tflops * 1e12)) * 1e3;
  };
  Timing fp32, tf32;
  for (auto [tf, t] : {std::pair{false, &fp32}, std::pair{true, &tf32}}) {
    if (Status s = Measure(m, tf, context, steps, t); !s.ok()) {
      std::fprintf(stderr, "gpu_bench (%s): %s\n", tf ? "3xtf32" : "fp32", s.message().c_str());
      return 1;
    }
  }
  // The PyTorch peer's medians, if given: {"configs": [{"name", "prefill_ms", "decode_ms": {"1":…}}]}.
  std::map<std::string, double> torch_best;  // work -> best ms
  std::map<std::string, std::string> torch_name;
  if (!torch_file.empty()) {
    std::ifstream f(torch_file);
    std::stringstream ss;
    ss << f.rdbuf();
    json::Value v;
    json::ParseLimits lim;
    lim.max_bytes = 16 << 20;
    if (json::Parse(ss.str(), &v, lim).ok() && v.Find("configs")) {
      for (const json::Value& cfg : v.Find("configs")->items()) {
        const std::string name = cfg.Find("name") ? cfg.Find("name")->as_string() : "?";
        auto consider = [&](const std::string& work, const json::Value* ms) {
          if (ms == nullptr || !ms->is_number()) return;
          if (!torch_best.count(work) || ms->as_double() < torch_best[work]) {
            torch_best[work] = ms->as_double();
            torch_name[work] = name;
          }
        };
        consider("prefill", cfg.Find("prefill_ms"));
        if (const json::Value* d = cfg.Find("decode_ms")) {
          for (int B : {1, 8, 32}) consider("decode " + std::to_string(B), d->Find(std::to_string(B)));
        }
      }
    }
  }
  std::vector<std::vector<std::string>> rows;
  auto row = [&](const std::string& work, double ours_fp32, double ours_tf32, double fl, double tokens) {
    const double best = std::min(ours_fp32, ours_tf32);
    std::vector<std::string> r = {work, Fixed(ours_fp32, 3), Fixed(ours_tf32, 3), Fixed(fl, 3),
                                  Fixed(100.0 * fl / best, 0) + "%", Fixed(tokens / (best / 1e3), 0)};
    if (torch_best.count(work)) {
      r.push_back(Fixed(torch_best[work], 3) + " (" + torch_name[work] + ")");
      r.push_back(Fixed(torch_best[work] / best, 2) + "x");
    } else {
      r.push_back("n/a");
      r.push_back("n/a");
    }
    rows.push_back(r);
  };
  row("prefill", fp32.prefill_ms, tf32.prefill_ms, floor_ms(1, 200, 200), 200);
  for (int B : {1, 8, 32}) {
    row("decode " + std::to_string(B), fp32.decode_ms[B], tf32.decode_ms[B], floor_ms(B, 1, context), B);
  }
  std::string js = "{\"bench\":\"gpu/runner\",\"title\":\"CUDA runner on a GPT-2-small-shaped model: step times vs "
                   "the floors and PyTorch on the same GPU\",\"command\":";
  json::AppendQuoted(&js, command);
  js += ",\"machine\":{\"gpu\":";
  json::AppendQuoted(&js, kernels::DeviceSummary());
  js += "},\"date\":";
  json::AppendQuoted(&js, bench::UtcNow());
  js += ",\"mode\":\"full\",\"parameters\":{\"context\":" + std::to_string(context) + ",\"steps\":" +
        std::to_string(steps) + ",\"copy_gbps\":" + Fixed(copy_gbps, 0) + ",\"fp32_tflops\":" + Fixed(tflops, 2) +
        "},\"columns\":[\"work\",\"fp32 ms\",\"3xtf32 ms\",\"floor ms\",\"floor / best\",\"tokens/s (best)\","
        "\"PyTorch best ms\",\"PyTorch / ours\"],\"rows\":[";
  for (size_t i = 0; i < rows.size(); i++) {
    js += i ? ",[" : "[";
    for (size_t k = 0; k < rows[i].size(); k++) {
      if (k) js += ',';
      json::AppendQuoted(&js, rows[i][k]);
    }
    js += ']';
  }
  js += "],\"notes\":[";
  json::AppendQuoted(&js, "Wall clock around the runner's Step (each ends with the token ids on the host: "
                          "packing, one copy in, the decode graph's replay, sampling on the device, one copy out), "
                          "median of the steps after the first three; context " + std::to_string(context) +
                          " tokens per sequence. Floor: max(weights + K/V read at the device-to-device copy "
                          "rate, FLOPs at the FMA rate), both measured in this run.");
  js += "]}\n";
  std::ofstream o(out);
  o << js;
  std::printf("%s", js.c_str());
  for (const auto& r : rows) {
    std::printf("%-10s fp32 %8s ms  3xtf32 %8s ms  floor %7s ms (%s)  torch %s\n", r[0].c_str(), r[1].c_str(),
                r[2].c_str(), r[3].c_str(), r[4].c_str(), r[6].c_str());
  }
  return o.good() ? 0 : 1;
}
