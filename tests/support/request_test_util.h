// For tests of the request parsers (tests/openai, tests/service): the GPT-2
// tokenizer embedded in the binary, loaded once, and the bounds those tests
// parse against (max_new_tokens 100, context 1024, 4 stop strings of at most
// 8 bytes, the tokenizer's vocabulary).
#pragma once

#include <gtest/gtest.h>

#include "fuzz/embedded_tokenizer.h"
#include "service/generation_request.h"
#include "tokenizer/tokenizer.h"

namespace tw::testing {

using fuzz::EmbeddedTokenizer;  // the embedded GPT-2 tokenizer, loaded once

inline service::RequestBounds TestBounds() {
  service::RequestBounds b;
  b.max_new_tokens = 100;
  b.context_length = 1024;
  b.max_stop_strings = 4;
  b.max_stop_bytes = 8;
  b.vocab_size = static_cast<int>(EmbeddedTokenizer().vocab_size());
  return b;
}

}  // namespace tw::testing
