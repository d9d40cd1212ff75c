// Shared helpers for the SSE tests: run the parser over a list of pieces and
// render everything it observably did as one string, so that
// CheckSameForAllChunkings can compare chunkings.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sse/parser.h"

namespace tw::sse::testing {

struct Outcome {
  std::vector<Event> events;
  std::vector<std::string> comments;
  std::string last_event_id;
  std::optional<uint64_t> retry_ms;
  std::string status;  // "" when every Feed was OK, else the first error
};

inline Outcome RunParser(const std::vector<std::string_view>& pieces, ParserLimits limits = {}) {
  Outcome out;
  Parser parser([&](const Event& e) { out.events.push_back(e); }, limits);
  parser.set_comment_sink([&](std::string_view c) { out.comments.emplace_back(c); });
  for (std::string_view piece : pieces) {
    Status s = parser.Feed(piece);
    if (!s.ok()) {
      out.status = s.message();
      break;
    }
  }
  parser.Finish();
  out.last_event_id = parser.last_event_id();
  out.retry_ms = parser.retry_ms();
  return out;
}

// Bytes shown with non-printables escaped, so a mismatch is readable.
inline std::string Escape(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string r;
  for (unsigned char c : s) {
    if (c == '\\') {
      r += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      r.push_back(static_cast<char>(c));
    } else {
      r += "\\x";
      r.push_back(kHex[c >> 4]);
      r.push_back(kHex[c & 15]);
    }
  }
  return r;
}

inline std::string Render(const Outcome& o) {
  std::string r;
  for (const Event& e : o.events) {
    r += "{type=" + Escape(e.type) + " data=" + Escape(e.data) + " id=" + Escape(e.id) + "}";
  }
  for (const std::string& c : o.comments) r += "{comment=" + Escape(c) + "}";
  r += " last_id=" + Escape(o.last_event_id);
  r += " retry=" + (o.retry_ms ? std::to_string(*o.retry_ms) : std::string("none"));
  if (!o.status.empty()) r += " error=" + o.status;
  return r;
}

inline std::string RenderPieces(const std::vector<std::string_view>& pieces) {
  return Render(RunParser(pieces));
}

}  // namespace tw::sse::testing
