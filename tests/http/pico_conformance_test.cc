// picohttpparser's request and chunked-decoder vectors (tests/data/http/
// picohttpparser, MIT), through ParseRequestHead (whole input and every
// prefix), RequestReader and ChunkedDecoder (whole, every split, bytewise).
// Where pico is lenient (obs-fold, raw 0x80+ in the target, bare LF in a
// chunked body) RFC 9112 lets or makes a server reject: we assert the 400.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "http/parse_chunked.h"
#include "http/reader_harness.h"
#include "http/request_reader.h"
#include "http/test_json.h"
#include "support/chunking.h"

namespace tw::http {
namespace {

using testing::JsonValue;

JsonValue LoadPico() {
  bool ok = false;
  const std::string text =
      testing::ReadFile(testing::DataPath("http/picohttpparser/cases.json"), &ok);
  EXPECT_TRUE(ok);
  std::string err;
  JsonValue v = testing::ParseJson(text, &err);
  EXPECT_EQ(err, "");
  return v;
}

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

TEST(PicoConformance, RequestVectors) {
  const JsonValue pico = LoadPico();
  const auto& reqs = pico["requests"].array;
  ASSERT_EQ(reqs.size(), 23u);
  int complete = 0;
  int incomplete = 0;
  int error = 0;
  int lenient = 0;
  for (const JsonValue& v : reqs) {
    const std::string name = v["name"].str();
    bool b64 = false;
    const std::string raw = testing::Base64Decode(v["raw_b64"].str(), &b64);
    ASSERT_TRUE(b64) << name;
    const std::string verdict = v["pico_verdict"].str();
    const bool is_lenient = !v["expect"].is_null() && v["expect"]["lenient"].boolean;

    HeaderView headers[8];
    RequestHeadView head;
    ParseFailure failure;
    const int r = ParseRequestHead(raw.data(), raw.size(), &head, headers, 8, &failure);
    // Every prefix is incomplete, or gives the whole input's answer.
    for (size_t k = 0; k < raw.size(); k++) {
      HeaderView h2[8];
      RequestHeadView head2;
      ParseFailure f2;
      const int r2 = ParseRequestHead(raw.data(), k, &head2, h2, 8, &f2);
      if (r2 == kParseIncomplete) continue;
      EXPECT_EQ(r2, r) << name << " prefix " << k;
      if (r2 == kParseError && r == kParseError) {
        EXPECT_EQ(f2.offset, failure.offset) << name << " prefix " << k;
      }
    }
    std::string mismatch;
    const testing::ReaderOutcome o = testing::RunAllChunkings(raw, ReaderLimits(), &mismatch);
    EXPECT_EQ(mismatch, "") << name;

    if (is_lenient) {
      lenient++;
      EXPECT_EQ(r, kParseError) << name;
      EXPECT_EQ(failure.status, 400) << name;
      EXPECT_TRUE(o.error && o.status == 400) << name << ": " << testing::Render(o);
    } else if (verdict == "complete") {
      complete++;
      ASSERT_EQ(r, static_cast<int>(raw.size())) << name << ": " << failure.reason;
      ASSERT_EQ(o.requests.size(), 1u) << name << ": " << testing::Render(o);
      const JsonValue& e = v["expect"];
      if (!e.is_null()) {
        EXPECT_EQ(head.method, e["method"].str()) << name;
        EXPECT_EQ(head.target, e["path"].str()) << name;
        EXPECT_EQ(head.minor_version, static_cast<int>(e["minor"].number)) << name;
        const bool hex = !e["headers_hex"].is_null();
        const auto& hs = hex ? e["headers_hex"].array : e["headers"].array;
        ASSERT_EQ(head.num_headers, hs.size()) << name;
        for (size_t i = 0; i < hs.size(); i++) {
          const std::string want_value = hex ? FromHex(hs[i].array[1].str()) : hs[i].array[1].str();
          EXPECT_EQ(head.headers[i].name, hs[i].array[0].str()) << name;
          EXPECT_EQ(head.headers[i].value, want_value) << name;
          EXPECT_EQ(o.requests[0].headers[i].second, want_value) << name;
        }
        EXPECT_EQ(o.requests[0].method, e["method"].str()) << name;
        EXPECT_EQ(o.requests[0].path, e["path"].str()) << name;
      }
    } else if (verdict == "incomplete") {
      incomplete++;
      EXPECT_EQ(r, kParseIncomplete) << name << ": " << failure.reason;
      EXPECT_TRUE(!o.error && o.requests.empty()) << name << ": " << testing::Render(o);
    } else if (verdict == "error") {
      error++;
      EXPECT_EQ(r, kParseError) << name;
      EXPECT_EQ(failure.status, 400) << name;
      EXPECT_TRUE(o.error && o.status == 400) << name << ": " << testing::Render(o);
    } else {
      ADD_FAILURE() << "unknown verdict " << verdict;
    }
  }
  EXPECT_EQ(complete, 4);
  EXPECT_EQ(incomplete, 10);
  EXPECT_EQ(error, 7);
  EXPECT_EQ(lenient, 2);
}

struct DecodeResult {
  ChunkedDecoder::Result result = ChunkedDecoder::Result::kNeedMore;
  std::string body;
  size_t consumed = 0;  // total bytes used
  int status = 0;
  bool last_chunk_seen = false;
};

DecodeResult Decode(const std::vector<std::string_view>& pieces, const ChunkedLimits& limits) {
  DecodeResult d;
  ChunkedDecoder dec(limits);
  for (std::string_view p : pieces) {
    size_t used = 0;
    d.result = dec.Decode(p.data(), p.size(), &d.body, &used);
    d.consumed += used;
    if (d.result != ChunkedDecoder::Result::kNeedMore) break;
  }
  d.status = dec.error_status();
  d.last_chunk_seen = dec.last_chunk_seen();
  return d;
}

std::string Render(const DecodeResult& d) {
  // Bytes used are not meaningful after an error (the decoder stops mid-piece).
  return std::to_string(static_cast<int>(d.result)) + " body=" + testing::Printable(d.body) +
         (d.result == ChunkedDecoder::Result::kError ? "" : " used=" + std::to_string(d.consumed)) +
         " status=" + std::to_string(d.status) + " last=" + std::to_string(d.last_chunk_seen);
}

DecodeResult DecodeAllChunkings(std::string_view in, const ChunkedLimits& limits,
                                std::string* mismatch) {
  *mismatch = testing::CheckSameForAllChunkings(
      in, [&](const std::vector<std::string_view>& pieces) {
        return Render(Decode(pieces, limits));
      });
  return Decode({in}, limits);
}

TEST(PicoConformance, ChunkedVectors) {
  const JsonValue pico = LoadPico();
  const auto& vecs = pico["chunked_body"].array;
  ASSERT_EQ(vecs.size(), 12u);
  int checked = 0;
  for (size_t i = 0; i < vecs.size(); i++) {
    const JsonValue& v = vecs[i];
    bool b64 = false;
    const std::string enc = testing::Base64Decode(v["encoded_b64"].str(), &b64);
    ASSERT_TRUE(b64);
    const std::string label = "vector " + std::to_string(i) + " " + testing::Printable(enc);
    const std::string verdict = v["pico_verdict"].str();
    const bool consume_trailer = v["consume_trailer"].boolean;
    std::string mismatch;
    const ChunkedLimits limits;  // defaults: 1 MiB body
    const DecodeResult d = DecodeAllChunkings(enc, limits, &mismatch);
    EXPECT_EQ(mismatch, "") << label;
    checked++;

    if (verdict.rfind("complete (pico lenient: bare LF", 0) == 0) {
      // RFC 9112 §2.2 allows accepting bare LF; we reject it everywhere.
      EXPECT_EQ(d.result, ChunkedDecoder::Result::kError) << label;
      EXPECT_EQ(d.status, 400) << label;
    } else if (!consume_trailer && verdict == "complete") {
      // pico stops after the last-chunk line and leaves the trailer
      // (bytes_left_after); we always read the trailer section. Fed the bytes
      // pico consumed, we must have decoded the same body and reached the
      // last chunk.
      const size_t left = static_cast<size_t>(v["bytes_left_after"].number);
      const std::string upto = enc.substr(0, enc.size() - left);
      const DecodeResult p = DecodeAllChunkings(upto, limits, &mismatch);
      EXPECT_EQ(mismatch, "") << label;
      EXPECT_EQ(p.body, v["decoded"].str()) << label;
      EXPECT_TRUE(p.last_chunk_seen) << label;
      EXPECT_EQ(p.result, ChunkedDecoder::Result::kNeedMore) << label;
      EXPECT_EQ(d.body, v["decoded"].str()) << label;
      // With the trailer present, we consume it to the end.
      if (left > 0) {
        EXPECT_EQ(d.result, ChunkedDecoder::Result::kDone) << label;
        EXPECT_EQ(d.consumed, enc.size()) << label;
      }
    } else if (verdict == "complete") {
      EXPECT_EQ(d.result, ChunkedDecoder::Result::kDone) << label;
      EXPECT_EQ(d.body, v["decoded"].str()) << label;
      EXPECT_EQ(d.consumed, enc.size() - static_cast<size_t>(v["bytes_left_after"].number))
          << label;
    } else if (verdict == "incomplete") {
      EXPECT_EQ(d.result, ChunkedDecoder::Result::kNeedMore) << label;
      EXPECT_EQ(d.body, v["decoded"].str()) << label;
      EXPECT_EQ(d.consumed, enc.size()) << label;
    } else if (verdict == "error") {
      EXPECT_EQ(d.result, ChunkedDecoder::Result::kError) << label;
      EXPECT_EQ(d.status, 400) << label;
    } else if (verdict.rfind("incomplete (64-bit max", 0) == 0) {
      // 2^64-1 is a valid chunk size (pico waits for its data), but the body
      // bound is checked as soon as the size line ends: 413. Even with no
      // bound, 6 + (2^64-1) bytes pass SIZE_MAX, so it stays 413.
      EXPECT_EQ(d.result, ChunkedDecoder::Result::kError) << label;
      EXPECT_EQ(d.status, 413) << label;
      EXPECT_EQ(d.body, "hello ") << label;
      ChunkedLimits unbounded;
      unbounded.max_body_bytes = SIZE_MAX;
      const DecodeResult u = DecodeAllChunkings(enc, unbounded, &mismatch);
      EXPECT_EQ(mismatch, "") << label;
      EXPECT_EQ(u.result, ChunkedDecoder::Result::kError) << label;
      EXPECT_EQ(u.status, 413) << label;
    } else if (verdict.rfind("error (chunk-size overflow)", 0) == 0) {
      EXPECT_EQ(d.result, ChunkedDecoder::Result::kError) << label;
      EXPECT_EQ(d.status, 400) << label;
      ChunkedLimits unbounded;
      unbounded.max_body_bytes = SIZE_MAX;
      const DecodeResult u = DecodeAllChunkings(enc, unbounded, &mismatch);
      EXPECT_EQ(u.result, ChunkedDecoder::Result::kError) << label;
      EXPECT_EQ(u.status, 400) << label;
    } else {
      ADD_FAILURE() << "unknown verdict " << verdict;
    }
  }
  EXPECT_EQ(checked, 12);
}

}  // namespace
}  // namespace tw::http
