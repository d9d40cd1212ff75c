#include "tokenizer/test_vectors.h"

#include <gtest/gtest.h>

#include "json/json.h"
#include "support/chunking.h"

namespace tw::tokenizer::testing {
namespace {

bool ReadVector(const json::Value& v, const std::string& id, Vector* out) {
  const json::Value* text = v.Find("text");
  const json::Value* tokens = v.Find("tokens");
  if (text == nullptr || !text->is_string() || tokens == nullptr || !tokens->is_array()) {
    ADD_FAILURE() << id << ": missing text or tokens";
    return false;
  }
  out->id = id;
  out->text = text->as_string();
  for (const json::Value& t : tokens->items()) {
    if (!t.is_int()) {
      ADD_FAILURE() << id << ": a token is not an integer";
      return false;
    }
    out->tokens.push_back(static_cast<TokenId>(t.as_int()));
  }
  const json::Value* special = v.Find("allowed_special");
  out->allowed_special = special != nullptr && special->is_string() && special->as_string() == "all";
  return true;
}

}  // namespace

std::vector<Vector> LoadTiktokenVectors() {
  std::vector<Vector> out;
  bool ok = false;
  const std::string path = tw::testing::DataPath("gpt2/tiktoken-tests-gpt2.json");
  const std::string bytes = tw::testing::ReadFile(path, &ok);
  if (!ok) {
    ADD_FAILURE() << "cannot read " << path;
    return out;
  }
  json::Value doc;
  Status s = json::Parse(bytes, &doc);
  const json::Value* vectors = s.ok() ? doc.Find("vectors") : nullptr;
  if (vectors == nullptr || !vectors->is_array()) {
    ADD_FAILURE() << path << ": " << (s.ok() ? "no \"vectors\" array" : s.message());
    return out;
  }
  for (size_t i = 0; i < vectors->items().size(); ++i) {
    Vector v;
    if (ReadVector(vectors->items()[i], "tiktoken:" + std::to_string(i), &v)) out.push_back(v);
  }
  return out;
}

std::vector<Vector> LoadOracleVectors() {
  std::vector<Vector> out;
  bool ok = false;
  const std::string path = tw::testing::DataPath("gpt2/oracle-vectors.jsonl");
  const std::string bytes = tw::testing::ReadFile(path, &ok);
  if (!ok) {
    ADD_FAILURE() << "cannot read " << path;
    return out;
  }
  size_t start = 0;
  int line_no = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    const std::string_view line(bytes.data() + start, end - start);
    start = end + 1;
    ++line_no;
    if (line.empty()) continue;
    json::Value doc;
    if (Status s = json::Parse(line, &doc); !s.ok()) {
      ADD_FAILURE() << path << " line " << line_no << ": " << s.message();
      continue;
    }
    const json::Value* id = doc.Find("id");
    Vector v;
    if (ReadVector(doc, id != nullptr && id->is_string() ? id->as_string()
                                                         : "line " + std::to_string(line_no),
                   &v)) {
      out.push_back(v);
    }
  }
  return out;
}

const Tokenizer& SharedTokenizer() {
  static const Tokenizer tokenizer = [] {
    Tokenizer t;
    Status s = Tokenizer::LoadFromDir(std::string(TW_SOURCE_DIR) + "/src/tokenizer/data", &t);
    if (!s.ok()) ADD_FAILURE() << "loading src/tokenizer/data: " << s.message();
    return t;
  }();
  return tokenizer;
}

}  // namespace tw::tokenizer::testing
