// A request that keeps a prep thread busy: POST /v1/tokenize of a megabyte
// of words of random letters (a fixed seed), whole, as raw HTTP/1.1 bytes.
// Tokenizing it takes a while (~0.2 s on one core), unlike a megabyte of one
// repeated word, which the tokenizer's word cache makes quick. The server
// must take bodies of 2 MiB (--max-body-bytes 2097152).
#pragma once

#include <cstdint>
#include <string>

namespace tw::testing {

inline std::string SlowTokenizeRequest() {
  std::string text;
  uint64_t x = 88172645463325252ull;  // xorshift64
  while (text.size() < (1u << 20)) {
    text += ' ';
    for (int n = 3 + static_cast<int>(x % 7); n > 0; --n) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      text += static_cast<char>('a' + x % 26);
    }
  }
  const std::string body = "{\"text\":\"" + text + "\"}";
  return "POST /v1/tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
         body;
}

}  // namespace tw::testing
