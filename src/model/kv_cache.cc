#include "model/kv_cache.h"

#include <cstring>
#include <string>

namespace tw::model {

Status KvPool::Create(const Gpt2Config& model, const KvCacheConfig& cfg,
                      std::unique_ptr<KvPool>* out) {
  if (cfg.num_blocks <= 0 || cfg.block_size_tokens <= 0) {
    return Status::Error("KvPool: num_blocks and block_size_tokens must be positive, got " +
                         std::to_string(cfg.num_blocks) + " and " +
                         std::to_string(cfg.block_size_tokens));
  }
  if (model.n_layer <= 0 || model.n_head <= 0 || model.n_embd % model.n_head != 0) {
    return Status::Error("KvPool: bad model shape n_layer=" + std::to_string(model.n_layer) +
                         " n_head=" + std::to_string(model.n_head) +
                         " n_embd=" + std::to_string(model.n_embd));
  }
  std::unique_ptr<KvPool> p(new KvPool());
  p->num_blocks_ = cfg.num_blocks;
  p->block_size_ = cfg.block_size_tokens;
  p->n_layer_ = model.n_layer;
  p->n_head_ = model.n_head;
  p->head_dim_ = model.n_embd / model.n_head;
  p->block_floats_ = static_cast<size_t>(model.n_layer) * 2 * model.n_embd * cfg.block_size_tokens;
  const size_t total = p->block_floats_ * static_cast<size_t>(cfg.num_blocks);
  p->data_ = cpu::AllocAligned(total);
  if (!p->data_) {
    return Status::Error("KvPool: cannot allocate " + std::to_string(total * sizeof(float)) +
                         " bytes for " + std::to_string(cfg.num_blocks) + " blocks");
  }
  // Touch every page now: the pool is committed at start-up (an overcommitted
  // host fails here, not mid-stream), and a step never pays the page faults
  // of blocks used for the first time (measured: a decode step of 32
  // sequences that all crossed into fresh blocks took ~160 ms instead of ~37).
  std::memset(p->data_.get(), 0, total * sizeof(float));
  *out = std::move(p);
  return Status::Ok();
}

}  // namespace tw::model
