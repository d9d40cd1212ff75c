#include "openai/endpoints.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "openai/chat.h"
#include "openai/openai_response.h"
#include "sse/sse_subscription.h"

namespace tw::openai {

namespace {

int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

OpenAiEndpoints::OpenAiEndpoints(service::Service* service, ChatTemplate chat_template, Logger* log,
                                 Counter* unknown_fields)
    : service_(service),
      log_(log),
      unknown_fields_(unknown_fields),
      chat_template_(std::move(chat_template)),
      created_unix_s_(UnixSeconds()) {}

void OpenAiEndpoints::NoteUnknownFields(std::string_view path, const std::vector<std::string>& fields) {
  if (fields.empty()) return;
  if (unknown_fields_ != nullptr) unknown_fields_->Inc(fields.size());
  std::string names;
  for (const std::string& f : fields) names += (names.empty() ? "" : ",") + f;
  LogIf(log_, LogLevel::kWarn, "openai_unknown_fields",
        {{"path", path}, {"fields", names}, {"action", "ignored"}});
}

void OpenAiEndpoints::Refuse(http::Responder& r, const ApiError& e) {
  SendOpenAiError(r, e);
}

void OpenAiEndpoints::HandleCompletions(const http::Request& req, http::Responder r) {
  // Parsed and tokenized on a prep thread, launched on the loop.
  service::PrepareAs<CompletionRequest>(
      service_, std::move(r), req.body.size(),
      [this, body = req.body](CompletionRequest* c, ApiError* err) {
        const service::ServiceInfo& info = service_->info();
        if (!ParseCompletionRequest(body, *info.tokenizer, info.bounds, info.model, c, err)) return false;
        NoteUnknownFields("/v1/completions", c->unknown_fields);
        return true;
      },
      [this](CompletionRequest& c, http::Responder r) {
        OpenAiLaunch l;
        l.request = ToGeneration(c);
        l.more_prompts.assign(std::make_move_iterator(c.prompts.begin() + 1),
                              std::make_move_iterator(c.prompts.end()));
        l.n = c.n;
        l.candidates = c.best_of;
        l.stream = c.stream;
        l.meta.api = OpenAiApi::kCompletions;
        l.meta.include_usage = c.include_usage;
        l.meta.logprobs = c.logprobs;
        l.meta.echo_logprobs = c.echo && c.logprobs >= 0;
        l.meta.prompt_logprobs = c.controls.prompt_logprobs;
        l.meta.echo = std::move(c.echo_texts);
        l.id_prefix = "cmpl-";
        Launch(std::move(l), std::move(r));
      },
      [this](http::Responder& r, const ApiError& e) { Refuse(r, e); });
}

void OpenAiEndpoints::HandleChatCompletions(const http::Request& req, http::Responder r) {
  service::PrepareAs<ChatRequest>(
      service_, std::move(r), req.body.size(),
      [this, body = req.body](ChatRequest* c, ApiError* err) {
        const service::ServiceInfo& info = service_->info();
        if (!ParseChatRequest(body, *info.tokenizer, info.bounds, info.model, chat_template_, c, err)) return false;
        NoteUnknownFields("/v1/chat/completions", c->shared.unknown_fields);
        return true;
      },
      [this](ChatRequest& c, http::Responder r) {
        OpenAiLaunch l;
        l.request = ChatToGeneration(c);
        l.n = c.shared.n;
        l.candidates = c.shared.n;
        l.stream = c.shared.stream;
        l.meta.api = OpenAiApi::kChat;
        l.meta.include_usage = c.include_usage;
        l.meta.logprobs = c.logprobs;
        l.meta.prompt_logprobs = c.shared.controls.prompt_logprobs;
        l.id_prefix = "chatcmpl-";
        Launch(std::move(l), std::move(r));
      },
      [this](http::Responder& r, const ApiError& e) { Refuse(r, e); });
}

void OpenAiEndpoints::Launch(OpenAiLaunch l, http::Responder r) {
  const service::ServiceInfo& info = service_->info();
  stream::StreamHub* hub = service_->hub();
  // One stream per choice, prompt by prompt (choice j of prompt p at index
  // p * n + j, as OpenAI indexes them); choice j draws with seed + j (a
  // seeded request's choices differ from each other and are each
  // reproducible: the same as a one-prompt, one-choice request).
  // With best_of, each prompt's candidates are launched alike and carry
  // their tokens' log-probabilities (the answer picks the n most likely).
  std::vector<std::shared_ptr<stream::Stream>> streams;
  const int per_prompt = std::max(l.n, l.candidates);
  const int choices = per_prompt * static_cast<int>(1 + l.more_prompts.size());
  for (int i = 0; i < choices; i++) {
    ApiError err;
    service::ParsedGeneration g;
    g.request = l.request;
    if (i >= per_prompt) g.request.prompt_tokens = l.more_prompts[static_cast<size_t>(i / per_prompt - 1)];
    g.request.seed += static_cast<uint64_t>(i % per_prompt);
    if (per_prompt > l.n) g.request.logprobs = std::max(0, g.request.logprobs);
    // A prompt's log-probabilities are computed once, by its first choice
    // (the answer gives its siblings the same), unless echo needs them in
    // every choice's logprobs.
    if (i % per_prompt != 0 && !l.meta.echo_logprobs) g.request.prompt_logprobs = -1;
    g.policy = info.default_policy;
    std::shared_ptr<stream::Stream> s = service_->Launch(std::move(g), &err);
    if (!s) {
      for (auto& launched : streams) hub->Cancel(launched, [] {});
      Refuse(r, ForOpenAi(std::move(err)));
      return;
    }
    streams.push_back(std::move(s));
  }
  const std::string first_id = streams[0]->id();
  CompletionMeta meta = l.meta;
  meta.id = l.id_prefix + first_id;
  meta.created = UnixSeconds();
  meta.model = info.model;
  meta.n = choices;
  meta.choices_per_prompt = per_prompt;
  meta.answered_per_prompt = l.n;
  // The service holds the group under its address until it is done.
  service::Service* service = service_;
  auto done = std::make_shared<bool>(false);
  auto group = std::make_shared<OpenAiChoices>(hub, streams, [service, done](OpenAiChoices* self) {
    *done = true;
    service->Release(self);
  });
  http::Responder keep = r;
  sse::SseSubscription* streaming = nullptr;
  if (l.stream) {
    std::weak_ptr<OpenAiChoices> weak = group;
    sse::SseSubscription::Options o;
    o.heartbeat_ms = info.heartbeat_ms;
    o.reserve_bytes = kOpenAiStreamReserveBytes;
    o.stream_id = first_id;
    o.on_writable = [weak] {
      if (auto g = weak.lock()) g->OnWritable();
    };
    auto format = std::make_unique<OpenAiSseFormat>(meta, first_id);
    OpenAiSseFormat* f = format.get();
    auto ss = std::make_shared<sse::SseSubscription>(service_->loop(), hub, std::move(r), std::move(o),
                                                     std::move(format), [weak](sse::SseSubscription*) {
                                                       if (auto g = weak.lock()) g->SinkDone();
                                                     });
    streaming = ss.get();
    group->UseStream(std::move(ss), f);
  } else {
    group->UseCollector(std::make_unique<OpenAiCollector>(std::move(r), meta));
  }
  service_->Keep(group.get(), group);
  if (group->Attach()) {
    // Headers go out now, before the first token (unless it has already ended).
    if (streaming != nullptr && !*done && !streaming->started()) streaming->Start();
    if (streaming == nullptr && !*done) {
      // A collected answer: its client leaving is noticed at the close,
      // queued or running, and cancels every choice.
      std::weak_ptr<OpenAiChoices> weak = group;
      auto gone = [weak] {
        if (auto g = weak.lock()) g->ClientGone();
      };
      if (!keep.OnClientGone(gone) && keep.closed()) gone();
    }
    return;
  }
  // A fresh stream refuses a subscriber only when --max-subscribers is 0.
  service_->Release(group.get());
  for (auto& s : streams) hub->Cancel(s, [] {});
  ApiError busy = ApiError::Make(ErrorCode::kOverloaded, "no subscriber may attach (--max-subscribers)");
  busy.retry_after_ms = 1000;
  Refuse(keep, busy);
}

void OpenAiEndpoints::HandleModels(const http::Request&, http::Responder r) {
  const service::ServiceInfo& info = service_->info();
  r.Send(200, "application/json", ModelListJson(info.model, created_unix_s_, chat_template_.name()));
}

void OpenAiEndpoints::HandleModel(const http::Request&, http::Responder r) {
  const service::ServiceInfo& info = service_->info();
  std::string id(r.Param("id"));
  if (id != info.model) {
    ApiError e = ApiError::Make(ErrorCode::kModelNotFound,
                                "the model '" + id + "' does not exist; this server serves '" + info.model + "'");
    e.param = "model";
    Refuse(r, e);
    return;
  }
  r.Send(200, "application/json", ModelJson(info.model, created_unix_s_, chat_template_.name()));
}

}  // namespace tw::openai
