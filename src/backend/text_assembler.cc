#include "backend/text_assembler.h"

#include <algorithm>

namespace tw::backend {

TextAssembler::TextAssembler(std::vector<std::string> stop_strings) {
  for (auto& s : stop_strings) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

TextAssembler::Step TextAssembler::Push(std::string_view text, bool may_stop) {
  Step step;
  if (stopped_) return step;
  pending_.append(text);
  if (!may_stop) quiet_ = pending_.size();
  // 1. A complete stop string in the pending text that ends past the quiet
  //    part: cut at the earliest one (ties: the earliest start wins,
  //    whichever string it is).
  size_t best = std::string::npos;
  for (const auto& s : stops_) {
    if (!may_stop) break;
    const size_t from = quiet_ >= s.size() ? quiet_ - s.size() + 1 : 0;
    size_t pos = pending_.find(s, from);
    if (pos < best) best = pos;
  }
  if (best != std::string::npos) {
    step.text = pending_.substr(0, best);
    step.stopped = stopped_ = true;
    pending_.clear();
    return step;
  }
  // 2. Hold back the longest suffix that is a proper prefix of a stop string.
  //    Stop strings are valid UTF-8, so such a suffix starts on a character
  //    boundary and the emitted part stays valid UTF-8.
  size_t keep = 0;
  for (const auto& s : stops_) {
    size_t max_len = std::min(s.size() - 1, pending_.size());
    for (size_t len = max_len; len > keep; len--) {
      if (pending_.compare(pending_.size() - len, len, s, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  const size_t emitted = pending_.size() - keep;
  step.text = pending_.substr(0, emitted);
  pending_.erase(0, emitted);
  quiet_ = quiet_ > emitted ? quiet_ - emitted : 0;
  return step;
}

std::string TextAssembler::Flush() {
  std::string out;
  out.swap(pending_);
  quiet_ = 0;
  return out;
}

}  // namespace tw::backend
