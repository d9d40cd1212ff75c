// GBNF text to grammar::Grammar: a recursive-descent parser over the text's
// bytes, one function per construct, building through grammar.h's builders.
//
// The format's rules follow llama.cpp's own parser (src/llama-grammar.cpp)
// exactly wherever it accepts a grammar; where llama.cpp silently does
// something surprising we refuse with a message instead (see gbnf.h). The
// one recursion is on parentheses, bounded by kMaxDepth.
#include "grammar/gbnf.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "json/utf8.h"

namespace tw::grammar {

namespace {

// Parentheses nested deeper than this are refused (the parser recurses on
// them; this bounds its stack).
constexpr int kMaxDepth = 256;

// A repetition count past this reads as this (Repeat refuses it: it is far
// past any element limit).
constexpr int kMaxCount = 1000000000;

constexpr size_t kNowhere = static_cast<size_t>(-1);

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The code point of the well-formed UTF-8 sequence of length n at s[i].
uint32_t DecodeUtf8(std::string_view s, size_t i, size_t n) {
  static constexpr uint8_t kLeadMask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  uint32_t cp = static_cast<uint8_t>(s[i]) & kLeadMask[n];
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
  return cp;
}

std::string CodepointName(uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
  return buf;
}

class Parser {
 public:
  Parser(std::string_view text, const GrammarLimits& limits) : text_(text) { g_.limits = limits; }

  Status Run(Grammar* out);

 private:
  // ---- the text ----
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  bool AtLineBreak() const { return Peek() == '\n' || Peek() == '\r'; }
  // Skips blanks and comments, and line breaks too when `newlines`.
  void SkipSpace(bool newlines) { pos_ = SpaceEnd(pos_, newlines); }
  size_t SpaceEnd(size_t p, bool newlines) const;
  // "'x'", "U+00E9", "a line break" or "the end of the text", for messages.
  std::string Describe(size_t offset) const;
  // The 1-based line and byte column of `offset`.
  std::pair<int, size_t> Locate(size_t offset) const;
  // "line L, column C: <message>" for the byte at `offset`.
  Status Fail(size_t offset, const std::string& message) const;

  // ---- the grammar's constructs ----
  Status ParseRule();
  Status ParseAlternates(int depth, std::vector<Sequence>* alts);
  Status ParseSequence(int depth, Sequence* seq);
  Status ParseLiteral(Sequence* seq);
  Status ParseClass(Sequence* seq);
  Status ParseAny(Sequence* seq);
  Status ParseReference(Sequence* seq);
  Status ParseGroup(int depth, Sequence* seq);
  Status ParseQuantifier(bool nested, size_t item_start, Sequence* seq);
  Status ParseBraces(bool nested, int* min, int* max);
  // Digits: their value, saturated at kMaxCount.
  int ParseCount();
  // One character of a literal or class, raw or escaped: its code point.
  Status ParseChar(uint32_t* cp);
  Status ParseEscape(uint32_t* cp);
  Status Finish(Grammar* out);

  // ---- bookkeeping ----
  // The rule index of the user's rule `name`, creating it on first sight.
  int UserRule(const std::string& name, size_t offset);
  // After a builder made rules [first, size): count their elements and
  // remember where in the text they came from.
  void Adopt(size_t first, size_t offset);
  Status CheckLimits(size_t offset) const;
  void Push(Sequence* seq, const Element& e) {
    seq->push_back(e);
    ++elements_;
  }
  // A helper rule's name: the user's rule it belongs to, '/', what it is.
  // ('/' is no name character, so a helper never takes a user's name.)
  std::string Hint(const char* what) const { return rule_name_ + "/" + what; }

  struct UserRuleInfo {
    int index = -1;
    size_t first_use = kNowhere;   // offset of the first reference
    size_t defined_at = kNowhere;  // offset of the definition's name
  };

