// GPT-2's vocabulary files, embedded in the binary.
//
// src/tokenizer/data/encoder.json and vocab.bpe (OpenAI's GPT-2 files; see
// data/README.md) are assembled into read-only data with `.incbin`, so a static
// tokenwire binary can tokenize without any file beside it
// (Tokenizer::LoadEmbedded). A model folder's own files still win
// (Tokenizer::LoadFromDirOrEmbedded).
//
// Thread-safety: constant data; call from any thread. Allocation: none (the
// views point into the binary's .rodata, valid for the program's lifetime).
#pragma once

#include <string_view>

namespace tw::tokenizer {

std::string_view EmbeddedEncoderJson();  // encoder.json, 1,042,301 bytes
std::string_view EmbeddedVocabBpe();     // vocab.bpe, 456,318 bytes

}  // namespace tw::tokenizer
