// backend::TextAssembler: stop strings matched across pieces of text, text
// held back only while it may still start a stop string (DESIGN.md §5).
#include "backend/text_assembler.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tw::backend {
namespace {

// Pushes each piece; returns everything emitted, and whether it stopped.
std::string PushAll(TextAssembler* a, const std::vector<std::string>& pieces, bool* stopped) {
  std::string out;
  *stopped = false;
  for (const std::string& p : pieces) {
    TextAssembler::Step s = a->Push(p);
    out += s.text;
    if (s.stopped) {
      *stopped = true;
      break;
    }
  }
  return out;
}

TEST(TextAssembler, WithoutStopStringsTextPassesThroughAtOnce) {
  TextAssembler a({});
  EXPECT_EQ(a.Push("Hello").text, "Hello");
  EXPECT_EQ(a.Push(", world").text, ", world");
  EXPECT_EQ(a.Flush(), "");
}

TEST(TextAssembler, AStopStringAcrossPiecesEndsBeforeIt) {
  TextAssembler a({"\n\nUser:"});
  bool stopped = false;
  EXPECT_EQ(PushAll(&a, {"Paris.", "\n", "\nUs", "er:", " more"}, &stopped), "Paris.");
  EXPECT_TRUE(stopped);
}

TEST(TextAssembler, APossibleStartIsHeldAndReleasedWhenItDiverges) {
  TextAssembler a({"STOP"});
  TextAssembler::Step s = a.Push("abc ST");
  EXPECT_EQ(s.text, "abc ");  // "ST" may begin "STOP"
  EXPECT_FALSE(s.stopped);
  s = a.Push("OX");
  EXPECT_EQ(s.text, "STOX");  // it did not
  EXPECT_FALSE(s.stopped);
  EXPECT_EQ(a.Flush(), "");
}

TEST(TextAssembler, TheEarliestStopWinsWhicheverStringItIs) {
  TextAssembler a({"world", "lo w"});
  TextAssembler::Step s = a.Push("Hello world");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.text, "Hel");
}

TEST(TextAssembler, FlushReturnsWhatIsHeld) {
  TextAssembler a({"</s>"});
  EXPECT_EQ(a.Push("done </").text, "done ");
  EXPECT_EQ(a.Flush(), "</");
  EXPECT_EQ(a.Flush(), "");
}

TEST(TextAssembler, NothingAfterTheStop) {
  TextAssembler a({"x"});
  TextAssembler::Step s = a.Push("axb");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.text, "a");
  s = a.Push("more");
  EXPECT_EQ(s.text, "");
  EXPECT_FALSE(s.stopped);
}

TEST(TextAssembler, EmptyStopStringsAreIgnored) {
  TextAssembler a({"", "END"});
  bool stopped = false;
  EXPECT_EQ(PushAll(&a, {"a", "b", "EN", "D"}, &stopped), "ab");
  EXPECT_TRUE(stopped);
}

TEST(TextAssembler, HeldTextNeverSplitsACharacter) {
  // A stop string is valid UTF-8, so what is held back starts on a
  // character boundary: the two bytes of "é" are held together.
  TextAssembler a({"\xC3\xA9t\xC3\xA9"});  // "été"
  TextAssembler::Step s = a.Push("caf\xC3\xA9");
  EXPECT_EQ(s.text, "caf");  // "é" may begin "été"
  s = a.Push(" ");
  EXPECT_EQ(s.text, "\xC3\xA9 ");
}

// Every way of cutting one text into two pieces gives the same output.
TEST(TextAssembler, EverySplitPointGivesTheSameText) {
  const std::string text = "The answer is 42.\n\nUser: next";
  for (size_t cut = 0; cut <= text.size(); cut++) {
    TextAssembler a({"\n\nUser:"});
    bool stopped = false;
    EXPECT_EQ(PushAll(&a, {text.substr(0, cut), text.substr(cut)}, &stopped), "The answer is 42.") << cut;
    EXPECT_TRUE(stopped) << cut;
  }
  // And byte by byte.
  TextAssembler a({"\n\nUser:"});
  std::vector<std::string> bytes;
  for (char c : text) bytes.push_back(std::string(1, c));
  bool stopped = false;
  EXPECT_EQ(PushAll(&a, bytes, &stopped), "The answer is 42.");
  EXPECT_TRUE(stopped);
}

TEST(TextAssembler, NoStopEndsInAQuietPieceButOneCompletingLaterDoes) {
  // min_tokens (TokenEmitter): a stop string that ends in a quiet piece is
  // not a match; one that begins there and ends in a later piece is.
  TextAssembler a({"abc"});
  TextAssembler::Step s = a.Push("xabcx", /*may_stop=*/false);
  EXPECT_FALSE(s.stopped);
  EXPECT_EQ(s.text, "xabcx");
  s = a.Push("ab", false);
  EXPECT_FALSE(s.stopped);
  EXPECT_EQ(s.text, "");  // a possible start, held
  s = a.Push("c", true);
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.text, "");
}

TEST(TextAssembler, AStopHeldFromAQuietPieceInsideALongerPrefixDoesNotMatchLater) {
  // "a" completes in the quiet piece but is held as the start of "abc"; the
  // next piece may stop, yet "a" ended before it.
  TextAssembler a({"a", "abc"});
  TextAssembler::Step s = a.Push("xa", false);
  EXPECT_FALSE(s.stopped);
  EXPECT_EQ(s.text, "x");
  s = a.Push("z", true);
  EXPECT_FALSE(s.stopped);
  EXPECT_EQ(s.text, "az");
  s = a.Push("za", true);  // a new "a", in a piece that may stop
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.text, "z");
}

}  // namespace
}  // namespace tw::backend