  std::string_view text_;
  size_t pos_ = 0;
  Grammar g_;
  std::unordered_map<std::string, UserRuleInfo> user_rules_;
  std::vector<size_t> rule_offset_;  // per rule: where in the text it came from
  std::string rule_name_;            // the rule being defined
  long long elements_ = 0;           // elements in g_'s rules and in sequences being built
};

size_t Parser::SpaceEnd(size_t p, bool newlines) const {
  while (p < text_.size()) {
    const char c = text_[p];
    if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
      ++p;
    } else if (c == '#') {
      while (p < text_.size() && text_[p] != '\n' && text_[p] != '\r') ++p;
    } else {
      break;
    }
  }
  return p;
}

std::string Parser::Describe(size_t offset) const {
  if (offset >= text_.size()) return "the end of the text";
  const char c = text_[offset];
  if (c == '\n' || c == '\r') return "a line break";
  if (c > 0x20 && c < 0x7F) return std::string("'") + c + "'";
  size_t unused;
  const size_t n = json::Utf8SequenceLength(text_, offset, &unused);
  return CodepointName(n > 0 ? DecodeUtf8(text_, offset, n) : static_cast<uint8_t>(c));
}

std::pair<int, size_t> Parser::Locate(size_t offset) const {
  // Line breaks are \n, \r\n and a lone \r (llama.cpp ends a rule at each).
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset && i < text_.size(); ++i) {
    if (text_[i] == '\n' || (text_[i] == '\r' && (i + 1 >= text_.size() || text_[i + 1] != '\n'))) {
      ++line;
      line_start = i + 1;
    }
  }
  return {line, offset - line_start + 1};
}

