#include "model/safetensors.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/model_test_util.h"

namespace tw::model {
namespace {

using testing::BuildFile;
using testing::FloatBytes;
using testing::HeaderJson;
using testing::RawTensor;
using testing::U64Le;

std::vector<RawTensor> TwoTensors() {
  return {
      {"a", "F32", {2, 3}, FloatBytes({1, 2, 3, 4, 5, 6})},
      {"b.bias", "I64", {2}, std::string(16, '\x07')},
  };
}

// Parses `file`; returns "" on success or the error message.
std::string ParseError(const std::string& file, SafetensorsLimits limits = SafetensorsLimits()) {
  SafetensorsHeader h;
  Status st = ParseSafetensors(file, "x.safetensors", &h, limits);
  return st.ok() ? "" : st.message();
}

// A header with one tensor whose fields are given as raw JSON, and `data_bytes` of data.
std::string OneTensorFile(const std::string& fields, size_t data_bytes) {
  std::string h = "{\"t\":{" + fields + "}}";
  return U64Le(h.size()) + h + std::string(data_bytes, '\0');
}

#define EXPECT_ERROR_HAS(msg, ...)                                      \
  do {                                                                  \
    const std::string m_ = (msg);                                       \
    EXPECT_FALSE(m_.empty()) << "expected an error";                    \
    for (const char* w_ : {__VA_ARGS__}) {                              \
      EXPECT_NE(m_.find(w_), std::string::npos) << "'" << w_ << "' not in: " << m_; \
    }                                                                   \
  } while (0)

TEST(Safetensors, ParsesValidFile) {
  const std::string file = BuildFile(HeaderJson(TwoTensors(), "{\"format\":\"pt\"}"), TwoTensors());
  SafetensorsHeader h;
  ASSERT_TRUE(ParseSafetensors(file, "x", &h).ok());
  const uint64_t n = file.size() - 8 - 24 - 16;
  EXPECT_EQ(h.header_bytes, n);
  EXPECT_EQ(h.data_offset, 8 + n);
  EXPECT_EQ(h.data_bytes, 40u);
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "a");
  EXPECT_EQ(h.tensors[0].dtype, Dtype::kF32);
  EXPECT_EQ(h.tensors[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(h.tensors[0].numel, 6u);
  EXPECT_EQ(h.tensors[0].data_begin, 0u);
  EXPECT_EQ(h.tensors[0].data_end, 24u);
  EXPECT_EQ(h.tensors[1].dtype, Dtype::kI64);
  EXPECT_EQ(h.tensors[1].data_begin, 24u);
  EXPECT_EQ(h.tensors[1].data_end, 40u);
  ASSERT_EQ(h.metadata.size(), 1u);
  EXPECT_EQ(h.metadata[0].first, "format");
  EXPECT_EQ(h.metadata[0].second, "pt");
  ASSERT_NE(h.Find("b.bias"), nullptr);
  EXPECT_EQ(h.Find("b.bias")->numel, 2u);
  EXPECT_EQ(h.Find("c"), nullptr);
}

TEST(Safetensors, DtypeTable) {
  const std::pair<const char*, size_t> want[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},   {"F8_E5M2", 1}, {"F8_E4M3", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2},  {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"F64", 8},  {"I64", 8},     {"U64", 8}};
  for (const auto& [name, size] : want) {
    Dtype d;
    ASSERT_TRUE(ParseDtype(name, &d)) << name;
    EXPECT_EQ(DtypeName(d), name);
    EXPECT_EQ(DtypeSize(d), size) << name;
  }
  Dtype d;
  EXPECT_FALSE(ParseDtype("f32", &d));
  EXPECT_FALSE(ParseDtype("Q4_0", &d));
}

TEST(Safetensors, EmptyScalarAndZeroSizedTensors) {
  EXPECT_EQ(ParseError(U64Le(2) + "{}"), "");
  std::vector<RawTensor> t = {
      {"scalar", "F64", {}, std::string(8, '\1')},
      {"empty", "F32", {3, 0, 5}, ""},
      {"x", "BOOL", {3}, std::string("\1\0\1", 3)},
  };
  SafetensorsHeader h;
  ASSERT_TRUE(ParseSafetensors(BuildFile(t), "x", &h).ok());
  EXPECT_EQ(h.tensors[0].numel, 1u);
  EXPECT_EQ(h.tensors[1].numel, 0u);
  EXPECT_EQ(h.tensors[2].data_begin, 8u);  // the empty tensor takes no bytes
}

TEST(Safetensors, HeaderPaddedWithSpacesIsAccepted) {
  EXPECT_EQ(ParseError(BuildFile(HeaderJson(TwoTensors()), TwoTensors(), 5)), "");
}

TEST(Safetensors, TooShortForLength) {
  EXPECT_ERROR_HAS(ParseError(""), "x.safetensors", "0 bytes", "too short");
  EXPECT_ERROR_HAS(ParseError(std::string("\x02\0\0\0\0\0\0", 7)), "7 bytes", "too short");
}

TEST(Safetensors, HeaderLengthPastEndOfFile) {
  std::string file = BuildFile(TwoTensors());
  const uint64_t n = file.size();  // header length = whole file: past its end
  const std::string n_text = "header length " + std::to_string(n) + " bytes";
  EXPECT_ERROR_HAS(ParseError(U64Le(n) + file.substr(8)), n_text.c_str(),
                   "past the end of the file");
  EXPECT_ERROR_HAS(ParseError(U64Le(UINT64_MAX) + "{}"), "header length");
}

TEST(Safetensors, HeaderLengthOverBound) {
  SafetensorsLimits limits;
  limits.max_header_bytes = 16;
  std::string file = BuildFile(TwoTensors());
  EXPECT_ERROR_HAS(ParseError(file, limits), "over max_header_bytes 16");
  // The default bound (100 MB) refuses a huge length before looking at the file.
  EXPECT_ERROR_HAS(ParseError(U64Le(200u << 20) + "{}"), "max_header_bytes");
}

TEST(Safetensors, HeaderNotJson) {
  std::string h = "{\"a\":{\"dtype\":\"F32\",";  // cut short
  EXPECT_ERROR_HAS(ParseError(U64Le(h.size()) + h), "not valid JSON", "offset");
  h = "[1,2]";
  EXPECT_ERROR_HAS(ParseError(U64Le(h.size()) + h), "does not start with '{'");
  h = "{\"a\":1}";
  EXPECT_ERROR_HAS(ParseError(U64Le(h.size()) + h), "tensor 'a'", "expected an object");
  h = "\x01\x02";
  EXPECT_ERROR_HAS(ParseError(U64Le(h.size()) + h), "does not start with '{'");
}

TEST(Safetensors, BadMetadata) {
  std::string h = "{\"__metadata__\":{\"k\":1}}";
  EXPECT_ERROR_HAS(ParseError(U64Le(h.size()) + h), "__metadata__", "'k'", "must be a string");
  h = "{\"__metadata__\":[]}";
  EXPECT_ERROR_HAS(ParseError(U64Le(h.size()) + h), "__metadata__", "must be an object");
}

TEST(Safetensors, UnknownDtype) {
  EXPECT_ERROR_HAS(
      ParseError(OneTensorFile("\"dtype\":\"Q4\",\"shape\":[1],\"data_offsets\":[0,1]", 1)),
      "tensor 't'", "unknown dtype 'Q4'", "F32");
  EXPECT_ERROR_HAS(
      ParseError(OneTensorFile("\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,1]", 1)),
      "tensor 't'", "'dtype' must be a string");
}

TEST(Safetensors, BadShapes) {
  EXPECT_ERROR_HAS(
      ParseError(OneTensorFile("\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]", 4)),
      "tensor 't'", "shape[0]", "non-negative integer", "-1");
  EXPECT_ERROR_HAS(
      ParseError(OneTensorFile("\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]", 4)),
      "shape[0]", "non-integer");
  EXPECT_ERROR_HAS(
      ParseError(OneTensorFile("\"dtype\":\"F32\",\"shape\":3,\"data_offsets\":[0,12]", 12)),
      "'shape' must be an array");
  // 2^32 * 2^32 elements overflows 64 bits.
  EXPECT_ERROR_HAS(ParseError(OneTensorFile(
                       "\"dtype\":\"U8\",\"shape\":[4294967296,4294967296],"
                       "\"data_offsets\":[0,0]",
                       0)),
                   "tensor 't'", "overflows");
  // 2^62 F32 elements: the count fits, the byte size does not.
  EXPECT_ERROR_HAS(ParseError(OneTensorFile(
                       "\"dtype\":\"F32\",\"shape\":[4611686018427387904],"
                       "\"data_offsets\":[0,0]",
                       0)),
                   "overflows");
  // A zero dimension makes an otherwise-overflowing shape empty: allowed.
  EXPECT_EQ(ParseError(OneTensorFile("\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,0],"
                                     "\"data_offsets\":[0,0]",
                                     0)),
            "");
  SafetensorsLimits limits;
  limits.max_rank = 2;
  EXPECT_ERROR_HAS(
      ParseError(OneTensorFile("\"dtype\":\"U8\",\"shape\":[1,1,1],\"data_offsets\":[0,1]", 1),
                 limits),
      "3 dimensions", "max_rank 2");
}

TEST(Safetensors, MissingAndUnknownFields) {
  EXPECT_ERROR_HAS(ParseError(OneTensorFile("\"dtype\":\"F32\",\"shape\":[1]", 4)),
                   "tensor 't'", "missing field 'data_offsets'");
  EXPECT_ERROR_HAS(ParseError(OneTensorFile("\"shape\":[1],\"data_offsets\":[0,4]", 4)),
                   "missing field 'dtype'");
  EXPECT_ERROR_HAS(
      ParseError(OneTensorFile(
          "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":1", 4)),
      "unknown field 'extra'");
  EXPECT_ERROR_HAS(
      ParseError(OneTensorFile("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]", 8)),
      "'data_offsets' must be [begin, end]");
}

TEST(Safetensors, OffsetsOutOfRange) {
  EXPECT_ERROR_HAS(
      ParseError(OneTensorFile("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]", 4)),
      "tensor 't'", "[0, 8]", "out of range", "4 bytes");
  EXPECT_ERROR_HAS(
      ParseError(OneTensorFile("\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,4]", 8)),
      "end before begin");
  EXPECT_ERROR_HAS(ParseError(OneTensorFile(
                       "\"dtype\":\"F32\",\"shape\":[1],"
                       "\"data_offsets\":[18446744073709551612,18446744073709551616]",
                       4)),
                   "data_offsets");
}

TEST(Safetensors, SizeMismatch) {
  EXPECT_ERROR_HAS(
      ParseError(OneTensorFile("\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,12]", 12)),
      "tensor 't'", "size mismatch", "[2, 2] F32 needs 16 bytes", "hold 12");
}

TEST(Safetensors, OverlappingTensors) {
  std::string h =
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}";
  EXPECT_ERROR_HAS(ParseError(U64Le(h.size()) + h + std::string(12, '\0')), "tensor 'b'",
                   "overlap tensor 'a'");
  // Two tensors on exactly the same bytes are an overlap too.
  h = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"b\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  EXPECT_ERROR_HAS(ParseError(U64Le(h.size()) + h + std::string(8, '\0')), "overlap");
}

TEST(Safetensors, HolesAndTrailingBytes) {
  std::string h =
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}";
  EXPECT_ERROR_HAS(ParseError(U64Le(h.size()) + h + std::string(12, '\0')), "tensor 'b'",
                   "4-byte hole");
  std::string file = BuildFile(TwoTensors()) + "xyz";
  EXPECT_ERROR_HAS(ParseError(file), "tensors end at data byte 40", "43 bytes",
                   "trailing bytes");
}

TEST(Safetensors, DuplicateTensorName) {
  std::string h =
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
      "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
  EXPECT_ERROR_HAS(ParseError(U64Le(h.size()) + h + std::string(8, '\0')), "tensor 'a'",
                   "appears twice");
}

// Every strict prefix of a valid file is an error (never a success, never a
// read past the end: ASan checks the latter), and cutting into the data
// section is reported as out of range.
TEST(Safetensors, EveryTruncationIsAnError) {
  const std::string file = BuildFile(HeaderJson(TwoTensors(), "{\"format\":\"pt\"}"), TwoTensors());
  ASSERT_EQ(ParseError(file), "");
  for (size_t n = 0; n < file.size(); n++) {
    // A copy, so ASan sees the exact end of the buffer.
    std::string cut = file.substr(0, n);
    EXPECT_NE(ParseError(cut), "") << "prefix of " << n << " bytes";
  }
  EXPECT_ERROR_HAS(ParseError(file.substr(0, file.size() - 1)), "tensor 'b.bias'",
                   "out of range");
}

TEST(Safetensors, EncodeHeaderRoundTrips) {
  std::vector<TensorInfo> ts(3);
  ts[0].name = "w";
  ts[0].dtype = Dtype::kF32;
  ts[0].shape = {3, 2};
  ts[0].data_begin = 0;
  ts[0].data_end = 24;
  ts[1].name = "s\"q";  // needs escaping
  ts[1].dtype = Dtype::kBF16;
  ts[1].shape = {};
  ts[1].data_begin = 24;
  ts[1].data_end = 26;
  ts[2].name = "z";
  ts[2].dtype = Dtype::kU8;
  ts[2].shape = {2};
  ts[2].data_begin = 26;
  ts[2].data_end = 28;
  const std::pair<std::string, std::string> meta[] = {{"format", "pt"}};
  std::string header = EncodeSafetensorsHeader(ts, meta);
  EXPECT_EQ(header.size() % 8, 0u);
  SafetensorsHeader h;
  Status st = ParseSafetensors(header + std::string(28, '\0'), "enc", &h);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(h.data_offset, header.size());
  ASSERT_EQ(h.tensors.size(), 3u);
  EXPECT_EQ(h.tensors[1].name, "s\"q");
  EXPECT_EQ(h.tensors[1].dtype, Dtype::kBF16);
  EXPECT_EQ(h.tensors[1].numel, 1u);
  EXPECT_EQ(h.tensors[0].shape, (std::vector<int64_t>{3, 2}));
  ASSERT_EQ(h.metadata.size(), 1u);
}

TEST(SafetensorsFile, OpensAndMapsData) {
  testing::TempDir dir;
  const std::string path = dir.Sub("m.safetensors");
  ASSERT_TRUE(testing::WriteBytes(path, BuildFile(TwoTensors())));
  std::unique_ptr<SafetensorsFile> f;
  Status st = SafetensorsFile::Open(path, &f);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(f->path(), path);
  const TensorInfo* a = f->header().Find("a");
  ASSERT_NE(a, nullptr);
  auto bytes = f->TensorData(*a);
  ASSERT_EQ(bytes.size(), 24u);
  float v[6];
  std::memcpy(v, bytes.data(), 24);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[5], 6.0f);
  auto b = f->TensorData(*f->header().Find("b.bias"));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), b.size()),
            std::string(16, '\x07'));
}

