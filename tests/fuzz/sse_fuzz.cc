// libFuzzer target for the SSE parser (src/sse/parser.h).
//
// The first input byte picks the chunking seed and the limits; the rest is the
// stream. The stream is parsed whole, in pseudo-random pieces, and one byte at
// a time; all three must give identical events, comments, last-event-id,
// retry and error. Every output must also hold the parser's invariants: valid
// UTF-8 everywhere, no CR/LF in a type or id, no NUL in an id, no CR in data,
// a non-empty type. Any difference aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sse/parser.h"

namespace {

// Independent strict UTF-8 check (RFC 3629), written apart from the decoder.
bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; k++) {
      unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

void Check(bool ok, const char* what, const std::string& detail) {
  if (ok) return;
  std::fprintf(stderr, "sse_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

std::string Run(const std::vector<std::string_view>& pieces, tw::sse::ParserLimits limits) {
  std::string r;
  tw::sse::Parser parser(
      [&](const tw::sse::Event& e) {
        Check(ValidUtf8(e.type) && ValidUtf8(e.data) && ValidUtf8(e.id), "invalid UTF-8 out", e.data);
        Check(!e.type.empty(), "empty type", e.data);
        Check(e.type.find_first_of("\r\n") == std::string::npos, "line break in type", e.type);
        Check(e.id.find_first_of("\r\n") == std::string::npos, "line break in id", e.id);
        Check(e.id.find('\0') == std::string::npos, "NUL in id", e.id);
        Check(e.data.find('\r') == std::string::npos, "CR in data", e.data);
        Check(e.data.size() < limits.max_data_bytes, "data over bound", e.data);
        r += "E" + std::to_string(e.type.size()) + ":" + e.type + std::to_string(e.data.size()) + ":" +
             e.data + std::to_string(e.id.size()) + ":" + e.id;
      },
      limits);
  parser.set_comment_sink([&](std::string_view c) {
    Check(ValidUtf8(c), "invalid UTF-8 comment", std::string(c));
    r += "C" + std::to_string(c.size()) + ":" + std::string(c);
  });
  for (std::string_view p : pieces) {
    tw::Status s = parser.Feed(p);
    if (!s.ok()) {
      r += "X" + s.message();
      break;
    }
  }
  parser.Finish();
  r += "L" + parser.last_event_id();
  std::optional<uint64_t> retry = parser.retry_ms();
  r += "R" + (retry ? std::to_string(*retry) : std::string("-"));
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t seed = data[0];
  std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  tw::sse::ParserLimits limits;
  if (seed & 1) {  // small bounds, so the error paths are fuzzed too
    limits.max_line_bytes = 8 + (seed >> 4);
    limits.max_data_bytes = 16 + (seed >> 3);
  }

  const std::string whole = Run({input}, limits);

  // Pseudo-random piece sizes 1..16 from a small LCG seeded by the first byte.
  std::vector<std::string_view> pieces;
  uint32_t state = 0x9E3779B9u ^ seed;
  for (size_t pos = 0; pos < input.size();) {
    state = state * 1664525u + 1013904223u;
    size_t len = 1 + ((state >> 24) % 16);
    if (len > input.size() - pos) len = input.size() - pos;
    pieces.push_back(input.substr(pos, len));
    pos += len;
  }
  Check(Run(pieces, limits) == whole, "random pieces differ from whole", whole);

  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < input.size(); i++) bytes.push_back(input.substr(i, 1));
  Check(Run(bytes, limits) == whole, "bytewise differs from whole", whole);
  return 0;
}
