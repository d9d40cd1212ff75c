#include "loadgen/chaos_clients.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string_view>
#include <utility>

#include "json/json.h"
#include "loadgen/report.h"
#include "loadgen/scenario_util.h"
#include "loadgen/session.h"
#include "ws_loadgen/ws_engine.h"
#include "ws_loadgen/ws_stream.h"

namespace tw::loadgen::chaos {
namespace {

constexpr int kMaxJsonDepth = 64;        // the server's default --max-json-depth
constexpr double kReapPeriodUs = 20000;  // how often ended clients are judged and replaced
constexpr double kRetireUs = 5e6;        // an ended client is freed this long after (> any timer it set)
// A refused client's slot waits this long (ms) before its next client, as a
// client honouring Retry-After (1 s here) backs off.
constexpr int kBackoffMinMs = 100, kBackoffMaxMs = 1000;

}  // namespace

int Pick(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

std::string SpecBody(const Spec& s, int n, const std::string& policy) {
  std::string b = "{\"prompt_tokens\":[";
  for (size_t i = 0; i < s.prompt.size(); ++i) b += (i ? "," : "") + std::to_string(s.prompt[i]);
  b += "],\"seed\":" + std::to_string(s.seed) + ",\"max_new_tokens\":" + std::to_string(n) +
       ",\"temperature\":" + Fmt(s.temperature, 2) + ",\"top_k\":" + std::to_string(s.top_k) +
       ",\"top_p\":" + Fmt(s.top_p, 2);
  if (!policy.empty()) b += ",\"policy\":\"" + policy + "\"";
  return b + "}";
}

int PickLength(std::mt19937_64& rng, const Spec& s) {
  switch (Pick(rng, 0, 2)) {
    case 0: return Pick(rng, 1, 16);
    case 1: return Pick(rng, 17, 64);
    default: return Pick(rng, 65, s.max_new());
  }
}

namespace {

std::string PostRequest(uint16_t port, const std::string& target, const std::string& body, bool close = true) {
  return "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
         (close ? "Connection: close\r\n" : "") + "\r\n" + body;
}

std::string GetKeepAlive(uint16_t port, const std::string& target) {
  return "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n\r\n";
}

}  // namespace

bool ParseGenerate(const std::string& body, std::vector<int32_t>* tokens, std::string* finish) {
  json::Value v;
  if (!json::Parse(body, &v).ok() || !v.is_object()) return false;
  const json::Value* t = v.Find("tokens");
  const json::Value* f = v.Find("finish_reason");
  if (!t || !t->is_array() || !f || !f->is_string()) return false;
  tokens->clear();
  for (const auto& x : t->items()) tokens->push_back(x.is_int() ? static_cast<int32_t>(x.as_int()) : -1);
  *finish = f->as_string();
  return true;
}

namespace {

// A field of the error envelope ("type", "message"; "" if the body is not one).
std::string ErrorField(const std::string& body, const char* field) {
  json::Value v;
  if (!json::Parse(body, &v).ok()) return "";
  const json::Value* e = v.Find("error");
  const json::Value* t = e ? e->Find(field) : nullptr;
  return t && t->is_string() ? t->as_string() : "";
}
std::string ErrorType(const std::string& body) { return ErrorField(body, "type"); }

// How a refusal is counted: "refused (--max-waiting)", from the flag its
// message names ("... (--max-waiting 16)"), or "refused (503)".
std::string Refusal(const std::string& message) {
  size_t at = message.find("(--");
  if (at == std::string::npos) return "refused (503)";
  size_t end = message.find_first_of(" )", at + 1);
  return "refused (" + message.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1) + ")";
}

}  // namespace

void Tally::Unexpected(KindTally* k, const std::string& kind, const std::string& what) {
  k->unexpected++;
  unexpected++;
  if (examples.size() < 20) examples.push_back(kind + ": " + what);
}

void Tally::Merge(const Tally& o) {
  for (const auto& [name, k] : o.kinds) {
    KindTally& m = kinds[name];
    m.started += k.started;
    m.ended += k.ended;
    m.refused += k.refused;
    m.unexpected += k.unexpected;
    m.resumes += k.resumes;
    m.detach_resumes += k.detach_resumes;
    for (const auto& [e, n] : k.endings) m.endings[e] += n;
  }
  verified += o.verified;
  tokens_expected += o.tokens_expected;
  tokens_received += o.tokens_received;
  lost += o.lost;
  duplicated += o.duplicated;
  gaps += o.gaps;
  mismatched += o.mismatched;
  unexpected += o.unexpected;
  for (const auto& e : o.examples) {
    if (examples.size() < 20) examples.push_back(e);
  }
}

uint64_t Tally::Ended() const {
  uint64_t n = 0;
  for (const auto& [name, k] : kinds) n += k.ended;
  return n;
}

uint64_t Tally::Hung() const {
  uint64_t n = 0;
  for (const auto& [name, k] : kinds) {
    auto it = k.endings.find("still running");
    if (it != k.endings.end()) n += it->second;
  }
  return n;
}

namespace {

enum class End { kComplete, kCompleteOrCancelled, kLeft };

struct Received {
  const std::vector<int32_t>* tokens;  // by index; -1: never received
  uint64_t duplicates = 0, gaps = 0;
  bool done = false;
  std::string finish;
  std::string failure;
};

// Compares one stream with its Spec's reference and counts what was lost,
// duplicated, skipped or different; an ending outside `end` is unexpected.
// Lost: every token missing from a stream that had to be complete (or ended
// with length); for one cancelled or left on purpose, the holes below the
// last token it received. Returns how it ended (its finish_reason, "left" or
// "failed").
std::string JudgeStream(const Spec& spec, int n, End end, const Received& r, const std::string& kind,
                        KindTally* k, Tally* t) {
  const std::vector<int32_t>& got = *r.tokens;
  uint64_t received = 0, missing = 0, holes = 0, mismatched = 0;
  int highest = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] >= 0) highest = static_cast<int>(i);
  }
  for (int i = 0; i < std::max<int>(n, static_cast<int>(got.size())); ++i) {
    int32_t x = i < static_cast<int>(got.size()) ? got[i] : -1;
    if (i >= n) {
      mismatched += x >= 0;  // a token past max_new_tokens
      continue;
    }
    if (x < 0) {
      missing++;
      holes += i < highest;
      continue;
    }
    received++;
    mismatched += x != spec.ref[i];
  }
  std::string ending = r.done ? r.finish : (r.failure.empty() ? "left" : "failed");
  bool complete = r.done && r.finish == "length";
  bool ok = r.failure.empty();
  switch (end) {
    case End::kComplete:
      ok = ok && complete;
      break;
    case End::kCompleteOrCancelled:
      ok = ok && (complete || (r.done && r.finish == "cancelled"));
      break;
    case End::kLeft:
      ok = ok && (!r.done || complete);
      break;
  }
  const bool expect_all = end == End::kComplete || complete;
  t->verified++;
  t->tokens_received += received;
  t->tokens_expected += expect_all ? static_cast<uint64_t>(n) : received + holes;
  t->lost += expect_all ? missing : holes;
  t->duplicated += r.duplicates;
  t->gaps += r.gaps;
  t->mismatched += mismatched;
  if (!ok) {
    t->Unexpected(k, kind, "ended '" + ending + "'" + (r.failure.empty() ? "" : " (" + r.failure + ")") + ", " +
                               std::to_string(received) + " of " + std::to_string(n) + " tokens");
  }
  return ending;
}

}  // namespace

