// BlockPool: the engine's side of the paged KV cache — which block ids
// [0, num_blocks) are free, which are referenced by sequences and how many
// times, and (with prefix caching on) which full blocks hold a known token
// prefix so that a later sequence can share them (the memory is the
// runner's; the engine hands the ids across the seam).
//
// Reference counts. A sequence holds one reference to every block in its
// table. Alloc hands out fresh blocks (count 1), AcquirePrefix takes one
// more reference on each shared block, Release drops one reference per id.
// Releasing a block whose count is already zero is an error (and releases
// nothing of that call), which is how a double release is detected. At rest
// every count is zero and every block is free or cached.
//
// The prefix cache (vLLM's automatic prefix caching, with the match checked
// exactly). A block is cached when it is full: its block_size tokens, and
// every token before it, are known. Its key is a chained hash:
//   hash(block k) = Mix(hash(block k-1), its block_size token ids)
// with hash(block -1) a constant. The hash only finds a candidate; a match
// is then checked exactly: the candidate's stored tokens equal the block's,
// and its stored parent is the block matched for k-1 in the same generation
// (a block's generation changes each time it is handed out fresh). So by
// induction a matched chain holds exactly the sequence's tokens: a hash
// collision costs a miss, never a wrong answer. A block can be cached while
// referenced (a running sequence's full blocks are shared at once); when its
// count falls to zero it stays cached, on an LRU list, and Alloc evicts the
// least recently released one when no never-cached block is free. A
// sequence releases its blocks last to first, so a chain's tail is evicted
// before its head.
//
// Pending blocks. A prompt's full blocks are cached when the sequence is
// admitted, before its prefill has written them (Register with ready =
// false), so that an identical prefix admitted in the same step shares them;
// the engine prefills the sharer after the owner (IsReady) and, if the
// owner's prefill fails, Unregister takes them out of the cache again.
//
// Threads: not thread-safe (the engine thread owns it). Memory: per-block
// arrays and the token copies (num_blocks x block_size ids) allocated at
// construction; the hash index is reserved for num_blocks entries.
// Never: frees a block that is referenced, or hands out a cached block while
// it is referenced.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace tw::engine {

class BlockPool {
 public:
  // caching false: a plain reference-counted allocator (nothing is cached).
  BlockPool(int num_blocks, int block_size, bool caching);

  static constexpr uint64_t kRootHash = 0x9e3779b97f4a7c15ull;
  // The chained hash of a full block of block_size tokens after `parent`.
  uint64_t ChainHash(uint64_t parent, const int32_t* tokens) const;

  // The longest cached chain of whole blocks matching tokens[0, max_blocks *
  // block_size): counts it (PeekPrefix), or also takes a reference on each
  // block, appends their ids to *ids and their chain hashes to *hashes
  // (AcquirePrefix). Returns the number of blocks.
  // *idle (if not null) gets how many of the matched blocks no sequence
  // references (acquiring them takes them out of available()).
  int PeekPrefix(const int32_t* tokens, int max_blocks, int* idle = nullptr) const;
  int AcquirePrefix(const int32_t* tokens, int max_blocks, std::vector<int32_t>* ids,
                    std::vector<uint64_t>* hashes);

  // Appends n fresh blocks (reference count 1) to *ids: never-cached free
  // blocks first, then the least recently released cached ones (evicted).
  // All or nothing: returns false and takes nothing when fewer than n are
  // available().
  bool Alloc(int n, std::vector<int32_t>* ids);

  // Caches the full block `id` (referenced by the caller) holding `tokens`
  // (block_size ids) after `parent` (-1 for a sequence's first block), whose
  // chain hash is `hash`. If an identical block is already cached (same
  // tokens, same parent), nothing is cached and its id is returned: the
  // caller may use that block instead (Adopt). Otherwise returns id. With
  // caching off, returns id and caches nothing.
  int32_t Register(int32_t id, int32_t parent, uint64_t hash, const int32_t* tokens, bool ready);
  // Swaps a caller's reference from `own` to the cached twin `twin`
  // (Register's answer): one more reference on twin, one fewer on own.
  Status Adopt(int32_t own, int32_t twin);
  // A pending block becomes readable / is dropped from the cache (its
  // owner's prefill failed; readers still holding it must not use it).
  void MarkReady(int32_t id);
  void Unregister(int32_t id);
  bool IsReady(int32_t id) const;

  // Drops one reference from each id, last to first (so the first is the
  // most recently released). An id out of range or not referenced is an
  // error, and then nothing is released.
  Status Release(const std::vector<int32_t>& ids);

  int num_blocks() const { return static_cast<int>(refs_.size()); }
  int block_size() const { return block_size_; }
  bool caching() const { return caching_; }
  // Blocks Alloc can hand out now: free ones and cached ones no sequence
  // references.
  int available() const { return static_cast<int>(free_.size()) + lru_count_; }
  int referenced() const { return num_blocks() - available(); }
  int cached() const { return static_cast<int>(index_.size()); }
  int refcount(int32_t id) const { return refs_[id]; }

 private:
  static constexpr int32_t kNone = -1;
  // The cached block whose chain hash is `hash` and which holds `tokens`
  // after `parent`, or kNone.
  int32_t Find(uint64_t hash, int32_t parent, const int32_t* tokens) const;
  // Walks the cached chain matching tokens[0, max_blocks * block_size),
  // calling on_match(id, chain hash) for each block; returns their count.
  template <class OnMatch>
  int Walk(const int32_t* tokens, int max_blocks, OnMatch on_match) const;
  void Evict(int32_t id);  // a cached, unreferenced block leaves the cache
  void LruPush(int32_t id);
  void LruRemove(int32_t id);

  const int block_size_;
  const bool caching_;
  std::vector<int32_t> free_;       // stack of never-cached free blocks; lowest ids out first
  std::vector<int32_t> refs_;       // (num_blocks) references
  std::vector<uint32_t> gen_;       // (num_blocks) bumped each time a block is handed out fresh
  // Per cached block (valid while cached_[id]):
  std::vector<uint8_t> cached_;
  std::vector<uint8_t> ready_;
  std::vector<uint64_t> hash_;
  std::vector<int32_t> parent_;
  std::vector<uint32_t> parent_gen_;
  std::vector<int32_t> tokens_;     // (num_blocks * block_size)
  std::unordered_map<uint64_t, int32_t> index_;  // chain hash -> cached block
  // LRU of cached blocks with no reference: head = least recently released.
  std::vector<int32_t> lru_prev_, lru_next_;
  int32_t lru_head_ = kNone, lru_tail_ = kNone;
  int lru_count_ = 0;
};

}  // namespace tw::engine
