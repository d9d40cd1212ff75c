// libFuzzer target for the WebSocket frame reader (src/ws/frame.h).
//
// The first input byte picks the limits (masked or not, message bound) and the
// chunking seed; the rest is the byte stream. It is read whole, in
// pseudo-random pieces, and one byte at a time: all three must give identical
// events, state, close code and error offset. Invariants on every output:
// text messages are valid UTF-8 (checked by the JSON layer's independent
// validator), messages fit the bound, control payloads fit 125 bytes, close
// codes are sendable. Any difference aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "json/utf8.h"
#include "ws/frame.h"

namespace {

using tw::ws::MessageReader;
using tw::ws::Opcode;

class Check : public tw::ws::MessageHandler {
 public:
  explicit Check(size_t max_message) : max_(max_message) {}
  bool OnMessage(Opcode op, std::string_view p) override {
    if (p.size() > max_) Die("message over the bound");
    if (op == Opcode::kText && !tw::json::IsValidUtf8(p)) Die("text message is not UTF-8");
    if (op != Opcode::kText && op != Opcode::kBinary) Die("message with a non-data opcode");
    log += (op == Opcode::kText ? "T" : "B") + std::to_string(p.size()) + ":" + std::string(p) + ";";
    return true;
  }
  bool OnPing(std::string_view p) override {
    if (p.size() > 125) Die("ping over 125");
    log += "i" + std::string(p) + ";";
    return true;
  }
  bool OnPong(std::string_view p) override {
    if (p.size() > 125) Die("pong over 125");
    log += "o" + std::string(p) + ";";
    return true;
  }
  bool OnClose(uint16_t code, std::string_view reason) override {
    if (code != tw::ws::close_code::kNoStatus && !tw::ws::IsSendableCloseCode(code)) Die("bad close code");
    if (!tw::json::IsValidUtf8(reason)) Die("close reason not UTF-8");
    log += "c" + std::to_string(code) + std::string(reason) + ";";
    return true;
  }
  static void Die(const char* what) {
    std::fprintf(stderr, "invariant broken: %s\n", what);
    std::abort();
  }
  std::string log;

 private:
  size_t max_;
};

std::string Run(std::string_view in, const std::vector<size_t>& cuts, const tw::ws::ReaderLimits& lim) {
  MessageReader r(lim);
  Check c(lim.max_message_bytes);
  size_t pos = 0;
  for (size_t cut : cuts) {
    r.Feed(in.substr(pos, cut - pos), &c);
    pos = cut;
  }
  r.Feed(in.substr(pos), &c);
  return c.log + "|" + std::to_string(static_cast<int>(r.state())) + "," + std::to_string(r.error().code) +
         "@" + std::to_string(r.error_offset());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  uint8_t sel = data[0];
  std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  tw::ws::ReaderLimits lim;
  lim.expect_masked = (sel & 1) != 0;
  lim.max_message_bytes = (sel & 2) ? 64 : 4096;
  std::string whole = Run(in, {}, lim);
  std::vector<size_t> cuts;
  uint32_t x = sel * 2654435761u + 1;
  for (size_t p = 0; p < in.size();) {
    x = x * 1103515245u + 12345u;
    p += 1 + (x >> 16) % 17;
    if (p < in.size()) cuts.push_back(p);
  }
  if (Run(in, cuts, lim) != whole) Check::Die("random chunking differs from whole input");
  std::vector<size_t> bytewise;
  for (size_t p = 1; p < in.size(); p++) bytewise.push_back(p);
  if (Run(in, bytewise, lim) != whole) Check::Die("bytewise differs from whole input");
  return 0;
}
