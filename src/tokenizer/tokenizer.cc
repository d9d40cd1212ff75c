// GPT-2 BPE: loading and validation of the vocabulary, BPE merging with a
// heap, the per-word cache. See tokenizer.h.
#include "tokenizer/tokenizer.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <queue>
#include <utility>

#include "common/file.h"
#include "common/mutex.h"
#include "json/json.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/embedded.h"
#include "tokenizer/pretokenize.h"

namespace tw::tokenizer {

// Hash and equality that accept std::string_view, so a cache lookup does not
// build a std::string (no allocation while holding the lock).
struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

struct Tokenizer::Cache {
  Mutex mu;
  std::unordered_map<std::string, std::vector<TokenId>, StringViewHash, std::equal_to<>> words
      TW_GUARDED_BY(mu);
  TokenizerCacheStats stats TW_GUARDED_BY(mu);
};

namespace {

// ---- file reading -------------------------------------------------------------

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// A token spelling for error messages: quoted, cut to a readable length.
std::string Quote(std::string_view s) {
  constexpr size_t kMaxShown = 40;
  std::string out = "\"";
  out.append(s.substr(0, kMaxShown));
  if (s.size() > kMaxShown) out.append("...");
  out.push_back('"');
  return out;
}

std::string Hex2(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", b);
  return buf;
}

// ---- BPE merge state ------------------------------------------------------------

// One symbol of the piece being merged: a doubly linked list over the
// original byte positions (merged-away symbols are unlinked).
struct Symbol {
  TokenId id;
  int32_t prev;  // index of the previous live symbol, -1 at the start
  int32_t next;  // index of the next live symbol, -1 at the end
};

// A pair that may be merged. Ordered by rank, then by position so that among
// equal ranks the leftmost merges first (encoder.py's left-to-right pass).
struct Candidate {
  int32_t rank;
  int32_t left;  // index of the left symbol
  TokenId left_id;
  TokenId right_id;
  bool operator>(const Candidate& o) const {
    return rank != o.rank ? rank > o.rank : left > o.left;
  }
};

}  // namespace

// ---- construction -----------------------------------------------------------------

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Status Tokenizer::LoadFromMemory(std::string_view vocab_json, std::string_view vocab_name,
                                 std::string_view merges, std::string_view merges_name,
                                 Tokenizer* out, const TokenizerOptions& options) {
  const std::string vname(vocab_name);
  const std::string mname(merges_name);
  if (vocab_json.size() > options.max_vocab_file_bytes) {
    return Status::Error(vname + ": " + std::to_string(vocab_json.size()) +
                         " bytes, over max_vocab_file_bytes " +
                         std::to_string(options.max_vocab_file_bytes));
  }
  if (merges.size() > options.max_merges_file_bytes) {
    return Status::Error(mname + ": " + std::to_string(merges.size()) +
                         " bytes, over max_merges_file_bytes " +
                         std::to_string(options.max_merges_file_bytes));
  }

  // -- the vocabulary: {"spelling": id, ...}
  json::Value doc;
  json::ParseLimits limits;
  limits.max_bytes = options.max_vocab_file_bytes;
  limits.max_depth = 2;
  if (Status s = json::Parse(vocab_json, &doc, limits); !s.ok()) {
    return Status::Error(vname + ": " + s.message());
  }
  if (!doc.is_object()) return Status::Error(vname + ": expected a JSON object of token -> id");
  const size_t vocab_size = doc.members().size();
  if (vocab_size < 257) {
    return Status::Error(vname + ": " + std::to_string(vocab_size) +
                         " entries; a byte-level BPE vocabulary needs the 256 byte tokens and " +
                         std::string(kEndOfText));
  }

  Tokenizer t;
  t.options_ = options;
  t.token_bytes_.assign(vocab_size, std::string());
  std::vector<const std::string*> spelling_of(vocab_size, nullptr);  // for duplicate reports
  std::unordered_map<std::string_view, TokenId> id_of_spelling;
  id_of_spelling.reserve(vocab_size);
  for (const auto& [spelling, value] : doc.members()) {
    if (!value.is_int()) {
      return Status::Error(vname + ": key " + Quote(spelling) + ": id is not an integer");
    }
    const int64_t id = value.as_int();
    if (id < 0 || static_cast<uint64_t>(id) >= vocab_size) {
      return Status::Error(vname + ": key " + Quote(spelling) + ": id " + std::to_string(id) +
                           " is outside [0, " + std::to_string(vocab_size) +
                           ") (ids must be unique and below the number of entries)");
    }
    if (spelling_of[id] != nullptr) {
      return Status::Error(vname + ": keys " + Quote(*spelling_of[id]) + " and " +
                           Quote(spelling) + " both have id " + std::to_string(id));
    }
    if (!id_of_spelling.emplace(spelling, static_cast<TokenId>(id)).second) {
      return Status::Error(vname + ": key " + Quote(spelling) + " appears twice");
    }
    spelling_of[id] = &spelling;
    if (spelling == kEndOfText) {
      t.token_bytes_[id] = spelling;
      t.end_of_text_id_ = static_cast<TokenId>(id);
    } else if (spelling.empty() || !UnmapTokenSpelling(spelling, &t.token_bytes_[id])) {
      return Status::Error(vname + ": key " + Quote(spelling) +
                           " is not a GPT-2 byte-level spelling (each character must be one of "
                           "the 256 byte-map code points)");
    }
  }
  if (t.end_of_text_id_ < 0) {
    return Status::Error(vname + ": the special token " + std::string(kEndOfText) + " is missing");
  }
  for (int b = 0; b < 256; ++b) {
    const std::string spelled = MapTokenBytes(std::string(1, static_cast<char>(b)));
    auto it = id_of_spelling.find(spelled);
    if (it == id_of_spelling.end()) {
      return Status::Error(vname + ": no token for byte " + Hex2(static_cast<uint8_t>(b)) +
                           " (spelled " + Quote(spelled) + ")");
    }
    t.byte_token_[b] = it->second;
  }

  // -- the merges: an optional "#version" line, then "left right" per line.
  size_t line_start = 0;
  int line_no = 0;
  int32_t rank = 0;
  t.merges_.reserve(vocab_size);
  std::string joined;
  while (line_start < merges.size()) {
    size_t line_end = merges.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = merges.size();
    std::string_view line = merges.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line_no == 1 && line.starts_with("#version")) continue;
    const std::string where = mname + " line " + std::to_string(line_no) + ": ";
    const size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos) {
      return Status::Error(where + "expected two tokens separated by one space, got " +
                           Quote(line));
    }
    const std::string_view left = line.substr(0, space);
    const std::string_view right = line.substr(space + 1);
    auto l = id_of_spelling.find(left);
    auto r = id_of_spelling.find(right);
    if (l == id_of_spelling.end() || r == id_of_spelling.end()) {
      return Status::Error(where + "token " + Quote(l == id_of_spelling.end() ? left : right) +
                           " is not in " + vname);
    }
    if (l->second == t.end_of_text_id_ || r->second == t.end_of_text_id_) {
      return Status::Error(where + "merges the special token " + std::string(kEndOfText));
    }
    joined.assign(left).append(right);
    auto m = id_of_spelling.find(joined);
    if (m == id_of_spelling.end()) {
      return Status::Error(where + "the merged token " + Quote(joined) + " is not in " + vname);
    }
    if (m->second == t.end_of_text_id_) {
      return Status::Error(where + "makes the special token " + std::string(kEndOfText));
    }
    if (!t.merges_.emplace(PairKey(l->second, r->second), Merge{rank, m->second}).second) {
      return Status::Error(where + "the pair " + Quote(line) + " was already listed");
    }
    ++rank;
  }

  t.cache_ = std::make_unique<Cache>();
  t.short_tokens_.assign(t.token_bytes_.size(), ShortToken{kLongToken, {}});
  for (size_t id = 0; id < t.token_bytes_.size(); ++id) {
    const std::string& b = t.token_bytes_[id];
    if (b.size() > sizeof(ShortToken::bytes)) continue;
    t.short_tokens_[id].len = static_cast<uint8_t>(b.size());
    std::memcpy(t.short_tokens_[id].bytes, b.data(), b.size());
  }
  *out = std::move(t);
  return Status::Ok();
}

