// Regular expressions to grammar rules, in two passes: a recursive-descent
// parser turns the pattern into a small syntax tree (Node), and a compiler
// turns the tree into rules of *g.
//
// Why a tree and not rules straight from the parser: one construction needs
// to look inside what it repeats. An unbounded repetition of something that
// can match the empty string -- (a?)*, (a|)+, ()* -- cannot be written as
// Repeat builds it (star ::= body star | "" would be left-recursive, which
// Check refuses), so the compiler repeats the body's non-empty part instead,
// which has the same language: (a?)* is a*, (a*b?)* is (a+ | a*b)*.
//
// The grammar is over bytes and the pattern over code points: a literal
// becomes its UTF-8 bytes, a class a CodepointClass. In json_string mode
// each code point is written as it appears inside a JSON string (JsonForm),
// and a class is split into the code points written as themselves (one
// CodepointClass) and those written as escapes (literal alternatives).
#include "grammar/regex.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tw::grammar {

namespace {

// Inclusive [lo, hi] ranges of code points.
using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

// Groups nested deeper are refused (the parser recurses once per level).
constexpr int kMaxGroupDepth = 256;
// The largest m or n of {m,n}; the grammar's limits usually bite first.
constexpr int kMaxCount = 100000;

Status ErrorAt(size_t offset, std::string_view what) {
  return Status::Error("regex column " + std::to_string(offset + 1) + ": " + std::string(what));
}

// ---- Code points ------------------------------------------------------------

// The code point at text[i] into *cp; its length in bytes, or 0 when the
// bytes there are not UTF-8 (truncated, overlong, a surrogate, past U+10FFFF).
int DecodeUtf8(std::string_view text, size_t i, uint32_t* cp) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(i);
  int n;
  uint32_t min;
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    n = 2, min = 0x80, *cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3, min = 0x800, *cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4, min = 0x10000, *cp = b0 & 0x07;
  } else {
    return 0;  // a continuation byte, or F8-FF
  }
  if (i + n > text.size()) return 0;
  for (int k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    *cp = (*cp << 6) | (byte(i + k) & 0x3F);
  }
  if (*cp < min || *cp > kMaxCodepoint || (*cp >= 0xD800 && *cp <= 0xDFFF)) return 0;
  return n;
}

// Sorted and merged, surrogates removed; the complement (within U+0000 to
// U+10FFFF) when `negate`. Empty when the set matches no code point.
Ranges Normalize(Ranges ranges, bool negate) { return NormalizeCodepoints(std::move(ranges), negate); }

// \d \w \s and their complements \D \W \S (ASCII meanings).
Ranges ShorthandClass(char c) {
  Ranges r;
  switch (c | 0x20) {  // lower case
    case 'd':
      r = {{'0', '9'}};
      break;
    case 'w':
      r = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
      break;
    default:  // 's': \t \n \v \f \r and the space
      r = {{'\t', '\r'}, {' ', ' '}};
      break;
  }
  return Normalize(std::move(r), c >= 'A' && c <= 'Z');
}

// How code point `cp` is written inside a JSON string.
std::string JsonForm(uint32_t cp) {
  switch (cp) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      break;
  }
  std::string s;
  if (cp < 0x20) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
    s = buf;
  } else {
    AppendUtf8(cp, &s);
  }
  return s;
}

// The code points JSON writes as an escape: U+0000-U+001F, '"' and '\'
// (index i of a 34-bit mask below is code point i, then '"', then '\').
constexpr int kEscapedCount = 34;
uint32_t EscapedCodepoint(int i) { return i < 32 ? static_cast<uint32_t>(i) : i == 32 ? '"' : '\\'; }

// ---- The syntax tree --------------------------------------------------------

struct Node {
  enum Kind : uint8_t { kEmpty, kChar, kClass, kConcat, kAlt, kRepeat };
  Kind kind = kEmpty;
  size_t offset = 0;       // where it starts in the pattern (a repetition: its quantifier)
  uint32_t cp = 0;         // kChar
  Ranges ranges;           // kClass: normalized and never empty
  std::vector<int> kids;   // kConcat, kAlt: the parts; kRepeat: the body. Always earlier nodes.
  int min = 0;             // kRepeat
  int max = 0;             // kRepeat; kUnbounded for no bound
  bool nullable = false;   // matches the empty string
};

// A top-level alternative: its tree and whether it is anchored at each end.
struct Branch {
  int node = -1;
  bool start_anchor = false;
  bool end_anchor = false;
};

// One item of a bracket class: a code point, or a set (\d, \W, ...).
struct ClassItem {
  bool is_set = false;
  uint32_t cp = 0;
  Ranges set;
};

