#include "model/random_weights.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "model/safetensors.h"

namespace tw::model {
namespace {

enum class Init { kNormal, kGain, kBias, kCausalMask };

struct Planned {
  TensorInfo info;
  Init init = Init::kNormal;
  double std = 0.02;
};

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::vector<Planned> Plan(const Gpt2Config& c) {
  std::vector<Planned> plan;
  for (Gpt2TensorSpec& s : Gpt2ParameterSpecs(c)) {
    Planned p;
    p.info.name = s.name;
    p.info.shape = s.shape;
    const bool ln = s.name.find("ln_") != std::string::npos;
    if (ln && EndsWith(s.name, ".weight")) {
      p.init = Init::kGain;
    } else if (EndsWith(s.name, ".bias")) {
      p.init = Init::kBias;
      p.std = 0.01;
    } else if (EndsWith(s.name, "c_proj.weight")) {
      p.std = 0.02 / std::sqrt(2.0 * c.n_layer);
    }
    plan.push_back(std::move(p));
  }
  for (int l = 0; l < c.n_layer; l++) {
    Planned p;
    p.info.name = "h." + std::to_string(l) + ".attn.bias";
    p.info.shape = {1, 1, c.n_ctx, c.n_ctx};
    p.init = Init::kCausalMask;
    plan.push_back(std::move(p));
  }
  // The real files list tensors sorted by name, data in the same order.
  std::sort(plan.begin(), plan.end(),
            [](const Planned& a, const Planned& b) { return a.info.name < b.info.name; });
  uint64_t off = 0;
  for (Planned& p : plan) {
    p.info.dtype = Dtype::kF32;
    p.info.numel = 1;
    for (int64_t d : p.info.shape) p.info.numel *= static_cast<uint64_t>(d);
    p.info.data_begin = off;
    off += p.info.numel * sizeof(float);
    p.info.data_end = off;
  }
  return plan;
}

Status WriteAll(int fd, const std::string& path, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("write('" + path + "')");
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status WriteFile(const std::string& path, std::string_view bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno("open('" + path + "')");
  Status st = WriteAll(fd, path, bytes.data(), bytes.size());
  if (::close(fd) != 0 && st.ok()) st = Status::FromErrno("close('" + path + "')");
  return st;
}

// Writes the header and the data section to an open fd.
Status WriteModel(int fd, const std::string& path, const std::vector<Planned>& plan,
                  const RandomGpt2Options& o) {
  std::vector<TensorInfo> infos;
  for (const Planned& p : plan) infos.push_back(p.info);
  const std::pair<std::string, std::string> meta[] = {{"format", "pt"}};
  std::string header = EncodeSafetensorsHeader(infos, meta);
  Status st = WriteAll(fd, path, header.data(), header.size());
  if (!st.ok()) return st;

  const uint64_t total = plan.empty() ? 0 : plan.back().info.data_end;
  const size_t chunk_floats = std::max<size_t>(1, o.chunk_bytes / sizeof(float));
  std::vector<float> buf(chunk_floats);
  uint64_t done = 0;
  for (const Planned& p : plan) {
    TensorRng rng(o.seed, p.info.name);
    const uint64_t T = p.init == Init::kCausalMask ? static_cast<uint64_t>(o.config.n_ctx) : 1;
    for (uint64_t i = 0; i < p.info.numel;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk_floats, p.info.numel - i));
      for (size_t k = 0; k < n; k++) {
        switch (p.init) {
          case Init::kNormal: buf[k] = static_cast<float>(p.std * rng.Normal()); break;
          case Init::kGain: buf[k] = static_cast<float>(1.0 + p.std * rng.Normal()); break;
          case Init::kBias: buf[k] = static_cast<float>(p.std * rng.Normal()); break;
          case Init::kCausalMask: {
            const uint64_t e = i + k;  // (row, col) of the (T, T) mask
            buf[k] = (e % T) <= (e / T) ? 1.0f : 0.0f;
            break;
          }
        }
      }
      // Floats are little-endian on the host (static_assert in safetensors.cc).
      st = WriteAll(fd, path, buf.data(), n * sizeof(float));
      if (!st.ok()) return st;
      i += n;
      done += n * sizeof(float);
      if (o.progress) o.progress(done, total);
    }
  }
  return Status::Ok();
}

}  // namespace

