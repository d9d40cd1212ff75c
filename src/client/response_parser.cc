#include "client/response_parser.h"

#include <algorithm>

#include "http/parse_syntax.h"

namespace tw::client {

using http::EqualsIgnoreCase;
using http::HexValue;

const std::string* ResponseHead::Find(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) return &v;
  }
  return nullptr;
}

ResponseParser::ResponseParser(ResponseLimits limits) : limits_(limits) {}

void ResponseParser::Reset(bool request_was_head) {
  request_was_head_ = request_was_head;
  state_ = State::kHead;
  error_ = Status::Ok();
  head_ = ResponseHead();
  framing_ = BodyFraming::kNone;
  connection_close_ = false;
  line_.clear();
  prev_cr_ = false;
  offset_ = 0;
  content_length_ = 0;
  remaining_ = 0;
  body_bytes_ = 0;
}

bool ResponseParser::keep_alive() const {
  if (framing_ == BodyFraming::kUntilClose || connection_close_) return false;
  return head_.minor_version >= 1;
}

Status ResponseParser::Fail(std::string what) {
  state_ = State::kError;
  error_ = Status::Error("http response: " + what + " at byte offset " + std::to_string(offset_));
  return error_;
}

Status ResponseParser::ParseHead(std::string_view head) {
  // Status line: HTTP/1.x SP 3DIGIT [SP reason]
  size_t eol = head.find("\r\n");
  std::string_view status_line = head.substr(0, eol);
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || status_line[7] < '0' ||
      status_line[7] > '9' || status_line[8] != ' ') {
    return Fail("malformed status line \"" + std::string(status_line.substr(0, 64)) + "\"");
  }
  head_.minor_version = status_line[7] - '0';
  int code = 0;
  for (size_t i = 9; i < 12; i++) {
    if (status_line[i] < '0' || status_line[i] > '9') {
      return Fail("status code is not 3 digits in \"" + std::string(status_line.substr(0, 64)) + "\"");
    }
    code = code * 10 + (status_line[i] - '0');
  }
  if (code < 100) return Fail("status code " + std::to_string(code) + " below 100");
  head_.status = code;
  if (status_line.size() > 12) {
    if (status_line[12] != ' ') return Fail("no space after the status code");
    head_.reason = std::string(status_line.substr(13));
  }
  // Header fields.
  while (!rest.empty()) {
    size_t end = rest.find("\r\n");
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 2);
    if (line.front() == ' ' || line.front() == '\t') return Fail("obs-fold in response head");
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return Fail("header line without a name: \"" + std::string(line.substr(0, 64)) + "\"");
    }
    std::string_view name = line.substr(0, colon);
    for (char c : name) {
      if (!http::IsTchar(static_cast<unsigned char>(c))) return Fail("invalid header name \"" + std::string(name.substr(0, 64)) + "\"");
    }
    std::string_view value = http::TrimWhitespace(line.substr(colon + 1));
    for (char c : value) {
      unsigned char u = static_cast<unsigned char>(c);
      if ((u < 0x20 && u != '\t') || u == 0x7f) {
        return Fail("control byte in the value of header " + std::string(name));
      }
    }
    if (head_.headers.size() == limits_.max_headers) {
      return Fail("more than max_headers (" + std::to_string(limits_.max_headers) + ") header fields");
    }
    head_.headers.emplace_back(std::string(name), std::string(value));
  }
  return Status::Ok();
}

Status ResponseParser::ChooseFraming() {
  bool have_te = false;
  bool have_cl = false;
  uint64_t cl = 0;
  for (const auto& [name, value] : head_.headers) {
    if (EqualsIgnoreCase(name, "connection")) {
      // A comma-separated list of options; "close" may be one of them.
      std::string_view v = value;
      while (!v.empty()) {
        size_t comma = v.find(',');
        if (EqualsIgnoreCase(http::TrimWhitespace(v.substr(0, comma)), "close")) connection_close_ = true;
        v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
      }
    } else if (EqualsIgnoreCase(name, "transfer-encoding")) {
      if (!EqualsIgnoreCase(value, "chunked") || have_te) {
        return Fail("unsupported Transfer-Encoding \"" + value + "\" (only one \"chunked\")");
      }
      have_te = true;
    } else if (EqualsIgnoreCase(name, "content-length")) {
      if (value.empty()) return Fail("empty Content-Length");
      uint64_t n = 0;
      for (char c : value) {
        if (c < '0' || c > '9') return Fail("Content-Length \"" + value + "\" is not digits");
        if (n > (UINT64_MAX - 9) / 10) return Fail("Content-Length \"" + value + "\" overflows");
        n = n * 10 + static_cast<uint64_t>(c - '0');
      }
      if (have_cl && n != cl) return Fail("conflicting Content-Length headers");
      have_cl = true;
      cl = n;
    }
  }
  int s = head_.status;
  if (request_was_head_ || (s >= 100 && s < 200) || s == 204 || s == 304) {
    framing_ = BodyFraming::kNone;
    state_ = State::kDone;
    return Status::Ok();
  }
  if (have_te && have_cl) return Fail("both Content-Length and Transfer-Encoding");
  if (have_te) {
    framing_ = BodyFraming::kChunked;
    state_ = State::kChunkSize;
  } else if (have_cl) {
    framing_ = BodyFraming::kContentLength;
    content_length_ = remaining_ = cl;
    state_ = cl == 0 ? State::kDone : State::kLengthBody;
  } else {
    framing_ = BodyFraming::kUntilClose;
    state_ = State::kUntilClose;
  }
  return Status::Ok();
}