class Parser {
 public:
  explicit Parser(std::string_view pattern) : p_(pattern) {}

  // The pattern's top-level alternatives, or the first error.
  Status Parse(std::vector<Branch>* branches);
  const std::vector<Node>& nodes() const { return nodes_; }

 private:
  bool AtEnd() const { return pos_ >= p_.size(); }
  bool Peek(char c) const { return pos_ < p_.size() && p_[pos_] == c; }
  // Adds a node (its kids already added), setting `nullable`; its index.
  int Add(Node n);
  int AddChar(size_t offset, uint32_t cp);
  int AddClass(size_t offset, Ranges ranges);

  Status CheckUtf8() const;
  Status ParseBranch(Branch* b);
  Status ParseAlternation(int depth, int* out);
  Status ParseSequence(int depth, int* out);
  Status ParseRepeat(int depth, int* out);
  Status ParseAtom(int depth, int* out);
  Status ParseGroup(int depth, int* out);
  Status ParseGroupKind(size_t open);
  Status ParseBraces(int* min, int* max);
  Status ParseClass(int* out);
  Status ParseClassItem(ClassItem* item);
  Status ParseEscape(bool in_class, ClassItem* item);
  Status ParseUnicodeEscape(size_t backslash, uint32_t* cp);
  bool ReadHex(int digits, uint32_t* value);

  std::string_view p_;
  size_t pos_ = 0;
  std::vector<Node> nodes_;
};

int Parser::Add(Node n) {
  const auto kid_nullable = [&](int k) { return nodes_[k].nullable; };
  switch (n.kind) {
    case Node::kEmpty:
      n.nullable = true;
      break;
    case Node::kChar:
    case Node::kClass:
      n.nullable = false;
      break;
    case Node::kConcat:
      n.nullable = std::all_of(n.kids.begin(), n.kids.end(), kid_nullable);
      break;
    case Node::kAlt:
      n.nullable = std::any_of(n.kids.begin(), n.kids.end(), kid_nullable);
      break;
    case Node::kRepeat:
      n.nullable = n.min == 0 || n.max == 0 || kid_nullable(n.kids[0]);
      break;
  }
  nodes_.push_back(std::move(n));
  return static_cast<int>(nodes_.size()) - 1;
}

int Parser::AddChar(size_t offset, uint32_t cp) {
  Node n;
  n.kind = Node::kChar;
  n.offset = offset;
  n.cp = cp;
  return Add(std::move(n));
}

int Parser::AddClass(size_t offset, Ranges ranges) {
  Node n;
  n.kind = Node::kClass;
  n.offset = offset;
  n.ranges = std::move(ranges);
  return Add(std::move(n));
}

// The whole pattern is checked first, so that the parser below may decode
// anywhere without failing.
Status Parser::CheckUtf8() const {
  for (size_t i = 0; i < p_.size();) {
    uint32_t cp;
    const int n = DecodeUtf8(p_, i, &cp);
    if (n == 0) return ErrorAt(i, "invalid UTF-8");
    i += n;
  }
  return Status::Ok();
}

// pattern := branch ('|' branch)*
Status Parser::Parse(std::vector<Branch>* branches) {
  if (Status st = CheckUtf8(); !st.ok()) return st;
  for (;;) {
    Branch b;
    if (Status st = ParseBranch(&b); !st.ok()) return st;
    branches->push_back(b);
    if (AtEnd()) return Status::Ok();
    if (Peek(')')) return ErrorAt(pos_, "')' has no matching '('");
    ++pos_;  // '|'
  }
}

// branch := '^'? sequence '$'?  (the only places anchors may stand)
Status Parser::ParseBranch(Branch* b) {
  if (Peek('^')) {
    b->start_anchor = true;
    ++pos_;
  }
  if (Status st = ParseSequence(0, &b->node); !st.ok()) return st;
  if (Peek('$')) {
    b->end_anchor = true;
    ++pos_;
  }
  return Status::Ok();
}

// alternation := sequence ('|' sequence)*  (inside a group)
Status Parser::ParseAlternation(int depth, int* out) {
  Node alt;
  alt.kind = Node::kAlt;
  alt.offset = pos_;
  for (;;) {
    int seq = -1;
    if (Status st = ParseSequence(depth, &seq); !st.ok()) return st;
    alt.kids.push_back(seq);
    if (!Peek('|')) break;
    ++pos_;
  }
  *out = alt.kids.size() == 1 ? alt.kids[0] : Add(std::move(alt));
  return Status::Ok();
}

