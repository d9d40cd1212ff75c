// Helpers shared by the model tests: a temporary folder, a hand-written
// safetensors builder (its JSON is written here by string concatenation, so
// it does not share code with the reader or with EncodeSafetensorsHeader),
// and a tiny GPT-2 checkpoint whose every float is known.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace tw::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/tw_model_test_XXXXXX";
    char* p = ::mkdtemp(tmpl);
    path_ = p ? p : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline bool WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(f);
}

// One tensor to put in a hand-built file.
struct RawTensor {
  std::string name;
  std::string dtype;             // as spelled in the file
  std::vector<int64_t> shape;
  std::string data;              // raw bytes
};

inline std::string FloatBytes(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

inline std::string U64Le(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; i++) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// The header JSON for `tensors` laid out back to back in order.
inline std::string HeaderJson(const std::vector<RawTensor>& tensors,
                              const std::string& metadata_json = "") {
  std::string j = "{";
  bool first = true;
  if (!metadata_json.empty()) {
    j += "\"__metadata__\":" + metadata_json;
    first = false;
  }
  uint64_t off = 0;
  for (const RawTensor& t : tensors) {
    if (!first) j += ",";
    first = false;
    j += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); i++) {
      if (i) j += ",";
      j += std::to_string(t.shape[i]);
    }
    j += "],\"data_offsets\":[" + std::to_string(off) + "," +
         std::to_string(off + t.data.size()) + "]}";
    off += t.data.size();
  }
  return j + "}";
}

// A whole file: length, header (padded with `pad` spaces), data.
inline std::string BuildFile(const std::string& header_json, const std::vector<RawTensor>& tensors,
                             size_t pad = 0) {
  std::string h = header_json + std::string(pad, ' ');
  std::string out = U64Le(h.size()) + h;
  for (const RawTensor& t : tensors) out += t.data;
  return out;
}

inline std::string BuildFile(const std::vector<RawTensor>& tensors, size_t pad = 0) {
  return BuildFile(HeaderJson(tensors), tensors, pad);
}

// A tiny GPT-2: n_layer 1, n_head 2, n_embd 4, n_positions 8, vocab 10.
// Every float of tensor number k (in Gpt2ParameterSpecs order) at index i is
// k * 1000 + i, so a test can tell which tensor a pointer reads.
constexpr int kTinyC = 4, kTinyV = 10, kTinyT = 8;

inline std::string TinyConfigJson() {
  return "{\"model_type\":\"gpt2\",\"n_layer\":1,\"n_head\":2,\"n_embd\":4,"
         "\"n_positions\":8,\"n_ctx\":8,\"vocab_size\":10,\"layer_norm_epsilon\":1e-05,"
         "\"activation_function\":\"gelu_new\",\"eos_token_id\":9}";
}

inline std::vector<RawTensor> TinyTensors(const std::string& prefix = "") {
  const int64_t C = kTinyC;
  std::vector<std::pair<std::string, std::vector<int64_t>>> params = {
      {"wte.weight", {kTinyV, C}},
      {"wpe.weight", {kTinyT, C}},
      {"h.0.ln_1.weight", {C}},
      {"h.0.ln_1.bias", {C}},
      {"h.0.attn.c_attn.weight", {C, 3 * C}},
      {"h.0.attn.c_attn.bias", {3 * C}},
      {"h.0.attn.c_proj.weight", {C, C}},
      {"h.0.attn.c_proj.bias", {C}},
      {"h.0.ln_2.weight", {C}},
      {"h.0.ln_2.bias", {C}},
      {"h.0.mlp.c_fc.weight", {C, 4 * C}},
      {"h.0.mlp.c_fc.bias", {4 * C}},
      {"h.0.mlp.c_proj.weight", {4 * C, C}},
      {"h.0.mlp.c_proj.bias", {C}},
      {"ln_f.weight", {C}},
      {"ln_f.bias", {C}},
  };
  std::vector<RawTensor> out;
  // The causal-mask buffer first, as in the real (sorted) files.
  std::vector<float> mask(kTinyT * kTinyT);
  for (int r = 0; r < kTinyT; r++)
    for (int c = 0; c < kTinyT; c++) mask[r * kTinyT + c] = c <= r ? 1.0f : 0.0f;
  out.push_back({prefix + "h.0.attn.bias", "F32", {1, 1, kTinyT, kTinyT}, FloatBytes(mask)});
  for (size_t k = 0; k < params.size(); k++) {
    int64_t n = 1;
    for (int64_t d : params[k].second) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) v[static_cast<size_t>(i)] = static_cast<float>(k * 1000 + i);
    out.push_back({prefix + params[k].first, "F32", params[k].second, FloatBytes(v)});
  }
  return out;
}

// Writes config.json + model.safetensors into `dir`.
inline bool WriteTinyModel(const std::string& dir, const std::string& config_json,
                           const std::string& safetensors_bytes) {
  return WriteBytes(dir + "/config.json", config_json) &&
         WriteBytes(dir + "/model.safetensors", safetensors_bytes);
}

}  // namespace tw::testing
