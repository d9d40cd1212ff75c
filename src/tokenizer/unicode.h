// Unicode character classes for the GPT-2 pre-tokenizer, and UTF-8 decoding of
// one code point.
//
// The classes are \p{L} (general category L*), \p{N} (N*) and \s (the Unicode
// White_Space property, as Python's `regex` module matches \s). The range tables
// are generated from the Unicode Character Database by gen_unicode_tables.py
// into unicode_tables.cc (committed; kUnicodeTablesVersion names the version).
//
// Thread-safety: pure functions over constant tables; call from any thread.
// Allocation: none. Never fails: any input gets a class.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace tw::tokenizer {

// Inclusive range [lo, hi] of code points.
struct CodePointRange {
  char32_t lo;
  char32_t hi;
};

// The generated tables (sorted, non-overlapping) and the Unicode version they
// come from, e.g. "15.0.0".
std::span<const CodePointRange> LetterRanges();
std::span<const CodePointRange> NumberRanges();
std::span<const CodePointRange> WhitespaceRanges();
extern const char kUnicodeTablesVersion[];

// The four classes the pre-tokenizer distinguishes. L, N and White_Space are
// disjoint in the UCD, so every code point has exactly one class.
enum class CharClass : uint8_t { kLetter, kNumber, kWhitespace, kOther };

CharClass Classify(char32_t cp);
bool IsLetter(char32_t cp);
bool IsNumber(char32_t cp);
bool IsWhitespace(char32_t cp);

// Marker code point for a byte that does not start a well-formed UTF-8
// sequence (outside the Unicode range, so it classifies as kOther).
inline constexpr char32_t kInvalidCodePoint = 0xFFFFFFFF;

struct DecodedCodePoint {
  char32_t cp;    // the code point, or kInvalidCodePoint
  size_t length;  // bytes consumed: 1..4 (1 for an invalid byte)
};

// Decodes the code point starting at text[pos]. Strict UTF-8: overlong forms,
// surrogates, values over U+10FFFF and truncated sequences are invalid, and
// then exactly one byte is consumed. At or past the end: {kInvalidCodePoint, 0}.
DecodedCodePoint DecodeUtf8At(std::string_view text, size_t pos);

}  // namespace tw::tokenizer
