#include "http/http_connection.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>
#include <string>

#include "http/request_id.h"
#include "http/router.h"
#include "json/error_json.h"

namespace tw::http {

// ---------------------------------------------------------------------------
// HttpConnection (http_connection.h says what it owns and how long it lives)
// ---------------------------------------------------------------------------
class HttpConnection : public net::ConnectionHandler,
                       public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(Server* server, int fd)
      : server_(server),
        conn_(server->loop_, fd, ConnLimits(server->options_), server->m_bytes_in_,
              server->m_bytes_out_),
        reader_(ReaderLimitsOf(server->options_)) {}
  ~HttpConnection() override { CancelTimers(); }

  Status Start() {
    conn_.SetCorked(true);  // a loop iteration's writes leave in one send
    Status s = conn_.Start(this);
    if (!s.ok()) return s;
    const ServerOptions& o = server_->options_;
    ArmDeadline(Wait::kIdle, std::min(o.header_timeout_ms, o.keep_alive_idle_ms));
    return s;
  }

  // --- net::ConnectionHandler ---
  void OnData(const char* data, size_t len) override {
    if (upgraded_) {
      upgraded_->OnData(data, len);
      return;
    }
    if (!reader_.Feed(data, len)) {
      ReaderError();
      return;
    }
    ProcessInput();
  }
  void OnDrained() override {
    if (upgraded_) {
      upgraded_->OnDrained();
      return;
    }
    if (stream_) stream_->NotifyWritable();
    if (output_full_) {
      // The client read enough of the responses it had queued: take its
      // next pipelined request.
      output_full_ = false;
      ProcessInput();
    }
  }
  void OnClosed() override {
    CancelTimers();
    if (upgraded_) upgraded_->OnClosed();  // freed with this object, after the callback
    in_flight_ = true;  // nothing more is parsed
    if (on_gone_) {
      std::function<void()> fn = std::move(on_gone_);
      on_gone_ = nullptr;
      if (!responded_ && on_gone_seq_ == seq_) fn();
    }
    if (conn_.unsent_at_close() > 0) {
      // After an upgrade the bytes are WebSocket frames, which no access
      // record covers: counted apart, so that the HTTP count equals the
      // access log's `unsent`.
      (upgraded_ ? server_->m_ws_unsent_bytes_ : server_->m_unsent_bytes_)->Inc(conn_.unsent_at_close());
    }
    if (conn_.was_reset()) server_->m_close_resets_->Inc();
    while (!pending_.empty()) {  // the responses that had not all left: what did
      WriteAccess(pending_.front());
      pending_.pop_front();
    }
    if (stream_) {
      std::shared_ptr<StreamWriter> s = std::move(stream_);
      RecordAccess("closed");
      s->NotifyClosed();
    }
    server_->Remove(this);
  }
  void OnSent() override {
    while (!pending_.empty() && conn_.sent_total() >= pending_.front().wire_end) {
      WriteAccess(pending_.front());
      pending_.pop_front();
    }
    if (!pending_.empty()) conn_.WatchSent(pending_.front().wire_end);  // not reached: no call back
  }

  // --- used by Responder / StreamWriter ---
  bool IsCurrent(uint64_t seq) const {
    return !conn_.closed() && in_flight_ && !responded_ && seq == seq_;
  }
  bool SetOnGone(uint64_t seq, std::function<void()> fn) {
    if (!IsCurrent(seq)) return false;
    on_gone_ = std::move(fn);
    on_gone_seq_ = seq;
    return true;
  }
  bool IsStreaming(uint64_t seq) const { return !conn_.closed() && stream_ && seq == seq_; }
  bool closed() const { return conn_.closed(); }

  void SendComplete(int status, std::string_view content_type, std::string_view body,
                    const Headers& extra) {
    responded_ = true;
    on_gone_ = nullptr;
    ResponseHead h;
    h.status = status;
    h.content_type = content_type;
    h.framing = BodyFraming::kContentLength;
    h.content_length = body.size();
    h.close = close_after_;
    h.keep_alive_http10 = http10_ && !close_after_;
    h.extra = &extra;
    h.edge = &edge_;
    std::string head = BuildResponseHead(h);
    std::string_view parts[2] = {head, body};
    server_->CountResponse(status);  // before the bytes leave: a client may read metrics next
    wire_start_ = conn_.queued_total();
    conn_.WriteUnbounded(parts, 2);
    status_ = status;
    body_bytes_ = body.size();
    RecordAccess(nullptr);
    CompleteResponse();
  }

