// Utf8StreamDecoder: streamed token bytes become valid UTF-8 text, whatever
// the split, with U+FFFD for ill-formed parts.
//
// Independent references used here: a validator written differently from the
// decoder (it decodes the scalar value and checks its range, where the decoder
// uses the table of allowed byte ranges); expected replacements for fixed
// cases taken from CPython's bytes.decode('utf-8', 'replace'); and a
// brute-force "maximal subpart" reference built from the set of all prefixes of
// all encoded scalar values.
#include "tokenizer/utf8_stream.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "support/chunking.h"
#include "tokenizer/test_vectors.h"

namespace tw::tokenizer {
namespace {

using tw::testing::CheckSameForAllChunkings;

const std::string kFffd = "\xEF\xBF\xBD";

bool IsValidUtf8(std::string_view s) {
  static constexpr uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
  size_t i = 0;
  while (i < s.size()) {
    const uint8_t c = static_cast<uint8_t>(s[i]);
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c >> 5) == 0x6) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c >> 4) == 0xE) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c >> 3) == 0x1E) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (size_t j = 1; j < len; ++j) {
      const uint8_t cc = static_cast<uint8_t>(s[i + j]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < kMinForLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

TEST(Utf8Validator, SanityOfTheTestsOwnValidator) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xC0\x80"));
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));
  EXPECT_FALSE(IsValidUtf8("\xE2\x82"));
  EXPECT_FALSE(IsValidUtf8("\x80"));
}

// Feeds `pieces` to one decoder, checks every returned piece is valid UTF-8,
// returns the concatenated output (Flush included).
std::string Stream(const std::vector<std::string_view>& pieces) {
  Utf8StreamDecoder d;
  std::string out;
  for (std::string_view p : pieces) {
    const std::string got = d.Push(p);
    EXPECT_TRUE(IsValidUtf8(got));
    EXPECT_LE(d.held_bytes(), Utf8StreamDecoder::kMaxHeldBytes);
    out += got;
  }
  const std::string tail = d.Flush();
  EXPECT_TRUE(IsValidUtf8(tail));
  EXPECT_EQ(d.held_bytes(), 0u);
  return out + tail;
}

struct ReplaceCase {
  std::string in;
  std::string out;
};