// sequence := repeat*, up to '|', ')', the end, or a top-level '$' that
// ends its branch.
Status Parser::ParseSequence(int depth, int* out) {
  Node seq;
  seq.kind = Node::kConcat;
  seq.offset = pos_;
  while (!AtEnd() && !Peek('|') && !Peek(')')) {
    if (Peek('^')) return ErrorAt(pos_, "'^' may stand only at the start of the pattern or of a top-level alternative");
    if (Peek('$')) {
      const bool ends_branch = pos_ + 1 == p_.size() || p_[pos_ + 1] == '|';
      if (depth == 0 && ends_branch) break;
      return ErrorAt(pos_, "'$' may stand only at the end of the pattern or of a top-level alternative");
    }
    int item = -1;
    if (Status st = ParseRepeat(depth, &item); !st.ok()) return st;
    seq.kids.push_back(item);
  }
  if (seq.kids.size() == 1) {
    *out = seq.kids[0];
  } else {
    if (seq.kids.empty()) seq.kind = Node::kEmpty;
    *out = Add(std::move(seq));
  }
  return Status::Ok();
}

// repeat := atom (('*' | '+' | '?' | braces) '?'?)?
Status Parser::ParseRepeat(int depth, int* out) {
  int atom = -1;
  if (Status st = ParseAtom(depth, &atom); !st.ok()) return st;
  Node rep;
  rep.kind = Node::kRepeat;
  rep.offset = pos_;
  rep.kids = {atom};
  if (Peek('*')) {
    rep.min = 0, rep.max = kUnbounded, ++pos_;
  } else if (Peek('+')) {
    rep.min = 1, rep.max = kUnbounded, ++pos_;
  } else if (Peek('?')) {
    rep.min = 0, rep.max = 1, ++pos_;
  } else if (Peek('{')) {
    if (Status st = ParseBraces(&rep.min, &rep.max); !st.ok()) return st;
  } else {
    *out = atom;
    return Status::Ok();
  }
  if (Peek('?')) {
    ++pos_;  // lazy: the same strings, matched in another order
  } else if (Peek('+')) {
    return ErrorAt(pos_, "possessive quantifiers (a*+, a++, a?+, a{m,n}+) are not supported: they change what "
                         "the pattern matches");
  }
  *out = Add(std::move(rep));
  return Status::Ok();
}

// atom := '(' group ')' | '[' class ']' | '.' | escape | a literal code point
Status Parser::ParseAtom(int depth, int* out) {
  const size_t at = pos_;
  switch (p_[pos_]) {
    case '(':
      return ParseGroup(depth, out);
    case '[':
      return ParseClass(out);
    case '.':
      ++pos_;
      *out = AddClass(at, Normalize({{'\n', '\n'}, {'\r', '\r'}}, true));
      return Status::Ok();
    case '\\': {
      ClassItem item;
      if (Status st = ParseEscape(false, &item); !st.ok()) return st;
      *out = item.is_set ? AddClass(at, std::move(item.set)) : AddChar(at, item.cp);
      return Status::Ok();
    }
    case '*':
    case '+':
    case '?':
      return ErrorAt(at, std::string("'") + p_[at] + "' has nothing to repeat");
    case '{':
      return ErrorAt(at, "'{' has nothing to repeat (write \\{ for a literal brace)");
    default: {
      uint32_t cp;
      pos_ += DecodeUtf8(p_, pos_, &cp);
      *out = AddChar(at, cp);
      return Status::Ok();
    }
  }
}

// group := '(' ('?:' | '?<name>' | '?P<name>')? alternation ')'
Status Parser::ParseGroup(int depth, int* out) {
  const size_t open = pos_++;
  if (depth + 1 > kMaxGroupDepth) {
    return ErrorAt(open, "groups nest deeper than " + std::to_string(kMaxGroupDepth));
  }
  if (Peek('?')) {
    if (Status st = ParseGroupKind(open); !st.ok()) return st;
  }
  if (Status st = ParseAlternation(depth + 1, out); !st.ok()) return st;
  if (!Peek(')')) return ErrorAt(open, "'(' has no matching ')'");
  ++pos_;
  return Status::Ok();
}