// ---- Clients ------------------------------------------------------------------

// One client: started once, then judged once when it is over.
class Actor {
 public:
  explicit Actor(std::string kind) : kind(std::move(kind)) {}
  virtual ~Actor() = default;
  virtual void Start() = 0;
  virtual bool Over() const = 0;
  // Once, after Over() (or at the end of the drain, `hung`).
  virtual void Judge(Tally* t, bool hung) = 0;
  // The load is over: a client holding a connection on purpose lets go.
  virtual void EndHold() {}
  const std::string kind;
  double ended_us = 0;
  bool refused = false;  // set by Judge: a 503 before the first byte (its slot backs off)
};

namespace {

void JudgeHung(const std::string& kind, Tally* t) {
  KindTally& k = t->kinds[kind];
  k.endings["still running"]++;
  t->Unexpected(&k, kind, "still running when the drain ended");
}

// One SSE stream (StreamSession) checked against its Spec.
class SseActor : public Actor {
 public:
  SseActor(std::string kind, Engine* e, uint16_t port, Script sc, const Spec* spec, int n, End end, uint64_t tag)
      : Actor(std::move(kind)), s_(e, port, std::move(sc), tag), spec_(spec), n_(n), end_(end) {}
  void Start() override { s_.Start(); }
  bool Over() const override { return s_.Over(); }
  void Judge(Tally* t, bool hung) override {
    if (hung) return JudgeHung(kind, t);
    KindTally& k = t->kinds[kind];
    k.ended++;
    if (s_.status == 503 && s_.connections == 1 && s_.events == 0) {
      refused = true;
      k.refused++;
      k.endings[Refusal(ErrorField(s_.error_body, "message"))]++;
      return;
    }
    k.resumes += s_.connections - 1;
    k.detach_resumes += s_.server_ends_resumed;
    Received r{&s_.tokens, s_.duplicates, s_.gaps, s_.done_us != 0, s_.finish_reason, s_.failure};
    k.endings[JudgeStream(*spec_, n_, end_, r, kind, &k, t)]++;
    if (s_.delete_sent_us > 0 && s_.delete_status != 204) {
      t->Unexpected(&k, kind, "DELETE answered " + std::to_string(s_.delete_status));
    }
  }

