// GPT-2 tokenizer: third-party vectors, loading paths, validation errors,
// special token, cache bound and thread-safety, and a differential check
// against an independent, naive implementation of encoder.py's BPE loop.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "json/json.h"
#include "support/chunking.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/embedded.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/test_vectors.h"

namespace tw::tokenizer {
namespace {

using testing::LoadOracleVectors;
using testing::LoadTiktokenVectors;
using testing::SharedTokenizer;
using testing::Vector;

const std::string kDataDir = std::string(TW_SOURCE_DIR) + "/src/tokenizer/data";

std::string ReadOrFail(const std::string& path) {
  bool ok = false;
  std::string bytes = tw::testing::ReadFile(path, &ok);
  EXPECT_TRUE(ok) << "cannot read " << path;
  return bytes;
}

// A fresh directory under $TMPDIR (or /tmp), removed with its files.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string templ = std::string(base != nullptr ? base : "/tmp") + "/tw_tokenizer_XXXXXX";
    path_ = mkdtemp(templ.data()) != nullptr ? templ : std::string();
    EXPECT_FALSE(path_.empty()) << "mkdtemp failed";
  }
  ~TempDir() {
    for (const std::string& f : files_) unlink(f.c_str());
    rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }
  void Write(const std::string& name, std::string_view bytes) {
    const std::string full = path_ + "/" + name;
    std::ofstream f(full, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    EXPECT_TRUE(f.good()) << "writing " << full;
    files_.push_back(full);
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

void ExpectVectorsPass(const Tokenizer& t, const std::vector<Vector>& vectors) {
  for (const Vector& v : vectors) {
    const std::vector<TokenId> got = v.allowed_special ? t.EncodeWithSpecial(v.text) : t.Encode(v.text);
    EXPECT_EQ(got, v.tokens) << v.id;
    std::string decoded;
    ASSERT_TRUE(t.Decode(v.tokens, &decoded).ok()) << v.id;
    EXPECT_EQ(decoded, v.text) << v.id;
  }
}

// ---- third-party vectors ----------------------------------------------------------

TEST(TokenizerVectors, TiktokenTestsEncodeAndDecodeExactly) {
  const std::vector<Vector> vectors = LoadTiktokenVectors();
  ASSERT_EQ(vectors.size(), 20u);
  EXPECT_EQ(std::count_if(vectors.begin(), vectors.end(),
                          [](const Vector& v) { return v.allowed_special; }),
            1);
  ExpectVectorsPass(SharedTokenizer(), vectors);
}

TEST(TokenizerVectors, OracleVectorsEncodeAndDecodeExactly) {
  const std::vector<Vector> vectors = LoadOracleVectors();
  ASSERT_EQ(vectors.size(), 481u);
  size_t total_tokens = 0;
  for (const Vector& v : vectors) total_tokens += v.tokens.size();
  EXPECT_EQ(total_tokens, 92206u);  // as the vectors' README states
  ExpectVectorsPass(SharedTokenizer(), vectors);
}

TEST(TokenizerVectors, EmbeddedCopyPassesTooAndEqualsTheDataFiles) {
  EXPECT_EQ(EmbeddedEncoderJson(), ReadOrFail(kDataDir + "/encoder.json"));
  EXPECT_EQ(EmbeddedVocabBpe(), ReadOrFail(kDataDir + "/vocab.bpe"));
  Tokenizer t;
  Status s = Tokenizer::LoadEmbedded(&t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.vocab_size(), 50257u);
  EXPECT_EQ(t.merge_count(), 50000u);
  ExpectVectorsPass(t, LoadTiktokenVectors());
  ExpectVectorsPass(t, LoadOracleVectors());
}

// ---- vocabulary facts ---------------------------------------------------------------

TEST(Tokenizer, SizesAndSpecialToken) {
  const Tokenizer& t = SharedTokenizer();
  ASSERT_TRUE(t.loaded());
  EXPECT_EQ(t.vocab_size(), 50257u);
  EXPECT_EQ(t.merge_count(), 50000u);
  EXPECT_EQ(t.end_of_text_id(), 50256);
  EXPECT_EQ(t.TokenBytes(50256), "<|endoftext|>");
  // Ordinary encoding never produces the special id, whatever the text says.
  const std::vector<TokenId> plain = t.Encode("<|endoftext|>");
  EXPECT_EQ(plain, (std::vector<TokenId>{27, 91, 437, 1659, 5239, 91, 29}));
  EXPECT_EQ(std::find(plain.begin(), plain.end(), 50256), plain.end());
  // With specials recognised, each literal occurrence is one id.
  const std::vector<TokenId> special = t.EncodeWithSpecial("a<|endoftext|><|endoftext|> b<|endoftext");
  std::vector<TokenId> expected = t.Encode("a");
  expected.push_back(50256);
  expected.push_back(50256);
  for (TokenId id : t.Encode(" b<|endoftext")) expected.push_back(id);
  EXPECT_EQ(special, expected);
  EXPECT_TRUE(t.Encode("").empty());
  EXPECT_TRUE(t.EncodeWithSpecial("").empty());
  EXPECT_EQ(t.EncodeWithSpecial("<|endoftext|>"), (std::vector<TokenId>{50256}));
}

// TokenBytes keeps short tokens in fixed records and longer ones apart:
// every id of encoder.json, both kinds, spells back to its key.
TEST(Tokenizer, TokenBytesOfEveryTokenSpellsItsKey) {
  const Tokenizer& t = SharedTokenizer();
  json::Value encoder;
  json::ParseLimits lim;
  lim.max_bytes = 4 << 20;
  ASSERT_TRUE(json::Parse(EmbeddedEncoderJson(), &encoder, lim).ok());
  size_t longer_than_15 = 0, checked = 0;
  for (const auto& [spelling, id] : encoder.members()) {
    std::string_view bytes = t.TokenBytes(static_cast<TokenId>(id.as_int()));
    if (spelling == "<|endoftext|>") continue;  // the special token is not byte-mapped
    ASSERT_EQ(MapTokenBytes(bytes), spelling) << id.as_int();
    if (bytes.size() > 15) longer_than_15++;
    checked++;
  }
  EXPECT_EQ(checked, 50256u);
  EXPECT_GT(longer_than_15, 0u);
}

TEST(Tokenizer, TokenBytesAndDecodeOfBadIds) {
  const Tokenizer& t = SharedTokenizer();
  EXPECT_EQ(t.TokenBytes(0), "!");
  EXPECT_EQ(t.TokenBytes(220), " ");
  EXPECT_EQ(t.TokenBytes(198), "\n");
  EXPECT_EQ(t.TokenBytes(31373), "hello");
  EXPECT_EQ(t.TokenBytes(995), " world");
  EXPECT_TRUE(t.TokenBytes(-1).empty());
  EXPECT_TRUE(t.TokenBytes(50257).empty());
  EXPECT_TRUE(t.TokenBytes(INT32_MAX).empty());
  // Every real token is non-empty, so an empty view really means "no token".
  for (TokenId id = 0; id < 50257; ++id) ASSERT_FALSE(t.TokenBytes(id).empty()) << id;

  std::string out;
  const std::vector<TokenId> ids = {31373, 995, 50257, 0};
  Status s = t.Decode(ids, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("50257"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("index 2"), std::string::npos) << s.message();
  EXPECT_EQ(out, "hello world");  // the bytes before the bad id
}

TEST(Tokenizer, InvalidUtf8InputRoundTripsByteForByte) {
  const Tokenizer& t = SharedTokenizer();
  const std::string inputs[] = {"\xFF\xFE abc\x80", "caf\xC3", "\xE2\x82 \xE2\x82\xAC!",
                                std::string("a\0b", 3), "\xF0\x9F\x98 x \xED\xA0\x80"};
  for (const std::string& text : inputs) {
    const std::vector<TokenId> ids = t.Encode(text);
    std::string back;
    ASSERT_TRUE(t.Decode(ids, &back).ok());
    EXPECT_EQ(back, text);
  }
}

// Single pieces of 50k-200k bytes. With the heap these take milliseconds; a
// quadratic merge loop would take minutes and blow the suite's time budget.
// (No wall-clock assertion: it would be flaky under sanitizers and load.)
TEST(Tokenizer, LongRunsRoundTrip) {
  const Tokenizer& t = SharedTokenizer();
  for (const std::string& text :
       {std::string(200000, 'x'), std::string(100000, ' '), std::string(50000, '7'),
        std::string(60000, '!') + std::string(60000, 'a')}) {
    std::string back;
    ASSERT_TRUE(t.Decode(t.Encode(text), &back).ok());
    EXPECT_EQ(back, text);
  }
}

// ---- loading ---------------------------------------------------------------------------

void ExpectSameTokenizer(const Tokenizer& a, const Tokenizer& b) {
  ASSERT_EQ(a.vocab_size(), b.vocab_size());
  EXPECT_EQ(a.merge_count(), b.merge_count());
  EXPECT_EQ(a.end_of_text_id(), b.end_of_text_id());
  for (TokenId id = 0; id < static_cast<TokenId>(a.vocab_size()); ++id) {
    ASSERT_EQ(a.TokenBytes(id), b.TokenBytes(id)) << id;
  }
  // Same merges and ranks, checked through their effect (every 4th vector).
  const std::vector<Vector> vectors = LoadOracleVectors();
  for (size_t i = 0; i < vectors.size(); i += 4) {
    ASSERT_EQ(a.Encode(vectors[i].text), vectors[i].tokens) << vectors[i].id;
    ASSERT_EQ(b.Encode(vectors[i].text), vectors[i].tokens) << vectors[i].id;
  }
}

TEST(TokenizerLoad, HuggingFacePairGivesTheSameTokenizer) {
  // Hugging Face's vocab.json is the same mapping, written compactly; write it
  // with the members in reverse order to show that order does not matter.
  json::Value doc;
  ASSERT_TRUE(json::Parse(ReadOrFail(kDataDir + "/encoder.json"), &doc,
                          json::ParseLimits{.max_bytes = 4 << 20, .max_depth = 4})
                  .ok());
  std::reverse(doc.members().begin(), doc.members().end());
  TempDir dir;
  dir.Write("vocab.json", json::Serialize(doc));
  dir.Write("merges.txt", ReadOrFail(kDataDir + "/vocab.bpe"));
  Tokenizer hf;
  Status s = Tokenizer::LoadFromDir(dir.path(), &hf);
  ASSERT_TRUE(s.ok()) << s.message();
  ExpectSameTokenizer(hf, SharedTokenizer());
}

TEST(TokenizerLoad, ModelFolderWinsOverTheEmbeddedCopy) {
  TempDir empty;
  Tokenizer t;
  std::string source;
  Status s = Tokenizer::LoadFromDirOrEmbedded(empty.path(), &t, &source);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(source, "embedded");
  EXPECT_EQ(t.vocab_size(), 50257u);

  // A folder with files: they are used, and their errors are not hidden by a
  // silent fall-back to the embedded copy.
  TempDir broken;
  broken.Write("encoder.json", "{}");
  broken.Write("vocab.bpe", "#version: 0.2\n");
  s = Tokenizer::LoadFromDirOrEmbedded(broken.path(), &t, &source);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(source, broken.path());
  EXPECT_NE(s.message().find(broken.path() + "/encoder.json"), std::string::npos) << s.message();

  s = Tokenizer::LoadFromDirOrEmbedded(kDataDir, &t, &source);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(source, kDataDir);
}

TEST(TokenizerLoad, MissingFilesNameWhatIsMissing) {
  Tokenizer t;
  TempDir empty;
  Status s = Tokenizer::LoadFromDir(empty.path(), &t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("vocab.json + merges.txt"), std::string::npos) << s.message();

  TempDir half;
  half.Write("vocab.json", ReadOrFail(kDataDir + "/encoder.json"));
  s = Tokenizer::LoadFromDir(half.path(), &t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("merges.txt"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("No such file"), std::string::npos) << s.message();
  EXPECT_FALSE(t.loaded());  // *out untouched on error
}

// A minimal valid byte-level vocabulary in encoder.json's format: the 256
// byte tokens in encoder.py's order ("!" = 0, "\"" = 1, ...), then "Ġt" = 256,
// "he" = 257, "<|endoftext|>" = 258; merges "Ġ t" (line 2) and "h e" (line 3).
struct MiniFiles {
  std::string vocab;
  std::string merges = "#version: 0.2\n\xC4\xA0 t\nh e\n";
};

MiniFiles MakeMiniFiles() {
  std::vector<int> order;
  for (int b = '!'; b <= '~'; ++b) order.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) order.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) order.push_back(b);
  for (int b = 0; b < 256; ++b) {
    if (std::find(order.begin(), order.end(), b) == order.end()) order.push_back(b);
  }
  MiniFiles f;
  f.vocab = "{";
  int id = 0;
  auto add = [&](std::string_view spelled) {
    if (id > 0) f.vocab += ", ";
    json::AppendQuoted(&f.vocab, spelled);
    f.vocab += ": " + std::to_string(id++);
  };
  for (int b : order) add(MapTokenBytes(std::string(1, static_cast<char>(b))));
  add("\xC4\xA0t");
  add("he");
  add("<|endoftext|>");
  f.vocab += "}";
  return f;
}

TEST(TokenizerLoad, MiniVocabularyLoads) {
  const MiniFiles f = MakeMiniFiles();
  Tokenizer t;
  Status s = Tokenizer::LoadFromMemory(f.vocab, "encoder.json", f.merges, "vocab.bpe", &t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.vocab_size(), 259u);
  EXPECT_EQ(t.merge_count(), 2u);
  EXPECT_EQ(t.end_of_text_id(), 258);
  EXPECT_EQ(t.Encode(" the"), (std::vector<TokenId>{256, 257}));
  EXPECT_EQ(t.Encode("!\""), (std::vector<TokenId>{0, 1}));
}

// Loads the mini files with one textual edit applied to one of them and
// expects an error that mentions every string in `expect`.
struct CorruptCase {
  const char* name;
  bool in_vocab;        // edit encoder.json (else vocab.bpe)
  std::string find;     // replaced once; "" appends `replace` instead
  std::string replace;
  std::vector<std::string> expect;
};

TEST(TokenizerLoad, CorruptFilesGiveClearErrors) {
  const MiniFiles mini = MakeMiniFiles();
  const std::vector<CorruptCase> cases = {
      {"not json", true, "{\"!\": 0", "{\"!\": 0,,", {"encoder.json", "at byte 8"}},
      {"id not an integer", true, "\"!\": 0,", "\"!\": \"zero\",", {"encoder.json", "\"!\"", "not an integer"}},
      {"id out of range", true, "\"!\": 0,", "\"!\": 259,", {"encoder.json", "\"!\"", "259", "outside [0, 259)"}},
      {"negative id", true, "\"!\": 0,", "\"!\": -1,", {"encoder.json", "\"!\"", "-1"}},
      {"duplicate id", true, "\"\\\"\": 1,", "\"\\\"\": 0,", {"encoder.json", "\"!\"", "both have id 0"}},
      {"duplicate key", true, "\"\\\"\": 1,", "\"!\": 1,", {"encoder.json", "\"!\"", "appears twice"}},
      {"not a byte-level spelling", true, "\"!\": 0,", "\"\xE4\xB8\xAD\": 0,", {"encoder.json", "\xE4\xB8\xAD", "byte-level"}},
      {"missing byte token", true, "\"!\": 0,", "\"\xC4\x80\xC4\x80\xC4\x80\xC4\x80\xC4\x80\": 0,", {"encoder.json", "byte 0x21"}},
      {"missing special token", true, "\"<|endoftext|>\"", "\"\xC4\x80\xC4\x80\xC4\x80\xC4\x80\xC4\x80\"", {"encoder.json", "<|endoftext|>", "missing"}},
      {"merge with one token", false, "", "abc\n", {"vocab.bpe line 4", "two tokens", "\"abc\""}},
      {"merge with three tokens", false, "", "a b c\n", {"vocab.bpe line 4", "two tokens"}},
      {"merge with two spaces", false, "", "a  b\n", {"vocab.bpe line 4", "two tokens"}},
      {"merge part not in vocab", false, "", "\xC4\xA0t zzzzzzzzzqq\n", {"vocab.bpe line 4", "\"zzzzzzzzzqq\"", "not in", "encoder.json"}},
      {"merge result not in vocab", false, "", "\xC4\x80 \xC4\x80\n", {"vocab.bpe line 4", "merged token", "\"\xC4\x80\xC4\x80\""}},
      {"duplicate merge", false, "", "\xC4\xA0 t\n", {"vocab.bpe line 4", "already listed"}},
      {"error after a blank line", false, "", "\n\nx\n", {"vocab.bpe line 6", "two tokens"}},
      {"merge of the special token", false, "", "<|endoftext|> !\n", {"vocab.bpe line 4", "merges the special token <|endoftext|>"}},
  };
  for (const CorruptCase& c : cases) {
    std::string v = mini.vocab, m = mini.merges;
    std::string& target = c.in_vocab ? v : m;
    if (c.find.empty()) {
      target += c.replace;
    } else {
      const size_t at = target.find(c.find);
      ASSERT_NE(at, std::string::npos) << c.name;
      target.replace(at, c.find.size(), c.replace);
    }
    Tokenizer t;
    Status s = Tokenizer::LoadFromMemory(v, "encoder.json", m, "vocab.bpe", &t);
    ASSERT_FALSE(s.ok()) << c.name;
    for (const std::string& e : c.expect) {
      EXPECT_NE(s.message().find(e), std::string::npos) << c.name << ": " << s.message();
    }
    EXPECT_FALSE(t.loaded()) << c.name;
  }
  Tokenizer t;
  Status s = Tokenizer::LoadFromMemory("[1, 2]", "vocab.json", mini.merges, "merges.txt", &t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("vocab.json: expected a JSON object"), std::string::npos) << s.message();
  s = Tokenizer::LoadFromMemory("{\"a\": 0}", "vocab.json", mini.merges, "merges.txt", &t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("vocab.json: 1 entries"), std::string::npos) << s.message();
  // The real file with trailing garbage: the offset is the end of the original.
  const std::string real = ReadOrFail(kDataDir + "/encoder.json") + "[]";
  s = Tokenizer::LoadFromMemory(real, "encoder.json", mini.merges, "vocab.bpe", &t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("encoder.json: json:"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("at byte 1042301"), std::string::npos) << s.message();
}

TEST(TokenizerLoad, FileSizeBoundsAreEnforced) {
  Tokenizer t;
  TokenizerOptions options;
  options.max_vocab_file_bytes = 1000;
  Status s = Tokenizer::LoadFromDir(kDataDir, &t, options);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("encoder.json"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("1042301"), std::string::npos) << s.message();

  options = TokenizerOptions();
  options.max_merges_file_bytes = 1000;
  s = Tokenizer::LoadEmbedded(&t, options);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("max_merges_file_bytes"), std::string::npos) << s.message();
}

// ---- cache and threads --------------------------------------------------------------

TEST(TokenizerCache, BoundedAndInvisibleInResults) {
  const std::vector<Vector> vectors = LoadOracleVectors();
  TokenizerOptions options;
  options.max_cache_entries = 100;
  Tokenizer small;
  ASSERT_TRUE(Tokenizer::LoadEmbedded(&small, options).ok());
  options.max_cache_entries = 0;  // no cache at all
  Tokenizer none;
  ASSERT_TRUE(Tokenizer::LoadEmbedded(&none, options).ok());
  for (size_t i = 0; i < vectors.size(); ++i) {
    const Vector& v = vectors[i];
    ASSERT_EQ(small.Encode(v.text), v.tokens) << v.id;
    if (i % 4 == 0) {
      ASSERT_EQ(none.Encode(v.text), v.tokens) << v.id;
    }
    ASSERT_LE(small.cache_stats().entries, 100u);
  }
  const TokenizerCacheStats s = small.cache_stats();
  EXPECT_GT(s.hits, 0u);
  EXPECT_GT(s.clears, 0u);
  EXPECT_EQ(none.cache_stats().entries, 0u);
  EXPECT_EQ(none.cache_stats().hits, 0u);
}

TEST(TokenizerCache, SharedAcrossThreads) {
  const std::vector<Vector> vectors = LoadOracleVectors();
  TokenizerOptions options;
  options.max_cache_entries = 64;  // small, so threads also race on clears
  Tokenizer t;
  ASSERT_TRUE(Tokenizer::LoadEmbedded(&t, options).ok());
  constexpr int kThreads = 4;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      // Each thread walks half of the vectors from a different starting
      // point, so every vector is encoded by two threads.
      for (size_t k = 0; k < vectors.size() / 2; ++k) {
        const Vector& v = vectors[(k + i * vectors.size() / kThreads) % vectors.size()];
        if (t.Encode(v.text) != v.tokens) ++mismatches[i];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(mismatches[i], 0) << "thread " << i;
}

// ---- differential check against a naive BPE -----------------------------------------

// An independent implementation of OpenAI's encoder.py bpe(): work on the
// vocabulary spellings, find the lowest-ranked adjacent pair, merge all its
// non-overlapping occurrences left to right, repeat. O(n^2) but obviously right.
class NaiveBpe {
 public:
  NaiveBpe() {
    // bytes_to_unicode() as encoder.py defines it.
    std::vector<int> bs, cs;
    for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
    for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
    for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
    cs = bs;
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      if (std::find(bs.begin(), bs.end(), b) == bs.end()) {
        bs.push_back(b);
        cs.push_back(256 + n++);
      }
    }
    for (size_t i = 0; i < bs.size(); ++i) {
      std::string utf8;
      const int cp = cs[i];
      if (cp < 0x80) {
        utf8.push_back(static_cast<char>(cp));
      } else {
        utf8.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        utf8.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      }
      byte_spelling_[bs[i]] = utf8;
    }
    const std::string merges = ReadOrFail(kDataDir + "/vocab.bpe");
    size_t start = merges.find('\n') + 1;  // skip "#version: 0.2"
    int rank = 0;
    while (start < merges.size()) {
      const size_t end = merges.find('\n', start);
      const std::string line = merges.substr(start, end - start);
      start = end + 1;
      const size_t space = line.find(' ');
      ranks_[{line.substr(0, space), line.substr(space + 1)}] = rank++;
    }
    json::Value doc;
    EXPECT_TRUE(json::Parse(ReadOrFail(kDataDir + "/encoder.json"), &doc,
                            json::ParseLimits{.max_bytes = 4 << 20, .max_depth = 4})
                    .ok());
    for (const auto& [key, value] : doc.members()) encoder_[key] = static_cast<TokenId>(value.as_int());
  }

  std::vector<TokenId> Encode(std::string_view piece) const {
    std::vector<std::string> word;
    for (char c : piece) word.push_back(byte_spelling_.at(static_cast<uint8_t>(c)));
    while (word.size() > 1) {
      int best = INT_MAX;
      std::pair<std::string, std::string> best_pair;
      for (size_t i = 0; i + 1 < word.size(); ++i) {
        auto it = ranks_.find({word[i], word[i + 1]});
        if (it != ranks_.end() && it->second < best) {
          best = it->second;
          best_pair = it->first;
        }
      }
      if (best == INT_MAX) break;
      std::vector<std::string> merged;
      for (size_t i = 0; i < word.size();) {
        if (i + 1 < word.size() && word[i] == best_pair.first && word[i + 1] == best_pair.second) {
          merged.push_back(word[i] + word[i + 1]);
          i += 2;
        } else {
          merged.push_back(word[i]);
          i += 1;
        }
      }
      word = std::move(merged);
    }
    std::vector<TokenId> ids;
    for (const std::string& s : word) ids.push_back(encoder_.at(s));
    return ids;
  }

 private:
  std::map<int, std::string> byte_spelling_;
  std::map<std::pair<std::string, std::string>, int> ranks_;
  std::map<std::string, TokenId> encoder_;
};

TEST(TokenizerDifferential, MatchesNaiveBpeOnRandomPieces) {
  const NaiveBpe naive;
  const Tokenizer& t = SharedTokenizer();
  // Fragments that BPE likes to merge, plus bytes of every kind.
  const std::vector<std::string> atoms = {
      "a", "e", "t", "h", "in", "er", "the", "ing", "s", "o", "n", " ", "  ", "\n", "0", "00",
      "1", "9", "'", "'s", ".", ",", "!", "?", "\xC3\xA9", "\xC3\xBC", "\xE2\x80\x94",
      "\xF0\x9F\x98\x80", "\xE4\xB8\xAD", "\xFF", "\x80", "X", "Q", "z", "ll", "re"};
  std::mt19937 rng(20261130);
  std::uniform_int_distribution<size_t> pick(0, atoms.size() - 1);
  std::uniform_int_distribution<int> length(1, 24);
  size_t pieces_checked = 0;
  for (int round = 0; round < 1500; ++round) {
    std::string text;
    for (int n = length(rng); n > 0; --n) text += atoms[pick(rng)];
    std::vector<TokenId> expected;
    for (std::string_view piece : SplitPieces(text)) {
      for (TokenId id : naive.Encode(piece)) expected.push_back(id);
      ++pieces_checked;
    }
    ASSERT_EQ(t.Encode(text), expected) << "text: " << text;
  }
  EXPECT_GT(pieces_checked, 5000u);
}

}  // namespace
}  // namespace tw::tokenizer
