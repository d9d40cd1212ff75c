#include "http/response.h"

#include <charconv>
#include <initializer_list>

namespace tw::http {
namespace {

bool SafeHeaderText(std::string_view s) {
  for (char c : s) {
    if (c == '\r' || c == '\n' || c == '\0') return false;
  }
  return true;
}

}  // namespace

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 426: return "Upgrade Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string BuildResponseHead(const ResponseHead& head) {
  std::string out;
  out.reserve(160);
  char num[24];
  out += "HTTP/1.1 ";
  auto r = std::to_chars(num, num + sizeof num, head.status);
  out.append(num, r.ptr);
  out += ' ';
  out += ReasonPhrase(head.status);
  // 1xx, 204 and 304 carry no content: no Content-Type, no Content-Length
  // (RFC 9110 §8.6: a server must not send Content-Length in a 204).
  const bool no_content = head.status < 200 || head.status == 204 || head.status == 304;
  if (!no_content) {
    out += "\r\nContent-Type: ";
    out += SafeHeaderText(head.content_type) && !head.content_type.empty()
               ? head.content_type
               : std::string_view("application/octet-stream");
  }
  switch (no_content ? BodyFraming::kUntilClose : head.framing) {
    case BodyFraming::kContentLength:
      out += "\r\nContent-Length: ";
      r = std::to_chars(num, num + sizeof num, head.content_length);
      out.append(num, r.ptr);
      break;
    case BodyFraming::kChunked:
      out += "\r\nTransfer-Encoding: chunked";
      break;
    case BodyFraming::kUntilClose:
      break;
  }
  if (head.close) {
    out += "\r\nConnection: close";
  } else if (head.keep_alive_http10) {
    out += "\r\nConnection: keep-alive";
  }
  for (const Headers* list : {head.extra, head.edge}) {
    if (list == nullptr) continue;
    for (const auto& [name, value] : *list) {
      if (name.empty() || !SafeHeaderText(name) || !SafeHeaderText(value)) continue;
      out += "\r\n";
      out += name;
      out += ": ";
      out += value;
    }
  }
  out += "\r\n\r\n";
  return out;
}

std::string InsertHeaders(std::string_view head, const Headers& extra) {
  if (head.size() < 4 || head.substr(head.size() - 4) != "\r\n\r\n") return std::string(head);
  std::string out(head.substr(0, head.size() - 2));
  for (const auto& [name, value] : extra) {
    if (name.empty() || !SafeHeaderText(name) || !SafeHeaderText(value)) continue;
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  out += "\r\n";
  return out;
}

void AppendJsonString(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  *out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (c < 0x20) {
          *out += "\\u00";
          *out += kHex[c >> 4];
          *out += kHex[c & 15];
        } else {
          *out += static_cast<char>(c);  // UTF-8 passes through unchanged
        }
    }
  }
  *out += '"';
}

ErrorCode ErrorCodeForStatus(int status) {
  switch (status) {
    case 400: return ErrorCode::kInvalidRequest;
    case 401: return ErrorCode::kUnauthorized;
    case 404: return ErrorCode::kNotFound;
    case 405: return ErrorCode::kMethodNotAllowed;
    case 408: return ErrorCode::kRequestTimeout;
    case 413: return ErrorCode::kPayloadTooLarge;
    case 431: return ErrorCode::kHeadersTooLarge;
    case 501: return ErrorCode::kNotImplemented;
    case 505: return ErrorCode::kNotImplemented;  // HTTP version: DESIGN.md §4 has no own type
    case 503: return ErrorCode::kOverloaded;
    default: return status >= 500 ? ErrorCode::kInternal : ErrorCode::kInvalidRequest;
  }
}

size_t FormatChunkHeader(size_t n, char* buf) {
  auto r = std::to_chars(buf, buf + 16, n, 16);
  r.ptr[0] = '\r';
  r.ptr[1] = '\n';
  return static_cast<size_t>(r.ptr - buf) + 2;
}

}  // namespace tw::http