Status Tokenizer::LoadFromDir(const std::string& dir, Tokenizer* out,
                              const TokenizerOptions& options) {
  std::string vocab_path = dir + "/vocab.json";
  std::string merges_path = dir + "/merges.txt";
  if (!FileExists(vocab_path)) {
    vocab_path = dir + "/encoder.json";
    merges_path = dir + "/vocab.bpe";
    if (!FileExists(vocab_path)) {
      return Status::Error(dir + ": no tokenizer files (expected vocab.json + merges.txt, or "
                                 "encoder.json + vocab.bpe)");
    }
  }
  std::string vocab, merges;
  if (Status s = ReadFileBounded(vocab_path, options.max_vocab_file_bytes, &vocab); !s.ok()) {
    return s;
  }
  if (Status s = ReadFileBounded(merges_path, options.max_merges_file_bytes, &merges); !s.ok()) {
    return s;
  }
  return LoadFromMemory(vocab, vocab_path, merges, merges_path, out, options);
}

Status Tokenizer::LoadEmbedded(Tokenizer* out, const TokenizerOptions& options) {
  return LoadFromMemory(EmbeddedEncoderJson(), "embedded encoder.json", EmbeddedVocabBpe(),
                        "embedded vocab.bpe", out, options);
}

Status Tokenizer::LoadFromDirOrEmbedded(const std::string& dir, Tokenizer* out,
                                        std::string* source, const TokenizerOptions& options) {
  for (const char* name : {"vocab.json", "merges.txt", "encoder.json", "vocab.bpe"}) {
    if (FileExists(dir + "/" + name)) {
      if (source != nullptr) *source = dir;
      return LoadFromDir(dir, out, options);
    }
  }
  if (source != nullptr) *source = "embedded";
  return LoadEmbedded(out, options);
}

