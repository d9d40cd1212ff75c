// Shared by the tokenizer tests: the third-party GPT-2 vectors under
// tests/data/gpt2/ and the tokenizer loaded once from src/tokenizer/data/.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tw::tokenizer::testing {

struct Vector {
  std::string id;           // "tiktoken:3", "faust:0", ...
  std::string text;
  std::vector<TokenId> tokens;
  bool allowed_special = false;  // encode with "<|endoftext|>" recognised
};

// The 20 vectors of tiktoken-tests-gpt2.json; ADD_FAILURE()s on a bad file.
std::vector<Vector> LoadTiktokenVectors();
// The 481 lines of oracle-vectors.jsonl.
std::vector<Vector> LoadOracleVectors();

// Loaded once (thread-safe static) from src/tokenizer/data/ in the source tree.
const Tokenizer& SharedTokenizer();

}  // namespace tw::tokenizer::testing
