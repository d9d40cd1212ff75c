// UTF-8 validator checked exhaustively (all 1-3 byte inputs, 4-byte inputs
// over every lead and second/third byte) against a reference written from the
// definition: decode by bit pattern, then require the shortest form, no
// surrogate and at most U+10FFFF. The parser must agree on every one of them.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "json/json.h"
#include "json/utf8.h"

namespace tw::json {
namespace {

bool RefValid(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const uint8_t b = static_cast<uint8_t>(s[i]);
    size_t len;
    uint32_t cp;
    if (b < 0x80) {
      len = 1, cp = b;
    } else if ((b & 0xE0) == 0xC0) {
      len = 2, cp = b & 0x1F;
    } else if ((b & 0xF0) == 0xE0) {
      len = 3, cp = b & 0x0F;
    } else if ((b & 0xF8) == 0xF0) {
      len = 4, cp = b & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; k++) {
      const uint8_t c = static_cast<uint8_t>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

std::string Bytes(std::initializer_list<int> bs) {
  std::string s;
  for (int b : bs) s.push_back(static_cast<char>(b));
  return s;
}

TEST(Utf8, ValidatorMatchesReferenceExhaustively) {
  int mismatches = 0;
  auto check = [&](const std::string& s) {
    if (IsValidUtf8(s) != RefValid(s) && ++mismatches < 10) {
      ADD_FAILURE() << "mismatch on " << testing::PrintToString(s);
    }
  };
  for (int a = 0; a < 256; a++) {
    check(Bytes({a}));
    for (int b = 0; b < 256; b++) {
      check(Bytes({a, b}));
      if (a >= 0xC0) {
        for (int c = 0; c < 256; c++) check(Bytes({a, b, c}));
      }
    }
  }
  for (int a = 0xF0; a < 0x100; a++) {
    for (int b = 0x70; b < 0xD0; b++) {
      for (int c : {0x7F, 0x80, 0xA5, 0xBF, 0xC0}) {
        for (int d : {0x00, 0x7F, 0x80, 0x9A, 0xBF, 0xC0, 0xFF}) check(Bytes({a, b, c, d}));
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Utf8, ParserAgreesWithReferenceInsideStrings) {
  int mismatches = 0;
  auto check = [&](const std::string& bytes) {
    Value v;
    const bool ok = Parse("\"" + bytes + "\"", &v).ok();
    if (ok != RefValid(bytes) && ++mismatches < 10) {
      ADD_FAILURE() << "parser disagrees on " << testing::PrintToString(bytes);
    }
    if (ok && v.as_string() != bytes) ADD_FAILURE() << "bytes changed";
  };
  for (int a = 0x80; a < 0x100; a++) {
    for (int b = 0x20; b < 0x100; b++) {
      if (b == '"' || b == '\\') continue;
      check(Bytes({a, b}));
      if (a >= 0xE0 && a < 0xF0 && b >= 0x80) {
        for (int c = 0x7E; c < 0xC2; c++) check(Bytes({a, b, c}));
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Utf8, BadOffsetIsFirstByteThatCannotBelong) {
  size_t bad = 99;
  EXPECT_FALSE(IsValidUtf8(Bytes({'a', 0x80}), &bad));
  EXPECT_EQ(bad, 1u);
  EXPECT_FALSE(IsValidUtf8(Bytes({0xE0, 0x9F, 0x80}), &bad));
  EXPECT_EQ(bad, 1u);
  EXPECT_FALSE(IsValidUtf8(Bytes({'x', 0xE2, 0x82, 'y'}), &bad));
  EXPECT_EQ(bad, 3u);
  EXPECT_FALSE(IsValidUtf8(Bytes({0xF0, 0x9F, 0x98}), &bad));
  EXPECT_EQ(bad, 3u);  // ran out: the end of the input
  EXPECT_TRUE(IsValidUtf8(""));
}

TEST(Utf8, AppendUtf8EncodesEveryScalarValueShortestForm) {
  for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    AppendUtf8(&s, cp);
    const size_t want_len = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    ASSERT_EQ(s.size(), want_len) << cp;
    ASSERT_TRUE(RefValid(s)) << cp;
    // Decode back with the reference's bit arithmetic.
    uint32_t back = static_cast<uint8_t>(s[0]) & (want_len == 1 ? 0x7F : 0x3F >> (want_len - 1));
    for (size_t k = 1; k < s.size(); k++) back = (back << 6) | (static_cast<uint8_t>(s[k]) & 0x3F);
    ASSERT_EQ(back, cp);
  }
}

}  // namespace
}  // namespace tw::json
