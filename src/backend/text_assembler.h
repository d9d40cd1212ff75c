// TextAssembler: turns decoded token text into the deltas a stream emits,
// matching stop strings across token boundaries (DESIGN.md §5).
//
// Input is already valid UTF-8 (the tokenizer's incremental decoder holds back
// unfinished characters). Text that might be the beginning of a stop string is
// held back until it is known not to be; when a stop string completes, the
// text before it is emitted and the stop string itself is not.
//
// Threads: one per generation, owned by its producer. Memory: the held-back
// text is shorter than the longest stop string.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tw::backend {

class TextAssembler {
 public:
  explicit TextAssembler(std::vector<std::string> stop_strings);

  struct Step {
    std::string text;      // emit now (may be empty while text is held back)
    bool stopped = false;  // a stop string completed; generation must end
  };
  // Adds the next piece of decoded text. may_stop false (a token before
  // min_tokens): no stop string may end in this text — text that could
  // begin one is still held back, and a stop string that completes in a
  // later piece ends the generation (vLLM's rule: a stop string ending in a
  // token before min_tokens is not a match).
  Step Push(std::string_view text, bool may_stop = true);
  // End of generation for another reason: everything held back is emitted.
  std::string Flush();

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  size_t quiet_ = 0;  // pending_[0, quiet_) came with may_stop false: no match may end there
  bool stopped_ = false;
};

}  // namespace tw::backend
