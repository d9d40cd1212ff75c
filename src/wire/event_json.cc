#include "wire/event_json.h"

#include "json/error_json.h"
#include "json/json.h"

namespace tw::wire {

namespace {

void AppendInt(std::string* out, int64_t v) { *out += std::to_string(v); }

void AppendDouble(std::string* out, double v) {
  std::string s;
  json::Writer w(&s);
  w.Double(v);
  *out += s;
}

// ,"logprob":-0.51,"top":[{"id":6342,"text":" Paris","logprob":-0.51},…]
void AppendLogprobs(std::string* out, const stream::TokenLogprobs& lp) {
  *out += ",\"logprob\":";
  AppendDouble(out, lp.sampled.logprob);
  *out += ",\"top\":[";
  for (size_t i = 0; i < lp.top.size(); i++) {
    if (i > 0) *out += ',';
    *out += "{\"id\":";
    AppendInt(out, lp.top[i].id);
    *out += ",\"text\":";
    json::AppendQuoted(out, lp.top[i].bytes);
    *out += ",\"logprob\":";
    AppendDouble(out, lp.top[i].logprob);
    *out += '}';
  }
  *out += ']';
}

// The data object's members, without the braces.
void AppendMembers(std::string* out, const stream::Event& ev, const EventContext& ctx) {
  switch (ev.type) {
    case stream::EventType::kStart:
      *out += "\"model\":";
      json::AppendQuoted(out, ctx.model);
      *out += ",\"prompt_tokens\":";
      AppendInt(out, ev.prompt_tokens);
      return;
    case stream::EventType::kToken:
      *out += "\"index\":";
      AppendInt(out, ev.index);
      *out += ",\"token\":";
      AppendInt(out, ev.token);
      *out += ",\"text\":";
      json::AppendQuoted(out, ev.text);
      if (ev.logprobs) AppendLogprobs(out, *ev.logprobs);
      if (ev.lab_pad_bytes > 0) {
        *out += ",\"pad\":\"";
        out->append(ev.lab_pad_bytes, '.');
        *out += '"';
      }
      return;
    case stream::EventType::kDone:
      *out += "\"finish_reason\":\"";
      *out += stream::FinishReasonName(ev.finish_reason);
      *out += "\",\"usage\":{\"prompt_tokens\":";
      AppendInt(out, ev.prompt_tokens);
      *out += ",\"completion_tokens\":";
      AppendInt(out, ev.completion_tokens);
      *out += '}';
      return;
    case stream::EventType::kError:
      return;  // written as an object of its own (AppendErrorObject)
  }
}

}  // namespace

void AppendEventData(std::string* out, const stream::Event& ev, const EventContext& ctx) {
  if (ev.type == stream::EventType::kError) {
    static const ApiError kUnknown = ApiError::Make(ErrorCode::kInternal, "generation failed");
    json::AppendErrorObject(out, ev.error ? *ev.error : kUnknown);
    return;
  }
  *out += '{';
  if (ev.type == stream::EventType::kStart) {
    *out += "\"stream\":";
    json::AppendQuoted(out, ctx.stream_id);
    *out += ',';
  }
  AppendMembers(out, ev, ctx);
  *out += '}';
}

void AppendSseEvent(std::string* out, const stream::Event& ev, const EventContext& ctx) {
  *out += "id: ";
  *out += std::to_string(ev.seq);
  *out += "\nevent: ";
  *out += stream::EventTypeName(ev.type);
  *out += "\ndata: ";
  AppendEventData(out, ev, ctx);
  *out += "\n\n";
}

void AppendWsEventMessage(std::string* out, const stream::Event& ev, const EventContext& ctx) {
  *out += "{\"stream\":";
  json::AppendQuoted(out, ctx.stream_id);
  *out += ",\"seq\":";
  *out += std::to_string(ev.seq);
  *out += ",\"type\":\"";
  *out += stream::EventTypeName(ev.type);
  *out += '"';
  if (ev.type == stream::EventType::kError) {
    *out += ",\"error\":";
    AppendEventData(out, ev, ctx);
  } else {
    *out += ',';
    AppendMembers(out, ev, ctx);
  }
  *out += '}';
}

}  // namespace tw::wire