 private:
  StreamSession s_;
  const Spec* spec_;
  int n_;
  End end_;
};

// Seven requests in one write; each answer checked in order.
class PipelineActor : public Actor, public Handler {
 public:
  static constexpr int kRequests = 7;
  PipelineActor(Engine* e, uint16_t port, const Spec* spec, int n, const std::string& text,
                const std::vector<int32_t>* text_tokens, const std::string& model)
      : Actor("pipelined"), engine_(e), spec_(spec), n_(n), text_tokens_(text_tokens) {
    std::string tok = "{\"text\":";
    json::AppendQuoted(&tok, text);
    tok += "}";
    std::string cmpl = "{\"model\":";
    json::AppendQuoted(&cmpl, model);
    cmpl += ",\"prompt\":\"Hello\",\"max_tokens\":4,\"seed\":3}";
    request_ = GetKeepAlive(port, "/healthz") + PostRequest(port, "/v1/tokenize", tok, false) +
               PostRequest(port, "/v1/generate", SpecBody(*spec, n), false) + GetKeepAlive(port, "/no/such/path") +
               PostRequest(port, "/v1/completions", cmpl, false) + GetKeepAlive(port, "/metrics") +
               GetRequest(port, "/stats");
  }
  void Start() override {
    ConnOptions co;
    co.responses = kRequests;
    engine_->Open(std::move(request_), this, 0, co);
  }
  bool Over() const override { return over_; }
  void OnHead(Conn*, const client::ResponseHead& head) override {
    status_ = head.status;
    body_.clear();
  }
  void OnBody(Conn*, std::string_view bytes) override { body_.append(bytes); }
  void OnResponseDone(Conn*) override {
    statuses_.push_back(status_);
    bodies_.push_back(std::move(body_));
    body_.clear();
  }
  void OnEnd(Conn*, bool complete, const Status& why) override {
    over_ = true;
    if (!complete) why_ = why.message();
  }
  void Judge(Tally* t, bool hung) override {
    if (hung) return JudgeHung(kind, t);
    KindTally& k = t->kinds[kind];
    k.ended++;
    if (statuses_.size() != kRequests) {
      k.endings["short"]++;
      t->Unexpected(&k, kind, std::to_string(statuses_.size()) + " of 7 answers (" + why_ + ")");
      return;
    }
    const int want[kRequests] = {200, 200, 200, 404, 200, 200, 200};
    std::string bad;
    for (int i = 0; i < kRequests; ++i) {
      const bool overloaded = (i == 2 || i == 4) && statuses_[i] == 503;  // generate, completions
      k.refused += overloaded;
      if (statuses_[i] != want[i] && !overloaded) {
        bad += " #" + std::to_string(i + 1) + ": " + std::to_string(statuses_[i]);
      }
    }
    json::Value v;
    const json::Value* listed = json::Parse(bodies_[1], &v).ok() ? v.Find("tokens") : nullptr;
    std::vector<int32_t> toks;
    for (size_t j = 0; listed && listed->is_array() && j < listed->items().size(); ++j) {
      const json::Value& x = listed->items()[j];
      toks.push_back(x.is_int() ? static_cast<int32_t>(x.as_int()) : -1);
    }
    if (statuses_[1] == 200 && toks != *text_tokens_) bad += " tokenize differs from the reference";
    if (statuses_[2] == 200) {
      std::vector<int32_t> gen;
      std::string finish;
      if (!ParseGenerate(bodies_[2], &gen, &finish)) {
        bad += " generate answer unreadable";
      } else {
        Received r{&gen, 0, 0, true, finish, ""};
        JudgeStream(*spec_, n_, End::kComplete, r, kind, &k, t);
      }
    }
    k.endings[bad.empty() ? "7 answers in order" : "wrong answers"]++;
    if (!bad.empty()) t->Unexpected(&k, kind, "answers:" + bad);
  }

 private:
  Engine* engine_;
  const Spec* spec_;
  int n_;
  const std::vector<int32_t>* text_tokens_;
  std::string request_;
  int status_ = 0;
  std::string body_;
  std::vector<int> statuses_;
  std::vector<std::string> bodies_;
  bool over_ = false;
  std::string why_;
};

// A client that writes its request and never reads; holds the connection,
// then closes it with a FIN or an RST.
class SilentActor : public Actor, public Handler {
 public:
  SilentActor(std::string kind, Engine* e, std::string request, int responses, double hold_ms, bool reset)
      : Actor(std::move(kind)), engine_(e), request_(std::move(request)), responses_(responses), hold_ms_(hold_ms),
        reset_(reset) {}
  void Start() override {
    ConnOptions co;
    co.reading = false;
    co.rcvbuf_bytes = 1;  // the kernel's minimum: the server's writes back up after a few KB
    co.responses = responses_;
    conn_ = engine_->Open(std::move(request_), this, 0, co);
    engine_->At(NowUs() + hold_ms_ * 1000.0, [this] { EndHold(); });
  }
  void EndHold() override {
    if (conn_ != nullptr) engine_->Close(conn_, reset_);
    conn_ = nullptr;
  }
  bool Over() const override { return conn_ == nullptr; }
  void OnHead(Conn*, const client::ResponseHead&) override {}
  void OnBody(Conn*, std::string_view) override {}
  void OnEnd(Conn*, bool, const Status& why) override {
    conn_ = nullptr;
    ended_by_peer_ = why.message();
  }
  void Judge(Tally* t, bool hung) override {
    if (hung) return JudgeHung(kind, t);
    KindTally& k = t->kinds[kind];
    k.ended++;
    if (ended_by_peer_.rfind("connect", 0) == 0 || ended_by_peer_.rfind("socket", 0) == 0) {
      k.endings["connect failed"]++;
      t->Unexpected(&k, kind, ended_by_peer_);
      return;
    }
    k.endings[ended_by_peer_.empty() ? std::string(reset_ ? "held, then RST" : "held, then FIN")
                                     : "ended by the server"]++;
  }

