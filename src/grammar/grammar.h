// Grammar: the one form every structured-output format compiles to (JSON
// Schema, regular expressions, choices, GBNF text), and what the token
// matcher (grammar/matcher.h) runs.
//
// A grammar is a context-free grammar over BYTES: rules, each a list of
// alternatives, each a sequence of elements; an element is one byte from a
// set of bytes (a ByteSet) or a reference to a rule. Working on bytes is what
// lets one automaton check GPT-2's tokens, which are byte strings and may
// end in the middle of a UTF-8 character. Characters enter a grammar as
// their UTF-8 bytes: a class of code points becomes a small rule of byte
// sequences (CodepointClass), a literal its bytes (AppendLiteral).
//
// The builders below are what the front ends share: AppendLiteral,
// CodepointClass, Repeat, Group. A front end adds rules with AddRule, fills
// them with AddAlt, and sets `root`. Check() then says whether the grammar
// can be matched: every rule defined and non-empty, references in range, no
// left recursion (a rule that can reach itself before consuming a byte, which
// a top-down matcher cannot run), and the size within GrammarLimits.
//
// Threads: a Grammar is a plain value (built on one thread, read from any
// once built). Memory: bounded by GrammarLimits (checked by Check; the
// builders themselves refuse a repetition past max_elements up front).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"

namespace tw::grammar {

// A set of bytes, 256 bits.
struct ByteSet {
  uint64_t bits[4] = {0, 0, 0, 0};

  static ByteSet Of(uint8_t b) {
    ByteSet s;
    s.Add(b);
    return s;
  }
  static ByteSet Range(uint8_t lo, uint8_t hi) {
    ByteSet s;
    s.AddRange(lo, hi);
    return s;
  }
  void Add(uint8_t b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  void AddRange(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) Add(static_cast<uint8_t>(b));
  }
  void AddAll(const ByteSet& o) {
    for (int i = 0; i < 4; ++i) bits[i] |= o.bits[i];
  }
  bool Has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  bool Empty() const { return (bits[0] | bits[1] | bits[2] | bits[3]) == 0; }
  bool operator==(const ByteSet& o) const {
    return bits[0] == o.bits[0] && bits[1] == o.bits[1] && bits[2] == o.bits[2] && bits[3] == o.bits[3];
  }
};

struct Element {
  enum Kind : uint8_t { kBytes, kRule };
  Kind kind = kBytes;
  int32_t rule = -1;  // kRule: an index into Grammar::rules
  ByteSet bytes;      // kBytes: one byte from this set (never empty)

  static Element Bytes(const ByteSet& s) {
    Element e;
    e.bytes = s;
    return e;
  }
  static Element Byte(uint8_t b) { return Bytes(ByteSet::Of(b)); }
  static Element Ref(int32_t rule) {
    Element e;
    e.kind = kRule;
    e.rule = rule;
    return e;
  }
};

// One alternative; empty means the empty string.
using Sequence = std::vector<Element>;

struct Rule {
  std::string name;
  std::vector<Sequence> alts;
};

// Bounds on one grammar (the server's --grammar-* flags fill them).
struct GrammarLimits {
  int max_rules = 20000;
  // Elements over every alternative of every rule.
  int max_elements = 200000;
};

// Repeat's "no upper bound".
inline constexpr int kUnbounded = -1;

// The largest Unicode scalar value.
inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

class Grammar {
 public:
  // A new rule with no alternatives yet; its index. A name already taken
  // gets a numeric suffix ("string" -> "string-2"), so front ends may name
  // helper rules freely.
  int AddRule(std::string_view name);
  // The rule named `name`, or -1.
  int FindRule(std::string_view name) const;
  void AddAlt(int rule, Sequence seq) { rules[rule].alts.push_back(std::move(seq)); }

  // Counts every element of every alternative.
  int CountElements() const;

  // The grammar's text, one rule per line in a GBNF-like notation (byte sets
  // as [\x41-\x5a] classes): for error messages, tests and debugging.
  std::string ToString() const;

  // Rules are added through AddRule only (it keeps the name index).
  std::vector<Rule> rules;
  int root = -1;
  // Set by the builders when a limit was passed (Check reports it).
  std::string overflow;
  // The bounded repetitions Repeat built, for the matcher: counts of a unit
  // that no token is long enough to tell apart share one table there
  // (matcher.h). `rule` holds `min` copies of the `unit_size`-element unit,
  // then a reference to opts.back() (or to the unbounded tail, or nothing);
  // opts[k - 1] is "up to k more": (unit opts[k - 2] | ""). A hint only:
  // the matcher checks the rules still have that shape before using one.
  struct Counted {
    int32_t rule = -1;
    int32_t min = 0;
    int32_t unit_size = 1;
    std::vector<int32_t> opts;
  };
  std::vector<Counted> counted;
  GrammarLimits limits;

 private:
  std::unordered_map<std::string, int> names_;       // rule name -> index
  std::unordered_map<std::string, int> next_suffix_;  // name -> the next suffix to try
};

// OK, or the first problem, naming the rule: "rule 'value' is referenced but
// never defined", "rule 'expr' is left-recursive (expr -> term -> expr)",
// "the grammar has 250000 elements (at most 200000: --grammar-max-elements)".
Status Check(const Grammar& g);

// Appends the bytes of `text`, one element each.
void AppendLiteral(std::string_view text, Sequence* seq);

// `ranges` (inclusive [lo, hi] pairs of code points, in any order,
// overlapping allowed; a reversed pair is swapped, anything past U+10FFFF
// dropped) sorted and merged, the complement within U+0000..U+10FFFF when
// `negated`, surrogates D800-DFFF removed. Empty: no code point.
std::vector<std::pair<uint32_t, uint32_t>> NormalizeCodepoints(std::vector<std::pair<uint32_t, uint32_t>> ranges,
                                                              bool negated);

// One code point from `ranges` (inclusive [lo, hi] pairs of Unicode scalar
// values, in any order, overlapping allowed), or, when `negated`, one code
// point from outside them (surrogates D800-DFFF are never matched). The
// result is a single byte-set element when every code point is ASCII, and
// otherwise a reference to a new rule (named `hint`) whose alternatives are
// the UTF-8 byte sequences of the set. An empty set gives a reference to a
// rule with no alternatives, which Check refuses naming it.
Element CodepointClass(Grammar* g, std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated,
                       std::string_view hint);

// A new rule (named `hint`) with these alternatives, as a reference.
Element Group(Grammar* g, std::vector<Sequence> alts, std::string_view hint);

// One of `literals` (byte strings; repeats and order do not matter), as a
// reference to a trie of rules: the literals' shared prefixes are one path,
// so a matcher holds one parse however many literals are alive (an enum of
// 300 names, a choice list). At least one literal; "" is allowed.
Element Literals(Grammar* g, std::vector<std::string> literals, std::string_view hint);

// `body` repeated min..max times (max = kUnbounded for no bound; 0 <= min,
// min <= max otherwise), as a reference to a new rule named `hint`. Unbounded
// repetition is right-recursive (the matcher runs it in constant stack);
// a bounded tail is nested optionals. A repetition whose expansion passes
// g->limits.max_elements sets g->overflow and builds nothing past the bound.
Element Repeat(Grammar* g, const Sequence& body, int min, int max, std::string_view hint);

// Appends the UTF-8 encoding of code point `cp` (<= kMaxCodepoint) to *out.
void AppendUtf8(uint32_t cp, std::string* out);

}  // namespace tw::grammar
