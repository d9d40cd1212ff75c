// Utf8StreamDecoder: a byte-at-a-time state machine over the well-formed
// UTF-8 table (Unicode Table 3-7). See utf8_stream.h.
#include "tokenizer/utf8_stream.h"

namespace tw::tokenizer {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

void Utf8StreamDecoder::Reset() {
  held_len_ = 0;
  need_ = 0;
  lo_ = 0x80;
  hi_ = 0xBF;
}

void Utf8StreamDecoder::PushByte(char c, std::string* out) {
  const uint8_t b = static_cast<uint8_t>(c);
  if (held_len_ > 0) {
    if (b >= lo_ && b <= hi_) {
      lo_ = 0x80;
      hi_ = 0xBF;
      if (held_len_ + 1 == need_) {  // the character is complete: emit it
        out->append(held_, held_len_);
        out->push_back(c);
        Reset();
      } else {
        held_[held_len_++] = c;
      }
      return;
    }
    // The held bytes are a maximal ill-formed subpart: replace them, then
    // look at `b` afresh as the possible start of a new character.
    out->append(kReplacement);
    Reset();
  }
  if (b < 0x80) {
    out->push_back(c);
    return;
  }
  if (b >= 0xC2 && b <= 0xDF) {
    need_ = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need_ = 3;
    if (b == 0xE0) lo_ = 0xA0;  // no overlong forms
    if (b == 0xED) hi_ = 0x9F;  // no surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    need_ = 4;
    if (b == 0xF0) lo_ = 0x90;  // no overlong forms
    if (b == 0xF4) hi_ = 0x8F;  // nothing over U+10FFFF
  } else {
    out->append(kReplacement);  // 80..C1 and F5..FF never start a character
    return;
  }
  held_[0] = c;
  held_len_ = 1;
}

void Utf8StreamDecoder::PushTo(std::string_view bytes, std::string* out) {
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    if (held_len_ == 0) {
      // Nothing held: a run of ASCII leaves in one append (most tokens are
      // ASCII, and a byte at a time costs a bounds check and a size update).
      size_t j = i;
      while (j < n && static_cast<uint8_t>(bytes[j]) < 0x80) ++j;
      if (j > i) {
        out->append(bytes.data() + i, j - i);
        i = j;
        continue;
      }
    }
    PushByte(bytes[i++], out);
  }
}

std::string Utf8StreamDecoder::Push(std::string_view bytes) {
  std::string out;
  PushTo(bytes, &out);
  return out;
}

void Utf8StreamDecoder::FlushTo(std::string* out) {
  if (held_len_ > 0) out->append(kReplacement);
  Reset();
}

std::string Utf8StreamDecoder::Flush() {
  std::string out;
  FlushTo(&out);
  return out;
}

std::string ToValidUtf8(std::string_view bytes) {
  Utf8StreamDecoder decoder;
  std::string out;
  out.reserve(bytes.size());
  decoder.PushTo(bytes, &out);
  decoder.FlushTo(&out);
  return out;
}

}  // namespace tw::tokenizer