 private:
  Engine* engine_;
  std::string request_;
  int responses_;
  double hold_ms_;
  bool reset_;
  Conn* conn_ = nullptr;
  std::string ended_by_peer_;
};

// The start of Judge for a client of one request: hung, or refused with a
// 503 (its slot backs off); true when that judged it. Counts it as ended.
bool JudgedHungOrRefused(Actor* a, int status, Tally* t, bool hung) {
  if (hung) {
    JudgeHung(a->kind, t);
    return true;
  }
  KindTally& k = t->kinds[a->kind];
  k.ended++;
  if (status != 503) return false;
  a->refused = true;
  k.refused++;
  k.endings["refused (503)"]++;
  return true;
}

// A large answer (a tokenized text) on a connection that closes after it
// (Connection: close, or HTTP/1.0), read slowly: 20 ms of reading, 60 ms of
// none, through a 4 KB receive buffer. It must arrive whole and end with a
// clean close (the server keeps sending while the client reads; before, a
// fixed 2 s linger cut such answers short with a FIN).
class SlowReadActor : public Actor, public Handler {
 public:
  SlowReadActor(std::string kind, Engine* e, std::string request)
      : Actor(std::move(kind)), engine_(e), request_(std::move(request)) {}
  void Start() override {
    ConnOptions co;
    co.rcvbuf_bytes = 4096;
    conn_ = engine_->Open(std::move(request_), this, 0, co);
    engine_->At(NowUs() + 20000, [this] { Toggle(); });
  }
  bool Over() const override { return over_; }
  void OnHead(Conn*, const client::ResponseHead& head) override {
    status_ = head.status;
    const std::string* cl = head.Find("Content-Length");
    length_ = cl ? std::strtoll(cl->c_str(), nullptr, 10) : -1;
  }
  void OnBody(Conn*, std::string_view bytes) override {
    got_ += static_cast<int64_t>(bytes.size());
    last_ = bytes.empty() ? last_ : bytes.back();
  }
  void OnEnd(Conn*, bool complete, const Status& why) override {
    over_ = true;
    conn_ = nullptr;
    complete_ = complete;
    why_ = why.message();
  }
  void Judge(Tally* t, bool hung) override {
    if (JudgedHungOrRefused(this, status_, t, hung)) return;
    KindTally& k = t->kinds[kind];
    if (status_ == 200 && complete_ && got_ == length_ && last_ == '}') {
      k.endings["whole answer, then the close"]++;
      return;
    }
    k.endings["cut short"]++;
    t->Unexpected(&k, kind, "HTTP " + std::to_string(status_) + ", " + std::to_string(got_) + " of " +
                                std::to_string(length_) + " bytes (" + (complete_ ? "complete" : why_) + ")");
  }

 private:
  void Toggle() {
    if (over_ || conn_ == nullptr) return;
    if (reading_) {
      engine_->StopReading(conn_);
    } else {
      engine_->ResumeReading(conn_);
    }
    reading_ = !reading_;
    engine_->At(NowUs() + (reading_ ? 20000 : 60000), [this] { Toggle(); });
  }