  // An error answer to the current request (Responder::SendError): its
  // body by the request's path (ServerOptions::error_body), named in the
  // access record.
  void SendErrorAnswer(const ApiError& e, const Headers& extra) {
    NoteError(e.type(), e.message);
    SendComplete(e.http_status, "application/json", ErrorBody(request_.path, e), extra);
  }

  // The id of request `seq` (Responder::request_id), "" for another.
  std::string RequestIdOf(uint64_t seq) const { return seq == seq_ ? request_id_ : std::string(); }

  std::shared_ptr<StreamWriter> SendStreamHead(int status, std::string_view content_type,
                                               const Headers& extra) {
    responded_ = true;
    on_gone_ = nullptr;
    bool chunked = !http10_;  // HTTP/1.0 has no chunked coding: body until close
    if (!chunked) close_after_ = true;
    ResponseHead h;
    h.status = status;
    h.content_type = content_type;
    h.framing = chunked ? BodyFraming::kChunked : BodyFraming::kUntilClose;
    h.close = close_after_;
    h.extra = &extra;
    h.edge = &edge_;
    server_->CountResponse(status);
    wire_start_ = conn_.queued_total();
    conn_.WriteUnbounded(BuildResponseHead(h));
    status_ = status;
    stream_ = std::make_shared<StreamWriter>(weak_from_this(), seq_, chunked,
                                             conn_.limits().max_output_bytes);
    return stream_;
  }

  net::WriteResult StreamWrite(std::string_view bytes, bool chunked) {
    net::WriteResult r = StreamWriteFramed(bytes, chunked);
    if (r == net::WriteResult::kTaken || r == net::WriteResult::kQueued) body_bytes_ += bytes.size();
    return r;
  }
  net::WriteResult StreamWriteFramed(std::string_view bytes, bool chunked) {
    if (!chunked) return conn_.Write(bytes);
    char size_line[24];
    size_t n = FormatChunkHeader(bytes.size(), size_line);
    std::string_view parts[3] = {std::string_view(size_line, n), bytes, kChunkTrailer};
    return conn_.Write(parts, 3);
  }

  void StreamFinish(bool chunked) {
    if (chunked) conn_.WriteUnbounded(kLastChunk);
    stream_.reset();
    RecordAccess(nullptr);
    CompleteResponse();
  }

  void Abort() { conn_.Close(); }
  size_t buffered_bytes() const { return conn_.buffered_bytes(); }

  bool Upgrade(std::string_view head, const Responder::UpgradeFn& make_handler) {
    responded_ = true;
    server_->CountResponse(101);
    wire_start_ = conn_.queued_total();
    conn_.WriteUnbounded(InsertHeaders(head, edge_));
    status_ = 101;
    RecordAccess(nullptr);
    CancelTimers();  // no HTTP deadlines on the new protocol
    upgraded_ = make_handler(&conn_, reader_.TakeBufferedInput());
    if (!upgraded_) {
      close_after_ = true;
      conn_.CloseAfterFlush();
      return true;
    }
    conn_.SetReading(true);
    return true;
  }

  void OnServerShutdown() {
    if (upgraded_) {
      upgraded_->OnShutdown();
      return;
    }
    close_after_ = true;
    if (!in_flight_) conn_.CloseAfterFlush();  // idle or mid-request: close now
  }
  void CloseNow() { conn_.Close(); }

 private:
  enum class Wait { kNone, kIdle, kRequest };

  static net::ConnectionLimits ConnLimits(const ServerOptions& o) {
    net::ConnectionLimits l;
    l.max_output_bytes = o.max_output_bytes;
    l.write_low_watermark_bytes = o.write_low_watermark_bytes;
    l.read_chunk_bytes = o.read_chunk_bytes;
    l.close_idle_ms = o.close_idle_ms;
    l.max_write_per_flush_bytes = o.max_write_per_flush_bytes;
    return l;
  }
  static ReaderLimits ReaderLimitsOf(const ServerOptions& o) {
    ReaderLimits l;
    l.max_header_bytes = o.max_header_bytes;
    l.max_headers = o.max_headers;
    l.max_body_bytes = o.max_body_bytes;
    return l;
  }

