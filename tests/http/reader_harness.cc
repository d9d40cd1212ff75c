#include "http/reader_harness.h"

#include <algorithm>

#include "support/chunking.h"

namespace tw::testing {

using http::RequestReader;

ReaderOutcome RunReader(const std::vector<std::string_view>& pieces,
                        const http::ReaderLimits& limits) {
  ReaderOutcome o;
  RequestReader reader(limits);
  for (std::string_view piece : pieces) {
    if (!reader.Feed(piece.data(), piece.size())) o.feed_refused = true;
    o.max_buffered = std::max(o.max_buffered, reader.buffered_bytes());
    // After an upgrade request, act like a server that switches protocols:
    // no more Next() (that would decline the upgrade); bytes keep arriving.
    if (reader.upgrade_pending()) continue;
    for (;;) {
      http::Request req;
      const RequestReader::Event e = reader.Next(&req);
      if (e == RequestReader::Event::kNeedMore) break;
      if (e == RequestReader::Event::kError) break;
      if (e == RequestReader::Event::kContinue) {
        o.events += "C";
        o.continues.push_back(req.target);
      } else {
        o.events += "R";
        const bool upgrade = req.upgrade;
        o.requests.push_back(std::move(req));
        if (upgrade) break;
      }
    }
    if (reader.error_status() != 0) break;
  }
  if (reader.error_status() != 0) {
    o.error = true;
    o.events += "E";
    o.status = reader.error_status();
    o.message = reader.error_message();
    http::Request ignored;
    // After kError the reader stays in error.
    if (reader.Next(&ignored) != RequestReader::Event::kError) o.message += " [NOT STICKY]";
  }
  o.closed = reader.closed();
  o.upgrade_pending = reader.upgrade_pending();
  if (o.upgrade_pending) o.leftover = reader.TakeBufferedInput();
  return o;
}

std::string Printable(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string Render(const ReaderOutcome& o) {
  std::string s = "events=" + o.events;
  for (const auto& r : o.requests) {
    s += " {" + Printable(r.method) + " " + Printable(r.target) + " path=" + Printable(r.path) +
         " query=" + Printable(r.query) + " 1." + std::to_string(r.minor_version);
    for (const auto& [n, v] : r.headers) s += " " + Printable(n) + "=" + Printable(v);
    s += " body=" + Printable(r.body) + " ka=" + std::to_string(r.keep_alive) +
         " exp=" + std::to_string(r.expect_continue) + " up=" + std::to_string(r.upgrade) + "}";
  }
  for (const auto& c : o.continues) s += " continue:" + Printable(c);
  if (o.error) s += " error=" + std::to_string(o.status) + " (" + o.message + ")";
  if (o.closed) s += " closed";
  if (o.upgrade_pending) s += " upgrade leftover=" + Printable(o.leftover);
  if (o.feed_refused) s += " feed-refused";
  return s;
}

ReaderOutcome RunAllChunkings(std::string_view input, const http::ReaderLimits& limits,
                              std::string* mismatch) {
  *mismatch = CheckSameForAllChunkings(input, [&](const std::vector<std::string_view>& pieces) {
    return Render(RunReader(pieces, limits));
  });
  return RunReader({input}, limits);
}

}  // namespace tw::testing
