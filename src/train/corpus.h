// Training text: a file read whole, cut into documents, tokenized with the
// project's GPT-2 BPE tokenizer (ordinary encoding: a literal
// "<|endoftext|>" in the text stays text), split into a training and a
// validation part, and cut into windows of T + 1 tokens.
//
// Documents: a `fortune` file (one with a line holding only "%") is one
// document per fortune, the "%" lines being the separators; any other file
// is one document. Empty and blank documents are dropped. Documents are
// joined with <|endoftext|> (the tokenizer's end_of_text_id, 50256 in
// GPT-2) between them, as GPT-2 saw its training text.
//
// Validation split: with two or more documents, every 20th of them (the
// 20th, 40th, ...; the last one when there are fewer than 20), so the
// held-out text is spread over the whole file, whose parts may differ in
// kind (the fortunes package's files are topics: a split of the last 5 %
// would validate on one of them); with one document, the last ceil(5 %) of
// its tokens.
//
// Windows: training windows start at positions drawn uniformly from a
// seeded xoshiro256** stream (model::TensorRng): inputs tokens[s, s + T),
// targets tokens[s + 1, s + T + 1). Validation windows are fixed: `count`
// starts evenly spaced over the split, so each evaluation sees the same
// tokens.
//
// Bounds: the file is at most kMaxCorpusBytes (read whole into memory,
// tokenized once: ~4 bytes per token of ids). Calling thread only;
// blocking file I/O. Never: allocates per window.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/random_weights.h"
#include "tokenizer/tokenizer.h"

namespace tw::train {

constexpr size_t kMaxCorpusBytes = size_t{1} << 30;

struct Corpus {
  std::vector<int32_t> train;  // documents joined by end-of-text
  std::vector<int32_t> val;
  size_t bytes = 0;       // of the file
  int documents = 0;      // non-empty documents
  int val_documents = 0;  // of them in `val` (0: a one-document file split by tokens)
  bool fortune = false;   // "%" separators found
};

// Reads, splits, tokenizes. Errors name the file: missing, unreadable,
// over kMaxCorpusBytes, or without a single non-blank document.
Status LoadCorpus(const std::string& path, const tokenizer::Tokenizer& tok, Corpus* out);

// The cut itself, for text already in memory (LoadCorpus reads the file
// and calls this).
Status SplitCorpus(std::string_view text, const tokenizer::Tokenizer& tok, Corpus* out);

// Random training windows over `tokens` (at least seq + 1 of them, which
// must outlive the sampler).
class WindowSampler {
 public:
  WindowSampler(const std::vector<int32_t>& tokens, int seq, uint64_t seed);
  // The next window: inputs (seq) and targets (seq).
  void Next(int32_t* inputs, int32_t* targets);

 private:
  const std::vector<int32_t>& tokens_;
  const int seq_;
  model::TensorRng rng_;
};

// `count` window starts spread evenly over [0, tokens - seq - 1] (the first
// at 0, the last at the end when count > 1). tokens >= seq + 1.
std::vector<size_t> EvenWindowStarts(size_t tokens, int seq, int count);

}  // namespace tw::train
