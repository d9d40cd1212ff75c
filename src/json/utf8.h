// UTF-8 (RFC 3629) validation and encoding, shared by the JSON parser and
// writer (and usable by any layer that must check text it did not produce).
//
// Thread-safety: pure functions, callable from any thread.
// Allocation: none, except AppendUtf8 growing the caller's string by <= 4 bytes.
// Never reads outside the given string_view.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tw::json {

// Length (1..4) of the well-formed UTF-8 sequence that starts at s[pos]
// (pos < s.size()), or 0 if it is ill-formed: an overlong form, a UTF-8
// encoded surrogate (U+D800..U+DFFF), a code point over U+10FFFF, a stray
// continuation byte, a lead byte 0xC0/0xC1/0xF5..0xFF, or a sequence cut short
// by the end of `s`. On 0, *bad_offset is the offset of the first byte that
// cannot belong to a well-formed sequence (s.size() when the input ended), so
// [pos, *bad_offset) is the maximal ill-formed subpart (at least pos itself
// when the lead byte is bad: then *bad_offset == pos).
size_t Utf8SequenceLength(std::string_view s, size_t pos, size_t* bad_offset);

// True if all of `s` is well-formed UTF-8; else false and *bad_offset (if
// non-null) names the first offending byte as above.
bool IsValidUtf8(std::string_view s, size_t* bad_offset = nullptr);

// Appends code point `cp` (<= U+10FFFF, not a surrogate) encoded as UTF-8.
void AppendUtf8(std::string* out, uint32_t cp);

}  // namespace tw::json
