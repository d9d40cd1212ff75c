#include "train/corpus.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include "common/file.h"

namespace tw::train {
namespace {

constexpr double kValFraction = 0.05;  // of one document's tokens
constexpr size_t kValEvery = 20;       // of several documents, every 20th

bool Blank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return false;
  }
  return true;
}

// A line holding only "%" (a fortune separator), with or without "\r".
bool Separator(std::string_view line) { return line == "%" || line == "%\r"; }

// The documents of `text`: fortunes, or the whole text. *fortune says which.
std::vector<std::string_view> Documents(std::string_view text, bool* fortune) {
  std::vector<std::string_view> docs;
  *fortune = false;
  size_t doc_begin = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t eol = text.find('\n', pos);
    const size_t next = eol == std::string_view::npos ? text.size() : eol + 1;
    const std::string_view line = text.substr(pos, (eol == std::string_view::npos ? text.size() : eol) - pos);
    if (Separator(line)) {
      *fortune = true;
      docs.push_back(text.substr(doc_begin, pos - doc_begin));
      doc_begin = next;
    }
    pos = next;
  }
  docs.push_back(text.substr(doc_begin));
  std::vector<std::string_view> kept;
  for (std::string_view d : docs) {
    if (!Blank(d)) kept.push_back(d);
  }
  return kept;
}

void Join(const std::vector<std::vector<int32_t>>& docs, size_t begin, size_t end, int32_t eot,
          std::vector<int32_t>* out) {
  for (size_t i = begin; i < end; ++i) {
    if (i > begin) out->push_back(eot);
    out->insert(out->end(), docs[i].begin(), docs[i].end());
  }
}

}  // namespace

Status SplitCorpus(std::string_view text, const tokenizer::Tokenizer& tok, Corpus* out) {
  Corpus c;
  c.bytes = text.size();
  const std::vector<std::string_view> docs = Documents(text, &c.fortune);
  if (docs.empty()) return Status::Error("no text (the corpus is empty or blank)");
  std::vector<std::vector<int32_t>> ids(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) ids[i] = tok.Encode(docs[i]);
  c.documents = static_cast<int>(docs.size());
  const int32_t eot = tok.end_of_text_id();
  if (docs.size() >= 2) {
    // Every kValEvery-th document validates (the last one when there are
    // fewer): spread over the whole file.
    std::vector<std::vector<int32_t>> train_docs, val_docs;
    for (size_t i = 0; i < docs.size(); ++i) {
      const bool val = docs.size() < kValEvery ? i + 1 == docs.size() : (i + 1) % kValEvery == 0;
      (val ? val_docs : train_docs).push_back(std::move(ids[i]));
    }
    c.val_documents = static_cast<int>(val_docs.size());
    Join(train_docs, 0, train_docs.size(), eot, &c.train);
    Join(val_docs, 0, val_docs.size(), eot, &c.val);
  } else {
    const std::vector<int32_t>& all = ids[0];
    const size_t val = static_cast<size_t>(std::ceil(all.size() * kValFraction));
    c.train.assign(all.begin(), all.end() - static_cast<std::ptrdiff_t>(val));
    c.val.assign(all.end() - static_cast<std::ptrdiff_t>(val), all.end());
  }
  *out = std::move(c);
  return Status::Ok();
}

Status LoadCorpus(const std::string& path, const tokenizer::Tokenizer& tok, Corpus* out) {
  std::string text;
  Status st = ReadFileBounded(path, kMaxCorpusBytes, &text);
  if (!st.ok()) return Status::Error("corpus: " + st.message());
  st = SplitCorpus(text, tok, out);
  if (!st.ok()) return Status::Error("corpus '" + path + "': " + st.message());
  return Status::Ok();
}

WindowSampler::WindowSampler(const std::vector<int32_t>& tokens, int seq, uint64_t seed)
    : tokens_(tokens), seq_(seq), rng_(seed, "training windows") {}

void WindowSampler::Next(int32_t* inputs, int32_t* targets) {
  const size_t starts = tokens_.size() - seq_;  // s in [0, size - seq - 1]
  size_t s = static_cast<size_t>(rng_.Uniform() * static_cast<double>(starts));
  if (s >= starts) s = starts - 1;
  std::memcpy(inputs, tokens_.data() + s, sizeof(int32_t) * seq_);
  std::memcpy(targets, tokens_.data() + s + 1, sizeof(int32_t) * seq_);
}

std::vector<size_t> EvenWindowStarts(size_t tokens, int seq, int count) {
  const size_t last = tokens - seq - 1;
  std::vector<size_t> out;
  for (int i = 0; i < count; ++i) {
    out.push_back(count == 1 ? 0 : static_cast<size_t>(static_cast<double>(last) * i / (count - 1)));
  }
  return out;
}

}  // namespace tw::train
