// The grammar IR's builders and Check(), against the Earley reference.
#include "grammar/grammar.h"

#include <gtest/gtest.h>

#include "support/recognizer.h"

namespace tw::grammar {
namespace {

using testing::Accepts;
using testing::Viable;

// root ::= <one element>
Grammar Single(const std::function<Element(Grammar*)>& make) {
  Grammar g;
  g.root = g.AddRule("root");
  Element e = make(&g);
  g.AddAlt(g.root, {e});
  return g;
}

std::string Utf8(uint32_t cp) {
  std::string s;
  AppendUtf8(cp, &s);
  return s;
}

TEST(Grammar, CodepointClassMatchesExactlyItsCodePointsInUtf8) {
  // Ranges across every UTF-8 length and the surrogate gap.
  const std::vector<std::pair<uint32_t, uint32_t>> ranges = {{'a', 'f'}, {0x7A, 0x90}, {0x7FE, 0x801},
                                                             {0xD7F0, 0xE010}, {0xFFF0, 0x10010},
                                                             {0x10FFF0, 0x10FFFF}};
  Grammar g = Single([&](Grammar* g) { return CodepointClass(g, ranges, false, "cls"); });
  Grammar n = Single([&](Grammar* g) { return CodepointClass(g, ranges, true, "ncls"); });
  ASSERT_TRUE(Check(g).ok()) << Check(g).message();
  ASSERT_TRUE(Check(n).ok()) << Check(n).message();
  auto in = [&](uint32_t cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) return false;
    for (auto [lo, hi] : ranges) {
      if (cp >= lo && cp <= hi) return true;
    }
    return false;
  };
  int checked = 0;
  for (uint32_t cp = 0; cp <= kMaxCodepoint; cp += (cp < 0x11000 || cp > 0x10FF00) ? 1 : 97) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const std::string s = Utf8(cp);
    ASSERT_EQ(Accepts(g, s), in(cp)) << std::hex << cp;
    ASSERT_EQ(Accepts(n, s), !in(cp)) << std::hex << cp;
    ++checked;
  }
  EXPECT_GT(checked, 70000);
  // Never a surrogate, an overlong form or a lone continuation byte.
  EXPECT_FALSE(Accepts(n, "\xED\xA0\x80"));
  EXPECT_FALSE(Accepts(n, "\xC0\x80"));
  EXPECT_FALSE(Viable(n, "\x80"));
  EXPECT_TRUE(Viable(n, "\xE2\x82"));  // the first two bytes of the euro sign
}

TEST(Grammar, AnAsciiClassIsOneByteSetElement) {
  Grammar g;
  Element e = CodepointClass(&g, {{'0', '9'}, {'a', 'z'}}, false, "alnum");
  EXPECT_EQ(e.kind, Element::kBytes);
  EXPECT_TRUE(e.bytes.Has('5'));
  EXPECT_FALSE(e.bytes.Has('A'));
  EXPECT_TRUE(g.rules.empty());
}

TEST(Grammar, RepeatHonoursItsBounds) {
  for (auto [min, max] : std::vector<std::pair<int, int>>{{0, 0}, {0, 3}, {2, 2}, {2, 5}, {0, kUnbounded}, {3, kUnbounded}}) {
    Grammar g;
    g.root = g.AddRule("root");
    Sequence body;
    AppendLiteral("ab", &body);
    g.AddAlt(g.root, {Repeat(&g, body, min, max, "rep")});
    ASSERT_TRUE(Check(g).ok()) << Check(g).message();
    for (int k = 0; k <= 8; ++k) {
      std::string s;
      for (int i = 0; i < k; ++i) s += "ab";
      const bool want = k >= min && (max == kUnbounded || k <= max);
      EXPECT_EQ(Accepts(g, s), want) << min << ".." << max << " x" << k;
    }
    EXPECT_FALSE(Accepts(g, "aba"));
  }
}

TEST(Grammar, LiteralsShareTheirPrefixes) {
  Grammar g;
  g.root = g.AddRule("root");
  g.AddAlt(g.root, {Literals(&g, {"ab", "abc", "b", "", "abd", "ab"}, "lit"), Element::Byte('!')});
  ASSERT_TRUE(Check(g).ok()) << Check(g).message();
  for (const char* s : {"ab!", "abc!", "abd!", "b!", "!"}) EXPECT_TRUE(Accepts(g, s)) << s;
  for (const char* s : {"a!", "abcd!", "bb!", "c!", "ab"}) EXPECT_FALSE(Accepts(g, s)) << s;
  // One rule per distinct prefix with a continuation: root, "", "a", "ab".
  EXPECT_EQ(g.rules.size(), 4u);
}

TEST(Grammar, RuleNamesStayUnique) {
  Grammar g;
  EXPECT_EQ(g.AddRule("x"), 0);
  EXPECT_EQ(g.AddRule("x"), 1);
  EXPECT_EQ(g.AddRule("x"), 2);
  EXPECT_EQ(g.rules[1].name, "x-2");
  EXPECT_EQ(g.rules[2].name, "x-3");
  EXPECT_EQ(g.FindRule("x-3"), 2);
  EXPECT_EQ(g.FindRule("y"), -1);
}

TEST(Grammar, ARootThatNeverCompletesIsRefused) {
  // root ::= a ; a ::= b ; b ::= "x" a   (a cycle with no way out)
  Grammar g;
  g.root = g.AddRule("root");
  const int a = g.AddRule("a"), b = g.AddRule("b");
  g.AddAlt(g.root, {Element::Ref(a)});
  g.AddAlt(a, {Element::Ref(b)});
  g.AddAlt(b, {Element::Byte('x'), Element::Ref(a)});
  EXPECT_EQ(Check(g).message(), "the grammar matches nothing: rule 'root' never completes (it needs 'a', which never does)");
  g.AddAlt(b, {Element::Byte('y')});
  EXPECT_TRUE(Check(g).ok()) << Check(g).message();
}

TEST(Grammar, CheckNamesTheRuleAtFault) {
  {
    Grammar g;
    g.root = g.AddRule("root");
    const int v = g.AddRule("value");
    g.AddAlt(g.root, {Element::Ref(v)});
    EXPECT_EQ(Check(g).message(), "rule 'value' is referenced but never defined (or matches nothing)");
  }
  {
    // expr ::= term "+" | "1" ; term ::= opt expr ; opt ::= "" | "-"
    Grammar g;
    g.root = g.AddRule("expr");
    const int term = g.AddRule("term"), opt = g.AddRule("opt");
    g.AddAlt(g.root, {Element::Ref(term), Element::Byte('+')});
    g.AddAlt(g.root, {Element::Byte('1')});
    g.AddAlt(term, {Element::Ref(opt), Element::Ref(g.root)});
    g.AddAlt(opt, {});
    g.AddAlt(opt, {Element::Byte('-')});
    EXPECT_EQ(Check(g).message(), "rule 'expr' is left-recursive (expr -> term -> expr)");
  }
  {
    Grammar g;
    g.limits.max_elements = 100;
    g.root = g.AddRule("root");
    Sequence body;
    AppendLiteral("x", &body);
    g.AddAlt(g.root, {Repeat(&g, body, 0, 1000, "many")});
    EXPECT_NE(Check(g).message().find("passes the grammar's 100 elements"), std::string::npos) << Check(g).message();
  }
}

}  // namespace
}  // namespace tw::grammar
