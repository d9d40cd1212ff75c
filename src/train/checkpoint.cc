#include "train/checkpoint.h"

#include <algorithm>
#include <string_view>

#include "cpu/kernels.h"
#include "model/random_weights.h"
#include "model/safetensors.h"
#include "tokenizer/embedded.h"

namespace tw::train {

Status WriteCheckpoint(const std::string& dir, const model::Gpt2Config& config, const float* params,
                       const CheckpointOptions& options) {
  const std::vector<ParamTensor> layout = ParamLayout(config);
  if (options.tokenizer_files && config.vocab_size != 50257) {
    return Status::Error("checkpoint: the GPT-2 tokenizer files need vocab_size 50257, the model has " +
                         std::to_string(config.vocab_size));
  }
  Status st = model::MakeDirs(dir);
  if (!st.ok()) return st;
  const std::string config_json = model::Gpt2ConfigJson(config);
  const std::string_view config_parts[] = {config_json};
  st = model::WriteFileAtomically(dir + "/config.json", config_parts);
  if (!st.ok()) return st;

  // The real files' order: tensors sorted by name, data in the same order.
  std::vector<const ParamTensor*> sorted;
  for (const ParamTensor& t : layout) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](const ParamTensor* a, const ParamTensor* b) { return a->name < b->name; });
  std::vector<model::TensorInfo> infos;
  uint64_t offset = 0;
  for (const ParamTensor* t : sorted) {
    model::TensorInfo info;
    info.name = t->name;
    info.dtype = options.bf16 ? model::Dtype::kBF16 : model::Dtype::kF32;
    info.shape = t->shape;
    info.numel = t->numel;
    info.data_begin = offset;
    offset += t->numel * (options.bf16 ? sizeof(uint16_t) : sizeof(float));
    info.data_end = offset;
    infos.push_back(std::move(info));
  }
  std::vector<std::pair<std::string, std::string>> meta = {{"format", "pt"}};
  meta.insert(meta.end(), options.metadata.begin(), options.metadata.end());
  const std::string header = model::EncodeSafetensorsHeader(infos, meta);
  // Floats are little-endian on the host (static_assert in safetensors.cc).
  std::vector<std::string_view> parts = {header};
  std::vector<uint16_t> halves;  // BF16: every tensor's, in file order
  if (options.bf16) {
    halves.reserve(offset / sizeof(uint16_t));
    for (const ParamTensor* t : sorted) {
      for (size_t i = 0; i < t->numel; ++i) halves.push_back(cpu::Bf16FromFloat(params[t->offset + i]));
    }
    parts.emplace_back(reinterpret_cast<const char*>(halves.data()), halves.size() * sizeof(uint16_t));
  }
  for (const ParamTensor* t : sorted) {
    if (options.bf16) break;
    parts.emplace_back(reinterpret_cast<const char*>(params + t->offset), t->numel * sizeof(float));
  }
  st = model::WriteFileAtomically(dir + "/model.safetensors", parts);
  if (!st.ok() || !options.tokenizer_files) return st;
  const std::string_view vocab[] = {tokenizer::EmbeddedEncoderJson()};
  const std::string_view merges[] = {tokenizer::EmbeddedVocabBpe()};
  st = model::WriteFileAtomically(dir + "/vocab.json", vocab);
  if (!st.ok()) return st;
  return model::WriteFileAtomically(dir + "/merges.txt", merges);
}

}  // namespace tw::train
