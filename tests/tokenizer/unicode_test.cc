// Character classes and strict UTF-8 decoding. Expected values are facts of
// the Unicode Standard (the White_Space list, well-known categories), not
// read back from the generated tables.
#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tw::tokenizer {
namespace {

TEST(UnicodeTables, VersionAndShape) {
  EXPECT_STREQ(kUnicodeTablesVersion, "15.0.0");
  for (auto table : {LetterRanges(), NumberRanges(), WhitespaceRanges()}) {
    ASSERT_FALSE(table.empty());
    for (size_t i = 0; i < table.size(); ++i) {
      EXPECT_LE(table[i].lo, table[i].hi);
      EXPECT_LE(table[i].hi, 0x10FFFFu);
      if (i > 0) {
        EXPECT_GT(table[i].lo, table[i - 1].hi + 1) << "unsorted or unmerged at " << i;
      }
    }
  }
}

TEST(UnicodeTables, WhiteSpaceIsExactlyThe25CodePointsOfTheStandard) {
  const std::set<char32_t> white_space = {
      0x09,   0x0A,   0x0B,   0x0C,   0x0D,   0x20,   0x85,   0xA0,   0x1680,
      0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008,
      0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000};
  ASSERT_EQ(white_space.size(), 25u);
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    ASSERT_EQ(IsWhitespace(cp), white_space.count(cp) == 1) << std::hex << static_cast<uint32_t>(cp);
  }
}

TEST(UnicodeTables, ClassesAreDisjoint) {
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    const int n = IsLetter(cp) + IsNumber(cp) + IsWhitespace(cp);
    ASSERT_LE(n, 1) << std::hex << static_cast<uint32_t>(cp);
  }
}

TEST(UnicodeTables, KnownLetters) {
  for (char32_t cp : {U'A', U'Z', U'a', U'z', U'\u00AA' /* Lo */, U'\u00B5' /* Ll */, U'\u00E9',
                      U'\u00DF', U'\u01C5' /* Lt */, U'\u02B0' /* Lm */, U'\u03A9', U'\u0436',
                      U'\u05D0', U'\u0627', U'\u3131', U'\u4E2D', U'\uAC00', U'\uD7A3',
                      U'\U00020000' /* CJK ext B */, U'\U0002A6DF',
                      U'\U00031350' /* CJK ext H, new in 15.0 */, U'\U0001E030' /* new in 15.0 */}) {
    EXPECT_TRUE(IsLetter(cp)) << std::hex << static_cast<uint32_t>(cp);
    EXPECT_EQ(Classify(cp), CharClass::kLetter) << std::hex << static_cast<uint32_t>(cp);
  }
  for (char32_t cp : {U'_', U'0', U'\'', U'\u00D7', U'\u00F7', U'\u0300' /* Mn */, U'\u200D',
                      U'\U0001F600', U'\uFFFD', U'\uE000' /* private use */,
                      U'\U000323B0' /* unassigned in 15.0 */}) {
    EXPECT_FALSE(IsLetter(cp)) << std::hex << static_cast<uint32_t>(cp);
  }
  EXPECT_FALSE(IsLetter(kInvalidCodePoint));
  EXPECT_EQ(Classify(kInvalidCodePoint), CharClass::kOther);
}

TEST(UnicodeTables, KnownNumbers) {
  for (char32_t cp : {U'0', U'9', U'\u00B2' /* No */, U'\u00BD', U'\u0660' /* Nd */, U'\u0966',
                      U'\u2070', U'\u2160' /* Nl */, U'\u3007', U'\uFF10', U'\U0001D7CE',
                      U'\U0001F100'}) {
    EXPECT_TRUE(IsNumber(cp)) << std::hex << static_cast<uint32_t>(cp);
    EXPECT_EQ(Classify(cp), CharClass::kNumber) << std::hex << static_cast<uint32_t>(cp);
  }
  for (char32_t cp : {U'a', U'.', U'\u00D7', U'\u4E00' /* "one" is a letter */, U'\U0001F51F'}) {
    EXPECT_FALSE(IsNumber(cp)) << std::hex << static_cast<uint32_t>(cp);
  }
}

TEST(UnicodeTables, OtherIncludesFormatAndSymbolCharacters) {
  for (char32_t cp : {U'!', U'\'', U'\u00A9', U'\u200B', U'\uFEFF', U'\u180E', U'\u001C',
                      U'\u001F', U'\U0001F44D', U'\U0001F3FD', U'\u200D'}) {
    EXPECT_EQ(Classify(cp), CharClass::kOther) << std::hex << static_cast<uint32_t>(cp);
  }
}

// ---- DecodeUtf8At -----------------------------------------------------------------

std::string EncodeUtf8(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

TEST(DecodeUtf8At, EveryScalarValueRoundTripsAndSurrogatesAreInvalid) {
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    const std::string s = EncodeUtf8(cp) + "x";
    const DecodedCodePoint d = DecodeUtf8At(s, 0);
    if (cp >= 0xD800 && cp <= 0xDFFF) {
      ASSERT_EQ(d.cp, kInvalidCodePoint) << std::hex << static_cast<uint32_t>(cp);
      ASSERT_EQ(d.length, 1u);
    } else {
      ASSERT_EQ(d.cp, cp) << std::hex << static_cast<uint32_t>(cp);
      ASSERT_EQ(d.length, s.size() - 1);
    }
  }
}

TEST(DecodeUtf8At, IllFormedSequencesConsumeOneByte) {
  const std::string cases[] = {
      "\x80",             // lone continuation
      "\xC0\x80",         // overlong NUL
      "\xC1\xBF",         // overlong
      "\xE0\x9F\xBF",     // overlong 3-byte
      "\xF0\x8F\xBF\xBF", // overlong 4-byte
      "\xF4\x90\x80\x80", // U+110000
      "\xF5\x80\x80\x80", // lead byte over the range
      "\xFF",
      "\xE2\x82",         // truncated at end
      "\xE2\x82x",        // truncated before ASCII
      "\xF0\x9F\x98",     // truncated 4-byte
      "\xC3",             // truncated 2-byte
  };
  for (const std::string& s : cases) {
    const DecodedCodePoint d = DecodeUtf8At(s, 0);
    EXPECT_EQ(d.cp, kInvalidCodePoint) << s;
    EXPECT_EQ(d.length, 1u) << s;
  }
  // Decoding from an offset.
  const std::string text = "a\xC3\xA9\xF0\x9F\x98\x80";
  EXPECT_EQ(DecodeUtf8At(text, 1).cp, 0xE9u);
  EXPECT_EQ(DecodeUtf8At(text, 3).cp, 0x1F600u);
  EXPECT_EQ(DecodeUtf8At(text, 3).length, 4u);
  EXPECT_EQ(DecodeUtf8At(text, 4).cp, kInvalidCodePoint);  // mid-character
  EXPECT_EQ(DecodeUtf8At(text, text.size()).length, 0u);   // at the end
  EXPECT_EQ(DecodeUtf8At(text, text.size()).cp, kInvalidCodePoint);
}

}  // namespace
}  // namespace tw::tokenizer
