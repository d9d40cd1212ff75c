#include "backend/token_emitter.h"

#include <utility>

namespace tw::backend {

TokenEmitter::TokenEmitter(const tokenizer::Tokenizer* tokenizer, std::vector<std::string> stop,
                           int max_new_tokens, int32_t eos_token_id)
    : tokenizer_(tokenizer), max_new_tokens_(max_new_tokens), eos_(eos_token_id), text_(std::move(stop)) {}

TokenEmitter::Emit TokenEmitter::Push(int32_t token) {
  Emit e;
  e.index = produced_++;
  if (eos_ >= 0 && token == eos_) {
    e.text = text_.Push(utf8_.Flush()).text + text_.Flush();
    e.done = true;
    e.reason = stream::FinishReason::kEos;
    return e;
  }
  TextAssembler::Step step = text_.Push(utf8_.Push(tokenizer_->TokenBytes(token)));
  e.text = std::move(step.text);
  if (step.stopped) {
    e.done = true;
    e.reason = stream::FinishReason::kStop;
  } else if (produced_ >= max_new_tokens_) {
    e.text += text_.Push(utf8_.Flush()).text;
    e.text += text_.Flush();
    e.done = true;
    e.reason = stream::FinishReason::kLength;
  }
  return e;
}

}  // namespace tw::backend