// After "(?": accepts ':' and a group name, refuses every other extension.
Status Parser::ParseGroupKind(size_t open) {
  ++pos_;  // '?'
  const char c = AtEnd() ? '\0' : p_[pos_];
  const char next = pos_ + 1 < p_.size() ? p_[pos_ + 1] : '\0';
  if (c == ':') {
    ++pos_;
    return Status::Ok();
  }
  if (c == '=' || c == '!') return ErrorAt(open, "lookahead ((?= and (?!) is not supported");
  if (c == '<' && (next == '=' || next == '!')) return ErrorAt(open, "lookbehind ((?<= and (?<!) is not supported");
  if (c == 'P' && next == '=') return ErrorAt(open, "back-references ((?P=name)) are not supported");
  if (c == '<' || (c == 'P' && next == '<')) {
    pos_ += c == '<' ? 1 : 2;
    const size_t name = pos_;
    const auto is_name_char = [&](char ch, bool first) {
      return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || (!first && ch >= '0' && ch <= '9');
    };
    while (!AtEnd() && is_name_char(p_[pos_], pos_ == name)) ++pos_;
    if (pos_ == name || !Peek('>')) {
      return ErrorAt(open, "a group name is a letter or '_', then letters, digits or '_', closed by '>'");
    }
    ++pos_;
    return Status::Ok();
  }
  if (c == '>') return ErrorAt(open, "atomic groups ((?>...)) are not supported");
  if (c == '#') return ErrorAt(open, "comments ((?#...)) are not supported");
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '^') {
    return ErrorAt(open, "inline flags ((?i), (?i:...)) are not supported");
  }
  return ErrorAt(open, "unknown group syntax after '(?'");
}

// braces := '{' digits (',' digits?)? '}'
Status Parser::ParseBraces(int* min, int* max) {
  const size_t open = pos_;
  const auto refuse = [&] {
    return ErrorAt(open, "'{' does not start a quantifier {m}, {m,} or {m,n} (write \\{ for a literal brace)");
  };
  // Digits at pos_ into *value (capped past kMaxCount); false if none.
  const auto number = [&](int* value) {
    const size_t start = pos_;
    *value = 0;
    while (!AtEnd() && p_[pos_] >= '0' && p_[pos_] <= '9') {
      *value = std::min(*value * 10 + (p_[pos_] - '0'), kMaxCount + 1);
      ++pos_;
    }
    return pos_ > start;
  };
  ++pos_;
  if (!number(min)) return refuse();
  *max = *min;
  if (Peek(',')) {
    ++pos_;
    if (!number(max)) *max = kUnbounded;
  }
  if (!Peek('}')) return refuse();
  ++pos_;
  if (*min > kMaxCount || *max > kMaxCount) {
    return ErrorAt(open, "a repetition count above " + std::to_string(kMaxCount));
  }
  if (*max != kUnbounded && *min > *max) return ErrorAt(open, "the repetition {m,n} has m > n");
  return Status::Ok();
}

// class := '[' '^'? (item | item '-' item)+ ']'
Status Parser::ParseClass(int* out) {
  const size_t open = pos_++;
  const bool negated = Peek('^');
  if (negated) ++pos_;
  if (Peek(']')) {
    return ErrorAt(open, negated ? "[^] is not supported (write [\\s\\S] for any character)"
                                 : "an empty class [] matches nothing (write \\] for a literal ']')");
  }
  Ranges ranges;
  for (;;) {
    if (AtEnd()) return ErrorAt(open, "'[' has no matching ']'");
    if (Peek(']')) break;
    const size_t first = pos_;
    ClassItem lo;
    if (Status st = ParseClassItem(&lo); !st.ok()) return st;
    // A '-' just before ']' is a literal, as is one after a range.
    if (Peek('-') && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
      ++pos_;
      ClassItem hi;
      if (Status st = ParseClassItem(&hi); !st.ok()) return st;
      if (lo.is_set || hi.is_set) {
        return ErrorAt(first, "a class range cannot begin or end at \\d, \\w or \\s (write \\- for a literal '-')");
      }
      if (lo.cp > hi.cp) {
        return ErrorAt(first, "the class range '" + std::string(p_.substr(first, pos_ - first)) + "' is out of order");
      }
      ranges.push_back({lo.cp, hi.cp});
    } else if (lo.is_set) {
      ranges.insert(ranges.end(), lo.set.begin(), lo.set.end());
    } else {
      ranges.push_back({lo.cp, lo.cp});
    }
  }
  ++pos_;  // ']'
  Ranges set = Normalize(std::move(ranges), negated);
  if (set.empty()) return ErrorAt(open, "the class matches no character");
  *out = AddClass(open, std::move(set));
  return Status::Ok();
}

Status Parser::ParseClassItem(ClassItem* item) {
  if (Peek('[')) {
    return ErrorAt(pos_, "'[' inside a class (write \\[; nested classes and [:alpha:] are not supported)");
  }
  if (Peek('\\')) return ParseEscape(true, item);
  pos_ += DecodeUtf8(p_, pos_, &item->cp);
  return Status::Ok();
}

