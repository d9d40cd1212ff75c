// An Earley recognizer over grammar::Grammar: the tests' independent
// reference for what a grammar accepts (the matcher, grammar/matcher.h,
// works quite differently: a set of pushdown stacks advanced byte by byte).
// Slow (cubic) and obviously correct; nullable rules handled as Aycock and
// Horspool do (predicting a nullable rule also steps over it).
#pragma once

#include <string_view>

#include "grammar/grammar.h"

namespace tw::grammar::testing {

enum class Verdict {
  kReject,     // no string of the grammar starts with the input
  kPrefix,     // the input is a proper prefix of some string of the grammar
  kComplete,   // the input is a string of the grammar (it may also continue)
};

// What the grammar says of `input`. The grammar must pass Check().
Verdict Recognize(const Grammar& g, std::string_view input);

// Recognize(...) == kComplete.
inline bool Accepts(const Grammar& g, std::string_view input) {
  return Recognize(g, input) == Verdict::kComplete;
}
// Recognize(...) != kReject.
inline bool Viable(const Grammar& g, std::string_view input) { return Recognize(g, input) != Verdict::kReject; }

}  // namespace tw::grammar::testing
