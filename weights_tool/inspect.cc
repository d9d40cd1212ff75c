// weights_tool inspect / verify.
#include <sys/stat.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "model/gpt2.h"
#include "model/safetensors.h"
#include "tokenizer/tokenizer.h"

namespace tw::weights_tool {
namespace {

bool IsDir(const std::string& path) {
  struct stat sb;
  return ::stat(path.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode);
}

// Non-finite floats among `n` little-endian F32 values at `p` (read with memcpy:
// the mapping may not be 4-byte aligned).
uint64_t CountNonFinite(const uint8_t* p, uint64_t n) {
  uint64_t bad = 0;
  for (uint64_t i = 0; i < n; i++) {
    float f;
    std::memcpy(&f, p + i * 4, 4);
    if (!std::isfinite(f)) bad++;
  }
  return bad;
}

std::string ReadText(const std::string& path, bool* ok) {
  std::string s;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  *ok = f != nullptr;
  if (!f) return s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) {
    s.append(buf, n);
    if (s.size() > (1u << 20)) break;  // config.json is small; ParseGpt2Config bounds it anyway
  }
  std::fclose(f);
  return s;
}

void PrintConfig(const model::Gpt2Config& c) {
  std::printf("config: n_layer %d, n_head %d, n_embd %d, n_positions %d, vocab_size %d, "
              "layer_norm_epsilon %g, eos_token_id %d\n",
              c.n_layer, c.n_head, c.n_embd, c.n_ctx, c.vocab_size,
              static_cast<double>(c.layer_norm_epsilon), c.eos_token_id);
}

struct NamedWeight {
  const char* what;
  int layer;  // -1 for the model-level tensors
  const float* p;
  uint64_t n;
};

std::vector<NamedWeight> AllWeights(const model::Gpt2Model& m) {
  const model::Gpt2Config& c = m.config();
  const model::Gpt2Weights& w = m.weights();
  const uint64_t C = static_cast<uint64_t>(c.n_embd);
  std::vector<NamedWeight> out = {
      {"wte.weight", -1, w.wte, static_cast<uint64_t>(c.vocab_size) * C},
      {"wpe.weight", -1, w.wpe, static_cast<uint64_t>(c.n_ctx) * C},
      {"ln_f.weight", -1, w.ln_f_w, C},
      {"ln_f.bias", -1, w.ln_f_b, C},
  };
  for (size_t l = 0; l < w.layers.size(); l++) {
    const model::Gpt2Layer& L = w.layers[l];
    const int li = static_cast<int>(l);
    out.push_back({"ln_1.weight", li, L.ln_1_w, C});
    out.push_back({"ln_1.bias", li, L.ln_1_b, C});
    out.push_back({"attn.c_attn.weight", li, L.attn_w, C * 3 * C});
    out.push_back({"attn.c_attn.bias", li, L.attn_b, 3 * C});
    out.push_back({"attn.c_proj.weight", li, L.attn_proj_w, C * C});
    out.push_back({"attn.c_proj.bias", li, L.attn_proj_b, C});
    out.push_back({"ln_2.weight", li, L.ln_2_w, C});
    out.push_back({"ln_2.bias", li, L.ln_2_b, C});
    out.push_back({"mlp.c_fc.weight", li, L.fc_w, C * 4 * C});
    out.push_back({"mlp.c_fc.bias", li, L.fc_b, 4 * C});
    out.push_back({"mlp.c_proj.weight", li, L.proj_w, 4 * C * C});
    out.push_back({"mlp.c_proj.bias", li, L.proj_b, C});
  }
  return out;
}

}  // namespace