  Engine* engine_;
  std::string request_;
  Conn* conn_ = nullptr;
  bool reading_ = true;
  bool over_ = false, complete_ = false;
  int status_ = 0;
  int64_t length_ = -1, got_ = 0;
  char last_ = 0;
  std::string why_;
};

// An OpenAI streamed completion with n = 3; after its first chunk, DELETE
// on its first choice (X-Stream-Id). The response must end with that
// choice's error and [DONE] (the server cancels the other two at once:
// sibling_cancels, checked at the end), unless every choice finished first.
class ChoicesActor : public Actor, public Handler {
 public:
  ChoicesActor(Engine* e, uint16_t port, std::string request)
      : Actor("n = 3, first choice deleted"), engine_(e), port_(port), request_(std::move(request)) {}
  void Start() override {
    ConnOptions co;
    co.rcvbuf_bytes = 1 << 20;  // a reader that keeps up: its window never holds the server back
    engine_->Open(std::move(request_), this, 0, co);
  }
  bool Over() const override { return over_ && (!delete_sent_ || delete_.done); }
  void OnHead(Conn*, const client::ResponseHead& head) override {
    status_ = head.status;
    const std::string* id = head.Find("X-Stream-Id");
    if (id != nullptr) id_ = *id;
  }
  void OnBody(Conn*, std::string_view bytes) override {
    body_.append(bytes);
    if (!delete_sent_ && status_ == 200 && !id_.empty() && body_.find("data: {") != std::string::npos) {
      delete_sent_ = true;
      engine_->Open("DELETE /v1/streams/" + id_ + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
                        "\r\nConnection: close\r\n\r\n",
                    &delete_, 0);
    }
  }
  void OnEnd(Conn*, bool complete, const Status& why) override {
    over_ = true;
    complete_ = complete;
    why_ = why.message();
  }
  void Judge(Tally* t, bool hung) override {
    if (JudgedHungOrRefused(this, status_, t, hung)) return;
    KindTally& k = t->kinds[kind];
    const bool done = body_.size() >= 14 && body_.compare(body_.size() - 14, 14, "data: [DONE]\n\n") == 0;
    const bool cancelled = body_.find("\"code\":\"cancelled\"") != std::string::npos;
    if (status_ == 200 && complete_ && done && delete_sent_ && delete_.status == 204) {
      // slow_client: the three choices' chunks share one connection under
      // this server's tight bounds (--subscriber-lag 8, 4 KB of output),
      // and the response may end so before the DELETE lands.
      const bool slow = body_.find("\"code\":\"slow_client\"") != std::string::npos;
      k.endings[cancelled ? "error (cancelled), then [DONE]"
                : slow    ? "error (slow_client), then [DONE]"
                          : "finished before the DELETE"]++;
      return;
    }
    k.endings["wrong ending"]++;
    t->Unexpected(&k, kind, "HTTP " + std::to_string(status_) + (complete_ ? "" : " (" + why_ + ")") +
                                (done ? "" : ", no [DONE] at the end") + ", DELETE " +
                                std::to_string(delete_.status));
  }

 private:
  struct DeleteHandler : Handler {
    void OnHead(Conn*, const client::ResponseHead& head) override { status = head.status; }
    void OnBody(Conn*, std::string_view) override {}
    void OnEnd(Conn*, bool, const Status&) override { done = true; }
    int status = 0;
    bool done = false;
  };

  Engine* engine_;
  uint16_t port_;
  std::string request_;
  DeleteHandler delete_;
  int status_ = 0;
  std::string id_, body_, why_;
  bool delete_sent_ = false, over_ = false, complete_ = false;
};

// One request with a large or malformed body and the answer it must get.
class BodyActor : public Actor {
 public:
  BodyActor(std::string kind, Engine* e, std::string request, int want_status, std::string want_type,
            const Spec* spec, int n)
      : Actor(std::move(kind)), r_(e, std::move(request), nullptr), want_status_(want_status),
        want_type_(std::move(want_type)), spec_(spec), n_(n) {}
  void Start() override { r_.Start(); }
  bool Over() const override { return r_.done_us != 0; }
  void Judge(Tally* t, bool hung) override {
    if (hung) return JudgeHung(kind, t);
    KindTally& k = t->kinds[kind];
    k.ended++;
    if (r_.status == 503 && ErrorType(r_.body) == "overloaded") {
      refused = true;
      k.refused++;
      k.endings[Refusal(ErrorField(r_.body, "message"))]++;
      return;
    }
    std::string type = r_.status == 200 ? "" : ErrorType(r_.body);
    k.endings[std::to_string(r_.status) + (type.empty() ? "" : " " + type)]++;
    if (!r_.ok || r_.status != want_status_ || type != want_type_) {
      t->Unexpected(&k, kind, "HTTP " + std::to_string(r_.status) + " '" + type + "' (" +
                                  (r_.ok ? "complete" : r_.failure) + "), expected " +
                                  std::to_string(want_status_) + " '" + want_type_ + "'");
      return;
    }
    if (spec_ != nullptr) {
      std::vector<int32_t> gen;
      std::string finish;
      if (!ParseGenerate(r_.body, &gen, &finish)) {
        t->Unexpected(&k, kind, "generate answer unreadable");
        return;
      }
      Received r{&gen, 0, 0, true, finish, ""};
      JudgeStream(*spec_, n_, End::kComplete, r, kind, &k, t);
    }
  }

 private:
  RequestSession r_;
  int want_status_;
  std::string want_type_;
  const Spec* spec_;
  int n_;
};

// One WebSocket stream (bench/ws_loadgen's WsStream) checked against its Spec.
class WsActor {
 public:
  WsActor(ws_loadgen::WsEngine* e, ws_loadgen::WsScript sc, const Spec* spec, int n, uint64_t tag)
      : s_(e, std::move(sc), tag), spec_(spec), n_(n) {}
  void Start() { s_.Start(); }
  bool Over() const { return !s_.open && (s_.done_us != 0 || !s_.failure.empty()); }
  void Judge(Tally* t, bool hung) {
    const std::string kind = "websocket";
    if (hung) return JudgeHung(kind, t);
    KindTally& k = t->kinds[kind];
    k.ended++;
    if (s_.failure.rfind("generate refused: overloaded", 0) == 0) {
      refused = true;
      k.refused++;
      k.endings[Refusal(s_.failure)]++;
      return;
    }
    k.resumes += s_.connections - 1 + s_.detach_resumes;
    k.detach_resumes += s_.detach_resumes;
    Received r{&s_.tokens, s_.duplicates, s_.gaps, s_.done_us != 0, s_.finish_reason, s_.failure};
    k.endings[JudgeStream(*spec_, n_, End::kComplete, r, kind, &k, t)]++;
  }
  double ended_us = 0;
  bool refused = false;

