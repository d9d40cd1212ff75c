#include "ws/frame.h"

#include <algorithm>
#include <cstring>

namespace tw::ws {

const char* OpcodeName(Opcode op) {
  switch (op) {
    case Opcode::kContinuation: return "continuation";
    case Opcode::kText: return "text";
    case Opcode::kBinary: return "binary";
    case Opcode::kClose: return "close";
    case Opcode::kPing: return "ping";
    case Opcode::kPong: return "pong";
  }
  return "reserved";
}

bool IsSendableCloseCode(uint16_t code) {
  if (code >= 1000 && code <= 1003) return true;
  if (code >= 1007 && code <= 1014) return true;
  return code >= 3000 && code <= 4999;
}

int ParseFrameHeader(const char* buf, size_t len, bool expect_masked, FrameHeader* out,
                     FrameError* error) {
  // Each rule is checked as soon as the bytes it needs are here, so an error
  // never waits for bytes it does not depend on.
  if (len < 1) return kFrameIncomplete;
  uint8_t b0 = static_cast<uint8_t>(buf[0]);
  if ((b0 & 0x70) != 0) {
    *error = {close_code::kProtocolError, "RSV bits set without a negotiated extension"};
    return kFrameError;
  }
  uint8_t op = b0 & 0x0F;
  if ((op >= 0x3 && op <= 0x7) || op >= 0xB) {
    *error = {close_code::kProtocolError, "reserved opcode"};
    return kFrameError;
  }
  bool fin = (b0 & 0x80) != 0;
  bool control = (op & 0x8) != 0;
  if (control && !fin) {
    *error = {close_code::kProtocolError, "fragmented control frame"};
    return kFrameError;
  }
  if (len < 2) return kFrameIncomplete;
  uint8_t b1 = static_cast<uint8_t>(buf[1]);
  bool masked = (b1 & 0x80) != 0;
  if (masked != expect_masked) {
    *error = {close_code::kProtocolError,
              expect_masked ? "client frame is not masked" : "server frame is masked"};
    return kFrameError;
  }
  uint64_t plen = b1 & 0x7F;
  if (control && plen > kMaxControlPayloadBytes) {
    *error = {close_code::kProtocolError, "control frame payload over 125 bytes"};
    return kFrameError;
  }
  size_t pos = 2;
  if (plen == 126) {
    if (len < 4) return kFrameIncomplete;
    plen = (uint64_t{static_cast<uint8_t>(buf[2])} << 8) | static_cast<uint8_t>(buf[3]);
    if (plen < 126) {
      *error = {close_code::kProtocolError, "non-minimal 16-bit payload length"};
      return kFrameError;
    }
    pos = 4;
  } else if (plen == 127) {
    if (len < 3) return kFrameIncomplete;
    if ((static_cast<uint8_t>(buf[2]) & 0x80) != 0) {
      *error = {close_code::kProtocolError, "64-bit payload length has its top bit set"};
      return kFrameError;
    }
    if (len < 10) return kFrameIncomplete;
    plen = 0;
    for (int i = 0; i < 8; i++) plen = (plen << 8) | static_cast<uint8_t>(buf[2 + i]);
    if (plen < 65536) {
      *error = {close_code::kProtocolError, "non-minimal 64-bit payload length"};
      return kFrameError;
    }
    pos = 10;
  }
  if (masked) {
    if (len < pos + 4) return kFrameIncomplete;
    std::memcpy(out->mask, buf + pos, 4);
    pos += 4;
  } else {
    std::memset(out->mask, 0, 4);
  }
  out->fin = fin;
  out->opcode = static_cast<Opcode>(op);
  out->masked = masked;
  out->payload_len = plen;
  return static_cast<int>(pos);
}

MessageReader::State MessageReader::Fail(uint16_t code, const char* reason, uint64_t offset) {
  state_ = State::kFailed;
  error_ = {code, reason};
  error_offset_ = offset;
  return state_;
}

MessageReader::State MessageReader::Feed(const char* data, size_t len, MessageHandler* handler) {
  size_t i = 0;
  while (state_ == State::kOpen && i < len) {
    if (!in_frame_) {
      size_t take = std::min(len - i, kMaxFrameHeaderBytes - hdr_len_);
      std::memcpy(hdr_ + hdr_len_, data + i, take);
      FrameError err;
      int r = ParseFrameHeader(hdr_, hdr_len_ + take, limits_.expect_masked, &frame_, &err);
      uint64_t frame_start = stream_offset_ - hdr_len_;
      if (r == kFrameIncomplete) {
        hdr_len_ += take;
        i += take;
        stream_offset_ += take;
        continue;
      }
      if (r == kFrameError) return Fail(err.code, err.reason, frame_start);
      size_t used = static_cast<size_t>(r) - hdr_len_;
      hdr_len_ = 0;
      i += used;
      stream_offset_ += used;
      frame_start_ = frame_start;
      // Sequencing rules (RFC 6455 §5.4) and the message bound.
      Opcode op = frame_.opcode;
      if (op == Opcode::kContinuation && !in_message_) {
        return Fail(close_code::kProtocolError, "continuation frame without a message to continue",
                    frame_start);
      }
      if ((op == Opcode::kText || op == Opcode::kBinary) && in_message_) {
        return Fail(close_code::kProtocolError,
                    "new data frame inside a fragmented message (expected a continuation)",
                    frame_start);
      }
      if (!IsControl(op)) {
        if (op != Opcode::kContinuation) {
          in_message_ = true;
          message_opcode_ = op;
          message_.clear();
          utf8_.Reset();
        }
        if (frame_.payload_len > limits_.max_message_bytes - message_.size()) {
          return Fail(close_code::kMessageTooBig, "message larger than max_message_bytes",
                      frame_start);
        }
      } else {
        control_.clear();
      }
      in_frame_ = true;
      frame_remaining_ = frame_.payload_len;
      frame_pos_ = 0;
      if (frame_remaining_ == 0 && !FinishFrame(handler)) return state_;
      continue;
    }
    size_t take = static_cast<size_t>(std::min<uint64_t>(len - i, frame_remaining_));
    bool data_frame = !IsControl(frame_.opcode);
    std::string& dst = data_frame ? message_ : control_;
    size_t start = dst.size();
    dst.append(data + i, take);
    for (size_t k = 0; k < take; k++) dst[start + k] ^= static_cast<char>(frame_.mask[(frame_pos_ + k) & 3]);
    if (data_frame && message_opcode_ == Opcode::kText) {
      size_t bad = 0;
      if (!utf8_.Feed(std::string_view(dst).substr(start, take), &bad)) {
        return Fail(close_code::kInvalidPayload, "text message is not valid UTF-8",
                    stream_offset_ + bad);
      }
    }
    i += take;
    stream_offset_ += take;
    frame_pos_ += take;
    frame_remaining_ -= take;
    if (frame_remaining_ == 0 && !FinishFrame(handler)) return state_;
  }
  return state_;
}

bool MessageReader::FinishFrame(MessageHandler* handler) {
  in_frame_ = false;
  switch (frame_.opcode) {
    case Opcode::kContinuation:
    case Opcode::kText:
    case Opcode::kBinary: {
      if (!frame_.fin) return true;
      if (message_opcode_ == Opcode::kText && !utf8_.complete()) {
        Fail(close_code::kInvalidPayload, "text message ends inside a UTF-8 sequence", stream_offset_);
        return false;
      }
      in_message_ = false;
      bool go_on = handler->OnMessage(message_opcode_, message_);
      message_.clear();
      if (message_.capacity() > (64u << 10)) std::string().swap(message_);  // give big buffers back
      return go_on;
    }
    case Opcode::kPing:
      return handler->OnPing(control_);
    case Opcode::kPong:
      return handler->OnPong(control_);
    case Opcode::kClose: {
      uint16_t code = close_code::kNoStatus;
      std::string_view reason;
      if (control_.size() == 1) {
        Fail(close_code::kProtocolError, "close frame payload of 1 byte", frame_start_);
        return false;
      }
      if (control_.size() >= 2) {
        code = static_cast<uint16_t>((static_cast<uint8_t>(control_[0]) << 8) | static_cast<uint8_t>(control_[1]));
        if (!IsSendableCloseCode(code)) {
          Fail(close_code::kProtocolError, "close frame with a code that may not be sent", frame_start_);
          return false;
        }
        reason = std::string_view(control_).substr(2);
        Utf8Validator v;
        if (!v.Feed(reason) || !v.complete()) {
          Fail(close_code::kInvalidPayload, "close reason is not valid UTF-8", frame_start_);
          return false;
        }
      }
      state_ = State::kClosed;
      handler->OnClose(code, reason);
      return false;
    }
  }
  return true;
}

size_t FrameHeaderBytes(uint64_t payload_len) {
  return payload_len < 126 ? 2 : payload_len <= 0xFFFF ? 4 : 10;
}

void AppendFrameHeader(std::string* out, uint8_t first_byte, uint64_t payload_len,
                       const uint8_t* mask) {
  uint8_t m = mask ? 0x80 : 0;
  out->push_back(static_cast<char>(first_byte));
  if (payload_len < 126) {
    out->push_back(static_cast<char>(m | payload_len));
  } else if (payload_len <= 0xFFFF) {
    out->push_back(static_cast<char>(m | 126));
    out->push_back(static_cast<char>(payload_len >> 8));
    out->push_back(static_cast<char>(payload_len & 0xFF));
  } else {
    out->push_back(static_cast<char>(m | 127));
    for (int i = 7; i >= 0; i--) out->push_back(static_cast<char>((payload_len >> (8 * i)) & 0xFF));
  }
  if (mask) out->append(reinterpret_cast<const char*>(mask), 4);
}

void AppendRawFrame(std::string* out, uint8_t first_byte, std::string_view payload,
                    const uint8_t* mask) {
  AppendFrameHeader(out, first_byte, payload.size(), mask);
  size_t start = out->size();
  out->append(payload);
  if (mask) {
    for (size_t k = 0; k < payload.size(); k++) (*out)[start + k] ^= static_cast<char>(mask[k & 3]);
  }
}

void AppendFrame(std::string* out, Opcode opcode, std::string_view payload, bool fin,
                 const uint8_t* mask) {
  AppendRawFrame(out, static_cast<uint8_t>((fin ? 0x80 : 0) | static_cast<uint8_t>(opcode)), payload,
                 mask);
}

void AppendCloseFrame(std::string* out, uint16_t code, std::string_view reason, const uint8_t* mask) {
  std::string payload;
  if (code != 0) {
    payload.push_back(static_cast<char>(code >> 8));
    payload.push_back(static_cast<char>(code & 0xFF));
    size_t n = std::min<size_t>(reason.size(), kMaxControlPayloadBytes - 2);
    // Cut at a character boundary: never before a continuation byte.
    while (n < reason.size() && n > 0 && (static_cast<uint8_t>(reason[n]) & 0xC0) == 0x80) n--;
    payload.append(reason.substr(0, n));
  }
  AppendFrame(out, Opcode::kClose, payload, true, mask);
}

}  // namespace tw::ws