Status Parser::Fail(size_t offset, const std::string& message) const {
  const auto [line, column] = Locate(offset);
  return Status::Error("line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message);
}

Status Parser::Run(Grammar* out) {
  for (size_t i = 0; i < text_.size();) {
    size_t unused;
    const size_t n = json::Utf8SequenceLength(text_, i, &unused);
    if (n == 0) return Fail(i, "the text is not valid UTF-8");
    i += n;
  }
  SkipSpace(true);
  while (!AtEnd()) {
    if (Status s = ParseRule(); !s.ok()) return s;
  }
  return Finish(out);
}

// name ::= alternatives <line break or end>
Status Parser::ParseRule() {
  const size_t name_start = pos_;
  while (IsNameChar(Peek())) ++pos_;
  if (pos_ == name_start) return Fail(pos_, "expected a rule name, found " + Describe(pos_));
  const std::string name(text_.substr(name_start, pos_ - name_start));
  SkipSpace(false);
  if (text_.substr(pos_, 3) != "::=") return Fail(pos_, "expected '::=' after the rule name, found " + Describe(pos_));
  pos_ += 3;
  SkipSpace(true);

  const int index = UserRule(name, kNowhere);
  UserRuleInfo& info = user_rules_[name];
  if (info.defined_at != kNowhere) {
    // llama.cpp keeps the last definition silently; a second definition is
    // far more likely a mistake than a wish to discard the first.
    return Fail(name_start, "rule '" + name + "' is defined twice (first on line " +
                                std::to_string(Locate(info.defined_at).first) + ")");
  }
  info.defined_at = name_start;
  rule_offset_[index] = name_start;
  rule_name_ = name;

  std::vector<Sequence> alts;
  if (Status s = ParseAlternates(0, &alts); !s.ok()) return s;
  for (Sequence& seq : alts) g_.AddAlt(index, std::move(seq));

  if (Peek() == '\r') {
    pos_ += Peek(1) == '\n' ? 2 : 1;
  } else if (Peek() == '\n') {
    ++pos_;
  } else if (text_.substr(pos_, 3) == "::=") {
    return Fail(pos_, "expected an item, '|' or the end of the line, found '::=' (a rule starts on a line of "
                      "its own, and an empty body is written \"\")");
  } else if (!AtEnd()) {
    return Fail(pos_, "expected an item, '|' or the end of the line, found " + Describe(pos_));
  }
  SkipSpace(true);
  return Status::Ok();
}

// seq ('|' seq)*. Outside parentheses (depth 0) a line break ends the rule,
// except that a line break after '|' does not, nor (our extension; llama.cpp
// refuses it) one before a line that starts with '|'.
Status Parser::ParseAlternates(int depth, std::vector<Sequence>* alts) {
  for (;;) {
    Sequence seq;
    if (Status s = ParseSequence(depth, &seq); !s.ok()) return s;
    alts->push_back(std::move(seq));
    if (Peek() == '|') {
      ++pos_;
      SkipSpace(true);
      continue;
    }
    if (depth == 0 && AtLineBreak()) {
      const size_t next = SpaceEnd(pos_, true);
      if (next < text_.size() && text_[next] == '|') {
        pos_ = next + 1;
        SkipSpace(true);
        continue;
      }
    }
    return Status::Ok();
  }
}

// Items, each maybe followed by quantifiers, until something that is not
// one ('|', ')', a line break outside parentheses, the end).
Status Parser::ParseSequence(int depth, Sequence* seq) {
  const bool nested = depth > 0;
  size_t item_start = seq->size();  // where the last item's elements begin
  for (;;) {
    const size_t at = pos_;
    const char c = Peek();
    Status s;
    if (c == '*' || c == '+' || c == '?' || c == '{') {
      s = ParseQuantifier(nested, item_start, seq);
    } else {
      item_start = seq->size();
      if (c == '"') {
        s = ParseLiteral(seq);
      } else if (c == '[') {
        s = ParseClass(seq);
      } else if (c == '.') {
        s = ParseAny(seq);
      } else if (c == '(') {
        s = ParseGroup(depth, seq);
      } else if (IsNameChar(c)) {
        s = ParseReference(seq);
      } else if (c == '<' || c == '!') {
        return Fail(pos_, "token references (<[id]>, <name>, !<...>) are not supported: these grammars "
                          "constrain text, not token ids");
      } else {
        return Status::Ok();
      }
    }
    if (!s.ok()) return s;
    if (s = CheckLimits(at); !s.ok()) return s;
    SkipSpace(nested);
  }
}

// "text": its characters' UTF-8 bytes, one element each.
Status Parser::ParseLiteral(Sequence* seq) {
  const size_t open = pos_++;
  std::string bytes;
  while (Peek() != '"') {
    if (AtEnd()) return Fail(open, "the literal is never closed (no '\"' after it)");
    uint32_t cp;
    if (Status s = ParseChar(&cp); !s.ok()) return s;
    AppendUtf8(cp, &bytes);
  }
  ++pos_;
  for (char b : bytes) Push(seq, Element::Byte(static_cast<uint8_t>(b)));
  return Status::Ok();
}

// [a-z_] or [^...]: one code point of the class (CodepointClass). A '-'
// makes a range unless it comes just before ']' (then it is itself).
Status Parser::ParseClass(Sequence* seq) {
  const size_t open = pos_++;
  const bool negated = Peek() == '^';
  if (negated) ++pos_;
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  while (Peek() != ']') {
    if (AtEnd()) return Fail(open, "the character class is never closed (no ']' after it)");
    const size_t lo_at = pos_;
    uint32_t lo, hi;
    if (Status s = ParseChar(&lo); !s.ok()) return s;
    hi = lo;
    if (Peek() == '-' && Peek(1) != ']' && pos_ + 1 < text_.size()) {
      ++pos_;
      if (Status s = ParseChar(&hi); !s.ok()) return s;
      if (hi < lo) {
        return Fail(lo_at, "the range " + CodepointName(lo) + "-" + CodepointName(hi) + " is reversed");
      }
    }
    ranges.push_back({lo, hi});
  }
  ++pos_;
  if (ranges.empty()) return Fail(open, "empty character class");
  const size_t first = g_.rules.size();
  const Element e = CodepointClass(&g_, std::move(ranges), negated, Hint("class"));
  if (e.kind == Element::kRule && g_.rules[e.rule].alts.empty()) {
    return Fail(open, "the character class matches no character");
  }
  Adopt(first, open);
  Push(seq, e);
  return Status::Ok();
}

// . : any one code point.
Status Parser::ParseAny(Sequence* seq) {
  const size_t at = pos_++;
  const size_t first = g_.rules.size();
  const Element e = CodepointClass(&g_, {}, /*negated=*/true, Hint("any"));
  Adopt(first, at);
  Push(seq, e);
  return Status::Ok();
}

Status Parser::ParseReference(Sequence* seq) {
  const size_t start = pos_;
  while (IsNameChar(Peek())) ++pos_;
  const int index = UserRule(std::string(text_.substr(start, pos_ - start)), start);
  Push(seq, Element::Ref(index));
  return Status::Ok();
}

// ( alternatives ): a rule of its own (Group).
Status Parser::ParseGroup(int depth, Sequence* seq) {
  const size_t open = pos_++;
  if (depth + 1 > kMaxDepth) {
    return Fail(open, "parentheses nest deeper than " + std::to_string(kMaxDepth));
  }
  SkipSpace(true);
  std::vector<Sequence> alts;
  if (Status s = ParseAlternates(depth + 1, &alts); !s.ok()) return s;
  if (Peek() != ')') {
    if (AtEnd()) return Fail(open, "'(' is never closed");
    return Fail(pos_, "expected an item, '|' or ')', found " + Describe(pos_));
  }
  ++pos_;
  // The alternatives' elements were counted as they were parsed.
  const Element e = Group(&g_, std::move(alts), Hint("group"));
  rule_offset_.push_back(open);
  Push(seq, e);
  return Status::Ok();
}

// * + ? {m} {m,} {m,n} after an item: the item (all of a literal's bytes,
// or what an earlier quantifier made of it) becomes a Repeat.
Status Parser::ParseQuantifier(bool nested, size_t item_start, Sequence* seq) {
  const size_t at = pos_;
  const char op = Peek();
  if (item_start == seq->size()) {
    return Fail(at, std::string("'") + op + "' has nothing before it to repeat");
  }
  int min = 0, max = kUnbounded;
  ++pos_;
  if (op == '+') {
    min = 1;
  } else if (op == '?') {
    max = 1;
  } else if (op == '{') {
    if (Status s = ParseBraces(nested, &min, &max); !s.ok()) return s;
    if (max != kUnbounded && max < min) {
      return Fail(at, "the repetition's upper bound " + std::to_string(max) + " is below its lower bound " +
                          std::to_string(min));
    }
  }
  const Sequence body(seq->begin() + static_cast<std::ptrdiff_t>(item_start), seq->end());
  seq->resize(item_start);
  elements_ -= static_cast<long long>(body.size());
  const size_t first = g_.rules.size();
  const Element e = Repeat(&g_, body, min, max, Hint("rep"));
  if (!g_.overflow.empty()) return Fail(at, g_.overflow);
  Adopt(first, at);
  Push(seq, e);
  return Status::Ok();
}

// After '{': m '}' | m ',' '}' | m ',' n '}', blanks allowed between.
Status Parser::ParseBraces(bool nested, int* min, int* max) {
  SkipSpace(nested);
  if (!IsDigit(Peek())) return Fail(pos_, "expected a number after '{', found " + Describe(pos_));
  *min = ParseCount();
  SkipSpace(nested);
  if (Peek() == '}') {
    ++pos_;
    *max = *min;
    return Status::Ok();
  }
  if (Peek() != ',') return Fail(pos_, "expected ',' or '}', found " + Describe(pos_));
  ++pos_;
  SkipSpace(nested);
  *max = kUnbounded;
  if (IsDigit(Peek())) {
    *max = ParseCount();
    SkipSpace(nested);
  }
  if (Peek() != '}') return Fail(pos_, "expected '}', found " + Describe(pos_));
  ++pos_;
  return Status::Ok();
}

int Parser::ParseCount() {
  int v = 0;
  for (; IsDigit(Peek()); ++pos_) v = v > kMaxCount / 10 ? kMaxCount : std::min(kMaxCount, v * 10 + (Peek() - '0'));
  return v;
}

Status Parser::ParseChar(uint32_t* cp) {
  if (Peek() == '\\') return ParseEscape(cp);
  size_t unused;
  const size_t n = json::Utf8SequenceLength(text_, pos_, &unused);  // valid: Run checked
  *cp = DecodeUtf8(text_, pos_, n);
  pos_ += n;
  return Status::Ok();
}

// \n \r \t \\ \" \[ \] and \xHH \uHHHH \UHHHHHHHH (code points, so "\xE9"
// is U+00E9, two bytes in UTF-8) -- llama.cpp's set, no more.
Status Parser::ParseEscape(uint32_t* cp) {
  const size_t at = pos_++;
  if (AtEnd()) return Fail(at, "the text ends inside an escape");
  const char c = Peek();
  ++pos_;
  int digits = 0;
  switch (c) {
    case 'n': *cp = '\n'; return Status::Ok();
    case 'r': *cp = '\r'; return Status::Ok();
    case 't': *cp = '\t'; return Status::Ok();
    case '\\': case '"': case '[': case ']': *cp = static_cast<uint8_t>(c); return Status::Ok();
    case 'x': digits = 2; break;
    case 'u': digits = 4; break;
    case 'U': digits = 8; break;
    default:
      return Fail(at, "unknown escape: '\\' then " + Describe(pos_ - 1) +
                          " (known: \\n \\r \\t \\\\ \\\" \\[ \\] \\xHH \\uHHHH \\UHHHHHHHH)");
  }
  uint32_t v = 0;
  for (int i = 0; i < digits; ++i) {
    const int h = HexValue(Peek());
    if (h < 0) {
      return Fail(at, std::string("'\\") + c + "' takes " + std::to_string(digits) + " hex digits, found " +
                          Describe(pos_));
    }
    v = (v << 4) | static_cast<uint32_t>(h);
    ++pos_;
  }
  if (v > kMaxCodepoint) return Fail(at, "the escape names " + CodepointName(v) + ", past U+10FFFF");
  if (v >= 0xD800 && v <= 0xDFFF) {
    return Fail(at, "the escape names " + CodepointName(v) + ", a UTF-16 surrogate, not a character");
  }
  *cp = v;
  return Status::Ok();
}

int Parser::UserRule(const std::string& name, size_t offset) {
  UserRuleInfo& info = user_rules_[name];
  if (info.index < 0) {
    info.index = g_.AddRule(name);
    rule_offset_.push_back(offset);
  }
  if (info.first_use == kNowhere && offset != kNowhere) info.first_use = offset;
  return info.index;
}

void Parser::Adopt(size_t first, size_t offset) {
  for (size_t r = first; r < g_.rules.size(); ++r) {
    for (const Sequence& alt : g_.rules[r].alts) elements_ += static_cast<long long>(alt.size());
    rule_offset_.push_back(offset);
  }
}

Status Parser::CheckLimits(size_t offset) const {
  if (g_.rules.size() > static_cast<size_t>(g_.limits.max_rules)) {
    return Fail(offset, "the grammar grows past " + std::to_string(g_.limits.max_rules) + " rules here");
  }
  if (elements_ > g_.limits.max_elements) {
    return Fail(offset, "the grammar grows past " + std::to_string(g_.limits.max_elements) + " elements here");
  }
  return Status::Ok();
}

// Every referenced rule defined, a root, then Check (its message placed at
// the line of the rule it names).
Status Parser::Finish(Grammar* out) {
  const std::string* undefined = nullptr;
  size_t undefined_at = kNowhere;
  for (const auto& [name, info] : user_rules_) {
    if (info.defined_at == kNowhere && info.first_use < undefined_at) {
      undefined = &name;
      undefined_at = info.first_use;
    }
  }
  if (undefined != nullptr) {
    return Fail(undefined_at, "rule '" + *undefined + "' is referenced but never defined");
  }
  const auto root = user_rules_.find("root");
  if (root == user_rules_.end()) return Fail(text_.size(), "the grammar has no rule named 'root'");
  g_.root = root->second.index;
  if (Status s = Check(g_); !s.ok()) {
    size_t offset = 0;
    const std::string& m = s.message();
    if (const size_t open = m.find("rule '"); open != std::string::npos) {
      const size_t name_at = open + 6;
      const int rule = g_.FindRule(m.substr(name_at, m.find('\'', name_at) - name_at));
      if (rule >= 0 && static_cast<size_t>(rule) < rule_offset_.size() && rule_offset_[rule] != kNowhere) {
        offset = rule_offset_[rule];
      }
    }
    return Status::Error("line " + std::to_string(Locate(offset).first) + ": " + m);
  }
  *out = std::move(g_);
  return Status::Ok();
}

}  // namespace

Status ParseGbnf(std::string_view text, const GrammarLimits& limits, Grammar* out) {
  Parser parser(text, limits);
  return parser.Run(out);
}

}  // namespace tw::grammar
