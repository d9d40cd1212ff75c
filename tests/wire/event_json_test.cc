// Our event schema in JSON (sse/event_json.h, DESIGN.md §5 and §6): each
// typed event written as the SSE data object and as our WebSocket message,
// and the error object with its optional fields.
#include "wire/event_json.h"

#include <gtest/gtest.h>

#include "json/error_json.h"
#include "json/json.h"

namespace tw::wire {
namespace {

const EventContext kCtx{"s_abc", "gpt2"};

std::string Data(const stream::Event& ev) {
  std::string out;
  AppendEventData(&out, ev, kCtx);
  return out;
}

std::string Ws(stream::Event ev, uint64_t seq) {
  ev.seq = seq;
  std::string out;
  AppendWsEventMessage(&out, ev, kCtx);
  return out;
}

TEST(EventJson, EachEventTypeHasTheSchemasFields) {
  EXPECT_EQ(Data(stream::Event::Start(5)), R"({"stream":"s_abc","model":"gpt2","prompt_tokens":5})");
  EXPECT_EQ(Data(stream::Event::Token(0, 6342, " Paris")), R"({"index":0,"token":6342,"text":" Paris"})");
  // Text is escaped as JSON (quotes, control characters, invalid UTF-8 as U+FFFD).
  EXPECT_EQ(Data(stream::Event::Token(3, 1, "a\"b\n\xff")),
            "{\"index\":3,\"token\":1,\"text\":\"a\\\"b\\n\xEF\xBF\xBD\"}");
  EXPECT_EQ(Data(stream::Event::Done(stream::FinishReason::kLength, 5, 64)),
            R"({"finish_reason":"length","usage":{"prompt_tokens":5,"completion_tokens":64}})");
  for (auto [r, name] : {std::pair{stream::FinishReason::kStop, "stop"}, {stream::FinishReason::kEos, "eos"},
                         {stream::FinishReason::kCancelled, "cancelled"}}) {
    json::Value v;
    ASSERT_TRUE(json::Parse(Data(stream::Event::Done(r, 1, 2)), &v).ok());
    EXPECT_EQ(v.Find("finish_reason")->as_string(), name);
  }
  ApiError e = ApiError::Make(ErrorCode::kQueueTimeout, "no slot");
  EXPECT_EQ(Data(stream::Event::Error(e)), R"({"type":"queue_timeout","message":"no slot","retryable":true})");
}

TEST(EventJson, WebSocketMessagesPutStreamSeqAndTypeFirst) {
  EXPECT_EQ(Ws(stream::Event::Start(5), 1),
            R"({"stream":"s_abc","seq":1,"type":"start","model":"gpt2","prompt_tokens":5})");
  EXPECT_EQ(Ws(stream::Event::Token(0, 6342, " Paris"), 2),
            R"({"stream":"s_abc","seq":2,"type":"token","index":0,"token":6342,"text":" Paris"})");
  EXPECT_EQ(Ws(stream::Event::Done(stream::FinishReason::kEos, 5, 1), 3),
            R"({"stream":"s_abc","seq":3,"type":"done","finish_reason":"eos","usage":{"prompt_tokens":5,"completion_tokens":1}})");
  EXPECT_EQ(Ws(stream::Event::Error(ApiError::Make(ErrorCode::kInternal, "boom")), 4),
            R"({"stream":"s_abc","seq":4,"type":"error","error":{"type":"internal","message":"boom","retryable":false}})");
}

TEST(EventJson, ErrorObjectsCarryOnlyTheFieldsThatAreSet) {
  ApiError e = ApiError::Make(ErrorCode::kSlowClient, "too slow");
  e.resume_from = 17;
  std::string out;
  json::AppendErrorObject(&out, e);
  EXPECT_EQ(out, R"({"type":"slow_client","message":"too slow","retryable":true,"resume_from":17})");
  ApiError j = ApiError::Make(ErrorCode::kInvalidJson, "bad");
  j.offset = 0;  // byte 0 is an offset, not "unset"
  EXPECT_EQ(json::ErrorEnvelope(j), R"({"error":{"type":"invalid_json","message":"bad","retryable":false,"offset":0}})");
  ApiError w = ApiError::Make(ErrorCode::kResumeWindowExceeded, "gone");
  w.oldest_available = 40;
  w.retry_after_ms = 0;
  EXPECT_EQ(json::ErrorEnvelope(w),
            R"({"error":{"type":"resume_window_exceeded","message":"gone","retryable":false,"oldest_available":40}})");
  EXPECT_EQ(w.http_status, 409);
}

}  // namespace
}  // namespace tw::wire
