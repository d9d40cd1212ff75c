// Character classes of HTTP/1.1 (RFC 9110 §5.6, RFC 9112 §2-7), shared by the
// request-head parser, the chunked decoder and the framing checks.
//
// Pure functions on single bytes or views: callable from any thread, never
// allocate, never fail.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tw::http {

// tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
//         "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA        (RFC 9110 §5.6.2)
inline bool IsTchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

// VCHAR: visible US-ASCII, 0x21..0x7E.
inline bool IsVchar(unsigned char c) { return c >= 0x21 && c <= 0x7E; }
// obs-text: 0x80..0xFF (allowed in field values and quoted strings only).
inline bool IsObsText(unsigned char c) { return c >= 0x80; }
// field-vchar = VCHAR / obs-text; field values may also hold SP and HTAB.
inline bool IsFieldValueByte(unsigned char c) {
  return IsVchar(c) || IsObsText(c) || c == ' ' || c == '\t';
}
// OWS / BWS members.
inline bool IsWhitespace(unsigned char c) { return c == ' ' || c == '\t'; }
inline bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }
inline bool IsAlpha(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
// Value of a hex digit, or -1.
inline int HexValue(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
// qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text   (RFC 9110 §5.6.4)
inline bool IsQdtext(unsigned char c) {
  return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5B) ||
         (c >= 0x5D && c <= 0x7E) || IsObsText(c);
}

inline char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

inline std::string_view TrimWhitespace(std::string_view s) {
  while (!s.empty() && IsWhitespace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && IsWhitespace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace tw::http
