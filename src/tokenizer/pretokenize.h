// GPT-2's pre-tokenizer: splits text into the pieces that BPE runs on.
//
// It implements, by hand and over code points decoded from UTF-8, the regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// with the semantics of a backtracking regex alternation: at each position the
// first alternative that matches wins, each quantifier is greedy, and
// \s+(?!\S) gives back one whitespace character when the run is followed by a
// non-space (so "a   b" splits as "a", "  ", " b"). The contractions are
// case-sensitive ASCII, as in OpenAI's pattern. Classes come from unicode.h
// (Unicode White_Space for \s, as Python's `regex` module matches it).
//
// Bytes that are not well-formed UTF-8 are never dropped: each such byte is one
// "character" of class other ([^\s\p{L}\p{N}]), so every input byte lands in
// exactly one piece and the pieces concatenate back to the input.
//
// Thread-safety: pure functions; call from any thread. NextPieceEnd never
// allocates; SplitPieces allocates the returned vector (one view per piece).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace tw::tokenizer {

// The end (exclusive byte offset) of the piece that starts at `pos`: > pos
// while pos < text.size(); text.size() once pos is at or past the end.
size_t NextPieceEnd(std::string_view text, size_t pos);

// All pieces of `text`, in order; views into `text`.
std::vector<std::string_view> SplitPieces(std::string_view text);

}  // namespace tw::tokenizer
