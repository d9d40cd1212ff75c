// weights_tool inspect DIR --weights bf16|q8: what packing the model's
// matrices in a weight format (cpu::WeightFormat, tokenwire's --weights)
// costs each tensor: bytes before and after, and the error of the values the
// weights stand for in that format (cpu::DequantizedWeight: q8's float(q) *
// scale) against the file's float32: max |error|, max |error| / max |w|, and
// the RMS error.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"  // weights_tool/ is not on the include path
#include "cpu/kernels.h"
#include "model/gpt2.h"

namespace tw::weights_tool {
namespace {

struct Error {
  double max_abs = 0, max_w = 0, sum_sq = 0;
  size_t n = 0;
};

// The error of `format` over w (in, out) row-major, added to *e.
void Measure(cpu::WeightFormat format, const float* w, int in, int out, Error* e) {
  const size_t n = static_cast<size_t>(in) * out;
  std::vector<float> d(n);
  cpu::DequantizedWeight(format, w, in, out, d.data());
  for (size_t i = 0; i < n; ++i) {
    const double err = std::fabs(static_cast<double>(d[i]) - w[i]);
    e->max_abs = std::max(e->max_abs, err);
    e->max_w = std::max(e->max_w, std::fabs(static_cast<double>(w[i])));
    e->sum_sq += err * err;
  }
  e->n += n;
}

void PrintRow(const std::string& name, int in, int out, cpu::WeightFormat format, const Error& e) {
  std::printf("  %-28s %5d x %-6d %11zu %11zu   %-10.3g %-10.3g %-10.3g\n", name.c_str(), in, out,
              cpu::PackedWeightBytes(cpu::WeightFormat::kF32, in, out), cpu::PackedWeightBytes(format, in, out),
              e.max_abs, e.max_w > 0 ? e.max_abs / e.max_w : 0.0, std::sqrt(e.sum_sq / static_cast<double>(e.n)));
}

}  // namespace

int InspectWeights(const std::string& dir, const std::string& format_name) {
  cpu::WeightFormat format;
  if (Status st = cpu::ParseWeightFormat(format_name.c_str(), &format); !st.ok()) {
    std::fprintf(stderr, "weights_tool inspect: --weights: %s\n", st.message().c_str());
    return 2;
  }
  std::unique_ptr<model::Gpt2Model> m;
  if (Status st = model::LoadGpt2(dir, &m); !st.ok()) {
    std::printf("GPT-2 loader: FAILED: %s\n", st.message().c_str());
    return 1;
  }
  const model::Gpt2Config& c = m->config();
  const model::Gpt2Weights& w = m->weights();
  const int C = c.n_embd, V = c.vocab_size;
  std::printf("weights %s: the matrices tokenwire --weights %s packs (as (in, out); bytes as packed, 16-column "
              "panels)\n", format_name.c_str(), format_name.c_str());
  std::printf("  %-28s %-14s %11s %11s   %-10s %-10s %-10s\n", "tensor", "in x out", "f32 bytes", "packed",
              "max|err|", "/max|w|", "rms err");
  size_t before = 0, after = 0;
  Error all;
  auto row = [&](const std::string& name, const float* p, int in, int out) {
    Error e;
    Measure(format, p, in, out, &e);
    PrintRow(name, in, out, format, e);
    before += cpu::PackedWeightBytes(cpu::WeightFormat::kF32, in, out);
    after += cpu::PackedWeightBytes(format, in, out);
    all.max_abs = std::max(all.max_abs, e.max_abs);
    all.max_w = std::max(all.max_w, e.max_w);
    all.sum_sq += e.sum_sq;
    all.n += e.n;
  };
  for (int l = 0; l < c.n_layer; ++l) {
    const model::Gpt2Layer& ly = w.layers[l];
    const std::string h = "h." + std::to_string(l) + ".";
    row(h + "attn.c_attn.weight", ly.attn_w, C, 3 * C);
    row(h + "attn.c_proj.weight", ly.attn_proj_w, C, C);
    row(h + "mlp.c_fc.weight", ly.fc_w, C, 4 * C);
    row(h + "mlp.c_proj.weight", ly.proj_w, 4 * C, C);
  }
  // The LM head is wte^T (C, V): its q8 blocks run along C, one wte row each.
  std::vector<float> head(static_cast<size_t>(C) * V);
  for (int v = 0; v < V; ++v)
    for (int k = 0; k < C; ++k) head[static_cast<size_t>(k) * V + v] = w.wte[static_cast<size_t>(v) * C + k];
  row("wte (LM head, transposed)", head.data(), C, V);
  std::printf("  %-28s %-14s %11zu %11zu   %-10.3g %-10.3g %-10.3g\n", "all matrices", "", before, after, all.max_abs,
              all.max_w > 0 ? all.max_abs / all.max_w : 0.0, std::sqrt(all.sum_sq / static_cast<double>(all.n)));
  std::printf("unchanged (float32 in every format): wte/wpe lookups, layer norms, biases, the KV cache\n");
  return 0;
}

}  // namespace tw::weights_tool
