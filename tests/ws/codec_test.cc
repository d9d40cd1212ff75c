// SHA-1 against FIPS 180 / NIST example vectors, base64 against RFC 4648 §10,
// and Sec-WebSocket-Accept against RFC 6455 §1.3's worked example.
#include <gtest/gtest.h>

#include <string>

#include "ws/base64.h"
#include "ws/handshake.h"
#include "ws/sha1.h"

namespace tw::ws {
namespace {

std::string Hex(const Sha1Hash& h) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t b : h) {
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

TEST(Sha1, Fips180Vectors) {
  EXPECT_EQ(Hex(Sha1Digest("abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(Hex(Sha1Digest("")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(Hex(Sha1Digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  EXPECT_EQ(Hex(Sha1Digest("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                           "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu")),
            "a49b2446a02c645bf419f995b67091253a04a259");
  EXPECT_EQ(Hex(Sha1Digest(std::string(1000000, 'a'))), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST(Sha1, IncrementalEqualsOneShotAtEverySplit) {
  // 200 bytes cross three block boundaries and both padding branches.
  std::string msg;
  for (int i = 0; i < 200; i++) msg += static_cast<char>(i * 7 + 3);
  for (size_t n = 0; n <= msg.size(); n += 1) {
    Sha1Hash whole = Sha1Digest(msg.substr(0, n));
    for (size_t cut : {size_t{0}, n / 3, n / 2, n}) {
      Sha1 s;
      s.Update(msg.substr(0, cut));
      s.Update(msg.substr(cut, n - cut));
      ASSERT_EQ(Hex(s.Finish()), Hex(whole)) << "n=" << n << " cut=" << cut;
    }
  }
}

TEST(Base64, Rfc4648Vectors) {
  const std::pair<const char*, const char*> v[] = {{"", ""},         {"f", "Zg=="},
                                                   {"fo", "Zm8="},   {"foo", "Zm9v"},
                                                   {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
                                                   {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, enc] : v) {
    EXPECT_EQ(Base64Encode(plain), enc);
    std::string out;
    ASSERT_TRUE(Base64Decode(enc, &out)) << enc;
    EXPECT_EQ(out, plain);
  }
}

TEST(Base64, AllByteValuesRoundTrip) {
  std::string all;
  for (int i = 0; i < 256; i++) all += static_cast<char>(i);
  for (size_t n = 0; n <= all.size(); n++) {
    std::string out;
    ASSERT_TRUE(Base64Decode(Base64Encode(all.substr(0, n)), &out));
    ASSERT_EQ(out, all.substr(0, n));
  }
}

TEST(Base64, RejectsNonCanonical) {
  struct Case {
    const char* text;
    size_t offset;
  } cases[] = {
      {"Zg=", 3},       // length not a multiple of 4
      {"Zh==", 1},      // unused bits not zero
      {"Zm9=", 2},      // unused bits not zero
      {"Z===", 1},      // too much padding
      {"Zg==Zg==", 2},  // padding in the middle
      {"Zm9v\nZm9v", 9},
      {"Zm9 ", 3},
      {"Zm-v", 2},      // URL-safe alphabet is not accepted
      {"Zg=a", 3},      // symbol after '='
  };
  for (const Case& c : cases) {
    std::string out;
    size_t off = 1234;
    EXPECT_FALSE(Base64Decode(c.text, &out, &off)) << c.text;
    EXPECT_EQ(off, c.offset) << c.text;
  }
}

TEST(Handshake, Rfc6455AcceptExample) {
  EXPECT_EQ(AcceptKey("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

}  // namespace
}  // namespace tw::ws
