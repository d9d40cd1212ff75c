// Incremental decoder of the chunked transfer coding (RFC 9112 §7.1).
//
//   chunked-body = *chunk last-chunk trailer-section CRLF
//   chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//   chunk-ext    = *( BWS ";" BWS ext-name [ BWS "=" BWS ( token / quoted-string ) ] )
//
// Bytes in, decoded data appended to a caller's string, "need more" / "done"
// / "error" out. Any split of the input gives the same result (the state
// machine advances one byte at a time, chunk data is copied in runs).
// Extensions are checked against the grammar and ignored; the trailer section
// is checked like a header section and discarded.
//
// Bounds (each an error, never growth): the decoded body (max_body_bytes,
// 413, checked as soon as a chunk-size line is complete), one chunk-size line
// with its extensions (max_chunk_line_bytes, 400), the trailer section
// (max_trailer_bytes and max_trailer_fields, 431). Chunk sizes that do not fit
// in 64 bits are 400. The decoder itself allocates nothing; it only appends
// to the body string it is given, which never exceeds max_body_bytes.
//
// Thread-safety: one decoder per message; not shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tw::http {

struct ChunkedLimits {
  size_t max_body_bytes = 1 << 20;     // sum of chunk sizes
  size_t max_chunk_line_bytes = 4096;  // chunk-size + extensions, CRLF excluded
  size_t max_trailer_bytes = 16 * 1024;  // trailer section incl. final CRLF
  size_t max_trailer_fields = 100;     // trailer field lines
};

class ChunkedDecoder {
 public:
  enum class Result { kNeedMore, kDone, kError };

  ChunkedDecoder() = default;
  explicit ChunkedDecoder(const ChunkedLimits& limits) { Reset(limits); }
  // Starts a new chunked body.
  void Reset(const ChunkedLimits& limits);

  // Decodes data[0..len): appends chunk data to *body and sets *consumed to
  // the bytes used. kDone: the body ended at data[*consumed - 1] (bytes after
  // it belong to the next message). kNeedMore: all len bytes were used.
  // kError: see error_status() / error_reason() / error_offset(); every later
  // call returns kError.
  Result Decode(const char* data, size_t len, std::string* body, size_t* consumed);

  // True once the last-chunk ("0" line) has been read (trailer section may
  // still be arriving).
  bool last_chunk_seen() const;
  bool done() const { return state_ == State::kDone; }
  int error_status() const { return error_status_; }
  std::string_view error_reason() const { return error_reason_; }
  // Offset of the offending byte from the start of the chunked body.
  uint64_t error_offset() const { return error_offset_; }
  // Decoded bytes so far.
  uint64_t body_bytes() const { return body_bytes_; }

 private:
  enum class State {
    kSizeStart,      // first hex digit of chunk-size
    kSize,           // more hex digits
    kSizeBws,        // whitespace after chunk-size: only ";" may follow
    kExtNameStart,   // after ";" (BWS allowed), ext-name
    kExtName,
    kExtNameBws,     // whitespace after ext-name: "=" or ";" must follow
    kExtValueStart,  // after "=" (BWS allowed)
    kExtToken,
    kExtQuoted,
    kExtQuotedPair,  // after "\" inside a quoted-string
    kExtValueEnd,    // after a value: BWS then ";" or CR
    kExtValueBws,    // whitespace after a value: ";" must follow
    kSizeLf,         // CR seen at end of chunk-size line
    kData,
    kDataCr,         // CRLF after chunk-data
    kDataLf,
    kTrailerLineStart,
    kTrailerName,
    kTrailerValue,
    kTrailerLf,      // CR seen at end of a trailer field line
    kTrailerEndLf,   // CR seen on the empty line that ends the trailer
    kDone,
    kError,
  };

  Result Fail(int status, std::string_view reason, uint64_t offset);

  ChunkedLimits limits_;
  State state_ = State::kSizeStart;
  uint64_t offset_ = 0;         // bytes of the chunked body consumed so far
  uint64_t chunk_size_ = 0;     // size being parsed / data left in the chunk
  bool last_chunk_ = false;     // the current size line is the last-chunk
  size_t line_bytes_ = 0;       // bytes of the current chunk-size line
  size_t trailer_bytes_ = 0;    // bytes of the trailer section
  size_t trailer_fields_ = 0;
  uint64_t body_bytes_ = 0;
  int error_status_ = 0;
  std::string_view error_reason_;  // static text
  uint64_t error_offset_ = 0;
};

}  // namespace tw::http
