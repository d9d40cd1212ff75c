#include "http/request_reader.h"

#include <algorithm>
#include <cstdint>

#include "http/parse_framing.h"
#include "http/parse_syntax.h"

namespace tw::http {

// ---- Request -----------------------------------------------------------------

std::string_view Request::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) return v;
  }
  return {};
}

bool Request::HasHeader(std::string_view name) const {
  for (const auto& h : headers) {
    if (EqualsIgnoreCase(h.first, name)) return true;
  }
  return false;
}

std::string_view Request::QueryParam(std::string_view key) const {
  std::string_view rest = query;
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == key) {
      return eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    }
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return {};
}

// ---- RequestReader -------------------------------------------------------------

RequestReader::RequestReader(const ReaderLimits& limits)
    : limits_(limits), header_slots_(limits.max_headers) {}

size_t RequestReader::buffer_limit_bytes() const {
  // Saturating sum: limits near SIZE_MAX must not wrap to a small bound.
  size_t total = limits_.max_header_bytes;
  for (size_t part : {limits_.max_body_bytes, limits_.max_chunk_line_bytes}) {
    total = part > SIZE_MAX - total ? SIZE_MAX : total + part;
  }
  return total;
}

size_t RequestReader::buffered_bytes() const { return buf_.size() - start_; }

bool RequestReader::head_in_progress() const {
  return state_ == State::kHead && buf_.size() > start_;
}

bool RequestReader::request_in_progress() const {
  return head_in_progress() || state_ == State::kBodyLength || state_ == State::kBodyChunked;
}

bool RequestReader::closed() const { return state_ == State::kClosed; }

bool RequestReader::upgrade_pending() const { return state_ == State::kUpgradePending; }

std::string RequestReader::TakeBufferedInput() {
  std::string rest = buf_.substr(start_);
  buf_.clear();
  start_ = 0;
  if (state_ != State::kError) state_ = State::kClosed;
  return rest;
}

void RequestReader::ResumeAfterUpgrade() {
  if (state_ != State::kUpgradePending) return;
  if (last_keep_alive_) {
    state_ = State::kHead;
  } else {
    state_ = State::kClosed;
    buf_.clear();
    start_ = 0;
  }
}

void RequestReader::Compact() {
  if (start_ == 0) return;
  stream_offset_ += start_;
  buf_.erase(0, start_);
  start_ = 0;
}

bool RequestReader::Feed(const char* data, size_t len) {
  if (state_ == State::kError) return false;
  if (state_ == State::kClosed) return true;  // answered and closing: drop
  Compact();
  if (len > buffer_limit_bytes() - buf_.size()) {
    const bool in_head = state_ == State::kHead;
    Fail(in_head ? 431 : 413,
         in_head ? "unparsed input larger than the header section bound"
                 : "unparsed input larger than the body bound");
    return false;
  }
  buf_.append(data, len);
  return true;
}

RequestReader::Event RequestReader::Fail(int status, std::string message) {
  state_ = State::kError;
  error_status_ = status;
  error_message_ = std::move(message);
  buf_.clear();
  start_ = 0;
  return Event::kError;
}

RequestReader::Event RequestReader::Next(Request* out) {
  for (;;) {
    switch (state_) {
      case State::kError:
        return Event::kError;
      case State::kClosed:
        return Event::kNeedMore;
      case State::kUpgradePending:
        ResumeAfterUpgrade();  // Next() without TakeBufferedInput(): declined
        continue;
      case State::kHead: {
        const Event e = ParseHead(out);
        if (e == Event::kNeedMore && state_ != State::kHead) continue;  // body state entered
        return e;
      }
      case State::kBodyLength: {
        const size_t avail = buf_.size() - start_;
        const size_t n = static_cast<size_t>(std::min<uint64_t>(avail, body_remaining_));
        pending_.body.append(buf_, start_, n);
        start_ += n;
        body_remaining_ -= n;
        if (body_remaining_ > 0) return Event::kNeedMore;
        return FinishRequest(out);
      }
      case State::kBodyChunked: {
        size_t consumed = 0;
        const ChunkedDecoder::Result r = chunked_.Decode(buf_.data() + start_, buf_.size() - start_,
                                                         &pending_.body, &consumed);
        start_ += consumed;
        if (r == ChunkedDecoder::Result::kError) {
          return Fail(chunked_.error_status(),
                      std::string(chunked_.error_reason()) + " (chunked body, at byte " +
                          std::to_string(body_stream_offset_ + chunked_.error_offset()) +
                          " of the connection's input)");
        }
        if (r == ChunkedDecoder::Result::kNeedMore) return Event::kNeedMore;
        return FinishRequest(out);
      }
    }
  }
}