// An escape at pos_ (the backslash), outside or inside a class.
Status Parser::ParseEscape(bool in_class, ClassItem* item) {
  const size_t at = pos_;
  if (pos_ + 1 >= p_.size()) return ErrorAt(at, "a trailing backslash");
  const char c = p_[pos_ + 1];
  pos_ += 2;
  switch (c) {
    case 'd':
    case 'D':
    case 'w':
    case 'W':
    case 's':
    case 'S':
      item->is_set = true;
      item->set = ShorthandClass(c);
      return Status::Ok();
    case 'n':
      item->cp = '\n';
      return Status::Ok();
    case 'r':
      item->cp = '\r';
      return Status::Ok();
    case 't':
      item->cp = '\t';
      return Status::Ok();
    case 'f':
      item->cp = '\f';
      return Status::Ok();
    case 'v':
      item->cp = '\v';
      return Status::Ok();
    case 'b':
      if (!in_class) return ErrorAt(at, "word boundaries (\\b, \\B) are not supported");
      item->cp = '\b';  // [\b] is the backspace, as in ECMA-262 and PCRE
      return Status::Ok();
    case 'B':
      return ErrorAt(at, "word boundaries (\\b, \\B) are not supported");
    case '0':
      if (Peek('0') || (!AtEnd() && p_[pos_] >= '1' && p_[pos_] <= '9')) {
        return ErrorAt(at, "octal escapes are not supported (write \\xHH)");
      }
      item->cp = 0;
      return Status::Ok();
    case 'k':
      return ErrorAt(at, "back-references (\\1, \\k<name>) are not supported");
    case 'x':
      if (!ReadHex(2, &item->cp)) return ErrorAt(at, "\\x takes two hex digits");
      return Status::Ok();
    case 'u':
      return ParseUnicodeEscape(at, &item->cp);
    case 'p':
    case 'P':
      return ErrorAt(at, "Unicode property escapes (\\p{...}, \\P{...}) are not supported");
    default:
      break;
  }
  if (c >= '1' && c <= '9') {
    return ErrorAt(at, in_class ? "octal escapes are not supported (write \\xHH)"
                                : "back-references (\\1, \\k<name>) are not supported");
  }
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
    return ErrorAt(at, std::string("unknown escape \\") + c);
  }
  if (c < 0x20 || c > 0x7E) return ErrorAt(at, "'\\' before a control or non-ASCII character");
  item->cp = static_cast<uint8_t>(c);  // escaped punctuation (or space) is itself
  return Status::Ok();
}

// After "\u": HHHH (a surrogate pair \uHHHH\uHHHH is one code point) or {H...}.
Status Parser::ParseUnicodeEscape(size_t backslash, uint32_t* cp) {
  if (Peek('{')) {
    ++pos_;
    const size_t start = pos_;
    uint32_t value = 0;
    while (!AtEnd() && pos_ - start < 8) {
      uint32_t digit;
      if (!ReadHex(1, &digit)) break;
      value = value * 16 + digit;
    }
    if (pos_ == start || !Peek('}') || value > kMaxCodepoint) {
      return ErrorAt(backslash, "\\u{...} takes hex digits of a code point up to 10FFFF");
    }
    ++pos_;
    *cp = value;
  } else if (!ReadHex(4, cp)) {
    return ErrorAt(backslash, "\\u takes four hex digits (or \\u{...})");
  }
  if (*cp >= 0xD800 && *cp <= 0xDBFF && pos_ + 1 < p_.size() && p_[pos_] == '\\' && p_[pos_ + 1] == 'u') {
    const size_t save = pos_;
    pos_ += 2;
    uint32_t low;
    if (ReadHex(4, &low) && low >= 0xDC00 && low <= 0xDFFF) {
      *cp = 0x10000 + ((*cp - 0xD800) << 10) + (low - 0xDC00);
      return Status::Ok();
    }
    pos_ = save;
  }
  if (*cp >= 0xD800 && *cp <= 0xDFFF) {
    return ErrorAt(backslash, "a lone surrogate (write the character itself, or \\u{...})");
  }
  return Status::Ok();
}

// Exactly `digits` hex digits at pos_ into *value, advancing; false (and
// not advancing) if they are not there.
bool Parser::ReadHex(int digits, uint32_t* value) {
  if (p_.size() - pos_ < static_cast<size_t>(digits)) return false;
  uint32_t v = 0;
  for (int i = 0; i < digits; ++i) {
    const char c = p_[pos_ + i];
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
      d = (c | 0x20) - 'a' + 10;
    } else {
      return false;
    }
    v = v * 16 + d;
  }
  pos_ += digits;
  *value = v;
  return true;
}

// ---- The compiler -----------------------------------------------------------

class Compiler {
 public:
  Compiler(const std::vector<Node>& nodes, const RegexOptions& opts, Grammar* g, int rule)
      : nodes_(nodes), opts_(opts), g_(g), rule_(rule), full_(nodes.size()),
        counted_(g->rules.size()), elements_(g->CountElements()), had_overflow_(!g->overflow.empty()) {}