 private:
  ws_loadgen::WsStream s_;
  const Spec* spec_;
  int n_;
};

}  // namespace

// ---- The WebSocket side (its own thread) -------------------------------------

void RunWebSocketSide(uint16_t port, const std::vector<Spec>* specs, int slots, double load_end_us, double drain_s,
                      uint64_t seed, Tally* tally, std::string* error) {
  ws_loadgen::WsEngine engine(port);
  if (Status st = engine.Init(); !st.ok()) {
    *error = st.message();
    return;
  }
  std::mt19937_64 rng(seed);
  std::vector<std::unique_ptr<WsActor>> active(static_cast<size_t>(slots)), retired;
  const char* policies[] = {"drop_slow", "pause_producer", "pause_then_cancel"};
  uint64_t tag = 0;
  auto spawn = [&](size_t slot) {
    const Spec& spec = (*specs)[static_cast<size_t>(Pick(rng, 0, static_cast<int>(specs->size()) - 1))];
    int n = PickLength(rng, spec);
    ws_loadgen::WsScript sc;
    sc.generate = "{\"op\":\"generate\"," + SpecBody(spec, n, policies[tag % 3]).substr(1);
    int drops = Pick(rng, 0, 3);
    for (int d = 0; d < drops; ++d) sc.disconnect_after.push_back(Pick(rng, 1, n + 1));  // 1 start, 2.. tokens
    std::sort(sc.disconnect_after.begin(), sc.disconnect_after.end());
    sc.alternate_reset = Pick(rng, 0, 1) == 1;
    sc.reconnect_delay_ms = Pick(rng, 0, 100);
    sc.resume_on_detach = true;
    active[slot] = std::make_unique<WsActor>(&engine, sc, &spec, n, tag++);
    tally->kinds["websocket"].started++;
    active[slot]->Start();
  };
  for (size_t i = 0; i < active.size(); ++i) spawn(i);
  size_t backing_off = 0;
  std::function<void()> reap = [&] {
    double now = NowUs();
    for (size_t i = 0; i < active.size(); ++i) {
      if (!active[i] || !active[i]->Over()) continue;
      active[i]->Judge(tally, false);
      active[i]->ended_us = now;
      bool refused = active[i]->refused;
      retired.push_back(std::move(active[i]));
      if (now >= load_end_us) continue;
      if (!refused) {
        spawn(i);
        continue;
      }
      backing_off++;
      engine.At(now + Pick(rng, kBackoffMinMs, kBackoffMaxMs) * 1000.0, [&, i] {
        backing_off--;
        if (NowUs() < load_end_us) spawn(i);
      });
    }
    std::erase_if(retired, [now](const auto& a) { return now - a->ended_us > kRetireUs; });
    engine.At(now + kReapPeriodUs, reap);
  };
  engine.At(NowUs() + kReapPeriodUs, reap);
  engine.Run(
      [&] {
        if (NowUs() < load_end_us || backing_off > 0) return false;
        for (const auto& a : active) {
          if (a) return false;
        }
        return true;
      },
      load_end_us + drain_s * 1e6, nullptr, 1000);
  for (auto& a : active) {
    if (a) a->Judge(tally, true);
  }
}

// ---- The main side ------------------------------------------------------------

MainSide::MainSide(Engine* e, uint16_t port, const std::vector<Spec>* specs, std::string text,
                   const std::vector<int32_t>* text_tokens, std::string model, uint64_t seed)
    : engine_(e), port_(port), specs_(specs), text_(std::move(text)), text_tokens_(text_tokens),
      model_(std::move(model)), rng_(seed) {}

MainSide::~MainSide() = default;

void MainSide::Begin(double load_end_us) {
  load_end_us_ = load_end_us;
  const std::pair<Slot, int> plan[] = {{Slot::kClean, 4},     {Slot::kDrops, 4},     {Slot::kDelete, 2},
                                       {Slot::kStall, 3},     {Slot::kPipelined, 1}, {Slot::kNeverRead, 2},
                                       {Slot::kLargeBody, 1}, {Slot::kAbandon, 2},  {Slot::kCloseReader, 1},
                                       {Slot::kChoices, 1}};
  for (const auto& [slot, count] : plan) {
    for (int i = 0; i < count; ++i) {
      slots_.push_back(slot);
      active_.emplace_back();
      Spawn(active_.size() - 1);
    }
  }
  engine_->At(NowUs() + kReapPeriodUs, [this] { Reap(); });
}

bool MainSide::AllOver() const {
  if (backing_off_ > 0) return false;
  for (const auto& a : active_) {
    if (a) return false;
  }
  return true;
}

