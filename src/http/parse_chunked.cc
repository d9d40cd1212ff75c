#include "http/parse_chunked.h"

#include <algorithm>

#include "http/parse_syntax.h"

namespace tw::http {

void ChunkedDecoder::Reset(const ChunkedLimits& limits) {
  *this = ChunkedDecoder();
  limits_ = limits;
}

bool ChunkedDecoder::last_chunk_seen() const {
  switch (state_) {
    case State::kTrailerLineStart:
    case State::kTrailerName:
    case State::kTrailerValue:
    case State::kTrailerLf:
    case State::kTrailerEndLf:
    case State::kDone:
      return true;
    default:
      return false;
  }
}

ChunkedDecoder::Result ChunkedDecoder::Fail(int status, std::string_view reason,
                                            uint64_t offset) {
  state_ = State::kError;
  error_status_ = status;
  error_reason_ = reason;
  error_offset_ = offset;
  return Result::kError;
}

ChunkedDecoder::Result ChunkedDecoder::Decode(const char* data, size_t len, std::string* body,
                                              size_t* consumed) {
  *consumed = 0;
  if (state_ == State::kError) return Result::kError;
  if (state_ == State::kDone) return Result::kDone;
  size_t i = 0;
  while (i < len) {
    const unsigned char c = static_cast<unsigned char>(data[i]);
    const uint64_t at = offset_ + i;  // offset of c in the chunked body

    // Bytes of the chunk-size line (CR excluded) count against its bound.
    if (state_ >= State::kSizeStart && state_ <= State::kExtValueBws && c != '\r') {
      if (++line_bytes_ > limits_.max_chunk_line_bytes) {
        return Fail(400, "chunk-size line (with extensions) longer than max_chunk_line_bytes",
                    at);
      }
    }
    if (state_ >= State::kTrailerLineStart && state_ <= State::kTrailerEndLf) {
      if (++trailer_bytes_ > limits_.max_trailer_bytes) {
        return Fail(431, "trailer section longer than max_trailer_bytes", at);
      }
    }

    switch (state_) {
      case State::kSizeStart: {
        const int v = HexValue(c);
        if (v < 0) return Fail(400, "chunk size is not a hex number", at);
        chunk_size_ = static_cast<uint64_t>(v);
        state_ = State::kSize;
        break;
      }
      case State::kSize: {
        const int v = HexValue(c);
        if (v >= 0) {
          if (chunk_size_ > (UINT64_MAX >> 4)) {
            return Fail(400, "chunk size overflows 64 bits", at);
          }
          chunk_size_ = (chunk_size_ << 4) | static_cast<uint64_t>(v);
          break;
        }
        // End of chunk-size: bound the body before reading any of the chunk.
        if (chunk_size_ > limits_.max_body_bytes - body_bytes_) {
          return Fail(413, "chunked body larger than max_body_bytes", at);
        }
        last_chunk_ = (chunk_size_ == 0);
        if (c == ';') {
          state_ = State::kExtNameStart;
        } else if (IsWhitespace(c)) {
          state_ = State::kSizeBws;
        } else if (c == '\r') {
          state_ = State::kSizeLf;
        } else {
          return Fail(400, "invalid character after chunk size", at);
        }
        break;
      }
      case State::kSizeBws:
        if (c == ';') {
          state_ = State::kExtNameStart;
        } else if (!IsWhitespace(c)) {
          return Fail(400, "whitespace after chunk size not followed by ';'", at);
        }
        break;
      case State::kExtNameStart:
        if (IsTchar(c)) {
          state_ = State::kExtName;
        } else if (!IsWhitespace(c)) {
          return Fail(400, "chunk extension name missing or invalid", at);
        }
        break;
      case State::kExtName:
        if (IsTchar(c)) break;
        if (c == '=') {
          state_ = State::kExtValueStart;
        } else if (c == ';') {
          state_ = State::kExtNameStart;
        } else if (c == '\r') {
          state_ = State::kSizeLf;
        } else if (IsWhitespace(c)) {
          state_ = State::kExtNameBws;
        } else {
          return Fail(400, "invalid character in chunk extension name", at);
        }
        break;
      case State::kExtNameBws:
        if (c == '=') {
          state_ = State::kExtValueStart;
        } else if (c == ';') {
          state_ = State::kExtNameStart;
        } else if (!IsWhitespace(c)) {
          return Fail(400, "whitespace after chunk extension name not followed by '=' or ';'",
                      at);
        }
        break;
      case State::kExtValueStart:
        if (c == '"') {
          state_ = State::kExtQuoted;
        } else if (IsTchar(c)) {
          state_ = State::kExtToken;
        } else if (!IsWhitespace(c)) {
          return Fail(400, "chunk extension value missing or invalid", at);
        }
        break;
      case State::kExtToken:
        if (IsTchar(c)) break;
        if (c == ';') {
          state_ = State::kExtNameStart;
        } else if (c == '\r') {
          state_ = State::kSizeLf;
        } else if (IsWhitespace(c)) {
          state_ = State::kExtValueBws;
        } else {
          return Fail(400, "invalid character in chunk extension value", at);
        }
        break;
      case State::kExtQuoted:
        if (c == '"') {
          state_ = State::kExtValueEnd;
        } else if (c == '\\') {
          state_ = State::kExtQuotedPair;
        } else if (!IsQdtext(c)) {
          return Fail(400, "invalid character in quoted chunk extension value", at);
        }
        break;
      case State::kExtQuotedPair:
        if (!(IsWhitespace(c) || IsVchar(c) || IsObsText(c))) {
          return Fail(400, "invalid quoted-pair in chunk extension value", at);
        }
        state_ = State::kExtQuoted;
        break;
      case State::kExtValueEnd:
        if (c == ';') {
          state_ = State::kExtNameStart;
        } else if (c == '\r') {
          state_ = State::kSizeLf;
        } else if (IsWhitespace(c)) {
          state_ = State::kExtValueBws;
        } else {
          return Fail(400, "invalid character after quoted chunk extension value", at);
        }
        break;
      case State::kExtValueBws:
        if (c == ';') {
          state_ = State::kExtNameStart;
        } else if (!IsWhitespace(c)) {
          return Fail(400, "whitespace after chunk extension value not followed by ';'", at);
        }
        break;
      case State::kSizeLf:
        if (c != '\n') return Fail(400, "expected LF after CR of chunk-size line", at);
        line_bytes_ = 0;
        state_ = last_chunk_ ? State::kTrailerLineStart : State::kData;
        break;
      case State::kData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk_size_, len - i));
        body->append(data + i, n);
        body_bytes_ += n;
        chunk_size_ -= n;
        if (chunk_size_ == 0) state_ = State::kDataCr;
        i += n;
        continue;  // n >= 1 bytes consumed
      }
      case State::kDataCr:
        if (c != '\r') return Fail(400, "expected CRLF after chunk data", at);
        state_ = State::kDataLf;
        break;
      case State::kDataLf:
        if (c != '\n') return Fail(400, "expected LF after chunk data", at);
        state_ = State::kSizeStart;
        break;
      case State::kTrailerLineStart:
        if (c == '\r') {
          state_ = State::kTrailerEndLf;
        } else if (IsWhitespace(c)) {
          return Fail(400, "obs-fold or whitespace at start of trailer line", at);
        } else if (IsTchar(c)) {
          if (++trailer_fields_ > limits_.max_trailer_fields) {
            return Fail(431, "more trailer fields than max_trailer_fields", at);
          }
          state_ = State::kTrailerName;
        } else {
          return Fail(400, "invalid character in trailer field name", at);
        }
        break;
      case State::kTrailerName:
        if (c == ':') {
          state_ = State::kTrailerValue;
        } else if (!IsTchar(c)) {
          return Fail(400, "invalid character in trailer field name", at);
        }
        break;
      case State::kTrailerValue:
        if (c == '\r') {
          state_ = State::kTrailerLf;
        } else if (!IsFieldValueByte(c)) {
          return Fail(400, "invalid character in trailer field value", at);
        }
        break;
      case State::kTrailerLf:
        if (c != '\n') return Fail(400, "expected LF after CR in trailer section", at);
        state_ = State::kTrailerLineStart;
        break;
      case State::kTrailerEndLf:
        if (c != '\n') return Fail(400, "expected LF after CR ending the trailer section", at);
        state_ = State::kDone;
        i++;
        offset_ += i;
        *consumed = i;
        return Result::kDone;
      case State::kDone:
      case State::kError:
        break;  // unreachable: handled before the loop
    }
    i++;
  }
  offset_ += i;
  *consumed = i;
  return Result::kNeedMore;
}

}  // namespace tw::http
