// libFuzzer target for the tokenizer layer. For any input bytes:
// - Encode then Decode gives back exactly the input (invalid UTF-8 included),
//   every id is in the vocabulary, and EncodeWithSpecial round-trips too;
// - the pre-tokenizer's pieces are non-empty and concatenate to the input;
// - Utf8StreamDecoder's output is valid UTF-8, the same whole and split in two
//   at a point chosen by the input, and equal to the input when it is valid;
// - loading the input as a vocabulary (first half) + merges (second half)
//   fails cleanly or succeeds, never crashes.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/embedded_tokenizer.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8_stream.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "tokenizer_fuzz: %s\n", what);
  std::abort();
}

bool Valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const tw::tokenizer::DecodedCodePoint d = tw::tokenizer::DecodeUtf8At(s, i);
    if (d.cp == tw::tokenizer::kInvalidCodePoint) return false;
    i += d.length;
  }
  return true;
}


}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tw::tokenizer;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Tokenizer& t = tw::fuzz::EmbeddedTokenizer();

  for (bool special : {false, true}) {
    const std::vector<TokenId> ids = special ? t.EncodeWithSpecial(text) : t.Encode(text);
    std::string back;
    if (!t.Decode(ids, &back).ok()) Fail("Decode rejected an id that Encode produced");
    if (back != text) Fail("Decode(Encode(x)) != x");
  }

  std::string joined;
  for (std::string_view p : SplitPieces(text)) {
    if (p.empty()) Fail("empty piece");
    joined.append(p);
  }
  if (joined != text) Fail("pieces do not concatenate to the input");

  const std::string whole = ToValidUtf8(text);
  if (!Valid(whole)) Fail("decoder output is not valid UTF-8");
  if (Valid(text) && whole != text) Fail("valid input changed by the decoder");
  const size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  Utf8StreamDecoder d;
  std::string split = d.Push(text.substr(0, cut));
  split += d.Push(text.substr(cut));
  split += d.Flush();
  if (split != whole) Fail("split decoding differs from whole decoding");

  Tokenizer loaded;
  (void)Tokenizer::LoadFromMemory(text.substr(0, size / 2), "vocab.json", text.substr(size / 2),
                                  "merges.txt", &loaded);
  return 0;
}
