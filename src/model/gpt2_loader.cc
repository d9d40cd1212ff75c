// LoadGpt2: config.json + model.safetensors -> Gpt2Model (see gpt2.h for
// the rules on names, buffers, lm_head and where the weights live).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <span>
#include <unordered_map>

#include "json/json.h"
#include "model/gpt2.h"
#include "model/safetensors.h"

namespace tw::model {
namespace {

constexpr size_t kSlabAlignBytes = 64;  // copy fallback: each tensor starts on a cache line

// IEEE binary16 -> float32, exactly (every half is a float: subnormals become
// normal floats, infinities and NaNs stay so, the NaN payload shifted along).
float FloatFromHalf(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);  // rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: 0.mant x 2^-14, normalised
    int e = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      e--;
    }
    bits = sign | (static_cast<uint32_t>(e) << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// A tensor's F32, BF16 or F16 bytes as float32 (both 16-bit formats widen
// exactly) into dst, which holds numel floats and need not match src's
// alignment.
void WidenToFloat(Dtype dtype, std::span<const uint8_t> src, float* dst) {
  if (dtype == Dtype::kF32) {
    std::memcpy(dst, src.data(), src.size());
    return;
  }
  const size_t n = src.size() / 2;
  for (size_t i = 0; i < n; i++) {
    uint16_t h;
    std::memcpy(&h, src.data() + 2 * i, 2);
    if (dtype == Dtype::kBF16) {
      const uint32_t bits = static_cast<uint32_t>(h) << 16;
      std::memcpy(dst + i, &bits, sizeof(float));
    } else {
      dst[i] = FloatFromHalf(h);
    }
  }
}

// Reads a whole small file (config.json) with a byte bound.
Status ReadSmallFile(const std::string& path, size_t max_bytes, std::string* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open('" + path + "')");
  out->clear();
  char buf[4096];
  while (true) {
    ssize_t r = ::read(fd, buf, sizeof(buf));
    if (r < 0) {
      if (errno == EINTR) continue;
      Status st = Status::FromErrno("read('" + path + "')");
      ::close(fd);
      return st;
    }
    if (r == 0) break;
    if (out->size() + static_cast<size_t>(r) > max_bytes) {
      ::close(fd);
      return Status::Error("'" + path + "' is over max_config_bytes " +
                           std::to_string(max_bytes));
    }
    out->append(buf, static_cast<size_t>(r));
  }
  ::close(fd);
  return Status::Ok();
}

// An integer config field in [1, max]. *present reports whether the key exists.
Status ConfigInt(const json::Value& root, std::string_view label, std::string_view key, int max,
                 bool required, int* out, bool* present = nullptr) {
  const json::Value* v = root.Find(key);
  if (present) *present = v != nullptr && !v->is_null();
  if (v == nullptr || v->is_null()) {
    if (!required) return Status::Ok();
    return Status::Error("config '" + std::string(label) + "': missing required integer '" +
                         std::string(key) + "'");
  }
  if (!v->is_int() || v->as_int() < 1 || v->as_int() > max) {
    return Status::Error("config '" + std::string(label) + "': '" + std::string(key) +
                         "' must be an integer in [1, " + std::to_string(max) + "], found " +
                         (v->is_int() ? std::to_string(v->as_int()) : std::string("a non-integer")));
  }
  *out = static_cast<int>(v->as_int());
  return Status::Ok();
}

// The model as loaded: weights point either into `file_` (zero copy) or into
// `slab_` (one aligned allocation), never both.
class LoadedGpt2 : public Gpt2Model {
 public:
  ~LoadedGpt2() override { std::free(slab_); }
  Gpt2Config& mutable_config() { return config_; }
  Gpt2Weights& mutable_weights() { return weights_; }
  void set_parameter_bytes(size_t n) { parameter_bytes_ = n; }
  std::unique_ptr<SafetensorsFile> file_;
  void* slab_ = nullptr;  // aligned_alloc; freed in the destructor
};

bool IsMaskBuffer(std::string_view name) {
  // h.<digits>.attn.bias or h.<digits>.attn.masked_bias
  if (name.substr(0, 2) != "h.") return false;
  size_t i = 2;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') i++;
  if (i == 2) return false;
  std::string_view rest = name.substr(i);
  return rest == ".attn.bias" || rest == ".attn.masked_bias";
}

}  // namespace

std::vector<Gpt2TensorSpec> Gpt2ParameterSpecs(const Gpt2Config& c) {
  const int64_t C = c.n_embd, V = c.vocab_size, T = c.n_ctx;
  std::vector<Gpt2TensorSpec> s;
  s.push_back({"wte.weight", {V, C}});
  s.push_back({"wpe.weight", {T, C}});
  for (int l = 0; l < c.n_layer; l++) {
    const std::string h = "h." + std::to_string(l) + ".";
    s.push_back({h + "ln_1.weight", {C}});
    s.push_back({h + "ln_1.bias", {C}});
    s.push_back({h + "attn.c_attn.weight", {C, 3 * C}});
    s.push_back({h + "attn.c_attn.bias", {3 * C}});
    s.push_back({h + "attn.c_proj.weight", {C, C}});
    s.push_back({h + "attn.c_proj.bias", {C}});
    s.push_back({h + "ln_2.weight", {C}});
    s.push_back({h + "ln_2.bias", {C}});
    s.push_back({h + "mlp.c_fc.weight", {C, 4 * C}});
    s.push_back({h + "mlp.c_fc.bias", {4 * C}});
    s.push_back({h + "mlp.c_proj.weight", {4 * C, C}});
    s.push_back({h + "mlp.c_proj.bias", {C}});
  }
  s.push_back({"ln_f.weight", {C}});
  s.push_back({"ln_f.bias", {C}});
  return s;
}

Status ParseGpt2Config(std::string_view json_text, std::string_view label, Gpt2Config* out,
                       const Gpt2ConfigLimits& limits) {
  const std::string where = "config '" + std::string(label) + "': ";
  json::Value root;
  json::ParseLimits jl;
  jl.max_bytes = limits.max_config_bytes;
  Status st = json::Parse(json_text, &root, jl);
  if (!st.ok()) return Status::Error(where + "not valid JSON: " + st.message());
  if (!root.is_object()) return Status::Error(where + "not a JSON object");

  Gpt2Config c;
  if (!(st = ConfigInt(root, label, "n_layer", limits.max_layers, true, &c.n_layer)).ok() ||
      !(st = ConfigInt(root, label, "n_head", limits.max_heads, true, &c.n_head)).ok() ||
      !(st = ConfigInt(root, label, "n_embd", limits.max_embd, true, &c.n_embd)).ok() ||
      !(st = ConfigInt(root, label, "vocab_size", limits.max_vocab, true, &c.vocab_size)).ok()) {
    return st;
  }
  // n_positions is the size of wpe; n_ctx is its legacy alias (used only if
  // n_positions is absent, as in Hugging Face's GPT2Config).
  bool have_pos = false;
  st = ConfigInt(root, label, "n_positions", limits.max_positions, false, &c.n_ctx, &have_pos);
  if (!st.ok()) return st;
  if (!have_pos) {
    bool have_ctx = false;
    st = ConfigInt(root, label, "n_ctx", limits.max_positions, false, &c.n_ctx, &have_ctx);
    if (!st.ok()) return st;
    if (!have_ctx) return Status::Error(where + "missing 'n_positions' (or 'n_ctx')");
  }
  if (c.n_embd % c.n_head != 0) {
    return Status::Error(where + "n_embd " + std::to_string(c.n_embd) +
                         " is not a multiple of n_head " + std::to_string(c.n_head));
  }

  if (const json::Value* v = root.Find("layer_norm_epsilon"); v != nullptr && !v->is_null()) {
    if (!v->is_number() || !(v->as_double() > 0) || !(v->as_double() < 1)) {
      return Status::Error(where + "'layer_norm_epsilon' must be a number in (0, 1)");
    }
    c.layer_norm_epsilon = static_cast<float>(v->as_double());
  }
  if (const json::Value* v = root.Find("eos_token_id"); v != nullptr && !v->is_null()) {
    if (!v->is_int()) return Status::Error(where + "'eos_token_id' must be an integer");
    if (v->as_int() < 0 || v->as_int() >= c.vocab_size) {
      return Status::Error(where + "'eos_token_id' " + std::to_string(v->as_int()) +
                           " is outside the vocabulary [0, " + std::to_string(c.vocab_size) +
                           ")");
    }
    c.eos_token_id = static_cast<int>(v->as_int());
  } else if (c.eos_token_id >= c.vocab_size) {
    return Status::Error(where + "no 'eos_token_id' and the default 50256 is outside the "
                         "vocabulary of " + std::to_string(c.vocab_size));
  }

  // Settings that would change the forward pass's math.
  if (const json::Value* v = root.Find("model_type");
      v != nullptr && !(v->is_string() && v->as_string() == "gpt2")) {
    return Status::Error(where + "'model_type' must be \"gpt2\"");
  }
  if (const json::Value* v = root.Find("activation_function"); v != nullptr) {
    if (!v->is_string() ||
        (v->as_string() != "gelu_new" && v->as_string() != "gelu_pytorch_tanh")) {
      return Status::Error(where + "'activation_function' must be \"gelu_new\" or "
                           "\"gelu_pytorch_tanh\" (the tanh GELU TokenWire implements)");
    }
  }
  if (const json::Value* v = root.Find("n_inner"); v != nullptr && !v->is_null()) {
    if (!v->is_int() || v->as_int() != 4 * static_cast<int64_t>(c.n_embd)) {
      return Status::Error(where + "'n_inner' must be null or 4 * n_embd = " +
                           std::to_string(4 * static_cast<int64_t>(c.n_embd)));
    }
  }
  if (const json::Value* v = root.Find("scale_attn_weights");
      v != nullptr && !(v->is_bool() && v->as_bool())) {
    return Status::Error(where + "'scale_attn_weights' must be true");
  }
  if (const json::Value* v = root.Find("scale_attn_by_inverse_layer_idx");
      v != nullptr && !(v->is_bool() && !v->as_bool())) {
    return Status::Error(where + "'scale_attn_by_inverse_layer_idx' must be false");
  }
  *out = c;
  return Status::Ok();
}

Status LoadGpt2(const std::string& dir, std::unique_ptr<Gpt2Model>* out) {
  const std::string config_path = dir + "/config.json";
  const std::string weights_path = dir + "/model.safetensors";

  Gpt2ConfigLimits climits;
  std::string config_text;
  Status st = ReadSmallFile(config_path, climits.max_config_bytes, &config_text);
  if (!st.ok()) return st;
  auto model = std::make_unique<LoadedGpt2>();
  st = ParseGpt2Config(config_text, config_path, &model->mutable_config(), climits);
  if (!st.ok()) return st;
  const Gpt2Config& c = model->config();

  st = SafetensorsFile::Open(weights_path, &model->file_);
  if (!st.ok()) return st;
  const SafetensorsFile& file = *model->file_;
  const std::string where = "safetensors '" + weights_path + "': ";

  // Map each file tensor to a parameter (or skip it), by name without prefix.
  const std::vector<Gpt2TensorSpec> specs = Gpt2ParameterSpecs(c);
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < specs.size(); i++) index.emplace(specs[i].name, i);
  std::vector<const TensorInfo*> found(specs.size(), nullptr);
  const TensorInfo* lm_head = nullptr;
  for (const TensorInfo& t : file.header().tensors) {
    std::string_view name = t.name;
    if (name.substr(0, 12) == "transformer.") name.remove_prefix(12);
    if (IsMaskBuffer(name)) continue;
    if (name == "lm_head.weight") {
      lm_head = &t;
      continue;
    }
    auto it = index.find(std::string(name));
    if (it == index.end()) {
      return Status::Error(where + "tensor '" + t.name + "' " + ShapeToString(t.shape) +
                           " is not a GPT-2 parameter (for n_layer " +
                           std::to_string(c.n_layer) + ")");
    }
    if (found[it->second] != nullptr) {
      return Status::Error(where + "tensor '" + t.name + "' and '" + found[it->second]->name +
                           "' are the same parameter");
    }
    found[it->second] = &t;
  }

