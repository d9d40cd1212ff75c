#include "client/sse_client.h"

namespace tw::client {
namespace {

// "text/event-stream" as the media type, parameters and case ignored.
bool IsEventStreamType(const std::string* content_type) {
  if (content_type == nullptr) return false;
  std::string_view v = *content_type;
  v = v.substr(0, v.find(';'));
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  constexpr std::string_view kWant = "text/event-stream";
  if (v.size() != kWant.size()) return false;
  for (size_t i = 0; i < v.size(); i++) {
    char c = v[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != kWant[i]) return false;
  }
  return true;
}

}  // namespace

SseClient::SseClient(SseOptions options)
    : options_(std::move(options)),
      http_(options_.http),
      parser_([this](const sse::Event& e) { OnParsed(e); }, options_.parser) {
  parser_.set_comment_sink([this](std::string_view c) { result_.comments.emplace_back(c); });
}

void SseClient::OnParsed(const sse::Event& e) {
  if (stopping_) {
    pending_.push_back(e);  // parsed past the stop: kept for the next ReadEvents
    return;
  }
  Deliver(e);
}

void SseClient::Deliver(const sse::Event& e) {
  result_.events.push_back(e);
  result_.last_event_id = e.id;
  if (callback_ && *callback_ && !(*callback_)(e)) stopping_ = true;
  if (options_.max_events != 0 && result_.events.size() >= options_.max_events) stopping_ = true;
  if (options_.stop_after && options_.stop_after(e)) stopping_ = true;
}

Status SseClient::Connect(uint16_t port) { return http_.Connect(port); }

Status SseClient::Start(const Request& request) {
  result_ = SseResult();
  pending_.clear();
  is_event_stream_ = false;
  parser_.Finish();  // a fresh stream
  Status s = http_.SendRequest(request);
  if (!s.ok()) return s;
  s = http_.ReadHead(&result_.head);
  if (!s.ok()) return s;
  is_event_stream_ = result_.head.status == 200 && IsEventStreamType(result_.head.Find("content-type"));
  if (is_event_stream_) return Status::Ok();
  // Not a stream: the body is the error document.
  size_t limit = options_.http.max_body_bytes;
  Status over;
  bool complete = false;
  s = http_.ReadBody(
      [&](std::string_view bytes) {
        if (result_.error_body.size() + bytes.size() > limit) {
          over = Status::Error("error body over max_body_bytes (" + std::to_string(limit) + ")");
          return false;
        }
        result_.error_body.append(bytes);
        return true;
      },
      &complete);
  if (!over.ok()) return over;
  result_.ended = complete;
  return s;
}

Status SseClient::Post(std::string_view target, std::string_view json_body) {
  Request r;
  r.method = "POST";
  r.target = std::string(target);
  r.headers = {{"Accept", "text/event-stream"},
               {"Cache-Control", "no-cache"},
               {"Content-Type", "application/json"}};
  r.headers.insert(r.headers.end(), options_.headers.begin(), options_.headers.end());
  r.body = std::string(json_body);
  return Start(r);
}

Status SseClient::Get(std::string_view target, std::string_view last_event_id) {
  Request r;
  r.method = "GET";
  r.target = std::string(target);
  r.headers = {{"Accept", "text/event-stream"}, {"Cache-Control", "no-cache"}};
  if (!last_event_id.empty()) r.headers.emplace_back("Last-Event-ID", std::string(last_event_id));
  r.headers.insert(r.headers.end(), options_.headers.begin(), options_.headers.end());
  return Start(r);
}

Status SseClient::ReadEvents(const EventCallback& on_event) {
  if (!is_event_stream_) return Status::Error("ReadEvents: the response is not an event stream");
  stopping_ = false;
  result_.stopped = false;
  callback_ = &on_event;
  // Events parsed in an earlier read after its stop come first.
  while (!pending_.empty() && !stopping_) {
    Deliver(pending_.front());
    pending_.pop_front();
  }
  Status parse_error;
  Status s;
  if (!stopping_ && !result_.ended) {
    bool complete = false;
    s = http_.ReadBody(
        [&](std::string_view bytes) {
          parse_error = parser_.Feed(bytes);
          return parse_error.ok() && !stopping_;
        },
        &complete);
    if (complete && parse_error.ok()) {
      parser_.Finish();  // an unfinished event at the end is discarded
      result_.ended = true;
    }
  }
  callback_ = nullptr;
  result_.stopped = stopping_;
  // The parser's id also moves on id-only dispatches; it is the client's own
  // only when nothing parsed is still waiting to be delivered.
  if (pending_.empty()) result_.last_event_id = parser_.last_event_id();
  result_.retry_ms = parser_.retry_ms();
  if (!parse_error.ok()) return parse_error;
  return s;
}

namespace {

Status RunSse(SseClient* client, uint16_t port, const SseOptions& options, SseResult* out,
              const std::function<Status()>& start) {
  Status s = client->Connect(port);
  if (s.ok()) s = start();
  if (s.ok() && client->is_event_stream()) s = client->ReadEvents();
  *out = client->result();
  if (options.close_with_reset && out->stopped) {
    client->http().CloseWithReset();
  } else {
    client->http().Close();
  }
  return s;
}

}  // namespace

Status PostSse(uint16_t port, std::string_view target, std::string_view json_body, SseResult* out,
               const SseOptions& options) {
  SseClient client(options);
  return RunSse(&client, port, options, out, [&] { return client.Post(target, json_body); });
}

Status GetSse(uint16_t port, std::string_view target, std::string_view last_event_id, SseResult* out,
              const SseOptions& options) {
  SseClient client(options);
  return RunSse(&client, port, options, out, [&] { return client.Get(target, last_event_id); });
}

}  // namespace tw::client