int Inspect(const std::string& path) {
  const bool dir = IsDir(path);
  const std::string file = dir ? path + "/model.safetensors" : path;
  std::unique_ptr<model::SafetensorsFile> f;
  Status st = model::SafetensorsFile::Open(file, &f);
  if (!st.ok()) {
    std::printf("INVALID: %s\n", st.message().c_str());
    return 1;
  }
  const model::SafetensorsHeader& h = f->header();
  std::printf("file: %s (%" PRIu64 " bytes)\n", file.c_str(), f->file_bytes());
  std::printf("header: %" PRIu64 " bytes of JSON; data section at offset %" PRIu64
              " (%s), %" PRIu64 " bytes\n",
              h.header_bytes, h.data_offset,
              h.data_offset % 8 == 0 ? "8-byte aligned" : "NOT 8-byte aligned", h.data_bytes);
  for (const auto& kv : h.metadata) {
    std::printf("metadata: %s = %s\n", kv.first.c_str(), kv.second.c_str());
  }
  std::printf("tensors: %zu\n", h.tensors.size());
  std::printf("  %-40s %-6s %-22s %s\n", "name", "dtype", "shape", "data bytes [begin, end)");
  uint64_t non_finite = 0, f32_values = 0;
  for (const model::TensorInfo& t : h.tensors) {
    std::printf("  %-40s %-6s %-22s [%" PRIu64 ", %" PRIu64 ")\n", t.name.c_str(),
                std::string(model::DtypeName(t.dtype)).c_str(),
                model::ShapeToString(t.shape).c_str(), t.data_begin, t.data_end);
    if (t.dtype == model::Dtype::kF32) {
      non_finite += CountNonFinite(f->TensorData(t).data(), t.numel);
      f32_values += t.numel;
    }
  }
  std::printf("checks: header valid (dtypes known, shapes match byte sizes, tensors tile the "
              "data section exactly)\n");
  std::printf("checks: %" PRIu64 " non-finite values among %" PRIu64 " F32 values\n", non_finite,
              f32_values);
  int rc = non_finite == 0 ? 0 : 1;
  if (dir) {
    bool ok = false;
    const std::string cpath = path + "/config.json";
    const std::string text = ReadText(cpath, &ok);
    model::Gpt2Config c;
    if (!ok) {
      std::printf("config: cannot read %s\n", cpath.c_str());
      rc = 1;
    } else if (!(st = model::ParseGpt2Config(text, cpath, &c)).ok()) {
      std::printf("config: INVALID: %s\n", st.message().c_str());
      rc = 1;
    } else {
      PrintConfig(c);
    }
    std::unique_ptr<model::Gpt2Model> m;
    st = model::LoadGpt2(path, &m);
    if (st.ok()) {
      std::printf("GPT-2 loader: OK, %zu parameter bytes (%zu parameters)\n",
                  m->parameter_bytes(), m->parameter_bytes() / 4);
    } else {
      std::printf("GPT-2 loader: FAILED: %s\n", st.message().c_str());
      rc = 1;
    }
  }
  return rc;
}

int Verify(const std::string& dir) {
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "verify %s: FAILED: %s\n", dir.c_str(), why.c_str());
    return 1;
  };
  if (!IsDir(dir)) return fail("not a directory");
  std::unique_ptr<model::Gpt2Model> m;
  Status st = model::LoadGpt2(dir, &m);
  if (!st.ok()) return fail(st.message());
  const model::Gpt2Config& c = m->config();
  for (const NamedWeight& w : AllWeights(*m)) {
    const uint64_t bad =
        CountNonFinite(reinterpret_cast<const uint8_t*>(w.p), w.n);
    if (bad != 0) {
      std::string name = w.layer < 0 ? w.what : "h." + std::to_string(w.layer) + "." + w.what;
      return fail("tensor '" + name + "' has " + std::to_string(bad) + " non-finite values");
    }
  }
  tokenizer::Tokenizer tok;
  st = tokenizer::Tokenizer::LoadFromDir(dir, &tok);
  if (!st.ok()) return fail("tokenizer: " + st.message());
  if (tok.vocab_size() != static_cast<size_t>(c.vocab_size)) {
    return fail("tokenizer has " + std::to_string(tok.vocab_size()) +
                " tokens but config.json says vocab_size " + std::to_string(c.vocab_size));
  }
  if (tok.end_of_text_id() != c.eos_token_id) {
    return fail("tokenizer's <|endoftext|> is id " + std::to_string(tok.end_of_text_id()) +
                " but config.json says eos_token_id " + std::to_string(c.eos_token_id));
  }
  PrintConfig(c);
  std::printf("verify %s: OK (%zu parameters, all finite; tokenizer %zu tokens, %zu merges)\n",
              dir.c_str(), m->parameter_bytes() / 4, tok.vocab_size(), tok.merge_count());
  return 0;
}

}  // namespace tw::weights_tool