// ---- encoding ---------------------------------------------------------------------

const Tokenizer::Merge* Tokenizer::FindMerge(TokenId left, TokenId right) const {
  auto it = merges_.find(PairKey(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

void Tokenizer::MergePiece(std::string_view piece, std::vector<TokenId>* out) const {
  const int32_t n = static_cast<int32_t>(piece.size());
  std::vector<Symbol> symbols(piece.size());
  for (int32_t i = 0; i < n; ++i) {
    symbols[i] = Symbol{byte_token_[static_cast<uint8_t>(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto consider = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = symbols[left].next;
    if (right < 0) return;
    if (const Merge* m = FindMerge(symbols[left].id, symbols[right].id)) {
      heap.push(Candidate{m->rank, left, symbols[left].id, symbols[right].id});
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);

  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& left = symbols[c.left];
    // Stale if either side has changed since the candidate was pushed (a
    // merged-away symbol has id -1). A pair that re-formed with the same ids
    // at the same position is a real current pair of the same rank: merge it.
    if (left.id != c.left_id || left.next < 0 || symbols[left.next].id != c.right_id) continue;
    const int32_t right = left.next;
    left.id = FindMerge(c.left_id, c.right_id)->merged;
    left.next = symbols[right].next;
    if (left.next >= 0) symbols[left.next].prev = c.left;
    symbols[right].prev = -1;
    symbols[right].next = -1;
    symbols[right].id = -1;  // dead
    consider(left.prev);
    consider(c.left);
  }
  for (int32_t i = 0; i >= 0 && i < n; i = symbols[i].next) out->push_back(symbols[i].id);
}

void Tokenizer::EncodePiece(std::string_view piece, std::vector<TokenId>* out) const {
  if (piece.size() == 1) {  // no merge possible; not worth the cache lock
    out->push_back(byte_token_[static_cast<uint8_t>(piece[0])]);
    return;
  }
  const bool cacheable = piece.size() <= options_.max_cached_word_bytes;
  if (cacheable) {
    MutexLock lock(cache_->mu);
    auto it = cache_->words.find(piece);
    if (it != cache_->words.end()) {
      ++cache_->stats.hits;
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = out->size();
  MergePiece(piece, out);
  MutexLock lock(cache_->mu);
  ++cache_->stats.misses;
  if (!cacheable || options_.max_cache_entries == 0) return;
  if (cache_->words.size() >= options_.max_cache_entries) {
    cache_->words.clear();
    ++cache_->stats.clears;
  }
  cache_->words.emplace(std::string(piece),
                        std::vector<TokenId>(out->begin() + first, out->end()));
}

void Tokenizer::EncodeAppend(std::string_view text, std::vector<TokenId>* out) const {
  if (!loaded()) return;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = NextPieceEnd(text, pos);
    EncodePiece(text.substr(pos, end - pos), out);
    pos = end;
  }
}

std::vector<TokenId> Tokenizer::Encode(std::string_view text) const {
  std::vector<TokenId> out;
  EncodeAppend(text, &out);
  return out;
}

std::vector<TokenId> Tokenizer::EncodeWithSpecial(std::string_view text) const {
  std::vector<TokenId> out;
  if (!loaded()) return out;
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(kEndOfText, pos);
    EncodeAppend(text.substr(pos, hit == std::string_view::npos ? std::string_view::npos
                                                                : hit - pos),
                 &out);
    if (hit == std::string_view::npos) break;
    out.push_back(end_of_text_id_);
    pos = hit + kEndOfText.size();
  }
  return out;
}

// ---- decoding ---------------------------------------------------------------------

std::string_view Tokenizer::TokenBytes(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= short_tokens_.size()) return {};
  const ShortToken& t = short_tokens_[static_cast<size_t>(id)];
  if (t.len != kLongToken) return std::string_view(t.bytes, t.len);
  return token_bytes_[static_cast<size_t>(id)];
}

Status Tokenizer::Decode(std::span<const TokenId> ids, std::string* out) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string_view bytes = TokenBytes(ids[i]);
    if (bytes.empty()) {
      return Status::Error("token id " + std::to_string(ids[i]) + " at index " +
                           std::to_string(i) + " is outside the vocabulary [0, " +
                           std::to_string(token_bytes_.size()) + ")");
    }
    out->append(bytes);
  }
  return Status::Ok();
}

TokenizerCacheStats Tokenizer::cache_stats() const {
  if (!cache_) return {};
  MutexLock lock(cache_->mu);
  TokenizerCacheStats s = cache_->stats;
  s.entries = cache_->words.size();
  return s;
}

}  // namespace tw::tokenizer
