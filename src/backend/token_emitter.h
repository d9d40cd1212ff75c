// TokenEmitter: what a producer does with each token it draws, in one place
// for the engine, the mock backend and (through the engine) `tokenwire
// generate` (DESIGN.md §5).
//
// The rules, in order, for the token at index i of the completion (a token
// "may end" the generation once i + 1 >= min_tokens, vLLM's rule):
//  1. the end-of-text token, unless ignore_eos, ends the generation
//     (finish_reason "eos") if it may end it; a token of stop_token_ids
//     ends it ("stop") likewise; either is reported carrying only the text
//     held back so far (its own text is not emitted). An end-of-text token
//     that does not end it (ignore_eos, or before min_tokens) adds no text:
//     a special token;
//  2. otherwise its bytes go through the incremental UTF-8 decoder, then the
//     stop-string matcher (TextAssembler); a completed stop string ends the
//     generation ("stop") if it ends in a token that may end it, the stop
//     string itself never emitted;
//  3. otherwise, the max_new_tokens-th token ends it ("length") and carries
//     everything held back (a partial character, a possible stop-string
//     prefix);
//  4. otherwise the token carries the text that is certain so far.
//
// Threads: one per generation, owned by its producer. Memory: the held-back
// text (under 4 bytes of UTF-8 plus the longest stop string).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/text_assembler.h"
#include "stream/event.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_stream.h"

namespace tw::backend {

class TokenEmitter {
 public:
  // eos_token_id < 0: no end-of-text token (the mock's synthetic vocabulary).
  TokenEmitter(const tokenizer::Tokenizer* tokenizer, std::vector<std::string> stop, int max_new_tokens,
               int32_t eos_token_id);
  // The end rules of a request: stop, max_new_tokens, min_tokens,
  // ignore_eos and stop_token_ids.
  TokenEmitter(const tokenizer::Tokenizer* tokenizer, const GenerationRequest& request, int32_t eos_token_id);

  struct Emit {
    int index = 0;     // the token's position in the completion, from 0
    std::string text;  // its UTF-8 delta ("" while text is held back)
    bool done = false;  // the generation ends with this token
    stream::FinishReason reason = stream::FinishReason::kLength;  // when done
  };
  // The next drawn token. Not to be called after an Emit with done.
  // `last`: the producer ends the generation with this token for a reason
  // of its own (a grammar that takes nothing more): unless a rule above
  // ends it first, it ends "stop" carrying everything held back, as rule 3.
  Emit Push(int32_t token, bool last = false);

  int produced() const { return produced_; }  // tokens pushed so far

 private:
  const tokenizer::Tokenizer* tokenizer_;
  int max_new_tokens_;
  int32_t eos_;
  int min_tokens_ = 0;
  bool ignore_eos_ = false;
  std::vector<int32_t> stop_ids_;
  int produced_ = 0;
  tokenizer::Utf8StreamDecoder utf8_;
  TextAssembler text_;
};

}  // namespace tw::backend