// Parses the head at start_. Returns kNeedMore with state_ still kHead when
// more bytes are needed; kNeedMore with a body state entered (the caller
// loops); or a final event (kContinue, kRequest, kError).
RequestReader::Event RequestReader::ParseHead(Request* out) {
  // Empty lines between requests (e.g. a CRLF a client sent after a body) are
  // consumed at once, so an idle connection does not look like a started head.
  while (buf_.size() - start_ >= 2 && buf_[start_] == '\r' && buf_[start_ + 1] == '\n') {
    start_ += 2;
  }
  const size_t avail = buf_.size() - start_;
  if (avail == 0) return Event::kNeedMore;
  const size_t window = std::min(avail, limits_.max_header_bytes);
  const char* head = buf_.data() + start_;
  const uint64_t head_offset = stream_offset_ + start_;
  RequestHeadView view;
  ParseFailure failure;
  const int r = ParseRequestHead(head, window, &view, header_slots_.data(), limits_.max_headers,
                                 &failure);
  auto fail = [&](const ParseFailure& f) {
    return Fail(f.status, std::string(f.reason) + " (at byte " +
                              std::to_string(head_offset + f.offset) +
                              " of the connection's input)");
  };
  if (r == kParseError) return fail(failure);
  if (r == kParseIncomplete) {
    if (avail >= limits_.max_header_bytes) {
      return Fail(431, "request head larger than max_header_bytes (" +
                           std::to_string(limits_.max_header_bytes) + " bytes) starting at byte " +
                           std::to_string(head_offset) + " of the connection's input");
    }
    return Event::kNeedMore;
  }
  // The head is copied before its framing is checked, so that an error the
  // framing finds (413, 501, ...) is answered knowing its request
  // (failed_head()).
  pending_ = Request();
  pending_.method.assign(view.method);
  pending_.target.assign(view.target);
  std::string_view path;
  std::string_view query;
  SplitTarget(view.method, view.target, &path, &query);
  pending_.path.assign(path);
  pending_.query.assign(query);
  pending_.minor_version = view.minor_version;
  pending_.headers.reserve(view.num_headers);
  for (size_t i = 0; i < view.num_headers; i++) {
    pending_.headers.emplace_back(std::string(view.headers[i].name),
                                  std::string(view.headers[i].value));
  }
  head_kept_ = true;
  MessageFraming framing;
  if (!InterpretHead(view, head, limits_.max_body_bytes, limits_.require_host, &framing,
                     &failure)) {
    return fail(failure);
  }
  pending_.keep_alive = framing.keep_alive;
  pending_.expect_continue = framing.expect_continue;
  pending_.upgrade = framing.upgrade;
  start_ += static_cast<size_t>(r);

  switch (framing.body) {
    case MessageFraming::Body::kNone:
      return FinishRequest(out);
    case MessageFraming::Body::kLength:
      body_remaining_ = framing.content_length;
      state_ = State::kBodyLength;
      break;
    case MessageFraming::Body::kChunked: {
      ChunkedLimits cl;
      cl.max_body_bytes = limits_.max_body_bytes;
      cl.max_chunk_line_bytes = limits_.max_chunk_line_bytes;
      cl.max_trailer_bytes = limits_.max_header_bytes;
      cl.max_trailer_fields = limits_.max_headers;
      chunked_.Reset(cl);
      body_stream_offset_ = stream_offset_ + start_;
      state_ = State::kBodyChunked;
      break;
    }
  }
  if (pending_.expect_continue) {
    *out = pending_;  // the head; body still empty
    return Event::kContinue;
  }
  return Event::kNeedMore;  // body state entered; Next() continues
}

RequestReader::Event RequestReader::FinishRequest(Request* out) {
  last_keep_alive_ = pending_.keep_alive;
  if (pending_.upgrade) {
    state_ = State::kUpgradePending;
  } else if (!pending_.keep_alive) {
    state_ = State::kClosed;
    buf_.clear();
    start_ = 0;
  } else {
    state_ = State::kHead;
  }
  *out = std::move(pending_);
  pending_ = Request();
  head_kept_ = false;
  return Event::kRequest;
}

}  // namespace tw::http
