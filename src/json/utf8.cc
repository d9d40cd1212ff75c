#include "json/utf8.h"

namespace tw::json {

size_t Utf8SequenceLength(std::string_view s, size_t pos, size_t* bad_offset) {
  const unsigned char lead = static_cast<unsigned char>(s[pos]);
  if (lead < 0x80) return 1;
  // RFC 3629 section 4: the lead byte fixes the length and the range of the
  // second byte; every later byte is 0x80..0xBF.
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    len = 2;
  } else if (lead == 0xE0) {
    len = 3, lo = 0xA0;  // below: overlong
  } else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) {
    len = 3;
  } else if (lead == 0xED) {
    len = 3, hi = 0x9F;  // above: surrogates
  } else if (lead == 0xF0) {
    len = 4, lo = 0x90;  // below: overlong
  } else if (lead >= 0xF1 && lead <= 0xF3) {
    len = 4;
  } else if (lead == 0xF4) {
    len = 4, hi = 0x8F;  // above: > U+10FFFF
  } else {
    *bad_offset = pos;  // continuation byte, 0xC0, 0xC1, 0xF5..0xFF
    return 0;
  }
  for (size_t i = 1; i < len; i++) {
    if (pos + i >= s.size()) {
      *bad_offset = s.size();
      return 0;
    }
    const unsigned char c = static_cast<unsigned char>(s[pos + i]);
    if (c < lo || c > hi) {
      *bad_offset = pos + i;
      return 0;
    }
    lo = 0x80, hi = 0xBF;
  }
  return len;
}

bool IsValidUtf8(std::string_view s, size_t* bad_offset) {
  size_t i = 0;
  while (i < s.size()) {
    size_t bad = 0;
    const size_t len = Utf8SequenceLength(s, i, &bad);
    if (len == 0) {
      if (bad_offset != nullptr) *bad_offset = bad;
      return false;
    }
    i += len;
  }
  return true;
}

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace tw::json
