#include "sse/parser.h"

#include <utility>

namespace tw::sse {

Parser::Parser(EventSink on_event, ParserLimits limits)
    : on_event_(std::move(on_event)), limits_(limits) {}

Status Parser::Fail(const char* what, size_t limit) {
  error_ = Status::Error(std::string("sse: ") + what + " over its bound (" +
                         std::to_string(limit) + " bytes) at byte offset " +
                         std::to_string(offset_));
  return error_;
}

bool Parser::AppendToLine(const char* p, size_t n) {
  if (line_.size() + n > limits_.max_line_bytes) return false;
  line_.append(p, n);
  return true;
}

// One decoded code point that is not CR or LF (those are handled in Feed).
bool Parser::EmitCodePoint(uint32_t cp) {
  pending_cr_ = false;
  if (at_stream_start_) {
    at_stream_start_ = false;
    if (cp == 0xFEFF) return true;  // leading BOM, stripped once
  }
  char buf[4];
  size_t n;
  if (cp < 0x80) {
    buf[0] = static_cast<char>(cp);
    n = 1;
  } else if (cp < 0x800) {
    buf[0] = static_cast<char>(0xC0 | (cp >> 6));
    buf[1] = static_cast<char>(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    buf[0] = static_cast<char>(0xE0 | (cp >> 12));
    buf[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    buf[2] = static_cast<char>(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    buf[0] = static_cast<char>(0xF0 | (cp >> 18));
    buf[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    buf[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    buf[3] = static_cast<char>(0x80 | (cp & 0x3F));
    n = 4;
  }
  return AppendToLine(buf, n);
}

Status Parser::Feed(std::string_view bytes) {
  if (!error_.ok()) return error_;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  size_t i = 0;
  // offset_ is kept equal to the stream offset of p[i] at every Fail().
  auto advance = [&](size_t k) {
    i += k;
    offset_ += k;
  };
  while (i < n) {
    const unsigned char b = p[i];
    if (utf8_needed_ == 0) {
      if (b == '\n' || b == '\r') {
        at_stream_start_ = false;
        bool swallow = (b == '\n' && pending_cr_);  // CRLF split or not: one line end
        pending_cr_ = (b == '\r');
        if (!swallow && !EndLine()) return Fail("data buffer", limits_.max_data_bytes);
        advance(1);
        continue;
      }
      if (b < 0x80) {
        // A run of ASCII that is not a line end goes into the line in one append.
        size_t j = i + 1;
        while (j < n && p[j] < 0x80 && p[j] != '\n' && p[j] != '\r') j++;
        at_stream_start_ = false;
        pending_cr_ = false;
        if (!AppendToLine(reinterpret_cast<const char*>(p + i), j - i)) {
          // Take what fits so the error names the same byte however the
          // input was cut.
          size_t fits = limits_.max_line_bytes - line_.size();
          line_.append(reinterpret_cast<const char*>(p + i), fits);
          advance(fits);
          return Fail("line", limits_.max_line_bytes);
        }
        advance(j - i);
        continue;
      }
      // Lead byte of a multi-byte sequence (WHATWG UTF-8 decoder, step by step).
      if (b >= 0xC2 && b <= 0xDF) {
        utf8_needed_ = 1;
        utf8_cp_ = b & 0x1F;
      } else if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0) utf8_lower_ = 0xA0;
        if (b == 0xED) utf8_upper_ = 0x9F;
        utf8_needed_ = 2;
        utf8_cp_ = b & 0x0F;
      } else if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0) utf8_lower_ = 0x90;
        if (b == 0xF4) utf8_upper_ = 0x8F;
        utf8_needed_ = 3;
        utf8_cp_ = b & 0x07;
      } else if (!EmitCodePoint(0xFFFD)) {  // not a valid lead byte
        return Fail("line", limits_.max_line_bytes);
      }
      advance(1);
      continue;
    }
    // Continuation byte expected.
    if (b < utf8_lower_ || b > utf8_upper_) {
      // Invalid: U+FFFD for what was seen, and this byte is decoded afresh.
      utf8_cp_ = 0;
      utf8_needed_ = utf8_seen_ = 0;
      utf8_lower_ = 0x80;
      utf8_upper_ = 0xBF;
      if (!EmitCodePoint(0xFFFD)) return Fail("line", limits_.max_line_bytes);
      continue;  // byte not consumed
    }
    utf8_lower_ = 0x80;
    utf8_upper_ = 0xBF;
    utf8_cp_ = (utf8_cp_ << 6) | (b & 0x3F);
    advance(1);
    if (++utf8_seen_ == utf8_needed_) {
      uint32_t cp = utf8_cp_;
      utf8_cp_ = 0;
      utf8_needed_ = utf8_seen_ = 0;
      if (!EmitCodePoint(cp)) return Fail("line", limits_.max_line_bytes);
    }
  }
  return Status::Ok();
}

// Processes line_ (the standard's "process the line"), then clears it.
bool Parser::EndLine() {
  std::string_view line(line_);
  bool ok = true;
  if (line.empty()) {
    Dispatch();
  } else if (line[0] == ':') {
    if (on_comment_) {
      std::string_view text = line.substr(1);
      if (!text.empty() && text[0] == ' ') text.remove_prefix(1);
      on_comment_(text);
    }
  } else {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      ok = ProcessField(line, std::string_view());
    } else {
      std::string_view value = line.substr(colon + 1);
      if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
      ok = ProcessField(line.substr(0, colon), value);
    }
  }
  line_.clear();
  return ok;
}

bool Parser::ProcessField(std::string_view name, std::string_view value) {
  if (name == "data") {
    if (data_.size() + value.size() + 1 > limits_.max_data_bytes) return false;
    data_.append(value);
    data_.push_back('\n');
  } else if (name == "event") {
    type_.assign(value);
  } else if (name == "id") {
    if (value.find('\0') == std::string_view::npos) id_buffer_.assign(value);
  } else if (name == "retry") {
    if (value.empty()) return true;
    uint64_t ms = 0;
    bool saturated = false;
    for (char c : value) {
      if (c < '0' || c > '9') return true;  // not all digits: ignored
      uint64_t d = static_cast<uint64_t>(c - '0');
      if (ms > (UINT64_MAX - d) / 10) saturated = true;
      if (!saturated) ms = ms * 10 + d;
    }
    retry_ms_ = saturated ? UINT64_MAX : ms;
  }
  // Any other field name is ignored.
  return true;
}

void Parser::Dispatch() {
  last_event_id_ = id_buffer_;
  if (data_.empty()) {
    type_.clear();
    return;
  }
  data_.pop_back();  // the final LF
  // Swap buffers with the recycled event so neither side allocates again.
  std::swap(event_.data, data_);
  data_.clear();
  if (type_.empty()) {
    event_.type.assign("message");
  } else {
    std::swap(event_.type, type_);
  }
  type_.clear();
  event_.id.assign(last_event_id_);
  if (on_event_) on_event_(event_);
}

void Parser::Finish() {
  line_.clear();
  data_.clear();
  type_.clear();
  id_buffer_ = last_event_id_;
  at_stream_start_ = true;
  pending_cr_ = false;
  utf8_cp_ = 0;
  utf8_needed_ = utf8_seen_ = 0;
  utf8_lower_ = 0x80;
  utf8_upper_ = 0xBF;
  error_ = Status::Ok();
}

}  // namespace tw::sse