  void CancelTimers() {
    if (deadline_timer_ != 0) server_->loop_->CancelTimer(deadline_timer_);
    if (resume_timer_ != 0) server_->loop_->CancelTimer(resume_timer_);
    deadline_timer_ = resume_timer_ = 0;
    wait_ = Wait::kNone;
  }

  // One timer per connection, re-armed lazily: moving the deadline later
  // (the common keep-alive case, once per request) touches no timer; the
  // armed timer re-arms itself when it fires early. Only an earlier deadline
  // cancels and re-adds.
  void ArmDeadline(Wait what, int64_t ms) {
    if (wait_ == what) return;  // keep the earlier deadline (measured from the first byte)
    wait_ = what;
    if (what == Wait::kNone) return;  // an armed timer will find nothing to do
    deadline_ms_ = net::EventLoop::NowMs() + ms;
    if (deadline_timer_ != 0 && armed_ms_ <= deadline_ms_) return;
    if (deadline_timer_ != 0) server_->loop_->CancelTimer(deadline_timer_);
    StartTimer(ms);
  }

  void StartTimer(int64_t ms) {
    armed_ms_ = net::EventLoop::NowMs() + ms;
    deadline_timer_ = server_->loop_->AddTimer(ms, [this] {
      deadline_timer_ = 0;
      if (wait_ == Wait::kNone) return;
      int64_t now = net::EventLoop::NowMs();
      if (now < deadline_ms_) {
        StartTimer(deadline_ms_ - now);
        return;
      }
      OnDeadline();
    });
  }

  void OnDeadline() {
    Wait w = wait_;
    wait_ = Wait::kNone;
    if (conn_.closed() || conn_.closing() || in_flight_) return;
    if (w == Wait::kIdle) {
      conn_.CloseAfterFlush();
      return;
    }
    const ServerOptions& o = server_->options_;
    SendFatal(ApiError::Make(ErrorCode::kRequestTimeout, "request not complete within header_timeout_ms=" +
                                                             std::to_string(o.header_timeout_ms) +
                                                             " of its first byte"),
              nullptr);
  }

  // An error answer that ends the connection: envelope, Connection: close,
  // close after flushing. `head`: the request it answers when its head was
  // read (its path chooses the envelope; its Origin and X-Request-Id count),
  // else null.
  void SendFatal(const ApiError& e, const Request* head) {
    in_flight_ = true;  // stop parsing
    responded_ = true;
    close_after_ = true;
    // No request was dispatched: the record has no method or path.
    started_ = std::chrono::steady_clock::now();
    dispatched_ = false;
    status_ = e.http_status;
    NoteError(e.type(), e.message);
    PrepareEdge(head);
    std::string body = ErrorBody(head ? std::string_view(head->path) : std::string_view(), e);
    ResponseHead h;
    h.status = e.http_status;
    h.content_type = "application/json";
    h.content_length = body.size();
    h.close = true;
    h.edge = &edge_;
    std::string head_bytes = BuildResponseHead(h);
    std::string_view parts[2] = {head_bytes, body};
    server_->CountResponse(e.http_status);
    wire_start_ = conn_.queued_total();
    conn_.WriteUnbounded(parts, 2);
    body_bytes_ = body.size();
    RecordAccess(nullptr);
    ArmDeadline(Wait::kNone, 0);
    conn_.CloseAfterFlush();
  }

  void ReaderError() {
    int status = reader_.error_status();
    if (status < 400 || status > 599) status = 400;
    std::string message = reader_.error_message();
    if (message.empty()) message = std::string(ReasonPhrase(status));
    SendFatal(ApiError::Make(ErrorCodeForStatus(status), status, std::move(message)), reader_.failed_head());
  }

