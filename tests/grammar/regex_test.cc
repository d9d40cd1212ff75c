// The regular-expression front end (grammar/regex.h), against two
// independent references: std::regex (ECMAScript) says which ASCII strings a
// pattern matches, and the Earley recognizer says which strings the
// grammar AddRegex built accepts. Non-ASCII, json_string mode and the
// refusals are checked by hand.
//
// GCC 12 under -fsanitize=address warns that libstdc++'s own <regex>
// automaton may use a std::function uninitialized (a false positive in the
// compiler's header, like GCC bug 105593 in kernels_avx512.cc), which
// -Werror makes fatal; it is silenced for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "grammar/regex.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "support/recognizer.h"

namespace tw::grammar {
namespace {

using testing::Accepts;

// root ::= <the regex's rule>, checked. An empty grammar (no root) when
// AddRegex fails; *status says why.
Grammar Build(std::string_view pattern, RegexOptions opts, Status* status = nullptr) {
  Grammar g;
  g.root = g.AddRule("root");
  Element e;
  Status st = AddRegex(pattern, opts, &g, "re", &e);
  if (st.ok()) {
    g.AddAlt(g.root, {e});
    st = Check(g);
  }
  if (status != nullptr) *status = st;
  if (!st.ok()) return Grammar();
  return g;
}

constexpr RegexOptions kAnchored{.anchored = true, .json_string = false};
constexpr RegexOptions kSearch{.anchored = false, .json_string = false};
constexpr RegexOptions kJsonAnchored{.anchored = true, .json_string = true};
constexpr RegexOptions kJsonSearch{.anchored = false, .json_string = true};

// The text a JSON string holds for `s` between its quotes (ASCII input).
std::string JsonEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  return out;
}

// Every string of length 0..max_len over `alphabet`.
std::vector<std::string> AllStrings(std::string_view alphabet, int max_len) {
  std::vector<std::string> out{""};
  size_t begin = 0;
  for (int len = 1; len <= max_len; ++len) {
    const size_t end = out.size();
    for (size_t i = begin; i < end; ++i) {
      for (char c : alphabet) out.push_back(out[i] + c);
    }
    begin = end;
  }
  return out;
}

struct Case {
  const char* pattern;
  const char* alphabet;             // generated candidates: every string up to 4 long over it (5 if <= 3 letters)
  std::vector<std::string> extra;   // hand-written candidates
  const char* reference = nullptr;  // the std::regex pattern when it differs (std::regex lacks named groups)
};

// Every feature of the dialect that std::regex also has.
const std::vector<Case>& Table() {
  static const std::vector<Case> table = {
      {"abc", "abc", {"abcabc", "xabcx"}},
      {"", "a", {}},
      {"a|b", "ab", {}},
      {"ab|cd", "abcd", {"abcd", "xcdx"}},
      {"a|", "ab", {}},
      {"a||b", "ab", {}},
      {"a*", "ab", {"aaaaaaa"}},
      {"a+", "ab", {"aaaaaaa"}},
      {"a?", "ab", {}},
      {"ba*c", "abc", {"baaaaac"}},
      {"a{2}", "ab", {}},
      {"a{2,}", "ab", {"aaaaaaa"}},
      {"a{1,3}", "ab", {}},
      {"a{0,2}b", "ab", {}},
      {"a{0}b", "ab", {}},
      {"(ab)*", "ab", {"ababab", "ababa"}},
      {"(?:ab|c)+", "abc", {"abcab", "ababc"}},
      {"(a|b)*c", "abc", {"ababc"}},
      {"((a|b)c){2}", "abc", {"acbc", "bcac", "acbcac"}},
      {"x(?:a|bc)?y", "xyabc", {"xay", "xbcy", "xy"}},
      {"[abc]", "abcd", {}},
      {"[a-c]+", "abcd", {"cabbage"}},
      {"[^ab]", "abc\n", {"\r", "\t"}},
      {"[^a-c]x", "abcx-", {}},
      {"[a-]", "a-b", {}},
      {"[-a]b", "a-b", {}},
      {"[a-c-e]", "abde-", {}},
      {"[.*+]", ".*+a", {}},
      {"\\d+", "a1-", {"0123456789"}},
      {"[\\d]x", "1x-", {}},
      {"\\w+", "a_1-", {"Zz_09"}},
      {"\\s", " \t\na", {"\v", "\f", "\r"}},
      {"\\D\\W\\S", "1a -", {"a- ", "--a"}},
      {"[^\\d\\s]", "1 a-", {}},
      {"[\\w-]+", "a-_ ", {}},
      {".", "a\n\r", {"\t", "\x7f"}},
      {".*", "a\n", {}},
      {"a.c", "ac\n", {"abc", "a\rc"}},
      {"\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\\\\\^\\$\\/", "a", {".*+?()[]{}|\\^$/"}},
      {"a]b}", "ab]}", {"a]b}"}},
      {"\\x41\\u0062", "Aba", {}},
      {"\\t\\n\\r\\f\\v", "\t\n", {"\t\n\r\f\v"}},
      {"[\\b]", "\ba", {}},
      {"^ab", "abx", {}},
      {"ab$", "abx", {}},
      {"^ab$", "abx", {}},
      {"^a|b$", "abx", {}},
      {"^$", "a", {}},
      {"^", "a", {}},
      {"$", "a", {}},
      {"(a*)*", "ab", {}},
      {"(a?)+b", "ab", {}},
      {"(a|)*b", "ab", {}},
      {"(a*b?)*c", "abc", {"abbac", "bbbc"}},
      {"(|a)+", "ab", {}},
      {"(?:)", "a", {}},
      {"(a?b?){2}c", "abc", {"ababc", "abbc"}},
      {"(a?){2,3}", "ab", {}},
      {"a*?b", "ab", {}},
      {"a{1,2}?b", "ab", {}},
      {"(a+?)?", "ab", {}},
      {"(?<name>a)b", "ab", {}, "(a)b"},
      {"(?P<x>a|b)+c", "abc", {}, "(a|b)+c"},
      {"\"\\\\", "\"\\a", {"\"\\"}},
      {"[\"\\\\]+", "\"\\a", {}},
      {"\\d{3}-\\d{4}", "1-", {"555-1234", "55-1234", "555-12345", "x555-1234"}},
  };
  return table;
}

// Each case's candidates: generated and hand-written.
std::vector<std::string> Candidates(const Case& c) {
  const std::string_view alphabet = c.alphabet;
  std::vector<std::string> all = AllStrings(alphabet, alphabet.size() <= 3 ? 5 : 4);
  all.insert(all.end(), c.extra.begin(), c.extra.end());
  return all;
}

TEST(Regex, AgreesWithStdRegexOnEveryPatternOfTheTable) {
  ASSERT_GE(Table().size(), 40u);
  int compared = 0;
  for (const Case& c : Table()) {
    SCOPED_TRACE(std::string("pattern /") + c.pattern + "/");
    const std::regex re(c.reference != nullptr ? c.reference : c.pattern, std::regex::ECMAScript);
    Status st;
    const Grammar whole = Build(c.pattern, kAnchored, &st);
    ASSERT_TRUE(st.ok()) << st.message();
    const Grammar search = Build(c.pattern, kSearch, &st);
    ASSERT_TRUE(st.ok()) << st.message();
    for (const std::string& s : Candidates(c)) {
      ASSERT_EQ(Accepts(whole, s), std::regex_match(s, re)) << "anchored, on \"" << JsonEscape(s) << "\"";
      ASSERT_EQ(Accepts(search, s), std::regex_search(s, re)) << "unanchored, on \"" << JsonEscape(s) << "\"";
      compared += 2;
    }
  }
  EXPECT_GT(compared, 30000);
}

// In json_string mode the grammar accepts a string's JSON-escaped form
// exactly when std::regex matches the string itself.
TEST(Regex, JsonStringModeAcceptsTheEscapedFormOfWhatStdRegexMatches) {
  int compared = 0;
  for (const Case& c : Table()) {
    SCOPED_TRACE(std::string("pattern /") + c.pattern + "/");
    const std::regex re(c.reference != nullptr ? c.reference : c.pattern, std::regex::ECMAScript);
    Status st;
    const Grammar whole = Build(c.pattern, kJsonAnchored, &st);
    ASSERT_TRUE(st.ok()) << st.message();
    const Grammar search = Build(c.pattern, kJsonSearch, &st);
    ASSERT_TRUE(st.ok()) << st.message();
    for (const std::string& s : Candidates(c)) {
      const std::string escaped = JsonEscape(s);
      ASSERT_EQ(Accepts(whole, escaped), std::regex_match(s, re)) << "anchored, on \"" << escaped << "\"";
      ASSERT_EQ(Accepts(search, escaped), std::regex_search(s, re)) << "unanchored, on \"" << escaped << "\"";
      compared += 2;
    }
  }
  EXPECT_GT(compared, 30000);
}

TEST(Regex, CountedRepetitionHonoursItsBounds) {
  struct Bounds {
    const char* pattern;
    int min, max;  // max -1: unbounded
  };
  for (const Bounds& b : std::vector<Bounds>{{"(?:ab){3}", 3, 3}, {"(?:ab){2,4}", 2, 4}, {"(?:ab){0,2}", 0, 2},
                                             {"(?:ab){2,}", 2, -1}, {"(?:ab){0}", 0, 0}}) {
    const Grammar g = Build(b.pattern, kAnchored);
    ASSERT_GE(g.root, 0) << b.pattern;
    std::string s;
    for (int k = 0; k <= 8; ++k, s += "ab") {
      EXPECT_EQ(Accepts(g, s), k >= b.min && (b.max < 0 || k <= b.max)) << b.pattern << " x" << k;
      EXPECT_FALSE(Accepts(g, s + "a")) << b.pattern << " x" << k << " + a";
    }
  }
}

TEST(Regex, RegexGrammarIsRootedAtRootAndMatchesWhole) {
  Grammar g;
  ASSERT_TRUE(RegexGrammar("[a-c]{2}x?", GrammarLimits{}, &g).ok());
  EXPECT_EQ(g.rules[g.root].name, "root");
  EXPECT_TRUE(Accepts(g, "ab"));
  EXPECT_TRUE(Accepts(g, "cax"));
  EXPECT_FALSE(Accepts(g, "abc"));
  EXPECT_FALSE(Accepts(g, "xab"));
  Status st = RegexGrammar("(a", GrammarLimits{}, &g);
  EXPECT_EQ(st.message(), "regex column 1: '(' has no matching ')'");
}

TEST(Regex, AnchorsAreRedundantInAnchoredMode) {
  const Grammar plain = Build("ab|c", kAnchored);
  const Grammar anchored = Build("^ab$|^c$", kAnchored);
  const Grammar searched = Build("^ab$|^c$", kSearch);
  ASSERT_GE(plain.root, 0);
  ASSERT_GE(anchored.root, 0);
  ASSERT_GE(searched.root, 0);
  for (const std::string& s : AllStrings("abc", 4)) {
    EXPECT_EQ(Accepts(anchored, s), Accepts(plain, s)) << s;
    EXPECT_EQ(Accepts(searched, s), Accepts(plain, s)) << s;
  }
}

TEST(Regex, NullableRepetitionsPassCheckAndMatchWhatTheirNonEmptyPartRepeats) {
  // (a?)* would be a left-recursive rule if built as written.
  for (const char* p : {"(a?)*", "(a*)+", "()*", "(|a)*", "((a?)*)*", "(a?b?)*", "(?:a{0,2}|b?)*", "(a*|b*)*"}) {
    Status st;
    const Grammar g = Build(p, kAnchored, &st);
    ASSERT_TRUE(st.ok()) << p << ": " << st.message();
    const std::regex re(p, std::regex::ECMAScript);
    for (const std::string& s : AllStrings("abc", 5)) {
      ASSERT_EQ(Accepts(g, s), std::regex_match(s, re)) << p << " on " << s;
    }
  }
}

std::string Utf8(uint32_t cp) {
  std::string s;
  AppendUtf8(cp, &s);
  return s;
}

TEST(Regex, ClassesCoverCodePointsBeyondAscii) {
  const Grammar greek = Build("[α-ω]+", kAnchored);
  ASSERT_GE(greek.root, 0);
  EXPECT_TRUE(Accepts(greek, "αβγω"));
  EXPECT_FALSE(Accepts(greek, "a"));
  EXPECT_FALSE(Accepts(greek, "αA"));
  EXPECT_FALSE(Accepts(greek, "Ω"));  // U+03A9, upper case, outside
  const Grammar wide = Build("[\\u0100-\\u{10FFFF}]", kAnchored);
  ASSERT_GE(wide.root, 0);
  EXPECT_TRUE(Accepts(wide, "Ā"));
  EXPECT_TRUE(Accepts(wide, Utf8(0x10FFFF)));
  EXPECT_FALSE(Accepts(wide, "ÿ"));  // U+00FF
  EXPECT_FALSE(Accepts(wide, "a"));
  const Grammar not_a = Build("[^a]", kAnchored);
  ASSERT_GE(not_a.root, 0);
  for (uint32_t cp : {0x0u, 0x62u, 0xE9u, 0x20ACu, 0xFFFDu, 0x1F600u}) EXPECT_TRUE(Accepts(not_a, Utf8(cp))) << cp;
  EXPECT_FALSE(Accepts(not_a, "a"));
  EXPECT_FALSE(Accepts(not_a, "\xED\xA0\x80"));  // a surrogate's bytes are never UTF-8
  // ASCII meanings: é is not a word character, and is a non-digit.
  EXPECT_FALSE(Accepts(Build("\\w", kAnchored), "é"));
  EXPECT_TRUE(Accepts(Build("\\W", kAnchored), "é"));
  EXPECT_TRUE(Accepts(Build("\\D\\S", kAnchored), "é€"));
}

TEST(Regex, DotMatchesOneWholeCodePointOfAnyLength) {
  const Grammar g = Build("a.b", kAnchored);
  ASSERT_GE(g.root, 0);
  for (const char* mid : {"x", "é", "€", "😀", "\t"}) EXPECT_TRUE(Accepts(g, std::string("a") + mid + "b")) << mid;
  EXPECT_FALSE(Accepts(g, "a\nb"));
  EXPECT_FALSE(Accepts(g, "a\rb"));
  EXPECT_FALSE(Accepts(g, "ab"));
  EXPECT_FALSE(Accepts(g, "a\xC3\xA9\xC3\xA9" "b"));  // two code points
  EXPECT_FALSE(Accepts(g, "a\xC3" "b"));             // half of é
}

TEST(Regex, LiteralsAndEscapesBeyondAscii) {
  EXPECT_TRUE(Accepts(Build("\\u00e9", kAnchored), "é"));
  EXPECT_TRUE(Accepts(Build("\\xE9", kAnchored), "é"));
  EXPECT_TRUE(Accepts(Build("\\u{1F600}", kAnchored), "😀"));
  EXPECT_TRUE(Accepts(Build("\\uD83D\\uDE00", kAnchored), "😀"));  // a surrogate pair is one code point
  EXPECT_TRUE(Accepts(Build("[\\uD83D\\uDE00]", kAnchored), "😀"));
  // A quantifier repeats the whole code point, not its last byte.
  const Grammar g = Build("é+", kAnchored);
  ASSERT_GE(g.root, 0);
  EXPECT_TRUE(Accepts(g, "ééé"));
  EXPECT_FALSE(Accepts(g, "\xC3\xA9\xA9"));
  // Unanchored: the text around a match is any UTF-8, never invalid bytes.
  const Grammar s = Build("é", kSearch);
  ASSERT_GE(s.root, 0);
  EXPECT_TRUE(Accepts(s, "xxé€😀"));
  EXPECT_FALSE(Accepts(s, "\xFFé"));
  EXPECT_FALSE(Accepts(s, "x€"));
}

TEST(Regex, JsonStringModeWritesQuoteBackslashAndControlsEscaped) {
  struct Want {
    const char* pattern;
    std::vector<std::string> accepted, refused;
  };
  const std::vector<Want> wants = {
      {"\"", {"\\\""}, {"\"", "\\\\\""}},
      {"\\\\", {"\\\\"}, {"\\"}},
      {"\\n", {"\\n"}, {"\n", "\\u000a"}},
      {"\\x01\\x1F\\x08\\f\\r\\t", {"\\u0001\\u001f\\b\\f\\r\\t"}, {"\\u0001\\u001F\\b\\f\\r\\t"}},
      {"\\0", {"\\u0000"}, {std::string(1, '\0')}},
      {"\x7f" "é", {"\x7f" "é"}, {"\\u007f\\u00e9"}},
      {"[^a]",
       {"\\\"", "\\\\", "\\u0001", "\\u0000", "\\n", "\\t", "\\b", "b", "é", "😀", "/", "\x7f"},
       {"a", "\"", "\\", "\x01", "\n", "\\a", "\\u0061", "\\/"}},
      {"[\\x00-\\x1f\"\\\\]",
       {"\\u0000", "\\u001f", "\\u000b", "\\b", "\\f", "\\n", "\\r", "\\t", "\\\"", "\\\\"},
       {"\\u0008", "\\u000a", " ", "\"", "a"}},
      {".", {"\\t", "\\\"", "\\u0002", "x"}, {"\\n", "\\r", "\n"}},
      {"\\s+", {"\\t\\n\\u000b\\f\\r "}, {"\t"}},
  };
  for (const Want& w : wants) {
    const Grammar g = Build(w.pattern, kJsonAnchored);
    ASSERT_GE(g.root, 0) << w.pattern;
    for (const std::string& s : w.accepted) EXPECT_TRUE(Accepts(g, s)) << w.pattern << " on " << s;
    for (const std::string& s : w.refused) EXPECT_FALSE(Accepts(g, s)) << w.pattern << " on " << s;
  }
  // Unanchored, the text around the match is escaped the same way.
  const Grammar s = Build("a", kJsonSearch);
  ASSERT_GE(s.root, 0);
  EXPECT_TRUE(Accepts(s, "\\\"a\\n\\u0001é"));
  EXPECT_FALSE(Accepts(s, "\"a"));
  EXPECT_FALSE(Accepts(s, "a\\"));
  EXPECT_FALSE(Accepts(s, "a\x01"));
}

struct Refusal {
  std::string pattern;
  int column;
  const char* says;  // a part of the message
};

TEST(Regex, RefusesWhatTheDialectLacksNamingTheColumn) {
  std::string deep(257, '(');
  deep += "a" + std::string(257, ')');
  const std::vector<Refusal> refusals = {
      {"(a)\\1", 4, "back-reference"},
      {"(?<n>a)\\k<n>", 8, "back-reference"},
      {"(?P<n>a)(?P=n)", 9, "back-reference"},
      {"(?=a)", 1, "lookahead"},
      {"a(?!b)", 2, "lookahead"},
      {"(?<=a)b", 1, "lookbehind"},
      {"x(?<!a)b", 2, "lookbehind"},
      {"a\\b", 2, "word boundaries"},
      {"\\Ba", 1, "word boundaries"},
      {"(?i)a", 1, "inline flags"},
      {"a(?i:b)", 2, "inline flags"},
      {"(?>a)", 1, "atomic"},
      {"(?#c)", 1, "comments"},
      {"(?", 1, "unknown group syntax"},
      {"(?<1>a)", 1, "group name"},
      {"(?<ab", 1, "group name"},
      {"(a", 1, "'(' has no matching ')'"},
      {"a(b(c)", 2, "'(' has no matching ')'"},
      {"a)", 2, "')' has no matching '('"},
      {"(a))", 4, "')' has no matching '('"},
      {"*a", 1, "nothing to repeat"},
      {"+", 1, "nothing to repeat"},
      {"a**", 3, "nothing to repeat"},
      {"a|?", 3, "nothing to repeat"},
      {"(*)", 2, "nothing to repeat"},
      {"^*", 2, "nothing to repeat"},
      {"{2}", 1, "nothing to repeat"},
      {"a{2}{3}", 5, "nothing to repeat"},
      {"a*+", 3, "possessive"},
      {"a{3,1}", 2, "m > n"},
      {"a{", 2, "does not start a quantifier"},
      {"a{x}", 2, "does not start a quantifier"},
      {"a{1,2", 2, "does not start a quantifier"},
      {"a{,2}", 2, "does not start a quantifier"},
      {"a{100001}", 2, "above 100000"},
      {"[z-a]", 2, "'z-a' is out of order"},
      {"x[ab-a]", 4, "out of order"},
      {"[\\d-z]", 2, "class range"},
      {"[a-\\w]", 2, "class range"},
      {"[abc", 1, "'[' has no matching ']'"},
      {"a[b-", 2, "'[' has no matching ']'"},
      {"[]", 1, "empty class"},
      {"[^]", 1, "[^]"},
      {"[[:alpha:]]", 2, "inside a class"},
      {"[^\\s\\S]", 1, "matches no character"},
      {"ab\\", 3, "trailing backslash"},
      {"[a\\", 3, "trailing backslash"},
      {"\\q", 1, "unknown escape \\q"},
      {"\\cA", 1, "unknown escape \\c"},
      {"\\p{L}", 1, "property"},
      {"\\01", 1, "octal"},
      {"[\\1]", 2, "octal"},
      {"\\x4", 1, "two hex digits"},
      {"\\u12", 1, "four hex digits"},
      {"\\u{110000}", 1, "10FFFF"},
      {"\\u{}", 1, "10FFFF"},
      {"\\uD800", 1, "lone surrogate"},
      {"\\uDC00\\uD800", 1, "lone surrogate"},
      {"\\é", 1, "non-ASCII"},
      {"a^", 2, "'^' may stand only"},
      {"(^a)", 2, "'^' may stand only"},
      {"^^a", 2, "'^' may stand only"},
      {"a$b", 2, "'$' may stand only"},
      {"(a$)", 3, "'$' may stand only"},
      {"a$$", 2, "'$' may stand only"},
      {"ab\xFF", 3, "invalid UTF-8"},
      {"a\xC3", 2, "invalid UTF-8"},
      {"\xC0\xAF", 1, "invalid UTF-8"},         // overlong '/'
      {"\xED\xA0\x80", 1, "invalid UTF-8"},     // a surrogate
      {"\xF4\x90\x80\x80", 1, "invalid UTF-8"}, // past U+10FFFF
      {"[\xE9]", 2, "invalid UTF-8"},
      {"\\\x80", 2, "invalid UTF-8"},
      {deep, 257, "deeper than 256"},
  };
  for (const Refusal& r : refusals) {
    for (RegexOptions opts : {kAnchored, kJsonSearch}) {
      Grammar g;
      Element e;
      const Status st = AddRegex(r.pattern, opts, &g, "re", &e);
      const std::string prefix = "regex column " + std::to_string(r.column) + ": ";
      ASSERT_FALSE(st.ok()) << r.pattern;
      EXPECT_EQ(st.message().substr(0, prefix.size()), prefix) << r.pattern << " -> " << st.message();
      EXPECT_NE(st.message().find(r.says), std::string::npos) << r.pattern << " -> " << st.message();
      EXPECT_TRUE(g.rules.empty()) << "a refused pattern adds no rule: " << r.pattern;
    }
  }
  // One level less is fine.
  std::string ok(256, '(');
  ok += "a" + std::string(256, ')');
  EXPECT_TRUE(Accepts(Build(ok, kAnchored), "a"));
}

TEST(Regex, AGrammarPastItsLimitsIsAnErrorAtTheQuantifier) {
  Grammar g;
  g.limits.max_elements = 1000;
  Element e;
  Status st = AddRegex("ab{2000}", kAnchored, &g, "re", &e);
  EXPECT_EQ(st.message().rfind("regex column 3: ", 0), 0u) << st.message();
  // Each repetition fits, together they do not.
  Grammar h;
  h.limits.max_elements = 1000;
  st = AddRegex("a{450}b{450}c{450}", kAnchored, &h, "re", &e);
  EXPECT_EQ(st.message(), "regex column 14: the pattern needs more than the grammar's 1000 elements");
  // Rules: a bounded tail is one rule per optional copy.
  Grammar r;
  r.limits.max_rules = 100;
  st = AddRegex("x(a{0,500})", kAnchored, &r, "re", &e);
  EXPECT_EQ(st.message(), "regex column 4: the pattern needs more than the grammar's 100 rules");
  // Within the default limits a large nested repetition is small.
  Status ok;
  const Grammar big = Build("((ab){1000}c){100}", kAnchored, &ok);
  ASSERT_TRUE(ok.ok()) << ok.message();
  EXPECT_LT(big.CountElements(), 2000);
}

// The examples of docs/structured-output.md's "Regular expressions".
TEST(Regex, TheDocumentedExamplesHold) {
  struct Example {
    const char* pattern;
    RegexOptions opts;
    std::vector<std::string> matches, not_matches;
  };
  const std::vector<Example> examples = {
      {"\\d{3}-\\d{4}", kAnchored, {"555-1234"}, {"55-1234", "555-12345"}},
      {"[A-Z][a-z]+( [A-Z][a-z]+)*", kAnchored, {"Ada", "Ada Lovelace"}, {"ada", "Ada "}},
      {"(?:yes|no)(, (?:yes|no))*", kAnchored, {"yes", "no, yes, yes"}, {"yes,no"}},
      {"[^\"]{1,8}", kAnchored, {"abc", "é€😀"}, {"", "\""}},
      {"\\u{1F600}+", kAnchored, {"😀😀"}, {"😀 😀"}},
      {"^\\d+$", kAnchored, {"123"}, {"12a"}},
      {"ab", kJsonSearch, {"xaby", "ab"}, {"a", "xay"}},
      {"^ab", kJsonSearch, {"abx"}, {"xab"}},
      {"^ab$", kJsonSearch, {"ab"}, {"abx", "xab"}},
      {"^a|b$", kJsonSearch, {"ax", "xb", "ab"}, {"xa", "bx"}},
      {"^(a|b)$", kJsonSearch, {"a", "b"}, {"ab", "xb"}},
      {"^[^a]$", kJsonSearch, {"b", "é", "\\\"", "\\u0001"}, {"a", "\"", "\x01", "bb"}},
  };
  for (const Example& ex : examples) {
    const Grammar g = Build(ex.pattern, ex.opts);
    ASSERT_GE(g.root, 0) << ex.pattern;
    for (const std::string& s : ex.matches) EXPECT_TRUE(Accepts(g, s)) << ex.pattern << " on " << s;
    for (const std::string& s : ex.not_matches) EXPECT_FALSE(Accepts(g, s)) << ex.pattern << " on " << s;
  }
}

TEST(Regex, HelperRulesAreNamedAfterTheRegexRule) {
  Grammar g;
  Element e;
  ASSERT_TRUE(AddRegex("(a|b)*[é-ë]", kAnchored, &g, "date", &e).ok());
  ASSERT_EQ(e.kind, Element::kRule);
  EXPECT_EQ(g.rules[e.rule].name, "date");
  for (const Rule& r : g.rules) EXPECT_EQ(r.name.rfind("date", 0), 0u) << r.name;
}

// Every prefix of every pattern of the table, and random mutations of them,
// either build a grammar that passes Check or fail with the documented
// message form, naming a column inside the pattern.
void ExpectCleanOutcome(const std::string& pattern) {
  for (RegexOptions opts : {kAnchored, kSearch, kJsonAnchored, kJsonSearch}) {
    Grammar g;
    g.root = g.AddRule("root");
    Element e;
    const Status st = AddRegex(pattern, opts, &g, "re", &e);
    if (st.ok()) {
      g.AddAlt(g.root, {e});
      const Status check = Check(g);
      ASSERT_TRUE(check.ok()) << JsonEscape(pattern) << ": " << check.message();
      continue;
    }
    int column = 0;
    int consumed = 0;
    ASSERT_EQ(std::sscanf(st.message().c_str(), "regex column %d: %n", &column, &consumed), 1)
        << JsonEscape(pattern) << ": " << st.message();
    ASSERT_GT(consumed, 0) << st.message();
    EXPECT_GT(st.message().size(), static_cast<size_t>(consumed)) << st.message();
    EXPECT_GE(column, 1) << JsonEscape(pattern) << ": " << st.message();
    EXPECT_LE(column, static_cast<int>(pattern.size())) << JsonEscape(pattern) << ": " << st.message();
  }
}

TEST(Regex, EveryPrefixOfEveryPatternBuildsOrFailsCleanly) {
  int tried = 0;
  for (const Case& c : Table()) {
    const std::string p = c.pattern;
    for (size_t k = 0; k <= p.size(); ++k, ++tried) ExpectCleanOutcome(p.substr(0, k));
  }
  EXPECT_GT(tried, 300);
}

TEST(Regex, RandomMutationsBuildOrFailCleanly) {
  std::mt19937 rng(20240611);
  const std::string interesting = "()[]{}|*+?.^$\\-,:<>=!0123456789abdswDSWuxkPp\"\xC3\xA9\xFF";
  int failed = 0, built = 0;
  for (const Case& c : Table()) {
    for (int round = 0; round < 60; ++round) {
      std::string p = c.pattern;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        const size_t at = p.empty() ? 0 : rng() % (p.size() + 1);
        const char byte = rng() % 4 == 0 ? static_cast<char>(rng() % 256) : interesting[rng() % interesting.size()];
        switch (rng() % 3) {
          case 0: p.insert(p.begin() + at, byte); break;
          case 1: if (at < p.size()) p.erase(at, 1); break;
          default: if (at < p.size()) p[at] = byte; break;
        }
      }
      ExpectCleanOutcome(p);
      Grammar g;
      Element e;
      (AddRegex(p, kAnchored, &g, "re", &e).ok() ? built : failed)++;
    }
  }
  // Both outcomes were exercised.
  EXPECT_GT(built, 100);
  EXPECT_GT(failed, 100);
}

}  // namespace
}  // namespace tw::grammar
