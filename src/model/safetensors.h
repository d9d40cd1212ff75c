// safetensors reader: validates a whole .safetensors file and hands out
// read-only views of its tensors.
//
// File layout (https://huggingface.co/docs/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON (optionally padded with
// spaces), then the data section. The JSON maps each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
// data section) and may hold "__metadata__" (string -> string).
//
// What ParseSafetensors() checks before anything is read: N is at most
// SafetensorsLimits::max_header_bytes and the header lies inside the file; the
// header is JSON (tw::json::Parse) and an object; every dtype is one of the
// known safetensors dtypes; every shape entry is a non-negative integer and the
// element count and byte size do not overflow 64 bits; end - begin equals
// numel x dtype size; every tensor lies inside the data section; the tensors,
// sorted by offset, tile the data section exactly (no overlap, no hole, no
// trailing bytes: the safetensors format's own rule); no name appears twice.
// Every error names the file label, the tensor and what was expected vs found.
//
// Memory: SafetensorsFile::Open maps the file read-only (mmap, PROT_READ,
// MAP_PRIVATE) and never copies tensor data; views stay valid while the
// SafetensorsFile lives. The parsed header costs O(header bytes). Reads never
// go outside the mapping: every view is bounds-checked at parse time.
// Alignment is NOT guaranteed by the format: TensorData() returns bytes, and a
// caller that wants `const float*` must check the pointer's alignment itself
// (the GPT-2 loader does, and copies when it must).
//
// Threads: a parsed header and an open file are immutable; any thread may read.
// Never throws, never exits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace tw::model {

// Every dtype of the safetensors format. Only kF32 is used by the GPT-2
// loader; the others are recognised so an error can name them.
enum class Dtype {
  kBool, kU8, kI8, kF8_E5M2, kF8_E4M3, kI16, kU16, kF16, kBF16,
  kI32, kU32, kF32, kF64, kI64, kU64,
};

// "F32", "BF16", ... as spelled in the file.
std::string_view DtypeName(Dtype d);
// Bytes per element.
size_t DtypeSize(Dtype d);
// Parses the file's spelling; false if unknown.
bool ParseDtype(std::string_view name, Dtype* out);

struct SafetensorsLimits {
  uint64_t max_header_bytes = 100u << 20;  // the JSON header, bytes (safetensors itself uses 100 MB)
  size_t max_rank = 16;                    // dimensions per tensor
  int max_json_depth = 8;                  // the header is 3 deep when well formed
};

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;  // empty for a scalar
  uint64_t numel = 0;          // product of shape (1 for a scalar)
  uint64_t data_begin = 0;     // byte offsets relative to the data section
  uint64_t data_end = 0;

  uint64_t byte_size() const { return data_end - data_begin; }
};

// "[50257, 768]" (for messages).
std::string ShapeToString(std::span<const int64_t> shape);

struct SafetensorsHeader {
  uint64_t header_bytes = 0;  // N, the JSON length
  uint64_t data_offset = 0;   // file offset of the data section (8 + N)
  uint64_t data_bytes = 0;    // size of the data section
  std::vector<TensorInfo> tensors;  // in the header's order
  std::vector<std::pair<std::string, std::string>> metadata;  // "__metadata__"

  // The tensor named `name`, or nullptr.
  const TensorInfo* Find(std::string_view name) const;
};

// Validates `file` (the whole file's bytes) as described above. `label` names
// the file in error messages (a path, or "<buffer>"). On success fills *out.
// Touches only bytes [0, 8 + N) of `file`; never reads tensor data.
Status ParseSafetensors(std::string_view file, std::string_view label, SafetensorsHeader* out,
                        const SafetensorsLimits& limits = SafetensorsLimits());

// Writer side: the 8-byte length plus the JSON header for `tensors` (their
// dtype, shape, data_begin/data_end are written as given, in the given order),
// padded with spaces so the data section starts at a multiple of 8 bytes, as
// Hugging Face's writer does. The caller then writes the data section.
std::string EncodeSafetensorsHeader(
    std::span<const TensorInfo> tensors,
    std::span<const std::pair<std::string, std::string>> metadata = {});

// An open, validated, memory-mapped safetensors file.
class SafetensorsFile {
 public:
  static Status Open(const std::string& path, std::unique_ptr<SafetensorsFile>* out,
                     const SafetensorsLimits& limits = SafetensorsLimits());
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  uint64_t file_bytes() const { return size_; }

  // The tensor's bytes inside the mapping (validated at Open).
  std::span<const uint8_t> TensorData(const TensorInfo& t) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  const uint8_t* base_ = nullptr;  // mmap'd, PROT_READ, MAP_PRIVATE; size_ bytes
  uint64_t size_ = 0;
  SafetensorsHeader header_;
};

}  // namespace tw::model
