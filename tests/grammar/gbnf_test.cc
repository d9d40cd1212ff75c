// GBNF text to Grammar (src/grammar/gbnf.h): llama.cpp's example grammars
// (tests/data/grammar/gbnf, MIT, third-party) load and, per the Earley
// reference (recognizer.h), accept what they describe and nothing else;
// every construct and escape means what llama.cpp's parser makes of it;
// malformed text is refused naming its line and column; and no prefix or
// mutation of a grammar crashes the parser or gets past the limits.
#include "grammar/gbnf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "support/recognizer.h"
#include "support/chunking.h"

namespace tw::grammar {
namespace {

using testing::Accepts;
using testing::Viable;

const std::vector<std::string>& ExampleNames() {
  static const std::vector<std::string> kNames = {"arithmetic", "c",        "chess",    "english",
                                                  "japanese",   "json",     "json_arr", "list"};
  return kNames;
}

std::string Example(const std::string& name) {
  bool ok = false;
  std::string text = tw::testing::ReadFile(tw::testing::DataPath("grammar/gbnf/" + name + ".gbnf"), &ok);
  EXPECT_TRUE(ok) << name;
  return text;
}

// The grammar of `text`, failing the test (and returning an empty grammar)
// when it does not parse.
Grammar Parse(std::string_view text, const GrammarLimits& limits = {}) {
  Grammar g;
  const Status s = ParseGbnf(text, limits, &g);
  EXPECT_TRUE(s.ok()) << s.message() << "\n" << text;
  return g;
}

// The error message for `text`, or "OK".
std::string Error(std::string_view text, const GrammarLimits& limits = {}) {
  Grammar g;
  const Status s = ParseGbnf(text, limits, &g);
  return s.ok() ? "OK" : s.message();
}

// Every error has the form "line L, column C: ..." or "line L: ..." (L and
// C positive, a message after).
bool IsPlacedError(const std::string& message) {
  size_t i = 0;
  auto literal = [&](std::string_view s) {
    if (message.compare(i, s.size(), s) != 0) return false;
    i += s.size();
    return true;
  };
  auto number = [&] {
    const size_t start = i;
    while (i < message.size() && message[i] >= '0' && message[i] <= '9') ++i;
    return i > start && message[start] != '0';
  };
  if (!literal("line ") || !number()) return false;
  if (message.compare(i, 9, ", column ") == 0 && (!literal(", column ") || !number())) return false;
  return literal(": ") && i < message.size();
}

TEST(Gbnf, PlacedErrorsAreRecognised) {  // the robustness tests' yardstick
  EXPECT_TRUE(IsPlacedError("line 1, column 2: x"));
  EXPECT_TRUE(IsPlacedError("line 30: x"));
  EXPECT_FALSE(IsPlacedError("line 0, column 2: x"));
  EXPECT_FALSE(IsPlacedError("line 1, column : x"));
  EXPECT_FALSE(IsPlacedError("line 1: "));
  EXPECT_FALSE(IsPlacedError("rule 'x' is left-recursive"));
}

std::string Utf8(uint32_t cp) {
  std::string s;
  AppendUtf8(cp, &s);
  return s;
}

// ---- llama.cpp's example grammars ------------------------------------------

TEST(Gbnf, EveryExampleGrammarOfLlamaCppLoads) {
  // The list above is the whole folder (a grammar added there is tested too).
  std::vector<std::string> on_disk;
  for (const auto& entry : std::filesystem::directory_iterator(tw::testing::DataPath("grammar/gbnf"))) {
    if (entry.path().extension() == ".gbnf") on_disk.push_back(entry.path().stem().string());
  }
  std::sort(on_disk.begin(), on_disk.end());
  EXPECT_EQ(on_disk, ExampleNames());
  for (const std::string& name : ExampleNames()) {
    Grammar g;
    const Status s = ParseGbnf(Example(name), {}, &g);
    ASSERT_TRUE(s.ok()) << name << ": " << s.message();
    EXPECT_TRUE(Check(g).ok()) << name;
    ASSERT_GE(g.root, 0);
    EXPECT_EQ(g.rules[g.root].name, "root") << name;
    EXPECT_FALSE(g.ToString().empty());
  }
}

TEST(Gbnf, JsonGrammarAcceptsJsonObjectsAndNothingElse) {
  const Grammar g = Parse(Example("json"));
  for (const char* doc : {
           "{}",
           "{\"a\": 1}",
           "{\"a\":1}",
           "{ \"a\": [1, -2.5, 0.125, 7E5, true, false, null], \"b\": {\"c\": []} }",
           "{\"name\": \"Ren\xC3\xA9\", \"esc\": \"q\\\"\\\\\\b\\f\\n\\r\\t\\u00e9\", \"emoji\": \"\xF0\x9F\x98\x80\"}",
           "{\n  \"k\": {\n    \"deep\": [\n      {}\n    ]\n  }\n}",
       }) {
    EXPECT_TRUE(Accepts(g, doc)) << doc;
  }
  for (const char* doc : {
           "[1, 2]",             // the root is an object
           "{\"a\" 1}",          // no colon
           "{'a': 1}",           // single quotes
           "{\"a\": 01}",        // a leading zero
           "{\"a\": \"\\x41\"}", // no \x escape in JSON
           "{\"a\": \"\n\"}",    // a raw control character
           "{\"a\": tru}",       //
           "{\"a\": 1,}",        // a trailing comma
           "{\"a\": 1e10}",      // json.gbnf's exponent is [0-9] [1-9]{0,15}: no 0 after the first digit
           "{}  ",               // ws is "", " " or a newline and indentation, not two spaces
       }) {
    EXPECT_FALSE(Accepts(g, doc)) << doc;
  }
  EXPECT_TRUE(Viable(g, "{\"a\": [1, {\"b\": \"x"));
  EXPECT_FALSE(Viable(g, "{\"a\": ]"));
}

TEST(Gbnf, JsonArrGrammarWantsAnArrayOneValueALine) {
  const Grammar g = Parse(Example("json_arr"));
  EXPECT_TRUE(Accepts(g, "[\n]"));
  EXPECT_TRUE(Accepts(g, "[\n{\"a\": 1},\n\"two\",\n[3, 4]]"));
  EXPECT_TRUE(Accepts(g, "[\n1e10]"));  // json_arr.gbnf's exponent is [1-9] [0-9]{0,15}
  EXPECT_FALSE(Accepts(g, "[1, 2]"));
  EXPECT_FALSE(Accepts(g, "[\n1,\n2] "));  // nothing after the root array
  EXPECT_FALSE(Accepts(g, "{}"));
}

TEST(Gbnf, ArithmeticGrammarAcceptsEquationsOneALine) {
  const Grammar g = Parse(Example("arithmetic"));
  EXPECT_TRUE(Accepts(g, "1+2=3\n"));
  EXPECT_TRUE(Accepts(g, "( a +b_2 )*c = x1\n7/2=3\n"));
  EXPECT_TRUE(Accepts(g, "((1))=(1)\n"));
  EXPECT_FALSE(Accepts(g, "1+=3\n"));
  EXPECT_FALSE(Accepts(g, "=3\n"));
  EXPECT_FALSE(Accepts(g, "A=1\n"));  // identifiers are lower case
  EXPECT_FALSE(Accepts(g, "1+2=3"));  // each equation ends with a newline
  EXPECT_TRUE(Viable(g, "1+2=3"));
}

TEST(Gbnf, ChessGrammarAcceptsNumberedMovePairs) {
  const Grammar g = Parse(Example("chess"));
  EXPECT_TRUE(Accepts(g, "1. e4 e5\n2. Nf3 Nc6\n"));
  EXPECT_TRUE(Accepts(g, "1. d4 d5\n2. Bxf7+ Kxf7\n3. O-O O-O-O\n10. exd8=Q# a1\n"));
  EXPECT_FALSE(Accepts(g, "1. e4 e5\n"));              // at least one more numbered line
  EXPECT_FALSE(Accepts(g, "1. e9 e5\n2. a3 a6\n"));    // no rank 9
  EXPECT_FALSE(Accepts(g, "1. e4 e5\n0. a3 a6\n"));    // move numbers start at 1-9
  EXPECT_FALSE(Accepts(g, "1. Pe4 e5\n2. a3 a6\n"));   // P is no piece letter
  EXPECT_FALSE(Accepts(g, "2. e4 e5\n3. a3 a6\n"));    // the first line is "1. "
}

TEST(Gbnf, ListGrammarAcceptsDashedLinesWithoutOtherLineBreaks) {
  const Grammar g = Parse(Example("list"));
  EXPECT_TRUE(Accepts(g, "- one\n- two words\n"));
  EXPECT_TRUE(Accepts(g, "- caf\xC3\xA9 \xE2\x82\xAC\n"));
  EXPECT_FALSE(Accepts(g, "- \n"));                     // an item has at least one character
  EXPECT_FALSE(Accepts(g, "- a\rb\n"));
  EXPECT_FALSE(Accepts(g, "- a" + Utf8(0x2028) + "b\n"));  // LINE SEPARATOR
  EXPECT_FALSE(Accepts(g, "- a" + Utf8(0x85) + "b\n"));    // NEXT LINE
  EXPECT_FALSE(Accepts(g, "* one\n"));
}

TEST(Gbnf, EnglishAndJapaneseGrammarsAcceptTheirScripts) {
  const Grammar en = Parse(Example("english"));
  EXPECT_TRUE(Accepts(en, "Hello, world! It's 9:30 [ok] {x|y} ~_^`\\"));
  EXPECT_FALSE(Accepts(en, "caf\xC3\xA9"));
  EXPECT_FALSE(Accepts(en, "two  spaces"));
  const Grammar jp = Parse(Example("japanese"));
  EXPECT_TRUE(Accepts(jp, "\xE3\x81\x93\xE3\x82\x93\xE3\x81\xAB\xE3\x81\xA1\xE3\x81\xAF "   // こんにちは
                          "\xE4\xB8\x96\xE7\x95\x8C\xE3\x80\x82"));                         // 世界。
  EXPECT_TRUE(Accepts(jp, "\xE3\x82\xAB\xE3\x82\xBF\xE3\x82\xAB\xE3\x83\x8A"));            // カタカナ
  EXPECT_FALSE(Accepts(jp, "hello"));
  EXPECT_FALSE(Accepts(jp, "\xEA\xB0\x80"));  // 가 (Hangul)
}

TEST(Gbnf, CGrammarAcceptsItsSmallCSubset) {
  const Grammar g = Parse(Example("c"));
  EXPECT_TRUE(Accepts(g, "int main(){return 0;}"));
  EXPECT_TRUE(Accepts(g, "int add(int a){return a+1;}float f(){x = add(2);while(x<10){x = x+1;}return x;}"));
  EXPECT_TRUE(Accepts(g, "char c(){/* note */// line\nreturn -1;}"));
  EXPECT_TRUE(Accepts(g, ""));  // root ::= (declaration)*
  EXPECT_FALSE(Accepts(g, "int main() {return 0;}"));  // the grammar has no space before '{'
  EXPECT_FALSE(Accepts(g, "int main(){return 0}"));
  EXPECT_FALSE(Accepts(g, "long main(){return 0;}"));
}

TEST(Gbnf, ReadmeSchemaGrammarLoadsWithItsBoundedRepetitions) {
  // From llama.cpp's grammars/README.md (the name-age schema's grammar).
  const Grammar g = Parse(R"(char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})
item ::= "{" space item-name-kv "," space item-age-kv "}" space
item-age ::= ([0-9] | ([1-8] [0-9] | [9] [0-9]) | "1" ([0-4] [0-9] | [5] "0")) space
item-age-kv ::= "\"age\"" space ":" space item-age
item-name ::= "\"" char{1,100} "\"" space
item-name-kv ::= "\"name\"" space ":" space item-name
root ::= "[" space item ("," space item){9,99} "]" space
space ::= | " " | "\n" [ \t]{0,20}
)");
  auto items = [](int n, const std::string& age) {
    std::string s = "[";
    for (int i = 0; i < n; ++i) s += std::string(i ? ", " : "") + "{\"name\": \"n" + std::to_string(i) + "\", \"age\": " + age + "}";
    return s + "]";
  };
  EXPECT_TRUE(Accepts(g, items(10, "42")));
  EXPECT_TRUE(Accepts(g, items(12, "150")));
  EXPECT_FALSE(Accepts(g, items(9, "42")));    // {9,99} more after the first: at least 10
  EXPECT_FALSE(Accepts(g, items(10, "151")));  // ages 0..150
  EXPECT_FALSE(Accepts(g, "[{\"name\": \"\", \"age\": 1}]"));  // char{1,100}
}

// ---- constructs -----------------------------------------------------------

TEST(Gbnf, EveryEscapeMeansWhatLlamaCppSays) {
  const Grammar g = Parse(R"(root ::= "\n\r\t\\\"\[\]\x41\u00e9\U0001F600" [\n] [\]] [\[] ["] [\x7f])");
  EXPECT_TRUE(Accepts(g, "\n\r\t\\\"[]A\xC3\xA9\xF0\x9F\x98\x80\n][\"\x7F"));
  // \xHH is a code point: "\xE9" is U+00E9 (C3 A9), never the byte E9.
  const Grammar e9 = Parse(R"(root ::= "\xE9" [\xE9])");
  EXPECT_TRUE(Accepts(e9, "\xC3\xA9\xC3\xA9"));
  EXPECT_FALSE(Viable(e9, "\xE9"));
  // Hex digits in either case; raw UTF-8 stands for itself.
  EXPECT_TRUE(Accepts(Parse(R"(root ::= "\u00E9\u00e9é")"), "\xC3\xA9\xC3\xA9\xC3\xA9"));
  // A raw line break inside a literal is part of it (llama.cpp reads it so).
  EXPECT_TRUE(Accepts(Parse("root ::= \"a\nb\""), "a\nb"));
  // '#' inside a literal or class is a character, not a comment.
  EXPECT_TRUE(Accepts(Parse("root ::= \"#\" [#] # a comment"), "##"));
}

TEST(Gbnf, UnknownAndMalformedEscapesAreRefused) {
  EXPECT_EQ(Error(R"(root ::= "\q")"),
            R"(line 1, column 11: unknown escape: '\' then 'q' (known: \n \r \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH))");
  EXPECT_NE(Error(R"(root ::= [\-])").find("line 1, column 11: unknown escape: '\\' then '-'"), std::string::npos);
  EXPECT_NE(Error(R"(root ::= "\/")").find("unknown escape"), std::string::npos);
  EXPECT_EQ(Error(R"(root ::= "\x4")"), "line 1, column 11: '\\x' takes 2 hex digits, found '\"'");
  EXPECT_EQ(Error(R"(root ::= "\u12G4")"), "line 1, column 11: '\\u' takes 4 hex digits, found 'G'");
  EXPECT_EQ(Error(R"(root ::= [\U0011FFFF])"), "line 1, column 11: the escape names U+11FFFF, past U+10FFFF");
  EXPECT_EQ(Error(R"(root ::= "\uD800")"),
            "line 1, column 11: the escape names U+D800, a UTF-16 surrogate, not a character");
  EXPECT_EQ(Error("root ::= \"\\"), "line 1, column 11: the text ends inside an escape");
}

TEST(Gbnf, ClassesTakeRangesNegationAndLiteralDashes) {
  const Grammar g = Parse(R"(root ::= [a-cx-] [-0-2] [\x41-\x43\u00e0-\u00e5])");
  EXPECT_TRUE(Accepts(g, "a0A"));
  EXPECT_TRUE(Accepts(g, "x-" "\xC3\xA0"));
  EXPECT_TRUE(Accepts(g, "-2C"));
  EXPECT_FALSE(Accepts(g, "d0A"));
  EXPECT_FALSE(Accepts(g, "w0A"));
  EXPECT_FALSE(Accepts(g, "a3A"));
  EXPECT_FALSE(Accepts(g, "a0" "\xC3\xA6"));  // U+00E6 is just past the range
  // [a-z-9]: after a range, '-' starts nothing and stands for itself.
  const Grammar dash = Parse("root ::= [a-c-9]");
  for (const char* s : {"a", "c", "-", "9"}) EXPECT_TRUE(Accepts(dash, s)) << s;
  for (const char* s : {"d", "5"}) EXPECT_FALSE(Accepts(dash, s)) << s;
}

TEST(Gbnf, NegatedClassesMatchEveryOtherCodePointIncludingNonAscii) {
  const Grammar g = Parse("root ::= [^a-z\xC3\xA9\\n]");  // [^a-zé\n]
  for (uint32_t cp : {uint32_t{'A'}, uint32_t{'{'}, uint32_t{0}, 0xE8u, 0xEAu, 0x20ACu, 0xFFFDu, 0x1F600u, 0x10FFFFu}) {
    EXPECT_TRUE(Accepts(g, Utf8(cp))) << std::hex << cp;
  }
  for (uint32_t cp : {uint32_t{'a'}, uint32_t{'q'}, uint32_t{'\n'}, 0xE9u}) EXPECT_FALSE(Accepts(g, Utf8(cp))) << cp;
  EXPECT_FALSE(Accepts(g, "AB"));              // one code point
  EXPECT_FALSE(Viable(g, "\xED\xA0\x80"));     // never a surrogate
  EXPECT_FALSE(Viable(g, "\xFF"));             // nor a byte that is no UTF-8
  // A class that leaves nothing is refused rather than matching nothing.
  EXPECT_EQ(Error(R"(root ::= [^\x00-\U0010FFFF])"), "line 1, column 10: the character class matches no character");
}

TEST(Gbnf, DotIsAnyOneCodePoint) {
  const Grammar g = Parse("root ::= . \".\"");
  for (uint32_t cp : {uint32_t{'x'}, uint32_t{'\n'}, 0x7FFu, 0xFFFFu, 0x10000u}) EXPECT_TRUE(Accepts(g, Utf8(cp) + ".")) << cp;
  EXPECT_FALSE(Accepts(g, "ab"));
  EXPECT_FALSE(Viable(g, "\x80"));
}

TEST(Gbnf, RepetitionHonoursItsBounds) {
  struct Case {
    const char* op;
    int min, max;  // max -1: no bound
  };
  for (const Case& c : std::vector<Case>{{"*", 0, -1}, {"+", 1, -1}, {"?", 0, 1}, {"{3}", 3, 3}, {"{2,4}", 2, 4},
                                         {"{2,}", 2, -1}, {"{0,0}", 0, 0}, {"{ 1 , 2 }", 1, 2}, {"{0}", 0, 0}}) {
    // The whole literal repeats: "ab"* is ("ab")*.
    const Grammar g = Parse(std::string("root ::= \"<\" \"ab\"") + c.op + " \">\"");
    for (int k = 0; k <= 6; ++k) {
      std::string s = "<";
      for (int i = 0; i < k; ++i) s += "ab";
      const bool want = k >= c.min && (c.max < 0 || k <= c.max);
      EXPECT_EQ(Accepts(g, s + ">"), want) << c.op << " x" << k;
    }
    EXPECT_FALSE(Accepts(g, "<aba>")) << c.op;
  }
  // A quantifier applies to what the one before made: x{2}{3} is six x.
  const Grammar six = Parse("root ::= \"x\"{2}{3}");
  EXPECT_TRUE(Accepts(six, "xxxxxx"));
  EXPECT_FALSE(Accepts(six, "xxxxx"));
  // On groups, classes, references and dot too.
  const Grammar mixed = Parse("root ::= (\"a\" | \"bc\")+ [0-9]{2} d? .*\nd ::= \"d\"");
  EXPECT_TRUE(Accepts(mixed, "abca42"));
  EXPECT_TRUE(Accepts(mixed, "bc07d\xE2\x82\xAC!"));
  EXPECT_FALSE(Accepts(mixed, "42"));
  EXPECT_FALSE(Accepts(mixed, "a4"));
}

TEST(Gbnf, RepetitionOfWhatCanBeEmptyLoadsAndLeftRecursionIsRefused) {
  // ("a"?)* repeats a body that may be empty: its recursion is a tail
  // reference, which the matcher runs without growing its stack, so it
  // loads (as in llama.cpp) and means "a"*.
  const Grammar g = Parse("root ::= x \"b\"\n\nx ::= (\"a\"?)*");
  EXPECT_TRUE(Accepts(g, "b"));
  EXPECT_TRUE(Accepts(g, "aaab"));
  EXPECT_FALSE(Accepts(g, "aba"));
  // Real left recursion pushes a frame per step and is refused, placed on
  // the rule's line.
  EXPECT_EQ(Error("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\""),
            "line 2: rule 'expr' is left-recursive (expr -> expr)");
}

TEST(Gbnf, CommentsGoToTheEndOfTheLineAnywhereBlanksMayBe) {
  const Grammar g = Parse(
      "# leading comment\n"
      "root ::= # after ::=\n"
      "  \"a\" | # after a bar\n"
      "  ( # inside a group\n"
      "      \"b\" # still inside\n"
      "    ) {2} # after a quantifier\n"
      "# between rules\n"
      "\n"
      "unused ::= \"u\"# no blank needed\n"
      "# at the end, without a line break");
  EXPECT_TRUE(Accepts(g, "a"));
  EXPECT_TRUE(Accepts(g, "bb"));
  EXPECT_FALSE(Accepts(g, "b"));
  EXPECT_FALSE(Accepts(g, "u"));
}

TEST(Gbnf, RulesSpanLinesOnlyInsideParenthesesOrAroundBars) {
  // After '::=' and '|' a line break is a blank; inside parentheses too.
  const Grammar g = Parse("root ::=\n  \"a\" |\n  \"b\" (\n \"c\"\n |\n \"d\"\n )\nnext ::= \"n\"");
  EXPECT_TRUE(Accepts(g, "a"));
  EXPECT_TRUE(Accepts(g, "bc"));
  EXPECT_TRUE(Accepts(g, "bd"));
  // Our extension: a line that starts with '|' continues the rule
  // (llama.cpp stops with "expecting name"), even after comment lines.
  const Grammar bars = Parse("root ::= \"a\"\n  | \"b\"\n# c\n\n| \"c\"\nother ::= \"o\"");
  for (const char* s : {"a", "b", "c"}) EXPECT_TRUE(Accepts(bars, s)) << s;
  EXPECT_FALSE(Accepts(bars, "o"));
  // Otherwise a line break ends the rule: the next line must be a rule.
  EXPECT_EQ(Error("root ::= \"a\"\n  \"b\""), "line 2, column 3: expected a rule name, found '\"'");
  // An empty body is the empty string; a rule's first alternative may be too.
  EXPECT_TRUE(Accepts(Parse("root ::= \"\"\n"), ""));
  const Grammar ws = Parse("root ::= | \" \"");
  EXPECT_TRUE(Accepts(ws, ""));
  EXPECT_TRUE(Accepts(ws, " "));
}

TEST(Gbnf, CrlfLineEndingsReadLikeLf) {
  for (const std::string& name : ExampleNames()) {
    const std::string lf = Example(name);
    std::string crlf;
    for (char c : lf) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    Grammar a, b;
    ASSERT_TRUE(ParseGbnf(lf, {}, &a).ok()) << name;
    const Status s = ParseGbnf(crlf, {}, &b);
    ASSERT_TRUE(s.ok()) << name << ": " << s.message();
    EXPECT_EQ(a.ToString(), b.ToString()) << name;
  }
  // And errors count CRLF (and a lone CR) as one line break.
  EXPECT_EQ(Error("root ::= x\r\n\r\nx ::= \"a\" )"), "line 3, column 11: expected an item, '|' or the end of the line, found ')'");
  EXPECT_EQ(Error("root ::= x\rx ::= \"a\" )"), "line 2, column 11: expected an item, '|' or the end of the line, found ')'");
}

TEST(Gbnf, RulesMayBeUsedBeforeTheirDefinitionButMustBeDefinedOnce) {
  const Grammar g = Parse("root ::= greeting \" \" name\nname ::= [A-Z] [a-z]*\ngreeting ::= \"hi\" | \"hello\"");
  EXPECT_TRUE(Accepts(g, "hello Ada"));
  EXPECT_FALSE(Accepts(g, "hey Ada"));
  EXPECT_EQ(Error("root ::= a b\n\nb ::= c a\n"), "line 1, column 10: rule 'a' is referenced but never defined");
  EXPECT_EQ(Error("root ::= \"x\"\nb ::= c\nroot2 ::= c"), "line 2, column 7: rule 'c' is referenced but never defined");
  EXPECT_EQ(Error("value ::= \"1\"\n"), "line 2, column 1: the grammar has no rule named 'root'");
  EXPECT_EQ(Error(""), "line 1, column 1: the grammar has no rule named 'root'");
  EXPECT_EQ(Error("root ::= \"a\"\nx ::= \"b\"\nroot ::= \"c\""), "line 3, column 1: rule 'root' is defined twice (first on line 1)");
  // Names are letters, digits, '-' and (beyond llama.cpp) '_'.
  EXPECT_TRUE(Accepts(Parse("root ::= my_rule-2\nmy_rule-2 ::= \"ok\""), "ok"));
}

TEST(Gbnf, TokenReferencesAreRefused) {
  for (const char* text : {"root ::= <[123]>", "root ::= <think> \"x\"", "root ::= !<[2]>", "root ::= \"a\" !<end>"}) {
    const std::string e = Error(text);
    EXPECT_NE(e.find("token references (<[id]>, <name>, !<...>) are not supported"), std::string::npos) << text << " " << e;
    EXPECT_TRUE(IsPlacedError(e)) << e;
  }
  EXPECT_EQ(Error("root ::= \"a\" <[1]>").substr(0, 19), "line 1, column 14: ");
}

TEST(Gbnf, InvalidUtf8IsRefusedWhereItIs) {
  EXPECT_EQ(Error("root ::= \"a\xFF\""), "line 1, column 12: the text is not valid UTF-8");
  EXPECT_EQ(Error("root ::= x\nx ::= [\xC3]"), "line 2, column 8: the text is not valid UTF-8");
  EXPECT_EQ(Error("# \xED\xA0\x80 a surrogate in a comment\nroot ::= \"\""), "line 1, column 3: the text is not valid UTF-8");
  EXPECT_EQ(Error("root ::= \"\xC0\xAF\""), "line 1, column 11: the text is not valid UTF-8");  // overlong '/'
}

TEST(Gbnf, MalformedGrammarsNameLineAndColumn) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"root ::= \"a\" )", "line 1, column 14: expected an item, '|' or the end of the line, found ')'"},
      {"root := \"a\"", "line 1, column 6: expected '::=' after the rule name, found ':'"},
      {"root\n::= \"a\"", "line 1, column 5: expected '::=' after the rule name, found a line break"},
      {"::= \"a\"", "line 1, column 1: expected a rule name, found ':'"},
      {"root ::= \"abc", "line 1, column 10: the literal is never closed (no '\"' after it)"},
      {"root ::= \"\xC3\xA9\" )", "line 1, column 15: expected an item, '|' or the end of the line, found ')'"},
      {"root ::= x\nx ::= [a-z", "line 2, column 7: the character class is never closed (no ']' after it)"},
      {"root ::= (\"a\" | (\"b\")", "line 1, column 10: '(' is never closed"},
      {"root ::= (\"a\" ]", "line 1, column 15: expected an item, '|' or ')', found ']'"},
      {"root ::= (\"a\"\n  x ::= \"b\")", "line 2, column 5: expected an item, '|' or ')', found ':'"},
      {"root ::= \"a\" x ::= \"b\"",
       "line 1, column 16: expected an item, '|' or the end of the line, found '::=' (a rule starts on a line of its "
       "own, and an empty body is written \"\")"},
      // A line break after '::=' is a blank (as in llama.cpp), so an empty
      // body at the end of its line takes the next line's name as its own.
      {"empty ::=\nroot ::= empty",
       "line 2, column 6: expected an item, '|' or the end of the line, found '::=' (a rule starts on a line of its "
       "own, and an empty body is written \"\")"},
      {"root ::= x\nx ::= \"a\" {2,1}", "line 2, column 11: the repetition's upper bound 1 is below its lower bound 2"},
      {"root ::= *", "line 1, column 10: '*' has nothing before it to repeat"},
      {"root ::= \"a\" | +", "line 1, column 16: '+' has nothing before it to repeat"},
      {"root ::= \"\"?", "line 1, column 12: '?' has nothing before it to repeat"},
      {"root ::= \"a\"{x}", "line 1, column 14: expected a number after '{', found 'x'"},
      {"root ::= \"a\"{2;}", "line 1, column 15: expected ',' or '}', found ';'"},
      {"root ::= \"a\"{2,3", "line 1, column 17: expected '}', found the end of the text"},
      {"root ::= \"a\"{\n2}", "line 1, column 14: expected a number after '{', found a line break"},
      {"# c\nroot ::= [z-a]", "line 2, column 11: the range U+007A-U+0061 is reversed"},
      {"root ::= []", "line 1, column 10: empty character class"},
      {"root ::= [^]", "line 1, column 10: empty character class"},
      {"root ::= \"a\" ; \"b\"", "line 1, column 14: expected an item, '|' or the end of the line, found ';'"},
      {"root ::= \"a\" \xE2\x82\xAC", "line 1, column 14: expected an item, '|' or the end of the line, found U+20AC"},
      {std::string("root ::= \"a\" \0", 14), "line 1, column 14: expected an item, '|' or the end of the line, found U+0000"},
  };
  for (const auto& [text, want] : cases) EXPECT_EQ(Error(text), want) << text;
}

