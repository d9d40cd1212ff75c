#include "openai/openai_response.h"

#include <algorithm>

#include "json/json.h"
#include "sse/writer.h"

namespace tw::openai {

namespace {

void AppendData(std::string* out, std::string_view data) { sse::AppendEventNoId(out, "", data); }

constexpr std::string_view kDoneLine = "data: [DONE]\n\n";

// OpenAI writes an absent param, code or finish_reason as null.
void StringOrNull(json::Writer& w, std::string_view s) {
  if (s.empty()) {
    w.Null();
  } else {
    w.String(s);
  }
}

// A token's bytes as chat's "bytes": an array of the byte values (they
// need not be valid UTF-8; "token" is the same bytes with U+FFFD for what is not).
void Bytes(json::Writer& w, std::string_view bytes) {
  w.BeginArray();
  for (unsigned char c : bytes) w.Int(c);
  w.EndArray();
}

void ChatLogprobEntry(json::Writer& w, const stream::TokenLogprob& t) {
  w.Key("token");
  w.String(t.bytes);
  w.Key("logprob");
  w.Double(t.logprob);
  w.Key("bytes");
  Bytes(w, t.bytes);
}

// chat: {"content":[{"token","logprob","bytes","top_logprobs":[{"token","logprob","bytes"}]}]}
void ChatLogprobs(json::Writer& w, const LogprobRun& run) {
  w.BeginObject();
  w.Key("content");
  w.BeginArray();
  for (const auto& lp : run) {
    w.BeginObject();
    ChatLogprobEntry(w, lp->sampled);
    w.Key("top_logprobs");
    w.BeginArray();
    for (const stream::TokenLogprob& t : lp->top) {
      w.BeginObject();
      ChatLogprobEntry(w, t);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

// The first k of an entry's alternatives (a prompt's may hold more: the
// engine computes the larger of echo's and prompt_logprobs' counts).
size_t TopCount(const stream::TokenLogprobs& lp, int k) { return std::min(lp.top.size(), static_cast<size_t>(std::max(k, 0))); }

// completions (legacy): {"tokens","token_logprobs","top_logprobs":[{token: logprob}],"text_offset"};
// a prompt's first token (echo) has null for its logprob and alternatives.
void CompletionLogprobs(json::Writer& w, const LogprobRun& run, int64_t text_offset, int k) {
  w.BeginObject();
  w.Key("tokens");
  w.BeginArray();
  for (const auto& lp : run) w.String(lp->sampled.bytes);
  w.EndArray();
  w.Key("token_logprobs");
  w.BeginArray();
  for (const auto& lp : run) {
    if (lp->none) {
      w.Null();
    } else {
      w.Double(lp->sampled.logprob);
    }
  }
  w.EndArray();
  w.Key("top_logprobs");
  w.BeginArray();
  for (const auto& lp : run) {
    if (lp->none) {
      w.Null();
      continue;
    }
    w.BeginObject();
    for (size_t j = 0; j < TopCount(*lp, k); j++) {
      w.Key(lp->top[j].bytes);
      w.Double(lp->top[j].logprob);
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("text_offset");
  w.BeginArray();
  for (const auto& lp : run) {
    w.Int(text_offset);
    text_offset += static_cast<int64_t>(lp->sampled.bytes.size());
  }
  w.EndArray();
  w.EndObject();
}

// vLLM's prompt_logprobs: [null, {"<id>": {"logprob","rank","decoded_token"}, ...}, ...]:
// per prompt token after the first, the token's own entry and its k most
// likely alternatives (the token itself once).
void PromptLogprobsJson(json::Writer& w, const stream::PromptLogprobs& prompt, int k) {
  auto entry = [&](const stream::TokenLogprob& t) {
    w.Key(std::to_string(t.id));
    w.BeginObject();
    w.Key("logprob");
    w.Double(t.logprob);
    w.Key("rank");
    w.Int(t.rank);
    w.Key("decoded_token");
    w.String(t.bytes);
    w.EndObject();
  };
  w.BeginArray();
  for (const stream::TokenLogprobs& lp : prompt) {
    if (lp.none) {
      w.Null();
      continue;
    }
    w.BeginObject();
    entry(lp.sampled);
    for (size_t j = 0; j < TopCount(lp, k); j++) {
      if (lp.top[j].id != lp.sampled.id) entry(lp.top[j]);
    }
    w.EndObject();
  }
  w.EndArray();
}

int64_t RunBytes(const LogprobRun& run) {
  int64_t n = 0;
  for (const auto& lp : run) n += static_cast<int64_t>(lp->sampled.bytes.size());
  return n;
}

void Choice(json::Writer& w, const CompletionMeta& m, const ChoiceJson& c, bool chunk) {
  w.BeginObject();
  const bool chat = m.api == OpenAiApi::kChat;
  if (!chat) {
    w.Key("text");
    w.String(c.text);
  }
  w.Key("index");
  w.Int(c.index);
  if (chat) {
    w.Key(chunk ? "delta" : "message");
    w.BeginObject();
    if (c.role || !chunk) {
      w.Key("role");
      w.String("assistant");
    }
    if (c.role || !chunk || !c.text.empty()) {
      w.Key("content");
      w.String(c.text);
    }
    w.EndObject();
  }
  w.Key("logprobs");
  if (c.logprobs == nullptr || m.logprobs < 0) {
    w.Null();
  } else if (chat) {
    ChatLogprobs(w, *c.logprobs);
  } else {
    CompletionLogprobs(w, *c.logprobs, c.text_offset, m.logprobs);
  }
  w.Key("finish_reason");
  StringOrNull(w, c.finish_reason);
  if (!chat && !chunk && m.prompt_logprobs >= 0) {
    w.Key("prompt_logprobs");
    if (c.prompt_logprobs == nullptr) {
      w.Null();
    } else {
      PromptLogprobsJson(w, *c.prompt_logprobs, m.prompt_logprobs);
    }
  }
  w.EndObject();
}

void Usage(json::Writer& w, const UsageJson& u) {
  w.BeginObject();
  w.Key("prompt_tokens");
  w.Int(u.prompt_tokens);
  w.Key("completion_tokens");
  w.Int(u.completion_tokens);
  w.Key("total_tokens");
  w.Int(static_cast<int64_t>(u.prompt_tokens) + u.completion_tokens);
  w.EndObject();
}

// Every object: the shared head, the choices, and `usage`: the counts if
// given, else null when the client asked for usage (a chunk before the
// usage chunk), else absent.
std::string ResponseJson(const CompletionMeta& m, const ChoiceJson* choices, size_t count,
                         const UsageJson* usage, bool chunk) {
  std::string out;
  json::Writer w(&out);
  w.BeginObject();
  w.Key("id");
  w.String(m.id);
  w.Key("object");
  if (m.api == OpenAiApi::kChat) {
    w.String(chunk ? "chat.completion.chunk" : "chat.completion");
  } else {
    w.String("text_completion");
  }
  w.Key("created");
  w.Int(m.created);
  w.Key("model");
  w.String(m.model);
  w.Key("choices");
  w.BeginArray();
  for (size_t i = 0; i < count; i++) Choice(w, m, choices[i], chunk);
  w.EndArray();
  if (usage != nullptr) {
    w.Key("usage");
    Usage(w, *usage);
  } else if (m.include_usage) {
    w.Key("usage");
    w.Null();
  }
  if (m.api == OpenAiApi::kChat && !chunk && m.prompt_logprobs >= 0) {
    // Chat's one prompt: the response's (vLLM's place for them).
    w.Key("prompt_logprobs");
    if (count == 0 || choices[0].prompt_logprobs == nullptr) {
      w.Null();
    } else {
      PromptLogprobsJson(w, *choices[0].prompt_logprobs, m.prompt_logprobs);
    }
  }
  w.EndObject();
  return out;
}

// The answer for a stream that ended without a usable finish reason: an
// error event, or a done event whose finish_reason is cancelled / error.
ApiError ErrorForEnding(const stream::Event& ev) {
  if (ev.type == stream::EventType::kError) {
    ApiError e = ev.error ? *ev.error : ApiError::Make(ErrorCode::kInternal, "generation failed");
    e.http_status = e.code == ErrorCode::kInternal ? 500 : 503;
    e.retry_after_ms = e.retryable ? 1000 : 0;
    return e;
  }
  if (ev.finish_reason == stream::FinishReason::kCancelled) {
    return ApiError::Make(ErrorCode::kCancelled, "the generation was cancelled before it finished");
  }
  return ApiError::Make(ErrorCode::kInternal, std::string("the generation ended with finish_reason '") +
                                                  stream::FinishReasonName(ev.finish_reason) + "'");
}

// A subscriber-level ending (slow_client, shutting_down, …) as an error.
ApiError ErrorForSubscriberEnd(const ApiError& end) {
  ApiError e = end;
  e.http_status = 503;
  e.retry_after_ms = end.retryable ? 1000 : 0;
  e.resume_from = -1;  // OpenAI's error object has no such field
  return e;
}

}  // namespace

std::string ChunkJson(const CompletionMeta& m, const ChoiceJson* choices, size_t count,
                      const UsageJson* usage) {
  return ResponseJson(m, choices, count, usage, /*chunk=*/true);
}

std::string AnswerJson(const CompletionMeta& m, const ChoiceJson* choices, size_t count,
                       const UsageJson& usage) {
  return ResponseJson(m, choices, count, &usage, /*chunk=*/false);
}

std::string CompletionChunkJson(const CompletionMeta& m, std::string_view text,
                                std::string_view finish_reason) {
  ChoiceJson c;
  c.text = text;
  c.finish_reason = finish_reason;
  return ChunkJson(m, &c, 1, nullptr);
}

std::string UsageChunkJson(const CompletionMeta& m, int prompt_tokens, int completion_tokens) {
  UsageJson u{prompt_tokens, completion_tokens};
  return ChunkJson(m, nullptr, 0, &u);
}

std::string CompletionJson(const CompletionMeta& m, std::string_view text,
                           std::string_view finish_reason, int prompt_tokens,
                           int completion_tokens) {
  ChoiceJson c;
  c.text = text;
  c.finish_reason = finish_reason;
  return AnswerJson(m, &c, 1, UsageJson{prompt_tokens, completion_tokens});
}

bool OpenAiFinishReason(stream::FinishReason ours, std::string* openai) {
  switch (ours) {
    case stream::FinishReason::kEos:
    case stream::FinishReason::kStop:
      *openai = "stop";
      return true;
    case stream::FinishReason::kLength:
      *openai = "length";
      return true;
    default:
      return false;
  }
}

std::string OpenAiErrorJson(const ApiError& e) {
  std::string code;
  if (e.code == ErrorCode::kPromptTooLong) {
    code = "context_length_exceeded";
  } else if (e.code != ErrorCode::kInvalidRequest) {
    code = e.type();
  }
  std::string out;
  json::Writer w(&out);
  w.BeginObject();
  w.Key("error");
  w.BeginObject();
  w.Key("message");
  w.String(e.message);
  w.Key("type");
  w.String(e.http_status >= 500 ? "server_error" : "invalid_request_error");
  w.Key("param");
  StringOrNull(w, e.param);
  w.Key("code");
  StringOrNull(w, code);
  w.EndObject();
  w.EndObject();
  return out;
}

void SendOpenAiError(http::Responder& r, const ApiError& e, const http::Headers& extra) {
  // The server's error body for these paths is OpenAiErrorJson (the app's
  // ServerOptions::error_body); SendError also names the error in the
  // access record, as the native endpoints' errors are.
  r.SendError(e, extra);
}

namespace {

// Whether a choice's prompt tokens go into the usage: the first choice of
// each prompt's (OpenAI counts every prompt once, every choice's tokens).
int ChoicesPerPrompt(const CompletionMeta& m) {
  return m.choices_per_prompt > 0 ? m.choices_per_prompt : std::max(1, m.n);
}

bool CountsItsPrompt(const CompletionMeta& m, int choice) { return choice % ChoicesPerPrompt(m) == 0; }

// With echo, the text a choice starts with: its prompt's; else none.
std::string_view EchoOf(const CompletionMeta& m, int choice) {
  const size_t prompt = static_cast<size_t>(choice / ChoicesPerPrompt(m));
  return prompt < m.echo.size() ? std::string_view(m.echo[prompt]) : std::string_view();
}

}  // namespace

std::vector<int> PickBest(const std::vector<double>& sums, int per_prompt, int keep) {
  std::vector<int> out;
  for (size_t first = 0; first < sums.size(); first += static_cast<size_t>(per_prompt)) {
    std::vector<int> row;
    for (size_t i = first; i < std::min(sums.size(), first + static_cast<size_t>(per_prompt)); i++) {
      row.push_back(static_cast<int>(i));
    }
    std::stable_sort(row.begin(), row.end(),
                     [&](int a, int b) { return sums[static_cast<size_t>(a)] > sums[static_cast<size_t>(b)]; });
    row.resize(std::min(row.size(), static_cast<size_t>(keep)));
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

// ---- OpenAiSseFormat ---------------------------------------------------------

OpenAiSseFormat::OpenAiSseFormat(CompletionMeta meta, std::string stream_id)
    : meta_(std::move(meta)), stream_id_(std::move(stream_id)) {
  choices_.resize(static_cast<size_t>(std::max(1, meta_.n)));
}

void OpenAiSseFormat::AppendChoice(std::string* out, std::string_view text, std::string_view finish_reason,
                                   bool role) {
  Choice& c = choices_[static_cast<size_t>(choice_)];
  ChoiceJson j;
  j.index = choice_;
  j.text = text;
  j.finish_reason = finish_reason;
  j.role = role;
  j.text_offset = c.text_offset;
  if (!c.pending.empty()) j.logprobs = &c.pending;
  AppendData(out, ChunkJson(meta_, &j, 1, nullptr));
  c.text_offset += RunBytes(c.pending);
  c.pending.clear();
}

sse::SseFormat::Bytes OpenAiSseFormat::AppendEvent(const stream::Event& ev, std::string* out) {
  if (choice_ < 0 || choice_ >= static_cast<int>(choices_.size())) return Bytes::kNone;
  Choice& c = choices_[static_cast<size_t>(choice_)];
  if (ev.seq != 0 && ev.seq == c.last_seq) {
    c.pending = c.saved_pending;  // the same event again: its bytes were refused
    c.text_offset = c.saved_offset;
    c.echo_pending = c.saved_echo_pending;
  } else {
    c.last_seq = ev.seq;
    c.saved_pending = c.pending;
    c.saved_offset = c.text_offset;
    c.saved_echo_pending = c.echo_pending;
  }
  switch (ev.type) {
    case stream::EventType::kStart:
      if (meta_.api != OpenAiApi::kChat) {
        // Completions' echo: the prompt is the choice's first chunk (with
        // logprobs: once the first token brings the prompt's).
        if (EchoOf(meta_, choice_).empty()) return Bytes::kNone;
        if (meta_.echo_logprobs) {
          c.echo_pending = true;
          return Bytes::kNone;
        }
        AppendChoice(out, EchoOf(meta_, choice_), "", false);
        return Bytes::kEvent;
      }
      // Chat's first chunk of a choice names the role.
      AppendChoice(out, "", "", /*role=*/true);
      return Bytes::kEvent;
    case stream::EventType::kToken:
    {
      const bool echoed = c.echo_pending;
      if (echoed) AppendEcho(out, ev);
      if (meta_.logprobs >= 0 && ev.logprobs) c.pending.push_back(ev.logprobs);
      // A token whose text is held back (part of a character or of a
      // possible stop string) has nothing to say yet.
      if (ev.text.empty()) return echoed ? Bytes::kEvent : Bytes::kNone;
      AppendChoice(out, ev.text, "", false);
      return Bytes::kEvent;
    }
    case stream::EventType::kDone:
    case stream::EventType::kError: {
      std::string reason;
      if (ev.type == stream::EventType::kDone && OpenAiFinishReason(ev.finish_reason, &reason)) {
        if (c.echo_pending) AppendEcho(out, ev);  // no token came: the echo without logprobs
        // The last chunk of a choice carries its finish reason.
        AppendChoice(out, "", reason, false);
        if (!c.done) {
          c.done = true;
          done_++;
          if (CountsItsPrompt(meta_, choice_)) prompt_tokens_ += ev.prompt_tokens;  // each prompt once
          completion_tokens_ += ev.completion_tokens;
        }
        if (done_ < static_cast<int>(choices_.size())) return Bytes::kEvent;
        if (meta_.include_usage) {
          UsageJson u{prompt_tokens_, completion_tokens_};
          AppendData(out, ChunkJson(meta_, nullptr, 0, &u));
        }
      } else {
        AppendData(out, OpenAiErrorJson(ErrorForEnding(ev)));
      }
      *out += kDoneLine;
      ended_ = true;
      return Bytes::kLast;
    }
  }
  return Bytes::kNone;
}

void OpenAiSseFormat::AppendEcho(std::string* out, const stream::Event& ev) {
  Choice& c = choices_[static_cast<size_t>(choice_)];
  c.echo_pending = false;
  if (ev.prompt_logprobs) {
    for (const stream::TokenLogprobs& lp : *ev.prompt_logprobs) {
      c.pending.push_back(std::shared_ptr<const stream::TokenLogprobs>(ev.prompt_logprobs, &lp));
    }
  }
  AppendChoice(out, EchoOf(meta_, choice_), "", false);
}

void OpenAiSseFormat::AppendEnding(const ApiError& end, std::string* out) {
  ApiError e = ErrorForSubscriberEnd(end);
  if (end.code == ErrorCode::kSlowClient) {
    e.message += "; the stream may be resumed with GET /v1/streams/" + stream_id_ +
                 "/events?after=" + std::to_string(end.resume_from);
  }
  AppendData(out, OpenAiErrorJson(e));
  *out += kDoneLine;
  ended_ = true;
}

// ---- OpenAiCollector ---------------------------------------------------------

OpenAiCollector::OpenAiCollector(http::Responder responder, CompletionMeta meta)
    : responder_(std::move(responder)), meta_(std::move(meta)) {
  choices_.resize(static_cast<size_t>(std::max(1, meta_.n)));
}

stream::DeliverResult OpenAiCollector::Deliver(int choice, const stream::Event& ev) {
  // The client left before its answer: that choice detaches (linger, then
  // cancellation), and so will the others at their next event.
  if (responder_.closed() || answered_) return stream::DeliverResult::kGone;
  if (choice < 0 || choice >= static_cast<int>(choices_.size())) return stream::DeliverResult::kGone;
  Choice& c = choices_[static_cast<size_t>(choice)];
  switch (ev.type) {
    case stream::EventType::kStart:
      c.text = EchoOf(meta_, choice);
      break;
    case stream::EventType::kToken:
      if (ev.prompt_logprobs) {
        c.prompt = ev.prompt_logprobs;
        if (meta_.echo_logprobs) {
          // echo: the prompt's tokens lead the choice's logprobs.
          for (const stream::TokenLogprobs& lp : *ev.prompt_logprobs) {
            c.logprobs.push_back(std::shared_ptr<const stream::TokenLogprobs>(ev.prompt_logprobs, &lp));
          }
        }
      }
      c.text += ev.text;
      if (ev.logprobs) c.logprob_sum += ev.logprobs->sampled.logprob;
      if (meta_.logprobs >= 0 && ev.logprobs) c.logprobs.push_back(ev.logprobs);
      break;
    case stream::EventType::kDone:
    case stream::EventType::kError:
      if (ev.type == stream::EventType::kDone && OpenAiFinishReason(ev.finish_reason, &c.finish_reason)) {
        if (CountsItsPrompt(meta_, choice)) prompt_tokens_ += ev.prompt_tokens;  // each prompt once
        completion_tokens_ += ev.completion_tokens;
      } else if (!failed_) {
        failed_ = true;
        error_ = ErrorForEnding(ev);
      }
      break;
  }
  return stream::DeliverResult::kTaken;
}

void OpenAiCollector::Answer() {
  if (answered_) return;
  answered_ = true;
  std::vector<ChoiceJson> out;
  std::vector<int> answered;  // candidate indexes, in answer order
  if (meta_.answered_per_prompt > 0) {
    std::vector<double> sums;
    for (const Choice& c : choices_) sums.push_back(c.logprob_sum);
    answered = PickBest(sums, ChoicesPerPrompt(meta_), meta_.answered_per_prompt);
  } else {
    for (size_t i = 0; i < choices_.size(); i++) answered.push_back(static_cast<int>(i));
  }
  for (size_t i = 0; i < choices_.size() && !failed_; i++) {
    if (choices_[i].finish_reason.empty()) {
      failed_ = true;
      error_ = ApiError::Make(ErrorCode::kInternal, "the stream ended without a finish reason");
    }
  }
  for (size_t i = 0; i < answered.size() && !failed_; i++) {
    const Choice& c = choices_[static_cast<size_t>(answered[i])];
    ChoiceJson j;
    j.index = static_cast<int>(i);
    j.text = c.text;  // with echo, the prompt's text went in first (Deliver)
    j.finish_reason = c.finish_reason;
    j.logprobs = &c.logprobs;
    // The prompt's first choice asked for them (OpenAiEndpoints::Launch).
    const size_t first = static_cast<size_t>(answered[i] / ChoicesPerPrompt(meta_) * ChoicesPerPrompt(meta_));
    j.prompt_logprobs = choices_[first].prompt.get();
    out.push_back(j);
  }
  if (failed_) {
    SendOpenAiError(responder_, error_);
    return;
  }
  responder_.Send(200, "application/json",
                  AnswerJson(meta_, out.data(), out.size(), UsageJson{prompt_tokens_, completion_tokens_}));
}

void OpenAiCollector::Fail(const ApiError& end) {
  if (answered_) return;
  answered_ = true;
  SendOpenAiError(responder_, ErrorForSubscriberEnd(end));
}

// ---- OpenAiChoices -------------------------------------------------------------

// One choice's subscription: hands its stream's events to the group.
class OpenAiChoices::Relay : public stream::Subscription {
 public:
  Relay(OpenAiChoices* group, int index) : group_(group), index_(index) {}

  stream::DeliverResult Deliver(const stream::Event& event) override {
    if (finished) return stream::DeliverResult::kGone;
    stream::DeliverResult r = group_->Deliver(index_, event);
    if (r == stream::DeliverResult::kGone) group_->ChoiceGone(index_);
    return r;
  }
  void EndBatch() override { group_->EndBatch(); }

  bool attached = false;
  bool finished = false;  // completed, ended, gone or detached: the hub has forgotten it

 private:
  void Complete() override { group_->ChoiceComplete(index_); }
  void End(const ApiError& end) override { group_->ChoiceEnd(index_, end); }

  OpenAiChoices* group_;
  int index_;
};

OpenAiChoices::OpenAiChoices(stream::StreamHub* hub, std::vector<std::shared_ptr<stream::Stream>> streams,
                             std::function<void(OpenAiChoices*)> on_done)
    : hub_(hub), streams_(std::move(streams)), on_done_(std::move(on_done)) {
  for (size_t i = 0; i < streams_.size(); i++) relays_.push_back(std::make_unique<Relay>(this, static_cast<int>(i)));
}

OpenAiChoices::~OpenAiChoices() = default;

void OpenAiChoices::UseStream(std::shared_ptr<sse::SseSubscription> sse, OpenAiSseFormat* format) {
  sse_ = std::move(sse);
  format_ = format;
}

void OpenAiChoices::UseCollector(std::unique_ptr<OpenAiCollector> collector) { collector_ = std::move(collector); }

bool OpenAiChoices::Attach() {
  for (size_t i = 0; i < relays_.size(); i++) {
    Relay* r = relays_[i].get();
    if (finished_) {
      // A choice ended the response while the others were attaching (it
      // failed, or the client left): the rest are never read; cancel them.
      r->finished = true;
      hub_->Cancel(streams_[i], [] {});
      continue;
    }
    uint64_t oldest = 0;
    if (hub_->Attach(streams_[i], r, 0, &oldest) != stream::Stream::AttachResult::kOk) {
      for (auto& a : relays_) {
        if (a->attached && !a->finished) hub_->Detach(a.get());
        a->finished = true;
      }
      finished_ = true;  // the caller answers and releases
      return false;
    }
    r->attached = true;
  }
  return true;
}

void OpenAiChoices::OnWritable() {
  for (auto& r : relays_) {
    if (r->attached && !r->finished) hub_->OnWritable(r.get());
  }
}

stream::DeliverResult OpenAiChoices::Deliver(int choice, const stream::Event& ev) {
  if (finished_) return stream::DeliverResult::kGone;
  if (collector_) return collector_->Deliver(choice, ev);
  format_->SetChoice(choice);
  return sse_->Deliver(ev);
}

void OpenAiChoices::EndBatch() {
  if (sse_ && !finished_) sse_->EndBatch();
}

void OpenAiChoices::ChoiceComplete(int choice) {
  relays_[static_cast<size_t>(choice)]->finished = true;
  completed_++;
  const bool all = completed_ == static_cast<int>(relays_.size());
  if (sse_) {
    // The finish chunk of a choice leaves now; the response ends with the
    // last choice, or with the first that failed ([DONE] written).
    if (all || format_->ended()) {
      cancel_rest_ = !all;
      sse_->Complete();  // SinkDone follows
    } else {
      sse_->EndBatch();
    }
    return;
  }
  if (all || collector_->failed()) {
    cancel_rest_ = !all;
    collector_->Answer();
    Finish();
  }
}

void OpenAiChoices::ChoiceEnd(int choice, const ApiError& end) {
  relays_[static_cast<size_t>(choice)]->finished = true;
  cancel_rest_ = true;
  if (sse_) {
    sse_->End(end);  // SinkDone follows
    return;
  }
  collector_->Fail(end);
  Finish();
}

void OpenAiChoices::ChoiceGone(int choice) {
  relays_[static_cast<size_t>(choice)]->finished = true;
  if (collector_) {
    // The collector found the connection closed before ClientGone ran (the
    // hub detaches this choice on kGone): the same rule, cancel at once.
    hub_->Cancel(streams_[static_cast<size_t>(choice)], {}, stream::CancelCause::kClientGone);
    ClientGone();
    return;
  }
  for (auto& r : relays_) {
    if (!r->finished) return;
  }
  Finish();  // every choice has gone: the client left a collected answer
}

void OpenAiChoices::SinkDone() { Finish(); }

void OpenAiChoices::ClientGone() {
  if (finished_) return;
  for (size_t i = 0; i < relays_.size(); i++) {
    Relay* r = relays_[i].get();
    if (r->attached && !r->finished) {
      hub_->Detach(r);
      hub_->Cancel(streams_[i], {}, stream::CancelCause::kClientGone);
    }
    r->finished = true;
  }
  Finish();
}

void OpenAiChoices::Finish() {
  if (finished_) return;
  finished_ = true;
  for (size_t i = 0; i < relays_.size(); i++) {
    Relay* r = relays_[i].get();
    if (r->attached && !r->finished) {
      hub_->Detach(r);
      if (cancel_rest_) hub_->Cancel(streams_[i], {}, stream::CancelCause::kSibling);
    }
    r->finished = true;
  }
  auto cb = std::move(on_done_);
  on_done_ = nullptr;
  if (cb) cb(this);
}

}  // namespace tw::openai
