// GPT-2 byte-level BPE tokenizer: text <-> token ids.
//
// Encode: the pre-tokenizer (pretokenize.h) cuts the text into pieces; each
// piece's bytes start as one token per byte and BPE repeatedly merges the
// adjacent pair with the lowest rank in the merges file (the leftmost first
// among equals), exactly as OpenAI's encoder.py. Decode concatenates token
// bytes; TokenBytes gives one token's bytes (not necessarily valid UTF-8: feed
// a stream of them to Utf8StreamDecoder, utf8_stream.h).
//
// Special token: "<|endoftext|>" (id 50256 in GPT-2) must be in the vocabulary.
// Encode() is *ordinary* encoding, like tiktoken's encode_ordinary: the literal
// text "<|endoftext|>" in a prompt is just text and becomes ordinary tokens
// (27, 91, 437, 1659, 5239, 91, 29), so user text can never inject a control
// token. EncodeWithSpecial() recognises the literal and emits the special id,
// like tiktoken's encode(text, allowed_special="all"); use it only for
// trusted text.
//
// Loading: a folder with Hugging Face's vocab.json + merges.txt, or OpenAI's
// encoder.json + vocab.bpe (the same data), or the copy embedded in the binary
// (embedded.h). Loading validates: ids unique and < vocab size, all 256 byte
// tokens present, every merge's two parts and its result in the vocabulary;
// errors name the file and the key or line. Loading takes ~100 ms; do it at
// start-up.
//
// Thread-safety: a loaded Tokenizer is immutable and may be shared by any
// number of threads (const methods only). The one mutable part, the per-word
// BPE cache, is guarded by a mutex held only for a lookup or an insert, never
// while merging.
//
// Allocation and bounds: the vocabulary (~50k tokens, ~2.5 MB) at load; file
// sizes bounded by TokenizerOptions; the BPE cache holds at most
// max_cache_entries words of at most max_cached_word_bytes bytes each (when
// full it is cleared, a simple bound that needs no LRU bookkeeping). Encode
// allocates O(input) and runs in O(n log n) per piece (a heap of candidate
// merges), so a long run of letters cannot make it quadratic; the caller
// bounds the input size (the HTTP body limit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace tw::tokenizer {

using TokenId = int32_t;

struct TokenizerOptions {
  size_t max_vocab_file_bytes = 8 << 20;   // vocab.json / encoder.json (GPT-2: 1,042,301)
  size_t max_merges_file_bytes = 4 << 20;  // merges.txt / vocab.bpe (GPT-2: 456,318)
  size_t max_cache_entries = 16384;        // words in the BPE cache
  size_t max_cached_word_bytes = 64;       // longer pieces are merged, not cached
};

struct TokenizerCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;  // pieces merged (cacheable or not)
  size_t entries = 0;
  uint64_t clears = 0;  // times the full cache was emptied
};

class Tokenizer {
 public:
  static constexpr std::string_view kEndOfText = "<|endoftext|>";

  Tokenizer();  // empty: loaded() is false until a Load* succeeds into it
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Loads `dir`/vocab.json + merges.txt if vocab.json exists, else
  // `dir`/encoder.json + vocab.bpe. On error *out is unchanged.
  static Status LoadFromDir(const std::string& dir, Tokenizer* out,
                            const TokenizerOptions& options = TokenizerOptions());
  // Loads the GPT-2 files embedded in the binary.
  static Status LoadEmbedded(Tokenizer* out, const TokenizerOptions& options = TokenizerOptions());
  // The model folder's own files win when it has any of the four names (and
  // then their errors are reported, never papered over); otherwise the
  // embedded copy. *source (optional) says which: the folder or "embedded".
  static Status LoadFromDirOrEmbedded(const std::string& dir, Tokenizer* out,
                                      std::string* source = nullptr,
                                      const TokenizerOptions& options = TokenizerOptions());
  // From file contents already in memory; the names are used in error messages.
  static Status LoadFromMemory(std::string_view vocab_json, std::string_view vocab_name,
                               std::string_view merges, std::string_view merges_name,
                               Tokenizer* out,
                               const TokenizerOptions& options = TokenizerOptions());

  bool loaded() const { return !token_bytes_.empty(); }
  size_t vocab_size() const { return token_bytes_.size(); }
  TokenId end_of_text_id() const { return end_of_text_id_; }
  size_t merge_count() const { return merges_.size(); }

  // Ordinary encoding: all text is text (see above). Appends nothing for "".
  std::vector<TokenId> Encode(std::string_view text) const;
  void EncodeAppend(std::string_view text, std::vector<TokenId>* out) const;
  // Also maps each literal "<|endoftext|>" to end_of_text_id().
  std::vector<TokenId> EncodeWithSpecial(std::string_view text) const;

  // Appends the bytes of `ids` to *out. An id outside [0, vocab_size) is an
  // error naming its index and value; *out then holds the bytes before it.
  Status Decode(std::span<const TokenId> ids, std::string* out) const;
  // The bytes of one token; an empty view for an id outside [0, vocab_size)
  // (no real token is empty, so empty means "no such token").
  std::string_view TokenBytes(TokenId id) const;

  TokenizerCacheStats cache_stats() const;

 private:
  struct Merge {
    int32_t rank;    // line order in the merges file: lower merges first
    TokenId merged;  // the token the pair becomes
  };
  struct Cache;

  static uint64_t PairKey(TokenId left, TokenId right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  const Merge* FindMerge(TokenId left, TokenId right) const;
  void EncodePiece(std::string_view piece, std::vector<TokenId>* out) const;
  void MergePiece(std::string_view piece, std::vector<TokenId>* out) const;

  std::vector<std::string> token_bytes_;  // raw bytes, indexed by id
  // TokenBytes' table: a token of up to 15 bytes in one 16-byte record (one
  // cache line holds four), so decoding a token costs one memory access;
  // len kLongToken sends the rare longer ones to token_bytes_.
  struct ShortToken {
    uint8_t len;
    char bytes[15];
  };
  static constexpr uint8_t kLongToken = 0xFF;
  std::vector<ShortToken> short_tokens_;
  TokenId byte_token_[256] = {};          // the single-byte tokens
  std::unordered_map<uint64_t, Merge> merges_;  // PairKey(left, right) -> merge
  TokenId end_of_text_id_ = -1;
  TokenizerOptions options_;
  std::unique_ptr<Cache> cache_;  // never null in a loaded tokenizer
};

}  // namespace tw::tokenizer
