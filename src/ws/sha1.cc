#include "ws/sha1.h"

#include <algorithm>
#include <cstring>

namespace tw::ws {

namespace {

uint32_t Rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

uint32_t LoadBe32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

Sha1::Sha1() : h_{0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u}, buf_{} {}

void Sha1::Block(const uint8_t* block) {
  uint32_t w[80];  // message schedule (FIPS 180-4 §6.1.2 step 1)
  for (int t = 0; t < 16; t++) w[t] = LoadBe32(block + 4 * t);
  for (int t = 16; t < 80; t++) w[t] = Rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
  uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4];
  for (int t = 0; t < 80; t++) {
    uint32_t f, k;
    if (t < 20) {
      f = (b & c) | (~b & d);  // Ch
      k = 0x5A827999u;
    } else if (t < 40) {
      f = b ^ c ^ d;  // Parity
      k = 0x6ED9EBA1u;
    } else if (t < 60) {
      f = (b & c) | (b & d) | (c & d);  // Maj
      k = 0x8F1BBCDCu;
    } else {
      f = b ^ c ^ d;
      k = 0xCA62C1D6u;
    }
    uint32_t tmp = Rotl(a, 5) + f + e + k + w[t];
    e = d;
    d = c;
    c = Rotl(b, 30);
    b = a;
    a = tmp;
  }
  h_[0] += a;
  h_[1] += b;
  h_[2] += c;
  h_[3] += d;
  h_[4] += e;
}

void Sha1::Update(std::string_view bytes) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  size_t n = bytes.size();
  total_bytes_ += n;
  while (n > 0) {
    size_t take = std::min(n, sizeof buf_ - buf_len_);
    std::memcpy(buf_ + buf_len_, p, take);
    buf_len_ += take;
    p += take;
    n -= take;
    if (buf_len_ == sizeof buf_) {
      Block(buf_);
      buf_len_ = 0;
    }
  }
}

Sha1Hash Sha1::Finish() {
  uint64_t bits = total_bytes_ * 8;
  // Padding (§5.1.1): 0x80, zeros up to 56 mod 64, then the 64-bit length.
  uint8_t pad[72] = {0x80};
  size_t pad_len = (buf_len_ < 56 ? 56 - buf_len_ : 120 - buf_len_);
  for (int i = 0; i < 8; i++) pad[pad_len + i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  Update(std::string_view(reinterpret_cast<const char*>(pad), pad_len + 8));
  Sha1Hash out;
  for (int i = 0; i < 5; i++) {
    out[4 * i] = static_cast<uint8_t>(h_[i] >> 24);
    out[4 * i + 1] = static_cast<uint8_t>(h_[i] >> 16);
    out[4 * i + 2] = static_cast<uint8_t>(h_[i] >> 8);
    out[4 * i + 3] = static_cast<uint8_t>(h_[i]);
  }
  return out;
}

Sha1Hash Sha1Digest(std::string_view bytes) {
  Sha1 s;
  s.Update(bytes);
  return s.Finish();
}

}  // namespace tw::ws
