#include "ws/base64.h"

#include <cstdint>

namespace tw::ws {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int SymbolValue(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (uint32_t{static_cast<uint8_t>(bytes[i])} << 16) |
                 (uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8) |
                 uint32_t{static_cast<uint8_t>(bytes[i + 2])};
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{static_cast<uint8_t>(bytes[i])} << 16;
    if (rest == 2) v |= uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool Base64Decode(std::string_view text, std::string* out, size_t* error_offset) {
  size_t dummy;
  size_t* err = error_offset ? error_offset : &dummy;
  out->clear();
  if (text.size() % 4 != 0) {
    *err = text.size();
    return false;
  }
  out->reserve(text.size() / 4 * 3);
  for (size_t q = 0; q < text.size(); q += 4) {
    bool last = q + 4 == text.size();
    int v[4];
    int pads = 0;
    for (int j = 0; j < 4; j++) {
      char c = text[q + j];
      if (c == '=' && last && j >= 2) {
        v[j] = 0;
        pads++;
        continue;
      }
      v[j] = SymbolValue(c);
      if (v[j] < 0 || pads > 0) {  // bad symbol, or a symbol after '='
        *err = q + j;
        return false;
      }
    }
    uint32_t bits = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    // Non-canonical: padding bits that are not zero (RFC 4648 §3.5).
    if ((pads == 1 && (bits & 0xFF) != 0) || (pads == 2 && (bits & 0xFFFF) != 0)) {
      *err = q + 3 - pads;
      return false;
    }
    out->push_back(static_cast<char>(bits >> 16));
    if (pads < 2) out->push_back(static_cast<char>((bits >> 8) & 0xFF));
    if (pads < 1) out->push_back(static_cast<char>(bits & 0xFF));
  }
  return true;
}

}  // namespace tw::ws
