#include "http/server.h"

#include <sys/socket.h>

#include <algorithm>
#include <string>

#include "http/http_connection.h"
#include "json/error_json.h"

namespace tw::http {

// ---------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------
Server::Server(net::EventLoop* loop, ServerOptions options, Router* router, Metrics* metrics)
    : loop_(loop), options_(std::move(options)), router_(router), listener_(loop) {
  if (metrics == nullptr) {
    own_metrics_ = std::make_unique<Metrics>();
    metrics = own_metrics_.get();
  }
  metrics_ = metrics;
  m_connections_ = metrics_->AddGauge("tokenwire_http_connections", "Open HTTP connections.");
  m_accepted_ = metrics_->AddCounter("tokenwire_http_connections_accepted_total",
                                     "TCP connections accepted.");
  m_rejected_ = metrics_->AddCounter("tokenwire_http_connections_rejected_total",
                                     "Connections answered 503 because max_connections was reached.");
  m_requests_ = metrics_->AddLabeledCounter("tokenwire_http_requests_total",
                                            "HTTP responses sent, by status code.", "code");
  m_bytes_in_ = metrics_->AddCounter("tokenwire_http_received_bytes_total",
                                     "Bytes read from HTTP connections.");
  m_bytes_out_ = metrics_->AddCounter("tokenwire_http_sent_bytes_total",
                                      "Bytes written to HTTP connections.");
  m_unsent_bytes_ = metrics_->AddCounter(
      "tokenwire_http_unsent_bytes_total",
      "Response bytes dropped because their connection closed first (the client left, or stopped reading "
      "while the connection was closing).");
  m_ws_unsent_bytes_ = metrics_->AddCounter(
      "tokenwire_ws_unsent_bytes_total",
      "WebSocket bytes (after the upgrade) dropped because their connection closed first.");
  m_close_resets_ = metrics_->AddCounter(
      "tokenwire_http_close_resets_total",
      "Closing connections reset because no byte could be sent for close_idle_ms (the client stopped reading).");
}

Server::~Server() {
  destroying_ = true;
  listener_.Close();
  auto conns = std::move(conns_);
  conns_.clear();
  for (auto& [ptr, c] : conns) CloseHttpConnection(c.get());
  for (auto& [ptr, c] : conns) loop_->ReleaseLater(c);
}

Status Server::Start() {
  listener_.set_log(options_.log);
  Status s = listener_.Open(options_.host, options_.port);
  if (!s.ok()) return s;
  return listener_.Start([this](int fd) { OnAccept(fd); });
}

void Server::OnAccept(int fd) {
  m_accepted_->Inc();
  if (conns_.size() >= options_.max_connections) {
    m_rejected_->Inc();
    std::string body = json::ErrorEnvelope(ApiError::Make(
        ErrorCode::kOverloaded,
        "too many connections (max_connections=" + std::to_string(options_.max_connections) + ")"));
    Headers extra = {{"Retry-After", "1"}};
    ResponseHead h;
    h.status = 503;
    h.content_type = "application/json";
    h.content_length = body.size();
    h.close = true;
    h.extra = &extra;
    CountResponse(503);
    net::SendAndClose(fd, BuildResponseHead(h) + body);
    LogIf(options_.log, LogLevel::kWarn, "rejected",
          {{"status", 503}, {"reason", "max_connections"}, {"max_connections", options_.max_connections}});
    return;
  }
  if (options_.socket_send_buffer_bytes > 0) {
    // Bounds what the kernel absorbs for a client that stops reading, so
    // backpressure reaches the stream layer at a known point.
    int v = options_.socket_send_buffer_bytes;
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);  // best effort
  }
  std::shared_ptr<HttpConnection> c = StartHttpConnection(this, fd);
  if (!c) return;  // fd closed by Connection::Start
  conns_.emplace(c.get(), c);
  count_.store(conns_.size(), std::memory_order_relaxed);
  m_connections_->Add(1);
}

void Server::Remove(HttpConnection* c) {
  if (destroying_) return;
  auto it = conns_.find(c);
  if (it == conns_.end()) return;
  loop_->ReleaseLater(std::move(it->second));  // freed after the current callback
  conns_.erase(it);
  count_.store(conns_.size(), std::memory_order_relaxed);
  m_connections_->Add(-1);
  if (shutting_down_ && conns_.empty() && on_idle_) {
    loop_->Post(std::move(on_idle_));
    on_idle_ = nullptr;
  }
}

void Server::BeginShutdown(std::function<void()> on_idle) {
  shutting_down_ = true;
  on_idle_ = std::move(on_idle);
  // The listener stays open while draining: health probes and late requests
  // are answered (each connection closes after one response) rather than
  // refused by the kernel, so a load balancer sees /readyz fail (DESIGN.md
  // §8, docs/deploy.md).
  std::vector<HttpConnection*> all;
  for (auto& [ptr, c] : conns_) all.push_back(ptr);
  for (HttpConnection* c : all) {
    if (conns_.count(c)) ShutdownHttpConnection(c);
  }
  if (conns_.empty() && on_idle_) {
    loop_->Post(std::move(on_idle_));
    on_idle_ = nullptr;
  }
}

void Server::CountResponse(int status) {
  if (status < 0 || status >= static_cast<int>(by_code_.size())) {
    m_requests_->With(std::to_string(status))->Inc();
    return;
  }
  Counter*& c = by_code_[status];
  if (c == nullptr) c = m_requests_->With(std::to_string(status));
  c->Inc();
}

}  // namespace tw::http
