// ParseRequestHead: request line + header section (RFC 9112 §2-5), one left-
// to-right scan with no backtracking. Every check looks only at bytes before
// the one it rejects, so a prefix of the input is either incomplete or gives
// the same answer as the whole input.
#include <climits>

#include "http/parse_framing.h"
#include "http/parse_syntax.h"
#include "http/request_reader.h"

namespace tw::http {
namespace {

int Fail(ParseFailure* failure, int status, std::string_view reason, size_t offset) {
  if (failure != nullptr) {
    failure->status = status;
    failure->reason = reason;
    failure->offset = offset;
  }
  return kParseError;
}

}  // namespace

int ParseRequestHead(const char* buf, size_t len, RequestHeadView* out, HeaderView* headers,
                     size_t max_headers, ParseFailure* failure) {
  if (len > static_cast<size_t>(INT_MAX)) len = static_cast<size_t>(INT_MAX);
  auto at = [buf](size_t i) { return static_cast<unsigned char>(buf[i]); };
  size_t p = 0;

  // Empty lines before the request line are ignored (RFC 9112 §2.2).
  for (;;) {
    if (p >= len) return kParseIncomplete;
    if (at(p) == '\n') return Fail(failure, 400, "bare LF before request line", p);
    if (at(p) != '\r') break;
    if (p + 1 >= len) return kParseIncomplete;
    if (at(p + 1) != '\n') return Fail(failure, 400, "CR not followed by LF", p + 1);
    p += 2;
  }

  // method = token, then exactly one SP.
  const size_t method_start = p;
  while (p < len && IsTchar(at(p))) p++;
  if (p >= len) return kParseIncomplete;
  if (p == method_start) return Fail(failure, 400, "request method missing or invalid", p);
  if (at(p) != ' ') return Fail(failure, 400, "invalid character in request method", p);
  const std::string_view method(buf + method_start, p - method_start);
  p++;

  // request-target: visible ASCII only (no controls, no SP, no bytes >= 0x80).
  const size_t target_start = p;
  while (p < len && IsVchar(at(p))) p++;
  if (p >= len) return kParseIncomplete;
  if (p == target_start) return Fail(failure, 400, "request target missing", p);
  if (at(p) != ' ') return Fail(failure, 400, "invalid character in request target", p);
  const std::string_view target(buf + target_start, p - target_start);
  if (ClassifyTarget(method, target) == TargetForm::kInvalid) {
    return Fail(failure, 400, "request target is not in a form allowed for this method",
                target_start);
  }
  p++;

  // HTTP-version = "HTTP/" DIGIT "." DIGIT, checked byte by byte.
  static constexpr char kPattern[] = "HTTP/d.d";
  const size_t version_start = p;
  for (size_t k = 0; k < 8; k++, p++) {
    if (p >= len) return kParseIncomplete;
    const bool ok = kPattern[k] == 'd' ? IsDigit(at(p)) : at(p) == static_cast<unsigned char>(kPattern[k]);
    if (!ok) return Fail(failure, 400, "invalid HTTP version", p);
  }
  const char major = buf[version_start + 5];
  const char minor = buf[version_start + 7];
  if (major != '1' || (minor != '0' && minor != '1')) {
    return Fail(failure, 505, "HTTP version not supported (only HTTP/1.0 and HTTP/1.1)",
                version_start);
  }
  if (p >= len) return kParseIncomplete;
  if (at(p) != '\r') return Fail(failure, 400, "expected CRLF after HTTP version", p);
  if (p + 1 >= len) return kParseIncomplete;
  if (at(p + 1) != '\n') return Fail(failure, 400, "expected LF after CR of request line", p + 1);
  p += 2;

  // field-line = field-name ":" OWS field-value OWS CRLF, until an empty line.
  size_t n = 0;
  for (;;) {
    if (p >= len) return kParseIncomplete;
    const unsigned char c = at(p);
    if (c == '\r') {
      if (p + 1 >= len) return kParseIncomplete;
      if (at(p + 1) != '\n') return Fail(failure, 400, "expected LF after CR ending the header section", p + 1);
      p += 2;
      break;
    }
    if (c == '\n') return Fail(failure, 400, "bare LF in header section", p);
    if (IsWhitespace(c)) {
      return Fail(failure, 400,
                  n == 0 ? "whitespace before the first header line"
                         : "obs-fold (header line starting with whitespace)",
                  p);
    }
    if (n >= max_headers) return Fail(failure, 431, "more header lines than max_headers", p);

    const size_t name_start = p;
    while (p < len && IsTchar(at(p))) p++;
    if (p >= len) return kParseIncomplete;
    if (p == name_start) return Fail(failure, 400, "header name empty or invalid", p);
    if (at(p) != ':') {
      return Fail(failure, 400,
                  IsWhitespace(at(p)) ? "whitespace between header name and ':'"
                                      : "invalid character in header name",
                  p);
    }
    const std::string_view name(buf + name_start, p - name_start);
    p++;

    while (p < len && IsWhitespace(at(p))) p++;
    const size_t value_start = p;
    while (p < len && IsFieldValueByte(at(p))) p++;
    if (p >= len) return kParseIncomplete;
    if (at(p) == '\n') return Fail(failure, 400, "bare LF after header value", p);
    if (at(p) != '\r') return Fail(failure, 400, "control character in header value", p);
    if (p + 1 >= len) return kParseIncomplete;
    if (at(p + 1) != '\n') return Fail(failure, 400, "CR not followed by LF in header value", p + 1);
    std::string_view value(buf + value_start, p - value_start);
    value = TrimWhitespace(value);
    headers[n].name = name;
    headers[n].value = value;
    n++;
    p += 2;
  }

  out->method = method;
  out->target = target;
  out->minor_version = minor - '0';
  out->headers = headers;
  out->num_headers = n;
  return static_cast<int>(p);
}

}  // namespace tw::http
