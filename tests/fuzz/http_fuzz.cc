// libFuzzer target for the HTTP/1.1 request reader (src/http/).
//
// Input layout: byte 0 picks small limits and a prefix (none, a chunked POST
// head, a Content-Length POST head) so the body decoders are reached
// quickly; then repeated [length byte][that many bytes] pieces are fed to a
// RequestReader, draining Next() after each Feed like the server does.
// Checked on every step: no crash / UB (ASan+UBSan), buffered_bytes() within
// buffer_limit_bytes(), every request within max_body_bytes / max_headers /
// max_header_bytes, errors sticky. Then the same bytes fed whole must give
// the same sequence of events and requests (chunking independence).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "http/request_reader.h"

namespace {

using tw::http::Request;
using tw::http::RequestReader;

void Check(bool ok) {
  if (!ok) abort();
}

std::string Run(const std::vector<std::string_view>& pieces, const tw::http::ReaderLimits& limits) {
  RequestReader reader(limits);
  std::string log;
  for (std::string_view p : pieces) {
    const bool fed = reader.Feed(p.data(), p.size());
    Check(reader.buffered_bytes() <= reader.buffer_limit_bytes());
    if (!fed) {
      Check(reader.error_status() == 413 || reader.error_status() == 431);
      break;
    }
    for (;;) {
      Request r;
      const RequestReader::Event e = reader.Next(&r);
      if (e == RequestReader::Event::kNeedMore) break;
      if (e == RequestReader::Event::kError) {
        Check(reader.error_status() >= 400 && reader.error_status() <= 505);
        Check(reader.Next(&r) == RequestReader::Event::kError);
        break;
      }
      size_t head_bytes = r.method.size() + r.target.size();
      for (const auto& [n, v] : r.headers) head_bytes += n.size() + v.size();
      Check(head_bytes <= limits.max_header_bytes);
      Check(r.headers.size() <= limits.max_headers);
      Check(r.body.size() <= limits.max_body_bytes);
      log += e == RequestReader::Event::kContinue ? "C:" : "R:";
      log += r.method + " " + r.target + " " + std::to_string(r.headers.size()) + " " +
             std::to_string(r.body.size()) + ":" + r.body + "|";
    }
    if (reader.error_status() != 0) break;
  }
  if (reader.error_status() != 0) log += "E" + std::to_string(reader.error_status());
  if (reader.closed()) log += "closed";
  if (reader.upgrade_pending()) log += "upgrade:" + reader.TakeBufferedInput();
  return log;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  tw::http::ReaderLimits limits;
  limits.max_header_bytes = 64 + (mode & 3) * 128;  // 64..448
  limits.max_headers = 2 + ((mode >> 2) & 3) * 4;   // 2..14
  limits.max_body_bytes = 16 + ((mode >> 4) & 1) * 1000;
  limits.max_chunk_line_bytes = 24;
  limits.require_host = (mode & 0x80) == 0;
  std::string input;
  switch ((mode >> 5) & 3) {
    case 1: input = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"; break;
    case 2: input = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\n\r\n"; break;
    default: break;
  }
  // Pieces: [len][bytes]...
  std::vector<size_t> cuts;
  std::string payload;
  size_t i = 1;
  while (i < size) {
    const size_t len = data[i++] % 64 + 1;
    const size_t n = len < size - i ? len : size - i;
    payload.append(reinterpret_cast<const char*>(data + i), n);
    cuts.push_back(n);
    i += n;
  }
  const size_t prefix = input.size();
  input += payload;
  std::vector<std::string_view> pieces;
  size_t pos = 0;
  if (prefix > 0) {
    pieces.emplace_back(input.data(), prefix);
    pos = prefix;
  }
  for (size_t n : cuts) {
    pieces.emplace_back(input.data() + pos, n);
    pos += n;
  }
  const std::string split = Run(pieces, limits);
  RequestReader probe(limits);
  if (input.size() <= probe.buffer_limit_bytes()) {
    const std::string whole = Run({std::string_view(input)}, limits);
    Check(split == whole);
  }
  return 0;
}
