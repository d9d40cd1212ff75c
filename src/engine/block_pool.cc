#include "engine/block_pool.h"

#include <cstring>
#include <string>

namespace tw::engine {

namespace {

// splitmix64's finalizer: every input bit reaches every output bit.
uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace

BlockPool::BlockPool(int num_blocks, int block_size, bool caching)
    : block_size_(block_size < 1 ? 1 : block_size), caching_(caching) {
  const size_t n = num_blocks > 0 ? static_cast<size_t>(num_blocks) : 0;
  refs_.assign(n, 0);
  gen_.assign(n, 0);
  free_.reserve(n);
  for (size_t id = n; id-- > 0;) free_.push_back(static_cast<int32_t>(id));
  if (!caching_) return;
  cached_.assign(n, 0);
  ready_.assign(n, 0);
  hash_.assign(n, 0);
  parent_.assign(n, kNone);
  parent_gen_.assign(n, 0);
  tokens_.assign(n * static_cast<size_t>(block_size_), 0);
  lru_prev_.assign(n, kNone);
  lru_next_.assign(n, kNone);
  index_.reserve(n);
}

uint64_t BlockPool::ChainHash(uint64_t parent, const int32_t* tokens) const {
  uint64_t h = Mix64(parent);
  for (int i = 0; i < block_size_; i++) h = (h ^ static_cast<uint32_t>(tokens[i])) * 0x100000001b3ull;
  return Mix64(h);
}

int32_t BlockPool::Find(uint64_t hash, int32_t parent, const int32_t* tokens) const {
  auto it = index_.find(hash);
  if (it == index_.end()) return kNone;
  const int32_t id = it->second;
  if (parent_[id] != parent) return kNone;
  if (parent != kNone && (!cached_[parent] || parent_gen_[id] != gen_[parent])) return kNone;
  const int32_t* have = tokens_.data() + static_cast<size_t>(id) * block_size_;
  if (std::memcmp(have, tokens, sizeof(int32_t) * block_size_) != 0) return kNone;
  return id;
}

template <class OnMatch>
int BlockPool::Walk(const int32_t* tokens, int max_blocks, OnMatch on_match) const {
  if (!caching_) return 0;
  uint64_t h = kRootHash;
  int32_t parent = kNone;
  int k = 0;
  for (; k < max_blocks; k++) {
    const int32_t* t = tokens + static_cast<size_t>(k) * block_size_;
    h = ChainHash(h, t);
    const int32_t id = Find(h, parent, t);
    if (id == kNone) break;
    on_match(id, h);
    parent = id;
  }
  return k;
}

int BlockPool::PeekPrefix(const int32_t* tokens, int max_blocks, int* idle) const {
  int unreferenced = 0;
  const int k = Walk(tokens, max_blocks, [&](int32_t id, uint64_t) { unreferenced += refs_[id] == 0 ? 1 : 0; });
  if (idle != nullptr) *idle = unreferenced;
  return k;
}

int BlockPool::AcquirePrefix(const int32_t* tokens, int max_blocks, std::vector<int32_t>* ids,
                             std::vector<uint64_t>* hashes) {
  const size_t first = ids->size();
  const int k = Walk(tokens, max_blocks, [&](int32_t id, uint64_t h) {
    ids->push_back(id);
    hashes->push_back(h);
  });
  for (size_t i = first; i < ids->size(); i++) {
    if (refs_[(*ids)[i]]++ == 0) LruRemove((*ids)[i]);
  }
  return k;
}

bool BlockPool::Alloc(int n, std::vector<int32_t>* ids) {
  if (n < 0 || n > available()) return false;
  for (int i = 0; i < n; i++) {
    int32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = lru_head_;  // available() says the LRU holds the rest
      LruRemove(id);
      Evict(id);
    }
    gen_[id]++;
    refs_[id] = 1;
    ids->push_back(id);
  }
  return true;
}

void BlockPool::Evict(int32_t id) {
  auto it = index_.find(hash_[id]);
  if (it != index_.end() && it->second == id) index_.erase(it);
  cached_[id] = 0;
  ready_[id] = 0;
}

int32_t BlockPool::Register(int32_t id, int32_t parent, uint64_t hash, const int32_t* tokens, bool ready) {
  if (!caching_ || cached_[id]) return id;
  if (parent != kNone && !cached_[parent]) return id;  // unreachable: no lookup can get past its parent
  const int32_t twin = Find(hash, parent, tokens);
  if (twin != kNone) return twin;
  if (index_.count(hash) != 0) return id;  // a different block under the same hash: ours stays private
  cached_[id] = 1;
  ready_[id] = ready ? 1 : 0;
  hash_[id] = hash;
  parent_[id] = parent;
  parent_gen_[id] = parent == kNone ? 0 : gen_[parent];
  std::memcpy(tokens_.data() + static_cast<size_t>(id) * block_size_, tokens, sizeof(int32_t) * block_size_);
  index_.emplace(hash, id);
  return id;
}

Status BlockPool::Adopt(int32_t own, int32_t twin) {
  if (own == twin) return Status::Ok();
  if (twin < 0 || twin >= num_blocks() || !caching_ || !cached_[twin]) {
    return Status::Error("BlockPool::Adopt: block " + std::to_string(twin) + " is not cached");
  }
  if (refs_[twin]++ == 0) LruRemove(twin);
  return Release({own});
}

void BlockPool::MarkReady(int32_t id) {
  if (caching_ && cached_[id]) ready_[id] = 1;
}

void BlockPool::Unregister(int32_t id) {
  if (!caching_ || !cached_[id]) return;
  Evict(id);
  if (refs_[id] == 0) {  // it was on the LRU; now it is simply free
    LruRemove(id);
    free_.push_back(id);
  }
}

bool BlockPool::IsReady(int32_t id) const { return !caching_ || (cached_[id] && ready_[id]); }

Status BlockPool::Release(const std::vector<int32_t>& ids) {
  // Check first, counting down as we go (an id listed twice must hold two
  // references), and count back up: nothing changes unless all is well.
  Status bad;
  size_t checked = 0;
  for (; checked < ids.size(); checked++) {
    const int32_t id = ids[checked];
    if (id < 0 || id >= num_blocks()) {
      bad = Status::Error("BlockPool::Release: block " + std::to_string(id) + " at index " +
                          std::to_string(checked) + " is outside [0, " + std::to_string(num_blocks()) + ")");
      break;
    }
    if (refs_[id] <= 0) {
      bad = Status::Error("BlockPool::Release: block " + std::to_string(id) + " at index " +
                          std::to_string(checked) + " is not referenced (released twice, or listed twice)");
      break;
    }
    refs_[id]--;
  }
  for (size_t j = 0; j < checked; j++) refs_[ids[j]]++;
  if (!bad.ok()) return bad;
  for (size_t i = ids.size(); i-- > 0;) {
    const int32_t id = ids[i];
    if (--refs_[id] != 0) continue;
    if (caching_ && cached_[id]) {
      LruPush(id);
    } else {
      free_.push_back(id);
    }
  }
  return Status::Ok();
}

void BlockPool::LruPush(int32_t id) {
  lru_prev_[id] = lru_tail_;
  lru_next_[id] = kNone;
  if (lru_tail_ != kNone) {
    lru_next_[lru_tail_] = id;
  } else {
    lru_head_ = id;
  }
  lru_tail_ = id;
  lru_count_++;
}

void BlockPool::LruRemove(int32_t id) {
  const int32_t p = lru_prev_[id], n = lru_next_[id];
  if (p != kNone) {
    lru_next_[p] = n;
  } else {
    lru_head_ = n;
  }
  if (n != kNone) {
    lru_prev_[n] = p;
  } else {
    lru_tail_ = p;
  }
  lru_prev_[id] = lru_next_[id] = kNone;
  lru_count_--;
}

}  // namespace tw::engine
