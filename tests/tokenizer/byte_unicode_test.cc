// The GPT-2 byte <-> unicode map.
#include "tokenizer/byte_unicode.h"

#include <gtest/gtest.h>

#include <set>

namespace tw::tokenizer {
namespace {

TEST(ByteUnicode, Has256DistinctEntriesAndAnExactInverse) {
  std::set<char32_t> seen;
  int identity = 0;
  for (int b = 0; b < 256; ++b) {
    const char32_t cp = ByteToUnicode(static_cast<uint8_t>(b));
    seen.insert(cp);
    if (cp == static_cast<char32_t>(b)) ++identity;
    EXPECT_EQ(UnicodeToByte(cp), b);
  }
  EXPECT_EQ(seen.size(), 256u);
  EXPECT_EQ(identity, 188);  // printable Latin-1 bytes map to themselves
  // The others are exactly U+0100..U+0143, in byte order.
  int inverse_hits = 0;
  for (char32_t cp = 0; cp < 0x400; ++cp) inverse_hits += UnicodeToByte(cp) >= 0;
  EXPECT_EQ(inverse_hits, 256);
  for (char32_t cp = 0x100; cp <= 0x143; ++cp) EXPECT_GE(UnicodeToByte(cp), 0) << static_cast<uint32_t>(cp);
}

TEST(ByteUnicode, KnownEntries) {
  EXPECT_EQ(ByteToUnicode('!'), U'!');
  EXPECT_EQ(ByteToUnicode('~'), U'~');
  EXPECT_EQ(ByteToUnicode(0xA1), U'\u00A1');
  EXPECT_EQ(ByteToUnicode(0xFF), U'\u00FF');
  EXPECT_EQ(ByteToUnicode(0x00), U'\u0100');  // the first shifted byte
  EXPECT_EQ(ByteToUnicode('\n'), U'\u010A');  // 'Ċ'
  EXPECT_EQ(ByteToUnicode(' '), U'\u0120');   // 'Ġ'
  EXPECT_EQ(ByteToUnicode(0x7F), U'\u0121');  // DEL follows the 33 controls and space
  EXPECT_EQ(ByteToUnicode(0xA0), U'\u0142');
  EXPECT_EQ(ByteToUnicode(0xAD), U'\u0143');  // soft hyphen, the last one
  EXPECT_EQ(UnicodeToByte(U' '), -1);
  EXPECT_EQ(UnicodeToByte(U'\u0144'), -1);
  EXPECT_EQ(UnicodeToByte(U'\u4E2D'), -1);
}

TEST(ByteUnicode, SpellingRoundTrip) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const std::string spelled = MapTokenBytes(all);
  std::string back;
  ASSERT_TRUE(UnmapTokenSpelling(spelled, &back));
  EXPECT_EQ(back, all);
  EXPECT_EQ(MapTokenBytes(" the\n"), "\xC4\xA0the\xC4\x8A");
  ASSERT_TRUE(UnmapTokenSpelling("\xC4\xA0world", &back));
  EXPECT_EQ(back, " world");
  EXPECT_FALSE(UnmapTokenSpelling("\xE4\xB8\xAD", &back));  // U+4E2D is not in the map
  EXPECT_FALSE(UnmapTokenSpelling("a b", &back));          // nor is U+0020
  EXPECT_FALSE(UnmapTokenSpelling("\xC4", &back));          // not UTF-8
}

}  // namespace
}  // namespace tw::tokenizer
