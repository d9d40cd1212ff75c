// The byte <-> unicode map of OpenAI's GPT-2 encoder.
//
// GPT-2's vocabulary files (encoder.json / vocab.json, vocab.bpe / merges.txt)
// spell every token's bytes as printable characters: each of the 256 byte
// values maps to one code point. The 188 bytes that are printable Latin-1
// ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) map to themselves; the other 68
// (controls, space, DEL, NBSP, soft hyphen) map in increasing byte order to
// U+0100, U+0101, ... U+0143. So ' ' is U+0120 'Ġ' and '\n' is U+010A 'Ċ'.
//
// Thread-safety: pure functions; call from any thread. Allocation: only the
// returned strings. Never fails on bad input: it reports it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tw::tokenizer {

// The code point that stands for byte `b` in the vocabulary files.
char32_t ByteToUnicode(uint8_t b);

// The byte that code point `cp` stands for, or -1 if `cp` is not one of the
// 256 code points of the map.
int UnicodeToByte(char32_t cp);

// Converts a vocabulary spelling (UTF-8 text of mapped code points) to the raw
// token bytes. Returns false (and leaves *out unspecified) if `spelled` is not
// valid UTF-8 or contains a code point outside the map.
bool UnmapTokenSpelling(std::string_view spelled, std::string* out);

// The inverse: raw bytes to their vocabulary spelling (UTF-8).
std::string MapTokenBytes(std::string_view bytes);

}  // namespace tw::tokenizer
