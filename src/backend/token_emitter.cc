#include "backend/token_emitter.h"

#include <algorithm>
#include <utility>

namespace tw::backend {

TokenEmitter::TokenEmitter(const tokenizer::Tokenizer* tokenizer, std::vector<std::string> stop,
                           int max_new_tokens, int32_t eos_token_id)
    : tokenizer_(tokenizer), max_new_tokens_(max_new_tokens), eos_(eos_token_id), text_(std::move(stop)) {}

TokenEmitter::TokenEmitter(const tokenizer::Tokenizer* tokenizer, const GenerationRequest& r, int32_t eos_token_id)
    : TokenEmitter(tokenizer, r.stop, r.max_new_tokens, eos_token_id) {
  min_tokens_ = r.min_tokens;
  ignore_eos_ = r.ignore_eos;
  stop_ids_ = r.stop_token_ids;
}

TokenEmitter::Emit TokenEmitter::Push(int32_t token, bool last) {
  Emit e;
  e.index = produced_++;
  const bool may_end = produced_ >= min_tokens_;
  const bool eos = eos_ >= 0 && token == eos_;
  const bool stop_id = std::find(stop_ids_.begin(), stop_ids_.end(), token) != stop_ids_.end();
  if (may_end && ((eos && !ignore_eos_) || stop_id)) {
    e.text = text_.Push(utf8_.Flush()).text + text_.Flush();
    e.done = true;
    e.reason = stop_id ? stream::FinishReason::kStop : stream::FinishReason::kEos;
    return e;
  }
  // The end-of-text token that does not end the generation (ignore_eos, or
  // before min_tokens) adds no text: a special token.
  const std::string_view bytes = eos ? std::string_view() : tokenizer_->TokenBytes(token);
  TextAssembler::Step step = text_.Push(utf8_.Push(bytes), may_end);
  e.text = std::move(step.text);
  if (step.stopped) {
    e.done = true;
    e.reason = stream::FinishReason::kStop;
  } else if (produced_ >= max_new_tokens_ || last) {
    e.text += text_.Push(utf8_.Flush()).text;
    e.text += text_.Flush();
    e.done = true;
    e.reason = last ? stream::FinishReason::kStop : stream::FinishReason::kLength;
  }
  return e;
}

}  // namespace tw::backend