TEST(Gbnf, AFailedParseLeavesTheOutputAlone) {
  Grammar g = Parse("root ::= \"kept\"");
  const std::string before = g.ToString();
  EXPECT_FALSE(ParseGbnf("root ::= \"a\" )", {}, &g).ok());
  EXPECT_FALSE(ParseGbnf("root ::= missing", {}, &g).ok());
  EXPECT_EQ(g.ToString(), before);
  EXPECT_TRUE(Accepts(g, "kept"));
}

TEST(Gbnf, ParenthesesNestUpToTheBound) {
  auto nested = [](int depth) {
    return "root ::= " + std::string(depth, '(') + "\"x\"" + std::string(depth, ')');
  };
  EXPECT_TRUE(Accepts(Parse(nested(256)), "x"));
  EXPECT_EQ(Error(nested(257)), "line 1, column 266: parentheses nest deeper than 256");
  // Far deeper input is refused as quickly, without recursing into it.
  EXPECT_EQ(Error(nested(1000000)), "line 1, column 266: parentheses nest deeper than 256");
}

TEST(Gbnf, LimitsAreHonouredWhileBuilding) {
  // The parser counts exactly what Check counts: a grammar of exactly
  // max_elements elements and max_rules rules loads, one less does not.
  const std::string json = Example("json");
  const Grammar full = Parse(json);
  GrammarLimits exact;
  exact.max_elements = full.CountElements();
  exact.max_rules = static_cast<int>(full.rules.size());
  Parse(json, exact);
  GrammarLimits fewer = exact;
  fewer.max_elements -= 1;
  std::string e = Error(json, fewer);
  EXPECT_TRUE(IsPlacedError(e)) << e;
  EXPECT_NE(e.find("the grammar grows past " + std::to_string(fewer.max_elements) + " elements here"), std::string::npos) << e;
  fewer = exact;
  fewer.max_rules -= 1;
  e = Error(json, fewer);
  EXPECT_NE(e.find("the grammar grows past " + std::to_string(fewer.max_rules) + " rules here"), std::string::npos) << e;
  // One repetition past the limit is refused by Repeat, placed at it.
  EXPECT_EQ(Error("root ::= \"a\"\n  | \"b\"{999999999}").rfind("line 2, column 8: a repetition of 999999999 items", 0), 0u);
  EXPECT_EQ(Error("root ::= [0-9]{99999999999999999999}").rfind("line 1, column 15: a repetition of", 0), 0u);
  // Many repetitions, each within the limit, are stopped where the total
  // passes it, long before the text is read (no memory past the limits).
  std::string many = "root ::=";
  for (int i = 0; i < 100000; ++i) many += " \"a\"{0,9999}";
  const auto start = std::chrono::steady_clock::now();
  e = Error(many);
  EXPECT_NE(e.find("the grammar grows past"), std::string::npos) << e;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// ---- robustness -----------------------------------------------------------

// OK (and then Check passes and ToString works) or a placed error.
void ExpectCleanOutcome(std::string_view text) {
  Grammar g;
  const Status s = ParseGbnf(text, {}, &g);
  if (s.ok()) {
    ASSERT_TRUE(Check(g).ok()) << text;
    ASSERT_FALSE(g.ToString().empty());
  } else {
    ASSERT_TRUE(IsPlacedError(s.message())) << s.message() << "\n" << text;
  }
}

TEST(Gbnf, EveryPrefixOfEveryExampleParsesOrFailsCleanly) {
  int ok = 0, failed = 0;
  for (const std::string& name : ExampleNames()) {
    const std::string text = Example(name);
    for (size_t n = 0; n <= text.size(); ++n) {
      ExpectCleanOutcome(std::string_view(text).substr(0, n));
      Grammar g;
      (ParseGbnf(std::string_view(text).substr(0, n), {}, &g).ok() ? ok : failed)++;
    }
  }
  // Both outcomes happen (prefixes that end between rules parse when they
  // already hold root and everything it uses).
  EXPECT_GT(ok, 0);
  EXPECT_GT(failed, 0);
}

TEST(Gbnf, RandomMutationsOfTheExamplesParseOrFailCleanly) {
  std::mt19937 rng(20240611);
  const std::string alphabet = "\"[]()|*+?{},.-^\\#:=<>!_ \t\n\r0123456789aZxuU\xC3\xA9\xFF\x80";
  int ok = 0;
  for (const std::string& name : ExampleNames()) {
    const std::string original = Example(name);
    for (int round = 0; round < 400; ++round) {
      std::string text = original;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < edits && !text.empty(); ++k) {
        const size_t at = rng() % text.size();
        switch (rng() % 4) {
          case 0: text[at] = alphabet[rng() % alphabet.size()]; break;
          case 1: text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), alphabet[rng() % alphabet.size()]); break;
          case 2: text.erase(at, 1 + rng() % 8); break;
          default: text[at] = static_cast<char>(rng() & 0xFF); break;
        }
      }
      ExpectCleanOutcome(text);
      Grammar g;
      ok += ParseGbnf(text, {}, &g).ok();
    }
  }
  EXPECT_GT(ok, 0);  // some mutations leave a valid grammar
}

}  // namespace
}  // namespace tw::grammar
