// WebSocket framing (RFC 6455 §5): the frame-header parser, the message
// reader built on it, and the frame writer.
//
// ParseFrameHeader is in the picohttpparser shape: bytes in; header length
// consumed / incomplete / error out; no allocation. It applies every rule that
// the header alone decides (each a close code, 1002 unless noted):
//   - RSV1..3 must be 0 (no extension is ever negotiated);
//   - opcodes 3-7 and 11-15 are reserved;
//   - control frames (close, ping, pong) carry <= 125 bytes and have FIN set;
//   - the 16-bit and 64-bit lengths must be minimal (126..65535 in 16 bits,
//     >= 65536 in 64 bits) and the 64-bit length's top bit must be 0;
//   - client-to-server frames must be masked (RFC 6455 §5.1), server-to-client
//     frames must not be (the `expect_masked` argument says which side we are).
//
// MessageReader turns a byte stream (any split) into messages and control
// frames. It consumes every byte it is given: it keeps at most one partial
// header (14 bytes), one control payload (125 bytes) and the message being
// assembled (at most ReaderLimits::max_message_bytes: 1009 as soon as a frame
// header announces more). On top of the header rules it enforces the
// sequencing rules (continuation without a message: 1002; a new text/binary
// frame inside a fragmented message: 1002; control frames may arrive between
// fragments), validates text messages' UTF-8 incrementally and fails at the
// first invalid byte (1007), and validates close payloads (length 1: 1002;
// a code that may not be sent: 1002; reason not UTF-8: 1007). After a close
// frame or an error it ignores further input.
//
// Threads: a reader belongs to one connection (the I/O thread). The writer
// functions are pure. Never: throws, reads outside its input, or allocates
// beyond the bounds above.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ws/utf8_validator.h"

namespace tw::ws {

enum class Opcode : uint8_t {
  kContinuation = 0x0,
  kText = 0x1,
  kBinary = 0x2,
  kClose = 0x8,
  kPing = 0x9,
  kPong = 0xA,
};
const char* OpcodeName(Opcode op);
inline bool IsControl(Opcode op) { return (static_cast<uint8_t>(op) & 0x8) != 0; }

// Close status codes (RFC 6455 §7.4.1).
namespace close_code {
constexpr uint16_t kNormal = 1000;
constexpr uint16_t kGoingAway = 1001;
constexpr uint16_t kProtocolError = 1002;
constexpr uint16_t kUnsupportedData = 1003;
constexpr uint16_t kNoStatus = 1005;    // never on the wire: "close had no code"
constexpr uint16_t kAbnormal = 1006;    // never on the wire: "no close frame"
constexpr uint16_t kInvalidPayload = 1007;
constexpr uint16_t kPolicyViolation = 1008;
constexpr uint16_t kMessageTooBig = 1009;
constexpr uint16_t kInternalError = 1011;
}  // namespace close_code

// True for a code an endpoint may put in a close frame: 1000-1003, 1007-1014
// (registered with IANA), 3000-4999 (libraries, applications).
bool IsSendableCloseCode(uint16_t code);

constexpr size_t kMaxFrameHeaderBytes = 14;  // 2 + 8 (length) + 4 (mask)
constexpr size_t kMaxControlPayloadBytes = 125;

struct FrameHeader {
  bool fin = false;
  Opcode opcode = Opcode::kContinuation;
  bool masked = false;
  uint8_t mask[4] = {0, 0, 0, 0};
  uint64_t payload_len = 0;
};

// Why a frame or message was refused: the close code to send and a reason.
struct FrameError {
  uint16_t code = 0;
  const char* reason = "";  // static text
};

constexpr int kFrameIncomplete = -2;
constexpr int kFrameError = -1;

// Parses one frame header at buf[0..len). Returns the header length (2..14),
// kFrameIncomplete, or kFrameError with *error filled.
int ParseFrameHeader(const char* buf, size_t len, bool expect_masked, FrameHeader* out,
                     FrameError* error);

struct ReaderLimits {
  size_t max_message_bytes = 1 << 20;  // assembled text/binary message (1009 beyond)
  bool expect_masked = true;           // true on the server side
};

// Receives what the reader finds. A callback returns false to stop the
// current Feed() at once (e.g. the connection was closed from inside it).
class MessageHandler {
 public:
  virtual ~MessageHandler() = default;
  // A complete message; text is valid UTF-8. The view lives until the
  // callback returns.
  virtual bool OnMessage(Opcode opcode, std::string_view payload) = 0;
  virtual bool OnPing(std::string_view payload) = 0;
  virtual bool OnPong(std::string_view payload) = 0;
  // A valid close frame; code is close_code::kNoStatus if it had no payload.
  virtual bool OnClose(uint16_t code, std::string_view reason) = 0;
};

class MessageReader {
 public:
  enum class State { kOpen, kClosed, kFailed };

  explicit MessageReader(const ReaderLimits& limits) : limits_(limits) {}

  // Consumes data[0..len) (all of it, unless a callback stops it or the
  // reader closes or fails). Returns the state after it; on kFailed, error()
  // says why and error_offset() is the stream offset of the offending byte.
  State Feed(const char* data, size_t len, MessageHandler* handler);
  State Feed(std::string_view data, MessageHandler* handler) {
    return Feed(data.data(), data.size(), handler);
  }

  State state() const { return state_; }
  const FrameError& error() const { return error_; }
  uint64_t error_offset() const { return error_offset_; }
  // Bytes currently held (partial header, control payload, message so far).
  size_t buffered_bytes() const { return hdr_len_ + control_.size() + message_.size(); }

 private:
  State Fail(uint16_t code, const char* reason, uint64_t offset);
  // The frame's payload is complete: dispatch it. Returns false to stop.
  bool FinishFrame(MessageHandler* handler);

  ReaderLimits limits_;
  State state_ = State::kOpen;
  FrameError error_;
  uint64_t error_offset_ = 0;
  uint64_t stream_offset_ = 0;  // bytes consumed since the start

  char hdr_[kMaxFrameHeaderBytes];
  size_t hdr_len_ = 0;
  bool in_frame_ = false;  // header parsed, payload pending
  FrameHeader frame_;
  uint64_t frame_remaining_ = 0;
  uint64_t frame_pos_ = 0;  // payload bytes of this frame seen (mask index)
  uint64_t frame_start_ = 0;  // stream offset of the current frame's first byte

  bool in_message_ = false;  // a fragmented message is open
  Opcode message_opcode_ = Opcode::kText;
  std::string message_;
  std::string control_;
  Utf8Validator utf8_;
};

// Frame writer. `mask` null: unmasked (server side); else the 4-byte key
// (client side) and the payload is masked as written.
void AppendFrameHeader(std::string* out, uint8_t first_byte, uint64_t payload_len,
                       const uint8_t* mask);
// A frame whose first byte is given raw (FIN | RSV | opcode), so tests can
// write frames the protocol forbids.
void AppendRawFrame(std::string* out, uint8_t first_byte, std::string_view payload,
                    const uint8_t* mask);
void AppendFrame(std::string* out, Opcode opcode, std::string_view payload, bool fin = true,
                 const uint8_t* mask = nullptr);
// Close frame: code 0 writes an empty payload; the reason is cut to fit in
// 123 bytes (at a UTF-8 character boundary).
void AppendCloseFrame(std::string* out, uint16_t code, std::string_view reason,
                      const uint8_t* mask = nullptr);
// Bytes of the header for a payload of this length (unmasked).
size_t FrameHeaderBytes(uint64_t payload_len);

}  // namespace tw::ws
