#include "model/serving_model.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "common/embed.h"
#include "model/random_weights.h"

// The default model (src/model/data/README.md; the Makefile lists the files
// as prerequisites of this object).
asm(TW_EMBED_FILE("tw_default_model_config", "src/model/data/gpt2-fortunes/config.json")
        TW_EMBED_FILE("tw_default_model_safetensors", "src/model/data/gpt2-fortunes/model.safetensors"));

extern "C" {
extern const char tw_default_model_config_begin[];
extern const char tw_default_model_config_end[];
extern const char tw_default_model_safetensors_begin[];
extern const char tw_default_model_safetensors_end[];
}

namespace tw::model {

namespace {

// A model id travels as one path segment (GET /v1/models/{id}) and inside
// JSON strings unescaped: what --served-model-name allows (letters, digits,
// . _ - :, at most 128), every other byte of the folder's name becoming '-'.
std::string ModelIdFromFolderName(const std::string& folder) {
  std::string id = folder.substr(0, 128);
  for (char& c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-' || c == ':';
    if (!ok) c = '-';
  }
  return id;
}

// Writes `bytes` to a new file at `path`.
Status WriteFile(const std::string& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno("open('" + path + "')");
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = Status::FromErrno("write('" + path + "')");
      ::close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return Status::FromErrno("close('" + path + "')");
  return Status::Ok();
}

}  // namespace

bool IsBuiltInModel(std::string_view dir) { return dir.empty() || dir == kRandomTinyModel; }

std::string_view DefaultModelConfigJson() {
  return std::string_view(tw_default_model_config_begin,
                          tw_default_model_config_end - tw_default_model_config_begin);
}

std::string_view DefaultModelSafetensors() {
  return std::string_view(tw_default_model_safetensors_begin,
                          tw_default_model_safetensors_end - tw_default_model_safetensors_begin);
}

Status LoadModelForServing(const std::string& dir, std::shared_ptr<const Gpt2Model>* out,
                           std::string* name) {
  std::unique_ptr<Gpt2Model> m;
  if (!IsBuiltInModel(dir)) {
    if (Status s = LoadGpt2(dir, &m); !s.ok()) return s;
    std::string base = dir;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    size_t slash = base.rfind('/');
    if (slash != std::string::npos) base = base.substr(slash + 1);
    *name = base.empty() || base == "." ? "gpt2" : ModelIdFromFolderName(base);
    *out = std::move(m);
    return Status::Ok();
  }
  const bool random = dir == kRandomTinyModel;
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/tokenwire-model-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) return Status::FromErrno("mkdtemp " + templ);
  Status s;
  if (random) {
    RandomGpt2Options ro;
    NamedGpt2Shape("tiny", &ro.config);
    ro.seed = 0;
    s = WriteRandomGpt2(templ, ro);
  } else {
    s = WriteFile(templ + "/config.json", DefaultModelConfigJson());
    if (s.ok()) s = WriteFile(templ + "/model.safetensors", DefaultModelSafetensors());
  }
  if (s.ok()) s = LoadGpt2(templ, &m);
  // The loader maps model.safetensors (or copied it): the files can go now.
  ::unlink((templ + "/model.safetensors").c_str());
  ::unlink((templ + "/model.safetensors.tmp").c_str());
  ::unlink((templ + "/config.json").c_str());
  ::rmdir(templ.c_str());
  if (!s.ok()) {
    return Status::Error(std::string(random ? "random tiny model" : "the default model") + " in " + templ + ": " +
                         s.message());
  }
  *name = random ? "gpt2-random-tiny" : std::string(kDefaultModelName);
  *out = std::move(m);
  return Status::Ok();
}

}  // namespace tw::model
