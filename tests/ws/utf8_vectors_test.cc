// The 132 UTF-8 vectors of Autobahn cases 6.5-6.23 (Markus Kuhn's
// UTF-8-test.txt) at the frame-reader level: each sent as one text frame and
// as one frame per byte, valid ones echoed unchanged, invalid ones failed
// with 1007 at the first invalid byte. The incremental validator is also
// checked against the JSON layer's independent whole-string validator.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "json/json.h"
#include "json/utf8.h"
#include "support/chunking.h"
#include "ws/frame.h"
#include "ws/frame_test_util.h"
#include "ws/utf8_validator.h"

namespace tw::ws {
namespace {

struct Vector {
  std::string id;
  bool valid;
  std::string bytes;
};

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

std::vector<Vector> LoadVectors() {
  bool ok = false;
  std::string text = tw::testing::ReadFile(tw::testing::DataPath("websocket/autobahn-utf8-vectors.json"), &ok);
  EXPECT_TRUE(ok);
  json::Value v;
  json::ParseLimits lim;
  lim.max_bytes = text.size() + 1;
  EXPECT_TRUE(json::Parse(text, &v, lim).ok());
  std::vector<Vector> out;
  const json::Value* arr = v.Find("vectors");
  if (arr == nullptr) return out;
  for (const json::Value& e : arr->items()) {
    out.push_back({e.Find("id")->as_string(), e.Find("valid")->as_bool(), FromHex(e.Find("hex")->as_string())});
  }
  return out;
}

TEST(Utf8Vectors, AllClassifiedWholeAndBytewise) {
  std::vector<Vector> vectors = LoadVectors();
  ASSERT_EQ(vectors.size(), 132u);
  int valid = 0;
  ReaderLimits lim;
  for (const Vector& v : vectors) {
    SCOPED_TRACE(v.id);
    valid += v.valid;
    // Independent reference: the JSON layer's validator agrees with the label.
    size_t ref_bad = 0;
    ASSERT_EQ(json::IsValidUtf8(v.bytes, &ref_bad), v.valid);
    // One frame.
    std::string whole = testing::ClientFrame(0x81, v.bytes);
    // One frame per byte (an empty text frame then continuations when empty).
    std::string frag;
    if (v.bytes.empty()) {
      frag = testing::ClientFrame(0x81, "");
    } else {
      for (size_t i = 0; i < v.bytes.size(); i++) {
        uint8_t first = static_cast<uint8_t>((i == 0 ? 0x01 : 0x00) | (i + 1 == v.bytes.size() ? 0x80 : 0));
        frag += testing::ClientFrame(first, v.bytes.substr(i, 1));
      }
    }
    for (const std::string& in : {whole, frag}) {
      MessageReader r(lim);
      testing::Recorder rec;
      r.Feed(in, &rec);
      if (v.valid) {
        ASSERT_EQ(r.state(), MessageReader::State::kOpen);
        ASSERT_EQ(rec.messages.size(), 1u);
        EXPECT_EQ(rec.messages[0], v.bytes);
      } else {
        ASSERT_EQ(r.state(), MessageReader::State::kFailed);
        EXPECT_EQ(r.error().code, 1007);
        EXPECT_TRUE(rec.messages.empty());
      }
    }
    // Fail fast: the validator fails exactly at the reference's first bad
    // byte, or (for a truncated tail) only at the end.
    Utf8Validator u;
    size_t bad = 0;
    bool fed = u.Feed(v.bytes, &bad);
    if (v.valid) {
      EXPECT_TRUE(fed && u.complete());
    } else if (ref_bad == v.bytes.size()) {
      EXPECT_TRUE(fed);
      EXPECT_FALSE(u.complete());
    } else {
      EXPECT_FALSE(fed);
      EXPECT_EQ(bad, ref_bad);
    }
  }
  EXPECT_EQ(valid, 63);
}

// Random byte strings biased towards UTF-8 lead and continuation bytes: the
// incremental validator, fed at every split, agrees with json::IsValidUtf8.
TEST(Utf8Validator, AgreesWithJsonValidatorAtEverySplit) {
  std::mt19937 rng(6455);
  const uint8_t interesting[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2,
                                 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF};
  for (int iter = 0; iter < 4000; iter++) {
    std::string s;
    int n = 1 + static_cast<int>(rng() % 9);
    for (int i = 0; i < n; i++) s += static_cast<char>(interesting[rng() % sizeof interesting]);
    size_t ref_bad = 0;
    bool ref = json::IsValidUtf8(s, &ref_bad);
    for (size_t cut = 0; cut <= s.size(); cut++) {
      Utf8Validator u;
      size_t bad = 0;
      bool a = u.Feed(std::string_view(s).substr(0, cut), &bad);
      size_t bad_at = a ? 0 : bad;
      bool b = a && u.Feed(std::string_view(s).substr(cut), &bad);
      if (a && !b) bad_at = cut + bad;
      bool got = b && u.complete();
      ASSERT_EQ(got, ref) << testing::Printable(s) << " cut " << cut;
      if (!ref && ref_bad < s.size()) {
        ASSERT_FALSE(a && b);
        ASSERT_EQ(bad_at, ref_bad) << testing::Printable(s);
      }
    }
  }
}

}  // namespace
}  // namespace tw::ws
