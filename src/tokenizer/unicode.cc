// Character-class lookup over the generated tables, and strict UTF-8 decoding.
#include "tokenizer/unicode.h"

#include <algorithm>

namespace tw::tokenizer {
namespace {

bool InRanges(std::span<const CodePointRange> ranges, char32_t cp) {
  // First range whose upper end is >= cp; cp is in the table iff it starts <= cp.
  auto it = std::lower_bound(ranges.begin(), ranges.end(), cp,
                             [](const CodePointRange& r, char32_t c) { return r.hi < c; });
  return it != ranges.end() && it->lo <= cp;
}

}  // namespace

bool IsLetter(char32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return InRanges(LetterRanges(), cp);
}

bool IsNumber(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return InRanges(NumberRanges(), cp);
}

bool IsWhitespace(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= '\t' && cp <= '\r');
  return InRanges(WhitespaceRanges(), cp);
}

CharClass Classify(char32_t cp) {
  if (IsLetter(cp)) return CharClass::kLetter;
  if (IsNumber(cp)) return CharClass::kNumber;
  if (IsWhitespace(cp)) return CharClass::kWhitespace;
  return CharClass::kOther;
}

DecodedCodePoint DecodeUtf8At(std::string_view text, size_t pos) {
  const DecodedCodePoint invalid{kInvalidCodePoint, 1};
  if (pos >= text.size()) return {kInvalidCodePoint, 0};
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t b0 = byte(pos);
  if (b0 < 0x80) return {b0, 1};
  size_t length;
  char32_t cp;
  // Allowed range of the second byte; it excludes overlongs (E0, F0),
  // surrogates (ED) and values over U+10FFFF (F4). Later bytes are 80..BF.
  uint8_t lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return invalid;  // 80..C1 (continuation or overlong lead), F5..FF
  }
  if (text.size() - pos < length) return invalid;
  for (size_t i = 1; i < length; ++i) {
    const uint8_t b = byte(pos + i);
    if (b < lo || b > hi) return invalid;
    lo = 0x80;
    hi = 0xBF;
    cp = (cp << 6) | (b & 0x3F);
  }
  return {cp, length};
}

}  // namespace tw::tokenizer
