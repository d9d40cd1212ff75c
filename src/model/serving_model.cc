#include "model/serving_model.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>

#include "model/random_weights.h"

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

}  // namespace

Status LoadModelForServing(const std::string& dir, std::shared_ptr<const Gpt2Model>* out,
                           std::string* name) {
  std::unique_ptr<Gpt2Model> m;
  if (!dir.empty()) {
    if (Status s = LoadGpt2(dir, &m); !s.ok()) return s;
    std::string base = dir;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    size_t slash = base.rfind('/');
    if (slash != std::string::npos) base = base.substr(slash + 1);
    *name = base.empty() || base == "." ? "gpt2" : ModelIdFromFolderName(base);
    *out = std::move(m);
    return Status::Ok();
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/tokenwire-random-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) return Status::FromErrno("mkdtemp " + templ);
  RandomGpt2Options ro;
  NamedGpt2Shape("tiny", &ro.config);
  ro.seed = 0;
  Status s = WriteRandomGpt2(templ, ro);
  if (s.ok()) s = LoadGpt2(templ, &m);
  // The loader maps model.safetensors (or copied it): the files can go now.
  ::unlink((templ + "/model.safetensors").c_str());
  ::unlink((templ + "/model.safetensors.tmp").c_str());
  ::unlink((templ + "/config.json").c_str());
  ::rmdir(templ.c_str());
  if (!s.ok()) return Status::Error("random tiny model in " + templ + ": " + s.message());
  *name = "gpt2-random-tiny";
  *out = std::move(m);
  return Status::Ok();
}

}  // namespace tw::model
