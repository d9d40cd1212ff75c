// libFuzzer target for the JSON codec: any input must parse or fail cleanly;
// when it parses, Serialize -> Parse -> Serialize must be a fixed point (the
// two serializations byte-equal), and the serialization must be valid UTF-8.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "json/json.h"
#include "json/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tw::json::ParseLimits limits;
  limits.max_depth = 64;
  tw::json::Value v;
  size_t off = 0;
  tw::Status st = tw::json::Parse(text, &v, limits, &off);
  if (!st.ok()) {
    if (off > size) {
      std::fprintf(stderr, "error offset %zu past input size %zu\n", off, size);
      std::abort();
    }
    return 0;
  }
  const std::string s1 = tw::json::Serialize(v);
  if (!tw::json::IsValidUtf8(s1)) {
    std::fprintf(stderr, "serialization is not valid UTF-8: %s\n", s1.c_str());
    std::abort();
  }
  tw::json::Value v2;
  limits.max_bytes = s1.size();
  st = tw::json::Parse(s1, &v2, limits);
  if (!st.ok()) {
    std::fprintf(stderr, "re-parse failed: %s\n%s\n", st.message().c_str(), s1.c_str());
    std::abort();
  }
  const std::string s2 = tw::json::Serialize(v2);
  if (s1 != s2) {
    std::fprintf(stderr, "serializations differ:\n%s\n%s\n", s1.c_str(), s2.c_str());
    std::abort();
  }
  return 0;
}
