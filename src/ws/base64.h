// Base64 (RFC 4648 §4, the standard alphabet with '=' padding), for the
// WebSocket handshake: Sec-WebSocket-Key (decoded to check it is 16 bytes)
// and Sec-WebSocket-Accept (encoded).
//
// Threads: pure functions, any thread. Allocation: the output string only.
// Decoding is strict (the canonical form only): the length is a multiple of
// 4, padding only at the end and only as many '=' as needed, no whitespace,
// and the unused low bits of the last symbol are zero (RFC 4648 §3.5).
#pragma once

#include <string>
#include <string_view>

namespace tw::ws {

std::string Base64Encode(std::string_view bytes);

// Decodes canonical base64 into *out. On failure returns false, leaves *out
// unspecified and, if error_offset is non-null, sets it to the offset of the
// first offending character (text.size() for a bad length).
bool Base64Decode(std::string_view text, std::string* out, size_t* error_offset = nullptr);

}  // namespace tw::ws
