// For fuzz targets: the GPT-2 tokenizer embedded in the binary, loaded once.
// Aborts (a fuzzer finding) if it cannot be loaded.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "tokenizer/tokenizer.h"

namespace tw::fuzz {

inline const tokenizer::Tokenizer& EmbeddedTokenizer() {
  static const tokenizer::Tokenizer t = [] {
    tokenizer::Tokenizer loaded;
    if (!tokenizer::Tokenizer::LoadEmbedded(&loaded).ok()) {
      std::fprintf(stderr, "fuzz: the embedded tokenizer failed to load\n");
      std::abort();
    }
    return loaded;
  }();
  return t;
}

}  // namespace tw::fuzz