  // Fills the rule with one alternative per branch.
  Status CompileRule(const std::vector<Branch>& branches);

 private:
  // Appends the language of node n (each node is built once, then copied).
  Status Compile(int n, Sequence* out);
  Status Build(int n, Sequence* out);
  Status BuildRepeat(const Node& node, Sequence* out);
  // The language of node n without the empty string; nullopt when that is
  // empty. Never nullable, so it may be the body of an unbounded Repeat.
  Status CompileNonEmpty(int n, std::optional<Sequence>* out);
  // Several alternatives as one sequence (nullopt for none).
  Status OneOf(std::vector<Sequence> alts, size_t offset, std::optional<Sequence>* out);
  void AppendChar(uint32_t cp, Sequence* out) const;
  Status Class(const Ranges& ranges, size_t offset, Element* out);
  Status Escapes(uint64_t mask, size_t offset, Element* out);
  Status AnyString(Element* out);
  // Counts the rules added since the last call; an error past g->limits.
  Status Account(size_t offset);
  std::string Hint(std::string_view what) const { return g_->rules[rule_].name + "-" + std::string(what); }

  const std::vector<Node>& nodes_;
  const RegexOptions& opts_;
  Grammar* g_;
  const int rule_;
  std::vector<std::optional<Sequence>> full_;  // Compile's memo, by node
  std::map<Ranges, Element> classes_;           // Class's memo
  std::map<uint64_t, Element> escapes_;         // Escapes's memo, by mask
  std::optional<Element> any_string_;           // AnyString's memo
  size_t counted_;                              // rules [0, counted_) are in elements_
  long long elements_;
  const bool had_overflow_;
};

Status Compiler::CompileRule(const std::vector<Branch>& branches) {
  std::vector<Sequence> alts;
  for (const Branch& b : branches) {
    Sequence body;
    if (Status st = Compile(b.node, &body); !st.ok()) return st;
    const bool lead = !opts_.anchored && !b.start_anchor;   // any text may come before
    const bool trail = !opts_.anchored && !b.end_anchor;    // ... and after
    if (!lead && !trail) {
      alts.push_back(std::move(body));
      continue;
    }
    Element any;
    if (Status st = AnyString(&any); !st.ok()) return st;
    Sequence seq;
    if (lead) seq.push_back(any);
    seq.insert(seq.end(), body.begin(), body.end());
    if (trail && !(lead && body.empty())) seq.push_back(any);
    alts.push_back(std::move(seq));
  }
  for (const Sequence& s : alts) elements_ += static_cast<long long>(s.size());
  g_->rules[rule_].alts = std::move(alts);
  return Account(0);
}

Status Compiler::Compile(int n, Sequence* out) {
  if (!full_[n]) {
    Sequence seq;
    if (Status st = Build(n, &seq); !st.ok()) return st;
    full_[n] = std::move(seq);
  }
  out->insert(out->end(), full_[n]->begin(), full_[n]->end());
  return Status::Ok();
}

Status Compiler::Build(int n, Sequence* out) {
  const Node& node = nodes_[n];
  switch (node.kind) {
    case Node::kEmpty:
      return Status::Ok();
    case Node::kChar:
      AppendChar(node.cp, out);
      return Status::Ok();
    case Node::kClass: {
      Element e;
      if (Status st = Class(node.ranges, node.offset, &e); !st.ok()) return st;
      out->push_back(e);
      return Status::Ok();
    }
    case Node::kConcat:
      for (int kid : node.kids) {
        if (Status st = Compile(kid, out); !st.ok()) return st;
      }
      return Status::Ok();
    case Node::kAlt: {
      std::vector<Sequence> alts(node.kids.size());
      for (size_t i = 0; i < node.kids.size(); ++i) {
        if (Status st = Compile(node.kids[i], &alts[i]); !st.ok()) return st;
      }
      out->push_back(Group(g_, std::move(alts), Hint("alt")));
      return Account(node.offset);
    }
    case Node::kRepeat:
      return BuildRepeat(node, out);
  }
  return Status::Ok();
}