TEST(SafetensorsFile, OpenErrorsNameThePath) {
  testing::TempDir dir;
  std::unique_ptr<SafetensorsFile> f;
  Status st = SafetensorsFile::Open(dir.Sub("missing.safetensors"), &f);
  EXPECT_ERROR_HAS(st.message(), "missing.safetensors", "No such file");
  st = SafetensorsFile::Open(dir.path(), &f);
  EXPECT_ERROR_HAS(st.message(), "not a regular file");
  ASSERT_TRUE(testing::WriteBytes(dir.Sub("short"), "abc"));
  st = SafetensorsFile::Open(dir.Sub("short"), &f);
  EXPECT_ERROR_HAS(st.message(), "short", "3 bytes", "too short");
  const std::string good = BuildFile(TwoTensors());
  ASSERT_TRUE(testing::WriteBytes(dir.Sub("trunc"), good.substr(0, good.size() - 3)));
  st = SafetensorsFile::Open(dir.Sub("trunc"), &f);
  EXPECT_ERROR_HAS(st.message(), "trunc", "tensor 'b.bias'", "out of range");
  ASSERT_TRUE(testing::WriteBytes(dir.Sub("trunc"), good.substr(0, 60)));
  st = SafetensorsFile::Open(dir.Sub("trunc"), &f);
  EXPECT_ERROR_HAS(st.message(), "trunc", "past the end of the file");
  EXPECT_EQ(f, nullptr);
}

}  // namespace
}  // namespace tw::model
