// Grammars and vocabularies the tests of structured output share (the
// grammar, engine and runner suites): GPT-2's vocabulary (the embedded
// tokenizer's, loaded once) or a tokenizer's, a small synthetic vocabulary
// that can be checked exhaustively, and a JSON grammar built with the IR's
// builders alone (so that the matcher's tests need no front end).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "tokenizer/tokenizer.h"

namespace tw::grammar::testing {

// GPT-2's 50,257 tokens (end-of-text 50256 has no bytes).
std::shared_ptr<const Vocabulary> Gpt2Vocabulary();

// `tok`'s tokens as a model of `vocab_size` ids sees them (ids past the
// tokenizer, and end-of-text, have no bytes): what the server builds.
std::shared_ptr<const Vocabulary> VocabularyOf(const tokenizer::Tokenizer& tok, int vocab_size);

// root ::= "c1" | "c2" | ...
Grammar ChoiceGrammar(const std::vector<std::string>& choices);

// Any bytes at all, any number of them.
Grammar AnyBytesGrammar();

// Every string of 1..3 bytes over `alphabet`, then "<eos>" as the last id
// (no bytes).
std::shared_ptr<const Vocabulary> SmallVocabulary(const std::string& alphabet);

// JSON (RFC 8259 values; strings of any code point but controls, with the
// escapes), whitespace at most `max_ws` bytes between tokens.
Grammar JsonGrammar(int max_ws);

}  // namespace tw::grammar::testing
