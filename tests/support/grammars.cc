#include "support/grammars.h"

#include "service/structured_output.h"

#include <cstdlib>
#include <cstdio>


namespace tw::grammar::testing {

std::shared_ptr<const Vocabulary> VocabularyOf(const tokenizer::Tokenizer& tok, int vocab_size) {
  return service::GrammarVocabulary(tok, vocab_size);
}

std::shared_ptr<const Vocabulary> Gpt2Vocabulary() {
  static std::shared_ptr<const Vocabulary> vocab = [] {
    tokenizer::Tokenizer tok;
    if (!tokenizer::Tokenizer::LoadEmbedded(&tok).ok()) {
      std::fprintf(stderr, "the embedded tokenizer does not load\n");
      std::abort();
    }
    return VocabularyOf(tok, static_cast<int>(tok.vocab_size()));
  }();
  return vocab;
}

Grammar ChoiceGrammar(const std::vector<std::string>& choices) {
  Grammar g;
  g.root = g.AddRule("root");
  for (const std::string& c : choices) {
    Sequence q;
    AppendLiteral(c, &q);
    g.AddAlt(g.root, std::move(q));
  }
  return g;
}

Grammar AnyBytesGrammar() {
  Grammar g;
  g.root = g.AddRule("root");
  g.AddAlt(g.root, {Repeat(&g, {Element::Bytes(ByteSet::Range(0, 255))}, 0, kUnbounded, "any")});
  return g;
}

std::shared_ptr<const Vocabulary> SmallVocabulary(const std::string& alphabet) {
  std::vector<std::string> tokens;
  std::vector<std::string> level{""};
  for (int len = 1; len <= 3; ++len) {
    std::vector<std::string> next;
    for (const std::string& p : level) {
      for (char c : alphabet) next.push_back(p + c);
    }
    tokens.insert(tokens.end(), next.begin(), next.end());
    level = std::move(next);
  }
  tokens.push_back("");
  const int32_t eos = static_cast<int32_t>(tokens.size()) - 1;
  return std::make_shared<const Vocabulary>(std::move(tokens), eos);
}

Grammar JsonGrammar(int max_ws) {
  Grammar g;
  g.root = g.AddRule("root");
  const int value = g.AddRule("value"), object = g.AddRule("object"), array = g.AddRule("array");
  const int string = g.AddRule("string"), number = g.AddRule("number"), member = g.AddRule("member");
  ByteSet ws_set;
  for (char c : {' ', '\t', '\n', '\r'}) ws_set.Add(static_cast<uint8_t>(c));
  const Element ws = Repeat(&g, {Element::Bytes(ws_set)}, 0, max_ws, "ws");
  auto lit = [](const char* s) {
    Sequence q;
    AppendLiteral(s, &q);
    return q;
  };
  auto cat = [](std::initializer_list<Sequence> parts) {
    Sequence q;
    for (const Sequence& p : parts) q.insert(q.end(), p.begin(), p.end());
    return q;
  };
  g.AddAlt(g.root, {ws, Element::Ref(value), ws});
  for (int r : {object, array, string, number}) g.AddAlt(value, {Element::Ref(r)});
  for (const char* k : {"true", "false", "null"}) g.AddAlt(value, lit(k));
  // object ::= "{" ws ( member ( "," ws member )* )? "}"
  g.AddAlt(member, cat({{Element::Ref(string), ws}, lit(":"), {ws, Element::Ref(value), ws}}));
  const Element more_members = Repeat(&g, cat({lit(","), {ws, Element::Ref(member)}}), 0, kUnbounded, "members");
  g.AddAlt(object, cat({lit("{"), {ws}, lit("}")}));
  g.AddAlt(object, cat({lit("{"), {ws, Element::Ref(member), more_members}, lit("}")}));
  // array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
  const Element more_items =
      Repeat(&g, cat({lit(","), {ws, Element::Ref(value), ws}}), 0, kUnbounded, "items");
  g.AddAlt(array, cat({lit("["), {ws}, lit("]")}));
  g.AddAlt(array, cat({lit("["), {ws, Element::Ref(value), ws, more_items}, lit("]")}));
  // string ::= '"' ( [^"\\\x00-\x1f] | "\\" escape )* '"'
  const Element plain = CodepointClass(&g, {{'"', '"'}, {'\\', '\\'}, {0, 0x1F}}, true, "char");
  ByteSet hex;
  hex.AddRange('0', '9');
  hex.AddRange('a', 'f');
  hex.AddRange('A', 'F');
  ByteSet simple;
  for (char c : std::string("\"\\/bfnrt")) simple.Add(static_cast<uint8_t>(c));
  const Element escape = Group(&g,
                               {{Element::Byte('\\'), Element::Bytes(simple)},
                                {Element::Byte('\\'), Element::Byte('u'), Element::Bytes(hex), Element::Bytes(hex),
                                 Element::Bytes(hex), Element::Bytes(hex)}},
                               "escape");
  const Element ch = Group(&g, {{plain}, {escape}}, "string-char");
  g.AddAlt(string, {Element::Byte('"'), Repeat(&g, {ch}, 0, kUnbounded, "chars"), Element::Byte('"')});
  // number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
  const ByteSet digit = ByteSet::Range('0', '9');
  const Element digits = Repeat(&g, {Element::Bytes(digit)}, 1, kUnbounded, "digits");
  const Element sign = Repeat(&g, {Element::Byte('-')}, 0, 1, "sign");
  const Element intpart = Group(&g, {{Element::Byte('0')}, {Element::Bytes(ByteSet::Range('1', '9')),
                                                            Repeat(&g, {Element::Bytes(digit)}, 0, kUnbounded, "more")}},
                                "int");
  const Element frac = Repeat(&g, {Element::Byte('.'), digits}, 0, 1, "frac");
  ByteSet e_set, pm;
  e_set.Add('e');
  e_set.Add('E');
  pm.Add('+');
  pm.Add('-');
  const Element exp = Repeat(&g, {Element::Bytes(e_set), Repeat(&g, {Element::Bytes(pm)}, 0, 1, "exp-sign"), digits},
                             0, 1, "exp");
  g.AddAlt(number, {sign, intpart, frac, exp});
  return g;
}

}  // namespace tw::grammar::testing
