// GBNF (llama.cpp's grammar text format) to grammar::Grammar, for
// guided_grammar and llama-server's `grammar`.
//
// The format, as llama.cpp's grammars/README.md describes it and its parser
// (src/llama-grammar.cpp) implements it:
//   name ::= alternatives          a rule; names are [a-zA-Z0-9-]+ (we also
//                                  allow '_'); the root rule is `root`
//   "literal"                      with \n \r \t \\ \" \[ \] \xHH \uHHHH
//                                  \UHHHHHHHH (no other escapes)
//   [a-z0-9_] [^"\\]               character classes (code points), the same
//                                  escapes, ^ to negate; '-' just before ']'
//                                  is itself
//   .                              any code point
//   ( ... )  a | b                 grouping and alternation
//   * + ? {m} {m,} {m,n}           repetition of the item before (all of a
//                                  literal: "ab"* is ("ab")*)
//   # comment                      to the end of the line
// Characters are code points, so "\xE9" is U+00E9 (two bytes in UTF-8), not
// the byte E9. Blanks are spaces and tabs; line breaks are \n, \r\n or \r.
// A line break ends a rule, except inside parentheses, after '::=' or '|',
// or (our extension: llama.cpp refuses it) before a line starting with '|'.
// A rule may be used before its definition.
//
// Refused, with a message (llama.cpp accepts these): a rule defined twice
// (llama.cpp keeps the last definition), a reversed range [z-a] (it matches
// nothing there), an empty class [] or [^] (an element that is not there),
// {m,n} with n < m, escapes past U+10FFFF or naming a surrogate. Also
// refused: llama.cpp's token references <[id]>, <name> and !<...> (our
// grammars are over bytes), text that is not UTF-8, parentheses nested
// deeper than 256, a grammar past `limits`, and what Check refuses: left
// recursion, which includes a repetition of something that can match the
// empty string, like ("a"?)* (llama.cpp refuses left recursion too, but
// follows only rules with an empty alternative of their own, so it lets
// ("a"?)* through).
// Errors name the line and column (1-based, the column in bytes) or, for
// what Check finds, the line of the rule at fault: "line 3, column 14:
// expected '::=' after the rule name, found '='", "line 7, column 9: rule
// 'value' is referenced but never defined", "line 2: rule 'root/rep-star'
// is left-recursive (...)". Helper rules are named after their rule
// ("root/group", "root/class", "root/rep"), which no GBNF name can clash with.
//
// Threads: pure functions. Memory: the grammar's, within `limits` (counted
// as it is built, so no input makes more than about one repetition's worth
// past them); the text is read in place. *out is written only on success.
#pragma once

#include <string_view>

#include "common/status.h"
#include "grammar/grammar.h"

namespace tw::grammar {

Status ParseGbnf(std::string_view text, const GrammarLimits& limits, Grammar* out);

}  // namespace tw::grammar
