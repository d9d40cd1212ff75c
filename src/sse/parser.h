// Server-Sent Events reader: an incremental text/event-stream parser that
// follows the HTML Living Standard, §9.2.6 "Interpreting an event stream".
// Used by the test client and the bench's load generator, never by the server.
//
// Feed() takes bytes as they arrive, in pieces of any size; events come out
// through the callback in stream order, and the result never depends on where
// the pieces were cut. The rules, in the standard's order:
//   - the stream is UTF-8: invalid sequences become U+FFFD (one per maximal
//     invalid subpart, as the WHATWG "UTF-8 decode" does) and one leading BOM
//     is stripped, once per stream;
//   - lines end in CRLF, LF or CR; a CR ending one piece and an LF starting the
//     next are one line end;
//   - a line starting with ':' is a comment (handed to the optional comment
//     sink, not otherwise used);
//   - "name:value" is a field; one space after ':' is removed; a line without
//     ':' is a field name with an empty value;
//   - `data` appends value + LF to the data buffer; `event` sets the type;
//     `id` sets the last-event-ID buffer unless the value contains NUL;
//     `retry` sets retry_ms() if the value is all ASCII digits (saturating at
//     UINT64_MAX); any other field is ignored; names are case-sensitive;
//   - an empty line dispatches: last_event_id() takes the buffer's value; if the
//     data buffer is empty nothing is dispatched (the type is reset), else the
//     final LF is removed and an Event {type or "message", data, id} is emitted;
//   - an event unfinished at end of stream is discarded (Finish()).
//
// Bounds (ParserLimits): one decoded line and one event's data buffer. Passing
// either is an error Status naming the limit and the stream byte offset; the
// parser then stays failed until Finish().
//
// Allocation: the line, data and type buffers grow to the largest line/event
// seen and are reused; nothing is allocated per byte, and in steady state
// nothing per event (the emitted Event's strings are recycled).
// Thread-safety: one Parser per stream, used by one thread at a time. The
// callbacks run inside Feed() and must not call back into the same Parser.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"

namespace tw::sse {

struct Event {
  std::string type;  // the event: field, or "message"
  std::string data;  // data: lines joined with LF
  std::string id;    // last event ID at dispatch (may be from an earlier event)
};

struct ParserLimits {
  size_t max_line_bytes = 1 << 20;  // one line after UTF-8 decoding, bytes
  size_t max_data_bytes = 8 << 20;  // one event's data buffer, bytes
};

class Parser {
 public:
  // `on_event` is called for every dispatched event; the reference is valid
  // only during the call.
  using EventSink = std::function<void(const Event&)>;
  // Called with the comment text after ':' (one leading space removed).
  using CommentSink = std::function<void(std::string_view)>;

  explicit Parser(EventSink on_event, ParserLimits limits = {});

  void set_comment_sink(CommentSink on_comment) { on_comment_ = std::move(on_comment); }

  // Consumes all of `bytes`. Returns an error only when a bound is passed (or
  // the parser already failed); malformed input is never an error in SSE.
  Status Feed(std::string_view bytes);

  // End of the current stream: discards any unfinished line and event, and
  // makes the parser ready for a new stream (a reconnection: BOM handling and
  // the decoder start afresh; a failed state is cleared). last_event_id() and
  // retry_ms() are kept, and the new stream's last-event-ID buffer starts at
  // last_event_id() (as browsers do; an event without `id:` then carries it).
  void Finish();

  // The event source's last event ID: updated at each empty line.
  const std::string& last_event_id() const { return last_event_id_; }
  // The last valid `retry:` value, if any.
  std::optional<uint64_t> retry_ms() const { return retry_ms_; }
  // Bytes consumed by Feed() since construction (all streams).
  uint64_t bytes_consumed() const { return offset_; }

 private:
  bool AppendToLine(const char* p, size_t n);  // false when over the bound
  bool EmitCodePoint(uint32_t cp);             // false when over the bound
  bool EndLine();                              // false when over the bound
  bool ProcessField(std::string_view name, std::string_view value);
  void Dispatch();
  Status Fail(const char* what, size_t limit);

  EventSink on_event_;
  CommentSink on_comment_;
  ParserLimits limits_;

  // Stream state (reset by Finish()).
  std::string line_;
  std::string data_;
  std::string type_;
  std::string id_buffer_;
  bool at_stream_start_ = true;  // no code point decoded yet (BOM check)
  bool pending_cr_ = false;      // last code point was CR: a following LF is swallowed
  // WHATWG UTF-8 decoder state.
  uint32_t utf8_cp_ = 0;
  int utf8_needed_ = 0;
  int utf8_seen_ = 0;
  uint8_t utf8_lower_ = 0x80;
  uint8_t utf8_upper_ = 0xBF;
  Status error_;

  // Event-source state (kept across streams).
  std::string last_event_id_;
  std::optional<uint64_t> retry_ms_;
  uint64_t offset_ = 0;  // stream byte offset of the next byte fed
  Event event_;          // recycled for each dispatch
};

}  // namespace tw::sse