  size_t total = 0;
  bool aligned = true;
  for (size_t i = 0; i < specs.size(); i++) {
    const TensorInfo* t = found[i];
    if (t == nullptr) {
      return Status::Error(where + "missing tensor '" + specs[i].name + "' (expected F32 " +
                           ShapeToString(specs[i].shape) + ")");
    }
    if (t->dtype != Dtype::kF32 && t->dtype != Dtype::kBF16 && t->dtype != Dtype::kF16) {
      return Status::Error(where + "tensor '" + t->name + "': unsupported dtype " +
                           std::string(DtypeName(t->dtype)) + " (expected F32, BF16 or F16)");
    }
    if (t->shape != specs[i].shape) {
      return Status::Error(where + "tensor '" + t->name + "': expected shape " +
                           ShapeToString(specs[i].shape) + ", found " + ShapeToString(t->shape));
    }
    total += t->numel * sizeof(float);
    if (t->dtype != Dtype::kF32 ||
        reinterpret_cast<uintptr_t>(file.TensorData(*t).data()) % alignof(float) != 0) {
      aligned = false;  // widened or realigned into the slab
    }
  }
  if (lm_head != nullptr) {
    const TensorInfo* wte = found[0];
    auto a = file.TensorData(*lm_head);
    auto b = file.TensorData(*wte);
    if (lm_head->dtype != wte->dtype || lm_head->shape != wte->shape ||
        std::memcmp(a.data(), b.data(), a.size()) != 0) {
      return Status::Error(where + "tensor '" + lm_head->name +
                           "' differs from wte.weight: an untied LM head is not supported");
    }
  }

