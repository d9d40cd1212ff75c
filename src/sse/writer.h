// Server-Sent Events writer: formats text/event-stream records (DESIGN.md §5)
// into a caller-owned std::string.
//
//   retry: 1000\n\n                     AppendRetry(out, 1000)
//   id: 2\nevent: token\ndata: {...}\n\n AppendEvent(out, 2, "token", "{...}")
//   event: error\ndata: {...}\n\n        AppendEventNoId(out, "error", "{...}")
//   : ping\n\n                           AppendComment(out, "ping")
//
// Every stream event carries an `id:` line (its sequence number), so a client's
// Last-Event-ID always names the last event it really received. A subscriber-
// level error is written without `id:` for the same reason: the client's
// last-event-id stays at the last stream event.
//
// Data: the event-stream format cannot carry a line break inside a field, so a
// data value is split at every LF, CR and CRLF into several `data:` lines; the
// reader joins them with LF. A data value therefore round-trips exactly when it
// contains no CR (CR and CRLF arrive as LF). Each line is written as
// "data: " + line; the reader strips exactly one leading space, so values that
// themselves begin with a space survive.
//
// Precondition: event names (and comment texts) contain no CR or LF. Event
// names are server constants; if the precondition is broken anyway, each CR/LF
// is written as a space so the stream's framing can never be corrupted.
//
// Thread-safety: pure functions; any thread. Allocation: only growth of *out
// (by about the size of the record). Never does I/O, never fails.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tw::sse {

// "retry: <ms>\n\n" — the client's reconnection delay.
void AppendRetry(std::string* out, uint64_t ms);

// "id: <id>\nevent: <event>\ndata: <line>\n...\n\n". An empty `event` omits the
// event: line (the reader then reports type "message").
void AppendEvent(std::string* out, uint64_t id, std::string_view event, std::string_view data);

// As AppendEvent, without the id: line (subscriber-level errors).
void AppendEventNoId(std::string* out, std::string_view event, std::string_view data);

// ": <text>\n\n" — a comment (heartbeat). A text containing line breaks is
// written as several comment lines.
void AppendComment(std::string* out, std::string_view text);

}  // namespace tw::sse
