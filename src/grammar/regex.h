// Regular expressions to grammar::Grammar (guided_regex, and JSON Schema's
// `pattern` and `format`).
//
// The dialect (docs/structured-output.md lists it for users) is the common
// core of ECMA-262 and PCRE that describes a regular language:
//   literals and escapes   \n \r \t \f \v \0 \\ \. \xHH \uHHHH (a surrogate
//                          pair \uD83D\uDE00 is one code point) \u{H...}, and
//                          any escaped ASCII punctuation or space (\( \[ \{
//                          \* \/ ...); a lone ] or } is itself
//   classes                [abc] [a-z] [^...], with \d \w \s \D \W \S inside
//                          and outside classes (ASCII meanings), [\b] the
//                          backspace, and `.` (any code point but \n and \r)
//   groups                 ( ... ), (?: ... ), named (?<name> ... ) and
//                          (?P<name> ... ), nested at most 256 deep
//   alternation            a|b (an empty alternative matches "")
//   quantifiers            * + ? {m} {m,} {m,n} (m, n <= 100000); a lazy
//                          suffix (*? +? ?? {m,n}?) is accepted and means the
//                          same (only the language matters)
//   anchors                ^ at the start and $ at the end of the pattern or
//                          of a top-level alternative (^a|b$ is (^a)|(b$))
// Refused, naming the column: back-references (\1, \k<n>), lookaround
// ((?= (?! (?<= (?<!), word boundaries (\b \B), inline flags ((?i)), atomic
// groups and possessive quantifiers (a*+: unlike lazy ones they change the
// language), \p{...}, octal escapes, unknown letter escapes (\q), anchors
// anywhere else, a '{' that is not a quantifier, [] and [^], a nested '['
// in a class, a class that matches nothing, invalid UTF-8, and anything
// malformed (unbalanced parentheses, a quantifier with nothing to repeat,
// {m,n} with m > n, a class range out of order or with \d at an end).
//
// Matching is on code points (the pattern is UTF-8); the grammar matches
// their UTF-8 bytes.
//
// Threads: pure functions. Memory: the grammar's, within g->limits (a
// counted repetition expands into copies: x{1000} is 1000 elements; the
// limits are checked as the rules are built, and passing one is an error
// naming the quantifier's column). Never throws; recursion is bounded by
// the group nesting limit, whatever the pattern.
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

// Adds the language of `pattern` to *g as a new rule named `name` (helper
// rules are named `name`-...) and sets *out to a reference to it. On error
// *g may hold unused rules; the message is "regex column C: <what>" (C
// 1-based, in bytes of the pattern: where the offending construct starts --
// the backslash of an escape, the '(' of an unclosed or refused group, the
// quantifier of a repetition past the limits).
Status AddRegex(std::string_view pattern, const RegexOptions& opts, Grammar* g, std::string_view name,
                Element* out);

// A grammar (its root named "root") of the strings `pattern` matches whole.
Status RegexGrammar(std::string_view pattern, const GrammarLimits& limits, Grammar* out);

}  // namespace tw::grammar