  void ProcessInput() {
    if (processing_) return;  // the running loop below picks the next request up
    processing_ = true;
    while (!in_flight_ && !conn_.closed() && !conn_.closing()) {
      // A client that pipelines requests and does not read the answers: no
      // next request while its queued output is over the bound (reading
      // stops below; the kernel's buffers and TCP flow control hold the
      // rest), so what it costs is bounded by max_output_bytes plus one
      // response, whatever the responses are. OnDrained picks up again.
      if (conn_.buffered_bytes() > conn_.limits().max_output_bytes) {
        output_full_ = true;
        break;
      }
      RequestReader::Event ev = reader_.Next(&request_);
      if (ev == RequestReader::Event::kNeedMore) break;
      if (ev == RequestReader::Event::kContinue) {
        conn_.WriteUnbounded(kContinueLine);
        continue;
      }
      if (ev == RequestReader::Event::kError) {
        ReaderError();
        break;
      }
      Dispatch();
    }
    processing_ = false;
    if (in_flight_ || conn_.closed() || conn_.closing()) return;
    if (output_full_) {
      conn_.SetReading(false);
      ArmDeadline(Wait::kNone, 0);  // waiting on the client's reading, not its request
      return;
    }
    conn_.SetReading(true);
    const ServerOptions& o = server_->options_;
    if (reader_.request_in_progress() || reader_.buffered_bytes() > 0) {
      ArmDeadline(Wait::kRequest, o.header_timeout_ms);
    } else {
      ArmDeadline(Wait::kIdle, o.keep_alive_idle_ms);
    }
  }

  void Dispatch() {
    ArmDeadline(Wait::kNone, 0);
    in_flight_ = true;
    responded_ = false;
    started_ = std::chrono::steady_clock::now();
    dispatched_ = true;
    status_ = 0;
    body_bytes_ = 0;
    error_type_.clear();
    error_message_.clear();
    ++seq_;
    close_after_ = !request_.keep_alive || server_->shutting_down_;
    http10_ = request_.minor_version == 0;
    conn_.SetReading(false);
    PrepareEdge(&request_);
    Headers preflight;
    if (PreflightHeaders(server_->options_.cors, request_, &preflight)) {
      SendComplete(204, "", "", preflight);
      return;
    }
    Responder r(weak_from_this(), seq_);
    if (server_->router_ != nullptr) {
      server_->router_->Dispatch(request_, std::move(r));
    } else {
      r.SendError(ApiError::Make(ErrorCode::kNotFound, "no routes"));
    }
  }

  static constexpr size_t kMaxLoggedMessage = 200;  // bytes of an error message in the log

  // An error envelope is about to be sent: the access record names it.
  void NoteError(std::string_view type, std::string_view message) {
    error_type_ = type;
    error_message_.assign(message.substr(0, kMaxLoggedMessage));
  }

  std::string ErrorBody(std::string_view path, const ApiError& e) const {
    const ServerOptions& o = server_->options_;
    return o.error_body ? o.error_body(path, e) : json::ErrorEnvelope(e);
  }

  // The headers every response to `req` carries (null: no request head was
  // read): its id, and the CORS headers.
  void PrepareEdge(const Request* req) {
    edge_.clear();
    request_id_ = RequestIdFor(req ? req->Header("X-Request-Id") : std::string_view());
    edge_.emplace_back("X-Request-Id", request_id_);
    if (req) AppendCorsHeaders(server_->options_.cors, *req, &edge_);
  }

  // One response's access record, written once its bytes have left (or the
  // connection closed): server.h's file comment says what it holds.
  struct AccessRecord {
    LogLevel level;
    std::string method, path;
    int status;
    uint64_t body_bytes;
    double ms;
    std::string error, msg;
    std::string request_id;
    const char* outcome;  // null, or "closed": the stream was cut mid-response
    uint64_t wire_start, wire_end;  // the response's bytes in conn_'s queued_total() count
  };

