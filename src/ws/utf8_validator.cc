#include "ws/utf8_validator.h"

namespace tw::ws {

bool Utf8Validator::Feed(std::string_view bytes, size_t* bad_index) {
  if (failed_) {
    if (bad_index) *bad_index = 0;
    return false;
  }
  for (size_t i = 0; i < bytes.size(); i++) {
    uint8_t b = static_cast<uint8_t>(bytes[i]);
    bool ok = true;
    if (need_ > 0) {
      if (b < lo_ || b > hi_) {
        ok = false;
      } else {
        need_--;
        lo_ = 0x80;  // only the first continuation byte has a narrowed range
        hi_ = 0xBF;
      }
    } else if (b < 0x80) {
      // ASCII
    } else if (b >= 0xC2 && b <= 0xDF) {
      need_ = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      need_ = 2;
      if (b == 0xE0) lo_ = 0xA0;  // E0 80..9F would be overlong
      if (b == 0xED) hi_ = 0x9F;  // ED A0..BF would be a surrogate
    } else if (b >= 0xF0 && b <= 0xF4) {
      need_ = 3;
      if (b == 0xF0) lo_ = 0x90;  // overlong
      if (b == 0xF4) hi_ = 0x8F;  // over U+10FFFF
    } else {
      ok = false;  // 80..BF stray continuation, C0/C1 overlong, F5..FF
    }
    if (!ok) {
      failed_ = true;
      if (bad_index) *bad_index = i;
      return false;
    }
  }
  return true;
}

}  // namespace tw::ws
