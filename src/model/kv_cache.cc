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

BlockAllocator::BlockAllocator(int num_blocks)
    : is_free_(num_blocks > 0 ? num_blocks : 0, true) {
  free_.reserve(is_free_.size());
  for (int id = static_cast<int>(is_free_.size()) - 1; id >= 0; --id) free_.push_back(id);
}

bool BlockAllocator::Alloc(int n, std::vector<int32_t>* ids) {
  if (n < 0 || n > num_free()) return false;
  for (int i = 0; i < n; ++i) {
    int32_t id = free_.back();
    free_.pop_back();
    is_free_[id] = false;
    ids->push_back(id);
  }
  return true;
}

Status BlockAllocator::Free(const std::vector<int32_t>& ids) {
  // Mark as we validate (this also catches an id listed twice); undo on error.
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    std::string problem;
    if (id < 0 || id >= num_blocks()) {
      problem = "is outside [0, " + std::to_string(num_blocks()) + ")";
    } else if (is_free_[id]) {
      problem = "is already free (or listed twice)";
    }
    if (!problem.empty()) {
      for (size_t j = 0; j < i; ++j) is_free_[ids[j]] = false;
      return Status::Error("BlockAllocator::Free: block " + std::to_string(id) + " at index " +
                           std::to_string(i) + " " + problem);
    }
    is_free_[id] = true;
  }
  for (int32_t id : ids) free_.push_back(id);
  return Status::Ok();
}

}  // namespace tw::model
