// Incremental UTF-8 validation (RFC 3629) for WebSocket text messages
// (RFC 6455 §8.1): bytes arrive in arbitrary pieces (frames, TCP reads), and
// the first byte that cannot be part of well-formed UTF-8 is reported as soon
// as it arrives ("fail fast", Autobahn 6.4.x), without waiting for the end of
// the message.
//
// Threads: a validator belongs to its caller. Allocation: none (two bytes of
// state). Rejected: overlong forms, surrogates (U+D800..U+DFFF), code points
// over U+10FFFF, stray continuation bytes, lead bytes C0, C1, F5..FF, and a
// sequence interrupted by a non-continuation byte; an unfinished sequence at
// the end is reported by complete(), not by Feed().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tw::ws {

class Utf8Validator {
 public:
  // Feeds the next bytes. Returns false at the first invalid byte and sets
  // *bad_index (if non-null) to its index within `bytes`; the validator then
  // stays failed until Reset().
  bool Feed(std::string_view bytes, size_t* bad_index = nullptr);
  // True if the bytes fed so far end on a character boundary (and none failed).
  bool complete() const { return !failed_ && need_ == 0; }
  bool failed() const { return failed_; }
  void Reset() {
    need_ = 0;
    lo_ = 0x80;
    hi_ = 0xBF;
    failed_ = false;
  }

 private:
  uint8_t need_ = 0;    // continuation bytes still expected
  uint8_t lo_ = 0x80;   // allowed range of the next continuation byte
  uint8_t hi_ = 0xBF;
  bool failed_ = false;
};

}  // namespace tw::ws
