// Paged KV cache, the CPU runner's side: one pool of fixed-size blocks
// allocated once at start-up, and the per-sequence state (a block table and
// a length) that the forward pass reads and appends to. Which blocks a
// sequence gets is the engine's choice (engine/block_pool.h).
//
// Layout of one block (floats), chosen for attention locality:
//   (n_layer, 2, n_head, block_size, head_dim)      2 = {K, V}
// so the keys of one (layer, head) in a block are block_size x head_dim
// contiguous floats, which the attention kernel streams through in order.
// Token t of a sequence lives in block block_table[t / block_size] at slot
// t % block_size.
//
// Bounds: the pool holds num_blocks * block_size tokens in all; its size is
// num_blocks * FloatsPerBlock() * 4 bytes, allocated and zero-filled (every page
// committed) once in Create(); the
// block count is the admission bound for the engine.
// Threading: KvPool's memory is written only by the forward pass (one thread
// drives it). Never: allocates after Create().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "cpu/aligned.h"
#include "engine/runner.h"
#include "model/gpt2.h"

namespace tw::model {

struct KvCacheConfig {
  int num_blocks = 1024;        // blocks in the pool
  int block_size_tokens = 16;   // tokens per block
};

class KvPool {
 public:
  // Allocates the whole pool. Fails (naming the size) on bad shapes or if the
  // allocation fails.
  static Status Create(const Gpt2Config& model, const KvCacheConfig& cfg,
                       std::unique_ptr<KvPool>* out);

  int num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  int n_layer() const { return n_layer_; }
  int n_head() const { return n_head_; }
  int head_dim() const { return head_dim_; }
  size_t FloatsPerBlock() const { return block_floats_; }
  size_t bytes() const { return static_cast<size_t>(num_blocks_) * block_floats_ * sizeof(float); }

  // Floats from a block's start to the K (kv=0) or V (kv=1) rows of (layer, head).
  size_t Offset(int layer, int kv, int head) const {
    return ((static_cast<size_t>(layer) * 2 + kv) * n_head_ + head) * HeadStride();
  }
  // Floats from one head's K (or V) rows to the next head's in a block.
  size_t HeadStride() const { return static_cast<size_t>(block_size_) * head_dim_; }
  float* block(int id) { return data_.get() + static_cast<size_t>(id) * block_floats_; }
  const float* data() const { return data_.get(); }

 private:
  KvPool() = default;
  int num_blocks_ = 0, block_size_ = 0, n_layer_ = 0, n_head_ = 0, head_dim_ = 0;
  size_t block_floats_ = 0;     // n_layer * 2 * n_head * block_size * head_dim
  cpu::AlignedFloats data_;  // (num_blocks, FloatsPerBlock()), 64-byte aligned
};

// Blocks needed to hold `tokens` tokens (the engine's definition).
using engine::BlocksFor;

}  // namespace tw::model