  // The current response is complete (or cut: outcome "closed").
  void RecordAccess(const char* outcome) {
    Logger* log = server_->options_.log;
    const LogLevel level = status_ >= 500 ? LogLevel::kError : status_ >= 400 ? LogLevel::kWarn : LogLevel::kInfo;
    if (log == nullptr || !log->Enabled(level)) return;
    std::string_view path = dispatched_ ? std::string_view(request_.path) : std::string_view();
    if (path.size() > kMaxLoggedMessage) path = path.substr(0, kMaxLoggedMessage);
    AccessRecord r{level,
                   dispatched_ ? request_.method : std::string(),
                   std::string(path),
                   status_,
                   body_bytes_,
                   std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_).count(),
                   error_type_,
                   error_message_,
                   request_id_,
                   outcome,
                   wire_start_,
                   conn_.queued_total()};
    if (outcome != nullptr || conn_.closed() || (pending_.empty() && conn_.sent_total() >= r.wire_end)) {
      WriteAccess(r);
      return;
    }
    pending_.push_back(std::move(r));
    conn_.WatchSent(pending_.front().wire_end);  // not reached: no call back
  }

  void WriteAccess(const AccessRecord& r) {
    // Closed with part of the response still here: the bytes that left.
    uint64_t unsent = 0;
    if (conn_.closed()) {
      const uint64_t sent_to = std::max(conn_.sent_total(), r.wire_start);
      unsent = r.wire_end > sent_to ? r.wire_end - sent_to : 0;
    }
    const char* outcome = unsent == 0 ? r.outcome : conn_.was_reset() ? "reset" : "closed";
    server_->options_.log->Log(
        r.level, "access",
        {{"method", r.method.empty() ? std::string_view() : std::string_view(r.method)},
         {"path", r.path.empty() ? std::string_view() : std::string_view(r.path)},
         {"status", r.status},
         {"bytes", r.body_bytes - std::min(r.body_bytes, unsent)},
         {"unsent", unsent > 0 ? std::optional<int64_t>(static_cast<int64_t>(unsent)) : std::nullopt},
         {"ms", r.ms},
         {"request_id", r.request_id.empty() ? std::string_view() : std::string_view(r.request_id)},
         {"error", r.error.empty() ? std::string_view() : std::string_view(r.error)},
         {"msg", r.msg.empty() ? std::string_view() : std::string_view(r.msg)},
         {"outcome", outcome}});
  }

  void CompleteResponse() {
    in_flight_ = false;
    if (close_after_) {
      in_flight_ = true;  // nothing more is parsed on this connection
      conn_.CloseAfterFlush();
      return;
    }
    if (processing_) return;  // synchronous answer: ProcessInput's loop continues
    // Asynchronous answer: take the next pipelined request from the loop, not
    // from inside the caller's Send()/Finish().
    if (resume_timer_ == 0) {
      resume_timer_ = server_->loop_->AddTimer(0, [this] {
        resume_timer_ = 0;
        ProcessInput();
      });
    }
  }

  Server* server_;
  net::Connection conn_;
  RequestReader reader_;
  Request request_;                 // the request being handled
  uint64_t seq_ = 0;                // number of the current request
  bool in_flight_ = false;          // dispatched, response not complete
  bool responded_ = false;          // a response head went out for seq_
  bool close_after_ = false;        // close once the response is complete
  bool http10_ = false;             // an HTTP/1.0 request (no chunked coding)
  bool processing_ = false;         // inside ProcessInput
  bool output_full_ = false;        // input paused: queued output over max_output_bytes
  std::shared_ptr<StreamWriter> stream_;  // the current streaming response
  // The access record of the current response.
  std::chrono::steady_clock::time_point started_;  // dispatch (or the fatal answer)
  bool dispatched_ = false;         // request_ is the request answered
  int status_ = 0;
  uint64_t body_bytes_ = 0;
  std::string error_type_, error_message_;
  std::string request_id_;          // the current response's X-Request-Id
  Headers edge_;                    // X-Request-Id and CORS: on every response to the current request
  uint64_t wire_start_ = 0;                 // conn_.queued_total() when the response began
  std::deque<AccessRecord> pending_;        // complete, bytes not all sent yet (oldest first)
  std::function<void()> on_gone_;           // Responder::OnClientGone of request on_gone_seq_
  uint64_t on_gone_seq_ = 0;
  std::unique_ptr<net::ConnectionHandler> upgraded_;  // after Upgrade: gets all events
  Wait wait_ = Wait::kNone;
  int64_t deadline_ms_ = 0;         // when the current wait_ expires (monotonic ms)
  int64_t armed_ms_ = 0;            // when deadline_timer_ fires
  net::EventLoop::TimerId deadline_timer_ = 0;
  net::EventLoop::TimerId resume_timer_ = 0;
};

// ---------------------------------------------------------------------------
// StreamWriter
// ---------------------------------------------------------------------------
StreamWriter::StreamWriter(std::weak_ptr<HttpConnection> conn, uint64_t seq, bool chunked,
                           size_t max_output_bytes)
    : conn_(std::move(conn)), seq_(seq), chunked_(chunked), max_output_bytes_(max_output_bytes) {}

