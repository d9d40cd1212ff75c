// libFuzzer target: the safetensors header parser and validator.
//
// The input is a whole .safetensors file in memory. Whatever it holds,
// ParseSafetensors must return (OK or an error), never read outside the
// buffer (ASan), never overflow (UBSan). When it says OK, the promises that
// SafetensorsFile::TensorData relies on must hold: every tensor lies inside
// the data section and its byte size is numel x dtype size.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tw::model;
  // A copy, so ASan sees the exact end of the input.
  const std::string file(reinterpret_cast<const char*>(data), size);
  SafetensorsLimits limits;
  limits.max_header_bytes = 1 << 16;  // keep each run fast
  SafetensorsHeader h;
  tw::Status st = ParseSafetensors(file, "<fuzz>", &h, limits);
  if (!st.ok()) {
    if (st.message().empty()) std::abort();  // every error says something
    return 0;
  }
  if (h.data_offset != 8 + h.header_bytes || h.data_offset + h.data_bytes != size) std::abort();
  uint64_t covered = 0;
  for (const TensorInfo& t : h.tensors) {
    if (t.data_end < t.data_begin || t.data_end > h.data_bytes) std::abort();
    if (t.byte_size() != t.numel * DtypeSize(t.dtype)) std::abort();
    covered += t.byte_size();
    // Touch the first and last byte of each tensor, as a reader would.
    if (t.byte_size() > 0) {
      volatile char a = file[h.data_offset + t.data_begin];
      volatile char b = file[h.data_offset + t.data_end - 1];
      (void)a;
      (void)b;
    }
  }
  if (covered != h.data_bytes) std::abort();  // tiling: no overlap, no hole
  return 0;
}
