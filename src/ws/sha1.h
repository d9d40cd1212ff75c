// SHA-1 (FIPS 180-4 §6.1), written for the WebSocket handshake only:
// Sec-WebSocket-Accept = base64(SHA-1(key + GUID)) (RFC 6455 §4.2.2).
// SHA-1 is broken for collision resistance; the handshake uses it as a
// fingerprint, not for security, and nothing else in TokenWire may.
//
// Threads: any (a Sha1 object belongs to its caller; Sha1Digest is pure).
// Allocation: none; the state is a fixed 64-byte block plus five words.
// Never: reads outside the given bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tw::ws {

using Sha1Hash = std::array<uint8_t, 20>;

class Sha1 {
 public:
  Sha1();
  void Update(std::string_view bytes);
  // Pads, finishes and returns the digest; the object must not be updated after.
  Sha1Hash Finish();

 private:
  void Block(const uint8_t* block);  // one 64-byte block

  uint32_t h_[5];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_bytes_ = 0;
};

// Digest of `bytes` in one call.
Sha1Hash Sha1Digest(std::string_view bytes);

}  // namespace tw::ws