  // Where the floats live: in the mapping, or copied (BF16 and F16 widened)
  // into one aligned slab.
  std::vector<const float*> ptrs(specs.size());
  if (aligned) {
    for (size_t i = 0; i < specs.size(); i++) {
      ptrs[i] = reinterpret_cast<const float*>(file.TensorData(*found[i]).data());
    }
  } else {
    size_t slab_bytes = 0;
    std::vector<size_t> offs(specs.size());
    for (size_t i = 0; i < specs.size(); i++) {
      offs[i] = slab_bytes;
      slab_bytes += (found[i]->numel * sizeof(float) + kSlabAlignBytes - 1) / kSlabAlignBytes *
                    kSlabAlignBytes;
    }
    model->slab_ = std::aligned_alloc(kSlabAlignBytes, slab_bytes == 0 ? kSlabAlignBytes
                                                                        : slab_bytes);
    if (model->slab_ == nullptr) {
      return Status::Error(where + "cannot allocate " + std::to_string(slab_bytes) +
                           " bytes for the aligned weight copy");
    }
    uint8_t* slab = static_cast<uint8_t*>(model->slab_);
    for (size_t i = 0; i < specs.size(); i++) {
      WidenToFloat(found[i]->dtype, file.TensorData(*found[i]), reinterpret_cast<float*>(slab + offs[i]));
      ptrs[i] = reinterpret_cast<const float*>(slab + offs[i]);
    }
    model->file_.reset();  // the copy is all we keep
  }

  // Fill the pointers in Gpt2ParameterSpecs order.
  Gpt2Weights& w = model->mutable_weights();
  size_t k = 0;
  w.wte = ptrs[k++];
  w.wpe = ptrs[k++];
  w.layers.resize(static_cast<size_t>(c.n_layer));
  for (Gpt2Layer& L : w.layers) {
    L.ln_1_w = ptrs[k++];
    L.ln_1_b = ptrs[k++];
    L.attn_w = ptrs[k++];
    L.attn_b = ptrs[k++];
    L.attn_proj_w = ptrs[k++];
    L.attn_proj_b = ptrs[k++];
    L.ln_2_w = ptrs[k++];
    L.ln_2_b = ptrs[k++];
    L.fc_w = ptrs[k++];
    L.fc_b = ptrs[k++];
    L.proj_w = ptrs[k++];
    L.proj_b = ptrs[k++];
  }
  w.ln_f_w = ptrs[k++];
  w.ln_f_b = ptrs[k++];
  model->set_parameter_bytes(total);
  *out = std::move(model);
  return Status::Ok();
}

}  // namespace tw::model
