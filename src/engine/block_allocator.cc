#include "engine/block_allocator.h"

#include <string>

namespace tw::engine {

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

}  // namespace tw::engine