Status Compiler::BuildRepeat(const Node& node, Sequence* out) {
  if (node.max == 0) return Status::Ok();  // x{0} is the empty string
  const Node& body = nodes_[node.kids[0]];
  Sequence unit;
  int min = node.min;
  if (node.max == kUnbounded && body.nullable) {
    // x{m,} with x nullable is (x without "")*: the empty copies add
    // nothing, and they are what would make the rule left-recursive.
    std::optional<Sequence> nonempty;
    if (Status st = CompileNonEmpty(node.kids[0], &nonempty); !st.ok()) return st;
    if (!nonempty) return Status::Ok();  // ()*: only the empty string
    unit = std::move(*nonempty);
    min = 0;
  } else if (Status st = Compile(node.kids[0], &unit); !st.ok()) {
    return st;
  }
  if (unit.empty()) return Status::Ok();  // (){m,n}
  if (min == 1 && node.max == 1) {
    out->insert(out->end(), unit.begin(), unit.end());
    return Status::Ok();
  }
  out->push_back(Repeat(g_, unit, min, node.max, Hint("rep")));
  return Account(node.offset);
}

Status Compiler::CompileNonEmpty(int n, std::optional<Sequence>* out) {
  const Node& node = nodes_[n];
  out->reset();
  if (!node.nullable) {
    Sequence seq;
    if (Status st = Compile(n, &seq); !st.ok()) return st;
    *out = std::move(seq);
    return Status::Ok();
  }
  switch (node.kind) {
    case Node::kAlt: {  // the non-empty part of each alternative
      std::vector<Sequence> alts;
      for (int kid : node.kids) {
        std::optional<Sequence> part;
        if (Status st = CompileNonEmpty(kid, &part); !st.ok()) return st;
        if (part) alts.push_back(std::move(*part));
      }
      return OneOf(std::move(alts), node.offset, out);
    }
    case Node::kConcat: {
      // Every part x1..xk is nullable; a non-empty string has a first
      // non-empty part: the union over i of (xi without "") x(i+1)..xk.
      // `rest` is x(i+1)..xk as at most one element, so this is linear.
      std::vector<Sequence> alts;
      Sequence rest;
      for (size_t i = node.kids.size(); i-- > 0;) {
        std::optional<Sequence> part;
        if (Status st = CompileNonEmpty(node.kids[i], &part); !st.ok()) return st;
        if (part) {
          part->insert(part->end(), rest.begin(), rest.end());
          alts.push_back(std::move(*part));
        }
        if (i == 0) break;  // x1..xk itself is not needed
        Sequence longer;
        if (Status st = Compile(node.kids[i], &longer); !st.ok()) return st;
        longer.insert(longer.end(), rest.begin(), rest.end());
        if (longer.size() > 1) {
          longer = {Group(g_, {std::move(longer)}, Hint("rest"))};
          if (Status st = Account(node.offset); !st.ok()) return st;
        }
        rest = std::move(longer);
      }
      return OneOf(std::move(alts), node.offset, out);
    }
    case Node::kRepeat: {
      // x{m,n} without "" is (x without ""){1,n} (x nullable, or m = 0).
      if (node.max == 0) return Status::Ok();
      std::optional<Sequence> unit;
      if (Status st = CompileNonEmpty(node.kids[0], &unit); !st.ok()) return st;
      if (!unit || node.max == 1) {
        *out = std::move(unit);
        return Status::Ok();
      }
      *out = Sequence{Repeat(g_, *unit, 1, node.max, Hint("rep"))};
      return Account(node.offset);
    }
    default:  // kEmpty (kChar and kClass are never nullable)
      return Status::Ok();
  }
}

Status Compiler::OneOf(std::vector<Sequence> alts, size_t offset, std::optional<Sequence>* out) {
  if (alts.empty()) {
    out->reset();
  } else if (alts.size() == 1) {
    *out = std::move(alts[0]);
  } else {
    *out = Sequence{Group(g_, std::move(alts), Hint("alt"))};
    return Account(offset);
  }
  return Status::Ok();
}

void Compiler::AppendChar(uint32_t cp, Sequence* out) const {
  std::string bytes;
  if (opts_.json_string) {
    bytes = JsonForm(cp);
  } else {
    AppendUtf8(cp, &bytes);
  }
  AppendLiteral(bytes, out);
}

