// GPT-2's byte <-> unicode map, computed once into two constant tables.
#include "tokenizer/byte_unicode.h"

#include <array>

#include "tokenizer/unicode.h"

namespace tw::tokenizer {
namespace {

constexpr bool MapsToItself(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct ByteMap {
  std::array<char32_t, 256> to_unicode{};
  // Every mapped code point is below U+0144, so the inverse is a flat table.
  static constexpr char32_t kInverseSize = 0x144;
  std::array<int16_t, kInverseSize> to_byte{};

  constexpr ByteMap() {
    for (auto& v : to_byte) v = -1;
    char32_t next_shifted = 0x100;
    for (int b = 0; b < 256; ++b) {
      const char32_t cp = MapsToItself(b) ? static_cast<char32_t>(b) : next_shifted++;
      to_unicode[b] = cp;
      to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

constexpr ByteMap kByteMap;

void AppendUtf8(char32_t cp, std::string* out) {
  // Only code points below U+0800 occur here (the map tops out at U+0143).
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

char32_t ByteToUnicode(uint8_t b) { return kByteMap.to_unicode[b]; }

int UnicodeToByte(char32_t cp) {
  return cp < ByteMap::kInverseSize ? kByteMap.to_byte[cp] : -1;
}

bool UnmapTokenSpelling(std::string_view spelled, std::string* out) {
  out->clear();
  size_t pos = 0;
  while (pos < spelled.size()) {
    const DecodedCodePoint d = DecodeUtf8At(spelled, pos);
    const int b = d.cp == kInvalidCodePoint ? -1 : UnicodeToByte(d.cp);
    if (b < 0) return false;
    out->push_back(static_cast<char>(b));
    pos += d.length;
  }
  return true;
}

std::string MapTokenBytes(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) AppendUtf8(ByteToUnicode(static_cast<uint8_t>(c)), &out);
  return out;
}

}  // namespace tw::tokenizer
