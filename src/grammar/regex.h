// Regular expressions to grammar::Grammar (guided_regex, and JSON Schema's
// `pattern` and `format`).
//
// The dialect (docs/structured-output.md lists it for users) is the common
// core of ECMA-262 and PCRE that describes a regular language:
//   literals and escapes   \n \r \t \f \v \0 \\ \. \xHH \uHHHH \u{H...}, and
//                          any escaped punctuation (\( \[ \{ \* ...)
//   classes                [abc] [a-z] [^...], with \d \w \s \D \W \S inside
//                          and outside classes (ASCII meanings), and `.`
//                          (any code point but \n and \r)
//   groups                 ( ... ), (?: ... ), named (?<name> ... )
//   alternation            a|b
//   quantifiers            * + ? {m} {m,} {m,n}; a lazy or possessive suffix
//                          (*? ++ ...) is accepted and means the same (only
//                          the language matters)
//   anchors                ^ at the very start and $ at the very end only
// Refused, naming the column: back-references (\1, \k<n>), lookaround
// ((?= (?! (?<= (?<!), word boundaries (\b \B), inline flags ((?i)), and
// anything malformed (unbalanced parentheses, a quantifier with nothing to
// repeat, {m,n} with m > n, a class range out of order).
//
// Matching is on code points (the pattern is UTF-8); the grammar matches
// their UTF-8 bytes.
//
// Threads: pure functions. Memory: the grammar's, within g->limits (a
// counted repetition expands into copies: x{1000} is 1000 elements).
#pragma once

#include <string_view>

#include "common/status.h"
#include "grammar/grammar.h"

namespace tw::grammar {

struct RegexOptions {
  // true: the whole text must match (guided_regex). false: a match may
  // start and end anywhere (JSON Schema's `pattern`, ECMA-262's search),
  // unless the pattern itself starts with ^ or ends with $.
  bool anchored = true;
  // true: every code point the pattern matches is written as it appears
  // between the quotes of a JSON string -- '"' as \", '\' as \\, the
  // control characters as \b \f \n \r \t or \u00XX (lowercase hex), any
  // other code point as itself -- so that the rule generates the inside of
  // a JSON string whose decoded value matches (the quotes are the caller's).
  bool json_string = false;
};

// Adds the language of `pattern` to *g as a new rule named `name` and sets
// *out to a reference to it. On error *g may hold unused rules; the message
// is "regex column C: <what>" (C 1-based, in bytes of the pattern).
Status AddRegex(std::string_view pattern, const RegexOptions& opts, Grammar* g, std::string_view name,
                Element* out);

// A grammar (its root named "root") of the strings `pattern` matches whole.
Status RegexGrammar(std::string_view pattern, const GrammarLimits& limits, Grammar* out);

}  // namespace tw::grammar