size_t MainSide::Running() const {
  size_t n = 0;
  for (const auto& a : active_) n += a != nullptr;
  return n;
}

void MainSide::JudgeHung() {
  for (auto& a : active_) {
    if (a) a->Judge(&tally, true);
  }
}

void MainSide::Reap() {
  double now = NowUs();
  for (size_t i = 0; i < active_.size(); ++i) {
    if (!active_[i]) continue;
    if (now >= load_end_us_) active_[i]->EndHold();
    if (!active_[i]->Over()) continue;
    active_[i]->Judge(&tally, false);
    active_[i]->ended_us = now;
    bool refused = active_[i]->refused;
    retired_.push_back(std::move(active_[i]));
    if (now >= load_end_us_) continue;
    if (!refused) {
      Spawn(i);
      continue;
    }
    backing_off_++;
    engine_->At(now + Pick(rng_, kBackoffMinMs, kBackoffMaxMs) * 1000.0, [this, i] {
      backing_off_--;
      if (NowUs() < load_end_us_) Spawn(i);
    });
  }
  std::erase_if(retired_, [now](const auto& a) { return now - a->ended_us > kRetireUs; });
  engine_->At(now + kReapPeriodUs, [this] { Reap(); });
}

void MainSide::Spawn(size_t i) {
  const Slot slot = slots_[i];
  const uint64_t nth = spawned_[slot]++;
  const Spec& spec = (*specs_)[static_cast<size_t>(Pick(rng_, 0, static_cast<int>(specs_->size()) - 1))];
  const uint64_t tag = next_tag_++;
  std::unique_ptr<Actor> a;
  Script sc;
  sc.resume_when_ended = true;  // any reader the server detaches resumes
  switch (slot) {
    case Slot::kClean: {
      int n = PickLength(rng_, spec);
      sc.body = SpecBody(spec, n);
      const bool logprobs = nth % 4 == 3;  // the same tokens, with 5 alternatives each
      if (logprobs) sc.body.insert(sc.body.size() - 1, ",\"logprobs\":5");
      a = std::make_unique<SseActor>(logprobs ? "sse clean, logprobs" : "sse clean", engine_, port_, sc, &spec, n,
                                     End::kComplete, tag);
      break;
    }
    case Slot::kDrops: {
      int n = PickLength(rng_, spec);
      sc.body = SpecBody(spec, n);
      if (Pick(rng_, 0, 4) == 0) {  // leaves for good
        sc.stop_reading_after = Pick(rng_, 1, n + 1);
        sc.close_instead_of_stall = true;
        a = std::make_unique<SseActor>("sse leaves", engine_, port_, sc, &spec, n, End::kLeft, tag);
        break;
      }
      int drops = Pick(rng_, 1, 3);
      for (int d = 0; d < drops; ++d) sc.disconnect_after.push_back(Pick(rng_, 1, n + 1));
      std::sort(sc.disconnect_after.begin(), sc.disconnect_after.end());
      sc.disconnect_with_reset = Pick(rng_, 0, 1) == 1;
      sc.alternate_reset = Pick(rng_, 0, 1) == 1;
      sc.reconnect_delay_ms = Pick(rng_, 0, 100);
      a = std::make_unique<SseActor>("sse drops + resume", engine_, port_, sc, &spec, n, End::kComplete, tag);
      break;
    }
    case Slot::kDelete: {
      int n = PickLength(rng_, spec);
      sc.body = SpecBody(spec, n);
      sc.delete_after = Pick(rng_, 1, n + 1);
      a = std::make_unique<SseActor>("sse delete", engine_, port_, sc, &spec, n, End::kCompleteOrCancelled, tag);
      break;
    }
    case Slot::kStall: {
      static const char* kPolicies[] = {"drop_slow", "pause_producer", "pause_then_cancel"};
      const std::string policy = kPolicies[nth % 3];
      int n = Pick(rng_, 64, spec.max_new());
      sc.body = SpecBody(spec, n, policy);
      sc.stop_reading_after = Pick(rng_, 1, 4);
      sc.stall_ms = Pick(rng_, 200, 800);
      sc.rcvbuf_bytes = 1;  // the kernel's minimum: the server's buffers fill within a few events
      End end = policy == "pause_then_cancel" ? End::kCompleteOrCancelled : End::kComplete;
      a = std::make_unique<SseActor>("stall " + policy, engine_, port_, sc, &spec, n, end, tag);
      break;
    }
    case Slot::kPipelined:
      a = std::make_unique<PipelineActor>(engine_, port_, &spec, Pick(rng_, 1, 16), text_, text_tokens_, model_);
      break;
    case Slot::kNeverRead: {
      double hold = Pick(rng_, 500, 3000);
      bool reset = Pick(rng_, 0, 1) == 1;
      switch (nth % 3) {
        case 0: {
          static const char* kPolicies[] = {"drop_slow", "pause_producer", "pause_then_cancel"};
          std::string body = SpecBody(spec, spec.max_new(), kPolicies[(nth / 3) % 3]);
          a = std::make_unique<SilentActor>("never read: stream", engine_, PostStreamRequest(port_, body), 1, hold,
                                            reset);
          break;
        }
        case 1: {
          std::string req;
          for (int k = 0; k < 64; ++k) req += GetKeepAlive(port_, "/metrics");
          a = std::make_unique<SilentActor>("never read: 64 x GET /metrics", engine_, req, 64, hold, reset);
          break;
        }
        default:
          a = std::make_unique<SilentActor>("never read: half a request head", engine_,
                                            "POST /v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le", 1, hold,
                                            reset);
          break;
      }
      break;
    }
    case Slot::kLargeBody:
      a = LargeBody(nth, spec);
      break;
    case Slot::kAbandon: {
      // Its client leaves 0-400 ms after sending, queued or running: the
      // server cancels it at the close (client_gone_cancels, checked at the
      // end). generate, completions and chat in turn.
      std::string target = "/v1/generate", body = SpecBody(spec, spec.max_new());
      if (nth % 3 == 1) {
        target = "/v1/completions";
        body = "{\"model\":" + Q(model_) + ",\"prompt\":\"Hello\",\"max_tokens\":100,\"seed\":" +
               std::to_string(nth) + "}";
      } else if (nth % 3 == 2) {
        target = "/v1/chat/completions";
        body = "{\"model\":" + Q(model_) +
               ",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":100}";
      }
      a = std::make_unique<SilentActor>("abandoned: " + target, engine_, PostRequest(port_, target, body, false), 1,
                                        Pick(rng_, 0, 400), Pick(rng_, 0, 1) == 1);
      break;
    }
    case Slot::kCloseReader: {
      std::string text;
      while (text.size() < kMaxBodyBytes / 2) text += text_;
      std::string body = "{\"text\":" + Q(text) + "}";
      const bool http10 = nth % 2 == 1;
      std::string req = PostRequest(port_, "/v1/tokenize", body, /*close=*/!http10);
      if (http10) req.replace(req.find("HTTP/1.1"), 8, "HTTP/1.0");
      a = std::make_unique<SlowReadActor>(http10 ? "slow reader: HTTP/1.0 answer" : "slow reader: Connection: close",
                                          engine_, std::move(req));
      break;
    }
    case Slot::kChoices: {
      std::string body = "{\"model\":" + Q(model_) +
                         ",\"prompt\":\"Hello\",\"n\":3,\"stream\":true,\"max_tokens\":100,\"seed\":" +
                         std::to_string(nth) + "}";
      a = std::make_unique<ChoicesActor>(engine_, port_, PostRequest(port_, "/v1/completions", body, false));
      break;
    }
  }
  tally.kinds[a->kind].started++;
  active_[i] = std::move(a);
  active_[i]->Start();
}

