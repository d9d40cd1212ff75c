// Test helpers for the frame layer: a MessageHandler that records what it was
// given as one line of text, and a reader run over a list of input pieces.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ws/frame.h"

namespace tw::ws::testing {

inline std::string Printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += static_cast<char>(c);
    } else {
      static const char* d = "0123456789abcdef";
      out += "\\x";
      out += d[c >> 4];
      out += d[c & 15];
    }
  }
  return out;
}

class Recorder : public MessageHandler {
 public:
  bool OnMessage(Opcode op, std::string_view payload) override {
    log += std::string(OpcodeName(op)) + "(" + Printable(payload) + ") ";
    messages.emplace_back(payload);
    return true;
  }
  bool OnPing(std::string_view p) override {
    log += "ping(" + Printable(p) + ") ";
    return true;
  }
  bool OnPong(std::string_view p) override {
    log += "pong(" + Printable(p) + ") ";
    return true;
  }
  bool OnClose(uint16_t code, std::string_view reason) override {
    log += "close(" + std::to_string(code) + "," + Printable(reason) + ") ";
    return true;
  }
  std::string log;
  std::vector<std::string> messages;
};

// Everything observable after feeding `pieces`: events, state, error.
inline std::string FeedAll(const std::vector<std::string_view>& pieces, const ReaderLimits& lim) {
  MessageReader r(lim);
  Recorder rec;
  for (std::string_view p : pieces) r.Feed(p, &rec);
  std::string out = rec.log;
  switch (r.state()) {
    case MessageReader::State::kOpen: out += "| open"; break;
    case MessageReader::State::kClosed: out += "| closed"; break;
    case MessageReader::State::kFailed:
      out += "| failed " + std::to_string(r.error().code) + " @" + std::to_string(r.error_offset()) +
             " " + r.error().reason;
      break;
  }
  return out;
}

inline const uint8_t* TestMask() {
  static const uint8_t m[4] = {0x37, 0xfa, 0x21, 0x3d};
  return m;
}

// A client (masked) frame.
inline std::string ClientFrame(uint8_t first_byte, std::string_view payload) {
  std::string out;
  AppendRawFrame(&out, first_byte, payload, TestMask());
  return out;
}

}  // namespace tw::ws::testing
