// GBNF (llama.cpp's grammar text format) to grammar::Grammar, for
// guided_grammar and llama-server's `grammar`.
//
// The format, as llama.cpp's grammars/README.md describes it:
//   name ::= alternatives          a rule; names are [a-zA-Z0-9-]+; the root
//                                  rule is `root`
//   "literal"                      with \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH
//   [a-z0-9_] [^"\\]               character classes (code points), the same
//                                  escapes, ^ to negate
//   .                              any code point
//   ( ... )  a | b                 grouping and alternation
//   * + ? {m} {m,} {m,n}           repetition
//   # comment                      to the end of the line
// Rules may span lines; a newline ends a rule unless the next line goes on
// inside parentheses or starts with |. (llama.cpp's token references
// <[id]> and <name> are refused: our grammars are over bytes.)
// Errors name the line and column (1-based): "line 3, column 14: expected
// '::='", "line 7: rule 'value' is referenced but never defined".
//
// Threads: pure functions. Memory: the grammar's, within `limits`.
#pragma once

#include <string_view>

#include "common/status.h"
#include "grammar/grammar.h"

namespace tw::grammar {

Status ParseGbnf(std::string_view text, const GrammarLimits& limits, Grammar* out);

}  // namespace tw::grammar