// The five large-body requests in turn.
std::unique_ptr<Actor> MainSide::LargeBody(uint64_t nth, const Spec& spec) {
  switch (nth % 5) {
    case 0: {  // valid, padded with spaces to just under the bound
      int n = Pick(rng_, 1, 32);
      std::string body = SpecBody(spec, n);
      size_t target = kMaxBodyBytes - static_cast<size_t>(Pick(rng_, 1, 1024));
      body.insert(body.size() - 1, target - body.size(), ' ');
      return std::make_unique<BodyActor>("large body: near the bound", engine_,
                                         PostRequest(port_, "/v1/generate", body), 200, "", &spec, n);
    }
    case 1: {  // Content-Length past the bound
      std::string body(kMaxBodyBytes + static_cast<size_t>(Pick(rng_, 1, 16384)), ' ');
      return std::make_unique<BodyActor>("large body: over the bound", engine_,
                                         PostRequest(port_, "/v1/generate", body), 413, "payload_too_large",
                                         nullptr, 0);
    }
    case 2: {  // chunked, past the bound
      std::string req = "POST /v1/generate HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
                        "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
      for (int sent = 0; sent <= kMaxBodyBytes; sent += 8192) req += "2000\r\n" + std::string(8192, ' ') + "\r\n";
      req += "0\r\n\r\n";
      return std::make_unique<BodyActor>("large body: chunked over the bound", engine_, req, 413,
                                         "payload_too_large", nullptr, 0);
    }
    case 3: {  // a prompt of ~60 KB of text: far past the 128-token context
      std::string prompt;
      while (prompt.size() < kMaxBodyBytes - 4096) prompt += "the quick brown fox jumps over the lazy dog ";
      std::string body = "{\"prompt\":";
      json::AppendQuoted(&body, prompt);
      body += ",\"max_new_tokens\":8}";
      return std::make_unique<BodyActor>("large body: prompt over the context", engine_,
                                         PostRequest(port_, "/v1/generate", body), 422, "prompt_too_long", nullptr,
                                         0);
    }
    default: {  // JSON nested one level past the depth bound
      std::string body = "{\"prompt\":" + std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']') +
                         "}";
      return std::make_unique<BodyActor>("large body: JSON too deep", engine_,
                                         PostRequest(port_, "/v1/generate", body), 400, "invalid_json", nullptr, 0);
    }
  }
}

}  // namespace tw::loadgen::chaos