// One code point of `ranges` (normalized, non-empty). In json_string mode:
// a CodepointClass of those written as themselves, or else one of the
// escapes (Escapes) of those that JSON writes escaped.
Status Compiler::Class(const Ranges& ranges, size_t offset, Element* out) {
  if (auto it = classes_.find(ranges); it != classes_.end()) {
    *out = it->second;
    return Status::Ok();
  }
  if (!opts_.json_string) {
    *out = CodepointClass(g_, ranges, false, Hint("class"));
  } else {
    // The code points JSON writes as themselves: U+0020-U+10FFFF but '"' and '\'.
    const Ranges itself = {{0x20, '"' - 1}, {'"' + 1, '\\' - 1}, {'\\' + 1, kMaxCodepoint}};
    Ranges plain;
    for (const auto& [lo, hi] : ranges) {
      for (const auto& [a, b] : itself) {
        if (std::max(lo, a) <= std::min(hi, b)) plain.push_back({std::max(lo, a), std::min(hi, b)});
      }
    }
    uint64_t mask = 0;
    for (int i = 0; i < kEscapedCount; ++i) {
      const uint32_t cp = EscapedCodepoint(i);
      for (const auto& [lo, hi] : ranges) {
        if (cp >= lo && cp <= hi) mask |= uint64_t{1} << i;
      }
    }
    Element escaped;
    if (mask != 0) {
      if (Status st = Escapes(mask, offset, &escaped); !st.ok()) return st;
    }
    if (plain.empty()) {
      *out = escaped;
    } else {
      *out = CodepointClass(g_, plain, false, Hint("class"));
      if (mask != 0) *out = Group(g_, {{*out}, {escaped}}, Hint("class"));
    }
  }
  classes_.emplace(ranges, *out);
  return Account(offset);
}

// One of the JSON escapes of the code points in `mask` (see
// EscapedCodepoint), factored by their shape: '\' and one letter (\" \\ \b
// \f \n \r \t), or "\u000" or "\u001" and one hex digit.
Status Compiler::Escapes(uint64_t mask, size_t offset, Element* out) {
  if (auto it = escapes_.find(mask); it != escapes_.end()) {
    *out = it->second;
    return Status::Ok();
  }
  ByteSet letters;
  ByteSet last_digit[2];  // of \u000X and \u001X
  for (int i = 0; i < kEscapedCount; ++i) {
    if (!(mask >> i & 1)) continue;
    const std::string form = JsonForm(EscapedCodepoint(i));
    if (form.size() == 2) {
      letters.Add(static_cast<uint8_t>(form[1]));
    } else {
      last_digit[form[4] - '0'].Add(static_cast<uint8_t>(form[5]));
    }
  }
  std::vector<Sequence> alts;
  if (!letters.Empty()) alts.push_back({Element::Byte('\\'), Element::Bytes(letters)});
  for (int high = 0; high < 2; ++high) {
    if (last_digit[high].Empty()) continue;
    Sequence seq;
    AppendLiteral(high == 0 ? "\\u000" : "\\u001", &seq);
    seq.push_back(Element::Bytes(last_digit[high]));
    alts.push_back(std::move(seq));
  }
  *out = Group(g_, std::move(alts), Hint("escape"));
  escapes_.emplace(mask, *out);
  return Account(offset);
}

// Any string at all (of code points, written as json_string says): what an
// unanchored pattern allows around its match.
Status Compiler::AnyString(Element* out) {
  if (!any_string_) {
    Element any;
    if (Status st = Class({{0, kMaxCodepoint}}, 0, &any); !st.ok()) return st;
    any_string_ = Repeat(g_, {any}, 0, kUnbounded, Hint("any"));
    if (Status st = Account(0); !st.ok()) return st;
  }
  *out = *any_string_;
  return Status::Ok();
}

Status Compiler::Account(size_t offset) {
  for (; counted_ < g_->rules.size(); ++counted_) {
    for (const Sequence& s : g_->rules[counted_].alts) elements_ += static_cast<long long>(s.size());
  }
  if (!had_overflow_ && !g_->overflow.empty()) return ErrorAt(offset, g_->overflow);
  if (elements_ > g_->limits.max_elements) {
    return ErrorAt(offset, "the pattern needs more than the grammar's " + std::to_string(g_->limits.max_elements) +
                               " elements");
  }
  if (static_cast<long long>(g_->rules.size()) > g_->limits.max_rules) {
    return ErrorAt(offset,
                   "the pattern needs more than the grammar's " + std::to_string(g_->limits.max_rules) + " rules");
  }
  return Status::Ok();
}

}  // namespace

Status AddRegex(std::string_view pattern, const RegexOptions& opts, Grammar* g, std::string_view name,
                Element* out) {
  Parser parser(pattern);
  std::vector<Branch> branches;
  if (Status st = parser.Parse(&branches); !st.ok()) return st;
  const int rule = g->AddRule(name);
  Compiler compiler(parser.nodes(), opts, g, rule);
  if (Status st = compiler.CompileRule(branches); !st.ok()) return st;
  *out = Element::Ref(rule);
  return Status::Ok();
}

Status RegexGrammar(std::string_view pattern, const GrammarLimits& limits, Grammar* out) {
  *out = Grammar();
  out->limits = limits;
  Element root;
  if (Status st = AddRegex(pattern, RegexOptions{}, out, "root", &root); !st.ok()) return st;
  out->root = root.rule;
  return Check(*out);
}

}  // namespace tw::grammar
