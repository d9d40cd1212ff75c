// Embeds data/encoder.json and data/vocab.bpe (common/embed.h).
// The Makefile lists the two files as prerequisites of this object.
#include "tokenizer/embedded.h"

#include "common/embed.h"

asm(TW_EMBED_FILE("tw_embedded_encoder_json", "src/tokenizer/data/encoder.json")
        TW_EMBED_FILE("tw_embedded_vocab_bpe", "src/tokenizer/data/vocab.bpe"));

extern "C" {
extern const char tw_embedded_encoder_json_begin[];
extern const char tw_embedded_encoder_json_end[];
extern const char tw_embedded_vocab_bpe_begin[];
extern const char tw_embedded_vocab_bpe_end[];
}

namespace tw::tokenizer {

std::string_view EmbeddedEncoderJson() {
  return std::string_view(tw_embedded_encoder_json_begin,
                          tw_embedded_encoder_json_end - tw_embedded_encoder_json_begin);
}

std::string_view EmbeddedVocabBpe() {
  return std::string_view(tw_embedded_vocab_bpe_begin,
                          tw_embedded_vocab_bpe_end - tw_embedded_vocab_bpe_begin);
}

}  // namespace tw::tokenizer