Status ResponseParser::ParseChunkSizeLine(std::string_view line) {
  size_t i = 0;
  uint64_t size = 0;
  while (i < line.size() && HexValue(static_cast<unsigned char>(line[i])) >= 0) {
    if (size > (UINT64_MAX >> 4)) return Fail("chunk size overflows");
    size = (size << 4) | static_cast<uint64_t>(HexValue(static_cast<unsigned char>(line[i])));
    i++;
  }
  if (i == 0) return Fail("chunk size is not hex: \"" + std::string(line.substr(0, 32)) + "\"");
  // chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS value ] ): checked loosely
  // (a ';' must come first); our server never sends extensions.
  std::string_view ext = http::TrimWhitespace(line.substr(i));
  if (!ext.empty() && ext.front() != ';') {
    return Fail("junk after chunk size: \"" + std::string(line.substr(0, 32)) + "\"");
  }
  if (size == 0) {
    state_ = State::kTrailer;
  } else {
    remaining_ = size;
    state_ = State::kChunkData;
  }
  return Status::Ok();
}

bool ResponseParser::Deliver(std::string_view bytes) {
  body_bytes_ += bytes.size();
  return sink_ ? sink_(bytes) : true;
}

Status ResponseParser::Feed(std::string_view in, size_t* consumed) {
  *consumed = 0;
  if (state_ == State::kError) return error_;
  size_t i = 0;
  auto take = [&](size_t k) {
    i += k;
    offset_ += k;
  };
  while (i < in.size() && state_ != State::kDone) {
    switch (state_) {
      case State::kHead:
      case State::kChunkSize:
      case State::kTrailer: {
        // Line-oriented states: CRLF only.
        char c = in[i];
        if (c == '\n' && !prev_cr_) return Fail("bare LF (line ends must be CRLF)");
        if (prev_cr_ && c != '\n') return Fail("CR not followed by LF");
        prev_cr_ = (c == '\r');
        size_t bound = state_ == State::kHead ? limits_.max_head_bytes : limits_.max_chunk_line_bytes;
        if (line_.size() + 1 > bound) {
          return Fail(state_ == State::kHead
                          ? "head over max_head_bytes (" + std::to_string(bound) + ")"
                          : "chunk line over max_chunk_line_bytes (" + std::to_string(bound) + ")");
        }
        line_.push_back(c);
        take(1);
        if (c != '\n') break;
        if (state_ == State::kHead) {
          if (line_.size() < 4 || line_.compare(line_.size() - 4, 4, "\r\n\r\n") != 0) break;
          if (line_.size() == 4) return Fail("empty line where the status line belongs");
          Status s = ParseHead(std::string_view(line_).substr(0, line_.size() - 4));
          line_.clear();
          if (!s.ok()) return s;
          if (head_.status >= 100 && head_.status < 200 && head_.status != 101) {
            head_ = ResponseHead();  // interim response: skip it
            break;
          }
          s = ChooseFraming();
          if (!s.ok()) return s;
          *consumed = i;
          return Status::Ok();  // stop after the head
        }
        std::string_view line = std::string_view(line_).substr(0, line_.size() - 2);
        if (state_ == State::kChunkSize) {
          Status s = ParseChunkSizeLine(line);
          line_.clear();
          if (!s.ok()) return s;
        } else {  // trailer
          bool last = line.empty();
          line_.clear();
          if (last) state_ = State::kDone;
        }
        break;
      }
      case State::kLengthBody:
      case State::kChunkData: {
        size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size() - i));
        std::string_view piece = in.substr(i, n);
        take(n);
        remaining_ -= n;
        if (remaining_ == 0) state_ = state_ == State::kLengthBody ? State::kDone : State::kChunkDataCr;
        if (!Deliver(piece)) {
          *consumed = i;
          return Status::Ok();
        }
        break;
      }
      case State::kChunkDataCr:
        if (in[i] != '\r') return Fail("chunk data not followed by CRLF");
        take(1);
        state_ = State::kChunkDataLf;
        break;
      case State::kChunkDataLf:
        if (in[i] != '\n') return Fail("chunk data not followed by CRLF");
        take(1);
        state_ = State::kChunkSize;
        break;
      case State::kUntilClose: {
        std::string_view piece = in.substr(i);
        take(piece.size());
        if (!Deliver(piece)) {
          *consumed = i;
          return Status::Ok();
        }
        break;
      }
      case State::kDone:
      case State::kError:
        break;
    }
  }
  *consumed = i;
  return Status::Ok();
}

Status ResponseParser::FeedEof() {
  switch (state_) {
    case State::kDone:
      return Status::Ok();
    case State::kError:
      return error_;
    case State::kUntilClose:
      state_ = State::kDone;
      return Status::Ok();
    case State::kHead:
      return Fail(offset_ == 0 ? "connection closed before any response byte"
                               : "connection closed inside the response head");
    case State::kLengthBody:
      return Fail("connection closed with " + std::to_string(remaining_) + " of " +
                  std::to_string(content_length_) + " Content-Length bytes missing");
    default:
      return Fail("connection closed inside a chunked body");
  }
}

}  // namespace tw::client
