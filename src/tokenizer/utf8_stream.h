// Incremental UTF-8 decoder for streaming generated tokens as text.
//
// A GPT-2 token is a byte string, and one character may be split across
// tokens (an emoji is often 2-4 tokens). Feed each token's bytes to Push(): it
// returns the longest well-formed UTF-8 text that can be emitted so far and
// holds back the bytes of a character that is still unfinished. Bytes that can
// never become part of a well-formed character become U+FFFD, one per maximal
// ill-formed subpart (the Unicode / WHATWG "substitution of maximal subparts"
// practice, also what Python's bytes.decode('utf-8', 'replace') does). Flush()
// at the end of the stream turns a dangling partial character into U+FFFD.
// So the concatenation of everything returned is always valid UTF-8, and for
// valid input it is exactly the input, however the input is split.
//
// Thread-safety: one decoder per stream, used by one thread at a time.
// Allocation: only the returned strings; the held-back state is at most 3
// bytes (kMaxHeldBytes), inside the object. Never fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tw::tokenizer {

class Utf8StreamDecoder {
 public:
  static constexpr size_t kMaxHeldBytes = 3;  // longest unfinished character

  // Appends `bytes` to the stream; returns the text that became complete.
  std::string Push(std::string_view bytes);
  // Same, appending to *out instead of returning (no allocation of its own).
  void PushTo(std::string_view bytes, std::string* out);
  // Ends the stream: "\uFFFD" if a partial character was held back, else "".
  // The decoder is then empty and may start a new stream.
  std::string Flush();
  void FlushTo(std::string* out);

  // Bytes currently held back (0..kMaxHeldBytes).
  size_t held_bytes() const { return held_len_; }

 private:
  void PushByte(char c, std::string* out);  // one byte through the state machine
  void Reset();

  char held_[kMaxHeldBytes] = {};
  size_t held_len_ = 0;
  size_t need_ = 0;     // total length of the character being assembled
  uint8_t lo_ = 0x80;   // allowed range of the next continuation byte
  uint8_t hi_ = 0xBF;
};

// Whole-string convenience: `bytes` with ill-formed parts replaced by U+FFFD,
// exactly as one decoder's Push(bytes) + Flush() would give.
std::string ToValidUtf8(std::string_view bytes);

}  // namespace tw::tokenizer
