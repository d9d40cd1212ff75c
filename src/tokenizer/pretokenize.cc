// The GPT-2 pre-tokenizer regex as a hand-written matcher; see pretokenize.h.
#include "tokenizer/pretokenize.h"

#include "tokenizer/unicode.h"

namespace tw::tokenizer {
namespace {

// End of the run of characters of class `cls` that starts at `pos`.
size_t RunEnd(std::string_view text, size_t pos, CharClass cls) {
  while (pos < text.size()) {
    const DecodedCodePoint d = DecodeUtf8At(text, pos);
    if (Classify(d.cp) != cls) break;
    pos += d.length;
  }
  return pos;
}

// Alternative 1: 's 't 're 've 'm 'll 'd. Returns the match length or 0.
// ASCII bytes never occur inside a multi-byte UTF-8 sequence, so bytes suffice.
size_t ContractionLength(std::string_view text, size_t pos) {
  if (text[pos] != '\'' || pos + 1 >= text.size()) return 0;
  const char a = text[pos + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 >= text.size()) return 0;
  const char b = text[pos + 2];
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

}  // namespace

size_t NextPieceEnd(std::string_view text, size_t pos) {
  if (pos >= text.size()) return text.size();
  if (size_t n = ContractionLength(text, pos)) return pos + n;

  const DecodedCodePoint first = DecodeUtf8At(text, pos);
  const CharClass first_class = Classify(first.cp);

  // Alternatives 2-4: ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`. With the
  // optional space taken, the run is of the class of the character after it.
  if (first.cp == ' ' && pos + 1 < text.size()) {
    const DecodedCodePoint second = DecodeUtf8At(text, pos + 1);
    const CharClass second_class = Classify(second.cp);
    if (second_class != CharClass::kWhitespace) return RunEnd(text, pos + 1, second_class);
  }
  if (first_class != CharClass::kWhitespace) return RunEnd(text, pos, first_class);

  // Alternatives 5 and 6 on a whitespace run [pos, end); last_start is where
  // its final character begins.
  size_t end = pos;
  size_t last_start = pos;
  while (end < text.size()) {
    const DecodedCodePoint d = DecodeUtf8At(text, end);
    if (!IsWhitespace(d.cp)) break;
    last_start = end;
    end += d.length;
  }
  if (end == text.size()) return end;     // \s+(?!\S): nothing follows
  if (last_start > pos) return last_start;  // \s+(?!\S): back off one character
  return end;                               // \s+: a lone space before a non-space
}

std::vector<std::string_view> SplitPieces(std::string_view text) {
  std::vector<std::string_view> pieces;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = NextPieceEnd(text, pos);
    pieces.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return pieces;
}

}  // namespace tw::tokenizer
