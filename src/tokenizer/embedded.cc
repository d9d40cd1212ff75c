// Embeds data/encoder.json and data/vocab.bpe with the assembler's .incbin.
//
// The path is absolute, built from TW_SOURCE_DIR (the repository root, set by
// the Makefile), so g++ and clang++ find the files wherever they are invoked.
// Each blob gets a begin and an end label in its own read-only section;
// .pushsection/.popsection leave the compiler's current section untouched.
// Note: make's -MMD does not see .incbin inputs; after changing the data files,
// touch this file (or `make clean`).
#include "tokenizer/embedded.h"

#ifndef TW_SOURCE_DIR
#error "TW_SOURCE_DIR (the repository root) must be defined by the build"
#endif

#define TW_EMBED_FILE(name, path)                 \
  ".pushsection .rodata.tw_embedded,\"a\"\n"      \
  ".balign 16\n"                                  \
  ".globl " name "_begin\n"                       \
  ".hidden " name "_begin\n"                      \
  name "_begin:\n"                                \
  ".incbin \"" TW_SOURCE_DIR "/" path "\"\n"      \
  ".globl " name "_end\n"                         \
  ".hidden " name "_end\n"                        \
  name "_end:\n"                                  \
  ".byte 0\n"                                     \
  ".popsection\n"

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