StreamWriter::WriteResult StreamWriter::Write(std::string_view bytes) {
  if (done_) return WriteResult::kClosed;
  auto c = conn_.lock();
  if (!c || !c->IsStreaming(seq_)) return WriteResult::kClosed;
  if (bytes.empty()) return WriteResult::kTaken;
  return c->StreamWrite(bytes, chunked_);
}

size_t StreamWriter::buffered_bytes() const {
  auto c = conn_.lock();
  return c && !c->closed() ? c->buffered_bytes() : 0;
}

void StreamWriter::Finish() {
  if (done_) return;
  done_ = true;
  on_writable_ = nullptr;
  on_close_ = nullptr;
  auto c = conn_.lock();
  if (c && c->IsStreaming(seq_)) c->StreamFinish(chunked_);
}

void StreamWriter::Abort() {
  if (done_) return;
  auto c = conn_.lock();
  if (c && c->IsStreaming(seq_)) {
    c->Abort();  // OnClosed → NotifyClosed → on_close_
  } else {
    NotifyClosed();
  }
}

void StreamWriter::NotifyWritable() {
  if (done_ || !on_writable_) return;
  auto fn = on_writable_;  // the callback may replace itself
  fn();
}

void StreamWriter::NotifyClosed() {
  if (done_) return;
  done_ = true;
  on_writable_ = nullptr;
  std::function<void()> fn = std::move(on_close_);
  on_close_ = nullptr;
  if (fn) fn();
}

// ---------------------------------------------------------------------------
// Responder
// ---------------------------------------------------------------------------
void Responder::Send(int status, std::string content_type, std::string body,
                     const Headers& extra_headers) {
  auto c = conn_.lock();
  if (!c || !c->IsCurrent(seq_)) return;
  c->SendComplete(status, content_type, body, extra_headers);
}

void Responder::SendError(const ApiError& e, const Headers& extra_headers) {
  auto c = conn_.lock();
  if (!c || !c->IsCurrent(seq_)) return;
  Headers h = extra_headers;
  if (e.retry_after_ms > 0) {
    h.emplace_back("Retry-After", std::to_string(std::max<int64_t>(1, (e.retry_after_ms + 999) / 1000)));
  }
  c->SendErrorAnswer(e, h);
}

std::string Responder::request_id() const {
  auto c = conn_.lock();
  return c ? c->RequestIdOf(seq_) : std::string();
}

std::shared_ptr<StreamWriter> Responder::StartStream(int status, std::string content_type,
                                                     const Headers& extra_headers) {
  auto c = conn_.lock();
  if (!c || !c->IsCurrent(seq_)) {
    auto dead = std::make_shared<StreamWriter>(std::weak_ptr<HttpConnection>(), 0, true, 0);
    dead->NotifyClosed();
    return dead;
  }
  return c->SendStreamHead(status, content_type, extra_headers);
}

bool Responder::Upgrade(std::string_view response_head, const UpgradeFn& make_handler) {
  auto c = conn_.lock();
  if (!c || !c->IsCurrent(seq_)) return false;
  return c->Upgrade(response_head, make_handler);
}

bool Responder::OnClientGone(std::function<void()> fn) {
  auto c = conn_.lock();
  return c && c->SetOnGone(seq_, std::move(fn));
}

bool Responder::closed() const {
  auto c = conn_.lock();
  return !c || c->closed();
}

const PathParams& Responder::params() const {
  static const PathParams kEmpty;
  return params_ ? *params_ : kEmpty;
}

std::string_view Responder::Param(std::string_view name) const {
  for (const auto& [k, v] : params()) {
    if (k == name) return v;
  }
  return {};
}

// ---------------------------------------------------------------------------
// What the Server asks of a connection (http_connection.h)
// ---------------------------------------------------------------------------
std::shared_ptr<HttpConnection> StartHttpConnection(Server* server, int fd) {
  auto c = std::make_shared<HttpConnection>(server, fd);
  if (!c->Start().ok()) return nullptr;  // fd closed by Connection::Start
  return c;
}

void ShutdownHttpConnection(HttpConnection* c) { c->OnServerShutdown(); }

void CloseHttpConnection(HttpConnection* c) { c->CloseNow(); }

}  // namespace tw::http
