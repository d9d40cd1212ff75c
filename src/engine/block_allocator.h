// BlockAllocator: a plain free list of KV block ids [0, num_blocks), for the
// tests and benches that drive a runner or the forward pass without the
// engine (the engine's own is BlockPool, block_pool.h, which adds the prefix
// cache; the memory is the runner's).
//
// Alloc is all-or-nothing. Freeing an id that is out of range or already
// free is an error (and frees nothing), which is how a double release is
// detected.
//
// Threads: not thread-safe (the engine thread owns it). Memory: two arrays
// of num_blocks entries, allocated once. Never: allocates after construction
// (Alloc appends to the caller's vector, which may grow it).
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace tw::engine {

class BlockAllocator {
 public:
  explicit BlockAllocator(int num_blocks);

  // Appends n free ids to *ids and returns true, or returns false and takes
  // nothing when fewer than n are free.
  bool Alloc(int n, std::vector<int32_t>* ids);
  // Returns the ids to the free list; an id out of range or already free is
  // an error (and nothing from `ids` is freed).
  Status Free(const std::vector<int32_t>& ids);

  int num_free() const { return static_cast<int>(free_.size()); }
  int num_blocks() const { return static_cast<int>(is_free_.size()); }

 private:
  std::vector<int32_t> free_;  // stack; lowest ids are handed out first
  std::vector<bool> is_free_;  // (num_blocks)
};

}  // namespace tw::engine
