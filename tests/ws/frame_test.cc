// Frame header parser, message reader and writer (RFC 6455 §5), each input
// fed whole, at every split point and one byte at a time.
#include <gtest/gtest.h>

#include <string>

#include "json/utf8.h"
#include "support/chunking.h"
#include "ws/frame.h"
#include "ws/frame_test_util.h"

namespace tw::ws {
namespace {

using testing::ClientFrame;
using testing::FeedAll;
using testing::Recorder;

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s += static_cast<char>(x);
  return s;
}

// Checks that every chunking gives `expected`.
void ExpectAllChunkings(const std::string& input, const ReaderLimits& lim, const std::string& expected) {
  std::string whole = FeedAll({input}, lim);
  EXPECT_EQ(whole, expected);
  std::string diff = tw::testing::CheckSameForAllChunkings(
      input, [&](const std::vector<std::string_view>& pieces) { return FeedAll(pieces, lim); });
  EXPECT_EQ(diff, "");
}

ReaderLimits ServerLimits(size_t max_message = 1 << 20) {
  ReaderLimits l;
  l.max_message_bytes = max_message;
  l.expect_masked = true;
  return l;
}
ReaderLimits ClientLimits() {
  ReaderLimits l;
  l.expect_masked = false;
  return l;
}

// RFC 6455 §5.7 examples, byte for byte.
TEST(FrameReader, Rfc6455Examples) {
  ExpectAllChunkings(Bytes({0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f}), ClientLimits(),
                     "text(Hello) | open");
  ExpectAllChunkings(Bytes({0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58}),
                     ServerLimits(), "text(Hello) | open");
  ExpectAllChunkings(Bytes({0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f}), ClientLimits(),
                     "text(Hello) | open");
  ExpectAllChunkings(Bytes({0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f}), ClientLimits(),
                     "ping(Hello) | open");
  ExpectAllChunkings(Bytes({0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58}),
                     ServerLimits(), "pong(Hello) | open");
  // 256 bytes (16-bit length) and 64 KiB (64-bit length), unmasked binary.
  std::string b256 = Bytes({0x82, 0x7E, 0x01, 0x00}) + std::string(256, 'x');
  EXPECT_EQ(FeedAll({b256}, ClientLimits()), "binary(" + std::string(256, 'x') + ") | open");
  std::string b64k = Bytes({0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0}) + std::string(65536, 'y');
  Recorder rec;
  MessageReader r(ClientLimits());
  for (size_t i = 0; i < b64k.size(); i += 997) r.Feed(std::string_view(b64k).substr(i, 997), &rec);
  ASSERT_EQ(rec.messages.size(), 1u);
  EXPECT_EQ(rec.messages[0], std::string(65536, 'y'));
}

TEST(FrameReader, ControlFramesBetweenFragmentsAndClose) {
  std::string in = ClientFrame(0x01, "Hel") + ClientFrame(0x89, "p1") + ClientFrame(0x00, "l") +
                   ClientFrame(0x8A, "") + ClientFrame(0x80, "o") + ClientFrame(0x82, "\x01\x02") +
                   ClientFrame(0x88, "\x03\xe8" "bye") + ClientFrame(0x81, "ignored");
  ExpectAllChunkings(in, ServerLimits(),
                     "ping(p1) pong() text(Hello) binary(\\x01\\x02) close(1000,bye) | closed");
}

TEST(FrameReader, EmptyFragmentsAndEmptyClose) {
  std::string in = ClientFrame(0x01, "") + ClientFrame(0x00, "") + ClientFrame(0x80, "") +
                   ClientFrame(0x88, "");
  ExpectAllChunkings(in, ServerLimits(), "text() close(1005,) | closed");
}

struct ErrorCase {
  const char* name;
  std::string input;
  uint16_t code;
  uint64_t offset;
};

TEST(FrameReader, ProtocolErrorsAtEverySplit) {
  std::string ok = ClientFrame(0x81, "ok");  // 8 bytes, then the bad frame
  const ErrorCase cases[] = {
      {"rsv1", ok + ClientFrame(0xC1, "x"), 1002, 8},
      {"rsv2", ok + ClientFrame(0xA1, "x"), 1002, 8},
      {"rsv3", ok + ClientFrame(0x91, "x"), 1002, 8},
      {"opcode3", ok + ClientFrame(0x83, ""), 1002, 8},
      {"opcode7", ok + ClientFrame(0x87, "x"), 1002, 8},
      {"opcode11", ok + ClientFrame(0x8B, ""), 1002, 8},
      {"opcode15", ok + ClientFrame(0x8F, "x"), 1002, 8},
      {"unmasked", ok + Bytes({0x81, 0x01, 'x'}), 1002, 8},
      {"fragmented ping", ok + ClientFrame(0x09, "x"), 1002, 8},
      {"fragmented close", ok + ClientFrame(0x08, ""), 1002, 8},
      {"ping 126 bytes", ok + ClientFrame(0x89, std::string(126, 'p')), 1002, 8},
      {"non-minimal 16", ok + Bytes({0x82, 0xFE, 0x00, 0x7D, 1, 2, 3, 4}), 1002, 8},
      {"non-minimal 64", ok + Bytes({0x82, 0xFF, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 1, 2, 3, 4}), 1002, 8},
      {"64-bit top bit", ok + Bytes({0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4}), 1002, 8},
      {"continuation first", ok + ClientFrame(0x80, "x"), 1002, 8},
      {"text inside message", ok + ClientFrame(0x01, "a") + ClientFrame(0x81, "b"), 1002, 15},
      {"close 1 byte", ok + ClientFrame(0x88, "\x03"), 1002, 8},
      {"close code 999", ok + ClientFrame(0x88, "\x03\xe7"), 1002, 8},
      {"close code 1004", ok + ClientFrame(0x88, "\x03\xec"), 1002, 8},
      {"close code 1005", ok + ClientFrame(0x88, "\x03\xed"), 1002, 8},
      {"close code 1006", ok + ClientFrame(0x88, "\x03\xee"), 1002, 8},
      {"close code 1016", ok + ClientFrame(0x88, "\x03\xf8"), 1002, 8},
      {"close code 2999", ok + ClientFrame(0x88, "\x0b\xb7"), 1002, 8},
      {"close code 5000", ok + ClientFrame(0x88, "\x13\x88"), 1002, 8},
      {"close code 65535", ok + ClientFrame(0x88, "\xff\xff"), 1002, 8},
      {"close reason not utf8", ok + ClientFrame(0x88, "\x03\xe8\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80"), 1007, 8},
      {"text not utf8", ok + ClientFrame(0x81, "ab\xff" "cd"), 1007, 16},
      {"text ends mid-char", ok + ClientFrame(0x81, "ab\xce"), 1007, 17},
      {"too big one frame", ok + ClientFrame(0x82, std::string(33, 'b')), 1009, 8},
      {"too big fragments", ok + ClientFrame(0x02, std::string(20, 'b')) + ClientFrame(0x00, std::string(13, 'b')), 1009, 34},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::string got = FeedAll({c.input}, ServerLimits(32));
    std::string prefix = "text(ok) | failed " + std::to_string(c.code) + " @" + std::to_string(c.offset);
    EXPECT_EQ(got.substr(0, prefix.size()), prefix) << got;
    EXPECT_EQ(tw::testing::CheckSameForAllChunkings(
                  c.input, [&](const std::vector<std::string_view>& p) { return FeedAll(p, ServerLimits(32)); }),
              "");
  }
}

TEST(FrameReader, ValidCloseCodes) {
  for (int code : {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000, 4999}) {
    std::string p = Bytes({code >> 8, code & 0xFF}) + "why";
    EXPECT_EQ(FeedAll({ClientFrame(0x88, p)}, ServerLimits()),
              "close(" + std::to_string(code) + ",why) | closed");
  }
  std::string reason123(123, 'r');
  EXPECT_EQ(FeedAll({ClientFrame(0x88, "\x03\xe8" + reason123)}, ServerLimits()),
            "close(1000," + reason123 + ") | closed");
}

// A header error is reported as soon as the bytes that decide it arrive.
TEST(FrameReader, HeaderErrorsFailEarly) {
  MessageReader r(ServerLimits());
  Recorder rec;
  EXPECT_EQ(r.Feed(Bytes({0xC1}), &rec), MessageReader::State::kFailed);  // RSV from byte 0
  MessageReader r2(ServerLimits());
  EXPECT_EQ(r2.Feed(Bytes({0x82, 0xFF, 0x80}), &rec), MessageReader::State::kFailed);  // top bit
  MessageReader r3(ServerLimits());
  EXPECT_EQ(r3.Feed(Bytes({0x81, 0x05}), &rec), MessageReader::State::kFailed);  // unmasked
  MessageReader r4(ServerLimits(100));
  // 1009 from the header alone: no payload byte needed.
  EXPECT_EQ(r4.Feed(Bytes({0x82, 0xFE, 0x01, 0x00}), &rec), MessageReader::State::kOpen);
  EXPECT_EQ(r4.Feed(Bytes({1, 2, 3, 4}), &rec), MessageReader::State::kFailed);
  EXPECT_EQ(r4.error().code, 1009);
}

// UTF-8 fails at the first invalid byte, across frame boundaries, before the
// message (or even the frame) is complete.
TEST(FrameReader, Utf8FailsFastAcrossFragments) {
  // "κόσμε" then ED A0 80 (a surrogate: invalid at A0) then more text.
  std::string good = "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5";
  std::string f1 = ClientFrame(0x01, good);
  std::string f2 = ClientFrame(0x00, "\xed\xa0\x80" "edited");
  std::string in = f1 + f2;
  size_t bad_pos = f1.size() + 6 + 1;  // header (2) + mask (4), then ED, then A0
  for (size_t n = 0; n <= in.size(); n++) {
    MessageReader r(ServerLimits());
    Recorder rec;
    r.Feed(std::string_view(in).substr(0, n), &rec);
    if (n <= bad_pos) {
      ASSERT_EQ(r.state(), MessageReader::State::kOpen) << n;
    } else {
      ASSERT_EQ(r.state(), MessageReader::State::kFailed) << n;
      EXPECT_EQ(r.error().code, 1007);
      EXPECT_EQ(r.error_offset(), bad_pos);
    }
  }
}

TEST(FrameReader, StopsWhenTheHandlerSaysSo) {
  class StopAfterFirst : public Recorder {
   public:
    bool OnMessage(Opcode op, std::string_view p) override {
      Recorder::OnMessage(op, p);
      return false;
    }
  } rec;
  MessageReader r(ServerLimits());
  std::string in = ClientFrame(0x81, "a") + ClientFrame(0x81, "b");
  r.Feed(in, &rec);
  EXPECT_EQ(rec.log, "text(a) ");
}

TEST(FrameWriter, HeaderLengthsAndRoundTrip) {
  for (uint64_t n : {0ull, 1ull, 125ull, 126ull, 65535ull, 65536ull, 100000ull}) {
    std::string payload(n, '\0');
    for (size_t i = 0; i < n; i++) payload[i] = static_cast<char>(i * 31 + 7);
    std::string plain;
    AppendFrame(&plain, Opcode::kBinary, payload);
    EXPECT_EQ(plain.size(), FrameHeaderBytes(n) + n);
    EXPECT_EQ(FrameHeaderBytes(n), n < 126 ? 2u : n < 65536 ? 4u : 10u);
    FrameHeader h;
    FrameError e;
    ASSERT_EQ(ParseFrameHeader(plain.data(), plain.size(), false, &h, &e),
              static_cast<int>(FrameHeaderBytes(n)));
    EXPECT_EQ(h.payload_len, n);
    EXPECT_TRUE(h.fin);
    EXPECT_EQ(h.opcode, Opcode::kBinary);
    // Masked (client) frame through the server reader.
    std::string masked;
    AppendFrame(&masked, Opcode::kBinary, payload, true, testing::TestMask());
    Recorder rec;
    MessageReader r(ServerLimits());
    EXPECT_EQ(r.Feed(masked, &rec), MessageReader::State::kOpen);
    ASSERT_EQ(rec.messages.size(), 1u);
    EXPECT_EQ(rec.messages[0], payload);
  }
}

TEST(FrameWriter, CloseFrameCutsReasonAtCharacterBoundary) {
  std::string reason(120, 'a');
  reason += "\xce\xba\xce\xba";  // 124 bytes: cut to 123 would split a character
  std::string f;
  AppendCloseFrame(&f, 1001, reason);
  ASSERT_EQ(static_cast<uint8_t>(f[1]), 2u + 122u);
  EXPECT_EQ(f.substr(2, 2), "\x03\xe9");
  EXPECT_TRUE(json::IsValidUtf8(f.substr(4)));
  std::string empty;
  AppendCloseFrame(&empty, 0, "ignored");
  EXPECT_EQ(empty, Bytes({0x88, 0x00}));
}

}  // namespace
}  // namespace tw::ws