// Expected outputs from CPython: bytes.decode('utf-8', 'replace').encode().
const std::vector<ReplaceCase> kPythonCases = {
    {"\x80", kFffd},
    {"\xC0\xAF", kFffd + kFffd},
    {"\xE0\x80\xAF", kFffd + kFffd + kFffd},
    {"\xED\xA0\x80", kFffd + kFffd + kFffd},
    {"\xF4\x90\x80\x80", kFffd + kFffd + kFffd + kFffd},
    {"\xF5", kFffd},
    {"\xFF\xFE", kFffd + kFffd},
    {"\xE2\x82", kFffd},
    {"\xE2\x82" "A", kFffd + "A"},
    {"\xF0\x9F\x98", kFffd},
    {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"},
    {"a\xF0\x80\x80" "b", "a" + kFffd + kFffd + kFffd + "b"},
    {"\xC2", kFffd},
    {"\xC2\xC2\xA9", kFffd + "\xC2\xA9"},
    {"\xE1\x80\xE2\x82\xAC", kFffd + "\xE2\x82\xAC"},
    {"\xF1\x80\x80\xE1\x80\xC2", kFffd + kFffd + kFffd},
    {"\xED\x9F\xBF", "\xED\x9F\xBF"},
    {"\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF"},
    {"\xEF\xBF\xBD", kFffd},
    {"\xE0\xA0\x80", "\xE0\xA0\x80"},
    {"\xF0\x90\x80\x80", "\xF0\x90\x80\x80"},
};

TEST(Utf8StreamDecoder, InvalidSequencesBecomeReplacementCharacters) {
  for (const ReplaceCase& c : kPythonCases) {
    EXPECT_EQ(Stream({c.in}), c.out) << c.in;
    EXPECT_EQ(ToValidUtf8(c.in), c.out) << c.in;
    EXPECT_EQ(CheckSameForAllChunkings(c.in, Stream), "") << c.in;
  }
}

TEST(Utf8StreamDecoder, HoldsBackOnlyTheUnfinishedCharacter) {
  Utf8StreamDecoder d;
  EXPECT_EQ(d.Push("caf\xC3"), "caf");
  EXPECT_EQ(d.held_bytes(), 1u);
  EXPECT_EQ(d.Push("\xA9 \xF0\x9F"), "\xC3\xA9 ");
  EXPECT_EQ(d.held_bytes(), 2u);
  EXPECT_EQ(d.Push("\x98"), "");
  EXPECT_EQ(d.held_bytes(), 3u);
  EXPECT_EQ(d.Push("\x80!"), "\xF0\x9F\x98\x80!");
  EXPECT_EQ(d.held_bytes(), 0u);
  EXPECT_EQ(d.Flush(), "");
  // A dangling partial character at the end of the stream.
  EXPECT_EQ(d.Push("x\xE2\x82"), "x");
  EXPECT_EQ(d.Flush(), kFffd);
  // After Flush the decoder starts clean.
  EXPECT_EQ(d.Push("\x82"), kFffd);
  EXPECT_EQ(d.Push(""), "");
}

// The longest prefix of `text` (valid UTF-8) that ends on a character boundary.
size_t BoundaryAtOrBefore(std::string_view text, size_t pos) {
  while (pos > 0 && pos < text.size() && (static_cast<uint8_t>(text[pos]) & 0xC0) == 0x80) --pos;
  return pos;
}

// For every vector: the token bytes streamed token by token, cut at every
// byte boundary, and one byte at a time give back exactly the text.
TEST(Utf8StreamDecoder, VectorTokenBytesStreamBackToTheText) {
  const Tokenizer& t = testing::SharedTokenizer();
  std::vector<testing::Vector> vectors = testing::LoadTiktokenVectors();
  for (auto& v : testing::LoadOracleVectors()) vectors.push_back(std::move(v));
  ASSERT_EQ(vectors.size(), 501u);
  size_t splits = 0;
  for (const testing::Vector& v : vectors) {
    ASSERT_TRUE(IsValidUtf8(v.text)) << v.id;
    // Token by token, as a generation streams; after each token the output so
    // far is exactly the text up to the last complete character.
    Utf8StreamDecoder d;
    std::string out, bytes;
    for (TokenId id : v.tokens) {
      bytes += t.TokenBytes(id);
      const std::string got = d.Push(t.TokenBytes(id));
      ASSERT_TRUE(IsValidUtf8(got)) << v.id;
      out += got;
      ASSERT_EQ(out.size(), BoundaryAtOrBefore(v.text, bytes.size())) << v.id;
    }
    out += d.Flush();
    ASSERT_EQ(out, v.text) << v.id;
    // Every 2-way split: the first piece gives exactly the text up to the
    // last character boundary at or before the cut, the second the rest (so
    // both are valid UTF-8, the text being valid), and Flush gives nothing.
    const std::string_view all(bytes);
    std::string first, second;
    for (size_t k = 1; k < all.size(); ++k) {
      Utf8StreamDecoder split;
      first.clear();
      second.clear();
      split.PushTo(all.substr(0, k), &first);
      split.PushTo(all.substr(k), &second);
      split.FlushTo(&second);
      const size_t boundary = BoundaryAtOrBefore(v.text, k);
      const std::string_view text(v.text);
      if (first != text.substr(0, boundary) || second != text.substr(boundary)) {
        FAIL() << v.id << ": split at byte " << k << " gave [" << first << "] + [" << second << "]";
      }
      ++splits;
    }
    // One byte at a time (Stream checks that each returned piece is valid).
    std::vector<std::string_view> bytewise;
    for (size_t i = 0; i < all.size(); ++i) bytewise.push_back(all.substr(i, 1));
    ASSERT_EQ(Stream(bytewise), v.text) << v.id << " bytewise";
  }
  EXPECT_GT(splits, 224000u);
}

// Brute-force reference for the replacement rule: at each position take the
// longest run of bytes that is a prefix of some well-formed character; a
// complete character is copied, anything else becomes one U+FFFD (consuming at
// least one byte).
class MaximalSubpartReference {
 public:
  MaximalSubpartReference() {
    for (uint32_t cp = 0x80; cp <= 0x10FFFF; ++cp) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      std::string s;
      if (cp < 0x800) {
        s = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
      } else if (cp < 0x10000) {
        s = {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
             static_cast<char>(0x80 | (cp & 0x3F))};
      } else {
        s = {static_cast<char>(0xF0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3F)),
             static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
      }
      for (size_t len = 1; len < s.size(); ++len) proper_prefixes_.insert(s.substr(0, len));
    }
  }

  std::string Decode(std::string_view in) const {
    std::string out;
    size_t i = 0;
    while (i < in.size()) {
      size_t complete = 0;  // length of a well-formed character at i
      size_t subpart = 0;   // length of the longest proper prefix of one
      for (size_t l = 1; l <= 4 && i + l <= in.size(); ++l) {
        const std::string_view cand = in.substr(i, l);
        if (IsValidUtf8(cand)) {
          complete = l;
          break;
        }
        if (proper_prefixes_.count(std::string(cand)) == 0) break;
        subpart = l;
      }
      if (complete > 0) {
        out.append(in.substr(i, complete));
        i += complete;
      } else {
        out += kFffd;
        i += subpart > 0 ? subpart : 1;
      }
    }
    return out;
  }

 private:
  std::unordered_set<std::string> proper_prefixes_;
};

TEST(Utf8StreamDecoder, RandomBytesMatchTheMaximalSubpartReference) {
  const MaximalSubpartReference reference;
  for (const ReplaceCase& c : kPythonCases) EXPECT_EQ(reference.Decode(c.in), c.out) << c.in;

  // Bytes biased towards lead and continuation bytes, so that partial,
  // overlong and out-of-range sequences are common.
  const uint8_t alphabet[] = {'a',  ' ',  0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2,
                              0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4,
                              0xF5, 0xFF};
  std::mt19937 rng(99);
  std::uniform_int_distribution<size_t> pick(0, sizeof alphabet - 1);
  std::uniform_int_distribution<int> len(0, 10);
  for (int round = 0; round < 4000; ++round) {
    std::string in;
    for (int n = len(rng); n > 0; --n) in.push_back(static_cast<char>(alphabet[pick(rng)]));
    const std::string expected = reference.Decode(in);
    ASSERT_EQ(ToValidUtf8(in), expected);
    ASSERT_EQ(CheckSameForAllChunkings(in, Stream), "");
  }
}

}  // namespace
}  // namespace tw::tokenizer