double TensorRng::Normal() {
  if (have_spare_) {
    have_spare_ = false;
    return spare_;
  }
  const double u1 = 1.0 - Uniform();  // (0, 1]: log is finite
  const double u2 = Uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double a = 2.0 * 3.14159265358979323846 * u2;
  spare_ = r * std::sin(a);
  have_spare_ = true;
  return r * std::cos(a);
}

Status WriteFileAtomically(const std::string& path, std::span<const std::string_view> parts) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno("open('" + tmp + "')");
  Status st;
  for (std::string_view part : parts) {
    st = WriteAll(fd, tmp, part.data(), part.size());
    if (!st.ok()) break;
  }
  if (::close(fd) != 0 && st.ok()) st = Status::FromErrno("close('" + tmp + "')");
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = Status::FromErrno("rename('" + tmp + "', '" + path + "')");
  }
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
}

bool NamedGpt2Shape(std::string_view name, Gpt2Config* out) {
  Gpt2Config c;  // vocab 50257, eps 1e-5, eos 50256
  if (name == "tiny") {
    c.n_layer = 2;
    c.n_head = 4;
    c.n_embd = 64;
    c.n_ctx = 1024;  // GPT-2's context: prompts as long as the real model's
  } else if (name == "gpt2") {
    c.n_layer = 12;
    c.n_head = 12;
    c.n_embd = 768;
    c.n_ctx = 1024;
  } else {
    return false;
  }
  *out = c;
  return true;
}

std::string Gpt2ConfigJson(const Gpt2Config& c) {
  char eps[32];
  std::snprintf(eps, sizeof(eps), "%.9g", static_cast<double>(c.layer_norm_epsilon));
  std::string s = "{\n";
  s += "  \"model_type\": \"gpt2\",\n";
  s += "  \"architectures\": [\"GPT2LMHeadModel\"],\n";
  s += "  \"n_layer\": " + std::to_string(c.n_layer) + ",\n";
  s += "  \"n_head\": " + std::to_string(c.n_head) + ",\n";
  s += "  \"n_embd\": " + std::to_string(c.n_embd) + ",\n";
  s += "  \"n_positions\": " + std::to_string(c.n_ctx) + ",\n";
  s += "  \"n_ctx\": " + std::to_string(c.n_ctx) + ",\n";
  s += "  \"vocab_size\": " + std::to_string(c.vocab_size) + ",\n";
  s += "  \"layer_norm_epsilon\": " + std::string(eps) + ",\n";
  s += "  \"activation_function\": \"gelu_new\",\n";
  s += "  \"bos_token_id\": " + std::to_string(c.eos_token_id) + ",\n";
  s += "  \"eos_token_id\": " + std::to_string(c.eos_token_id) + "\n";
  s += "}\n";
  return s;
}

Status MakeDirs(const std::string& dir) {
  if (dir.empty()) return Status::Error("MakeDirs: empty path");
  for (size_t i = 1; i <= dir.size(); i++) {
    if (i != dir.size() && dir[i] != '/') continue;
    const std::string part = dir.substr(0, i);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      return Status::FromErrno("mkdir('" + part + "')");
    }
  }
  struct stat sb;
  if (::stat(dir.c_str(), &sb) != 0) return Status::FromErrno("stat('" + dir + "')");
  if (!S_ISDIR(sb.st_mode)) return Status::Error("'" + dir + "' exists and is not a directory");
  return Status::Ok();
}

Status WriteRandomGpt2(const std::string& dir, const RandomGpt2Options& o) {
  // Validate the config the same way the loader will.
  Gpt2Config check;
  const std::string config_text = Gpt2ConfigJson(o.config);
  Status st = ParseGpt2Config(config_text, "<generated config>", &check);
  if (!st.ok()) return st;
  st = MakeDirs(dir);
  if (!st.ok()) return st;
  st = WriteFile(dir + "/config.json", config_text);
  if (!st.ok()) return st;

  const std::string path = dir + "/model.safetensors";
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno("open('" + tmp + "')");
  st = WriteModel(fd, tmp, Plan(o.config), o);
  if (::close(fd) != 0 && st.ok()) st = Status::FromErrno("close('" + tmp + "')");
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = Status::FromErrno("rename('" + tmp + "', '" + path + "')");
  }
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
}

}  // namespace tw::model
