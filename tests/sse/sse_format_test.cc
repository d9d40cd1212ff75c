// The SSE formats on their own: our events written once per event and wire
// format, whatever the number of subscribers (stream::Event::wire).
#include <gtest/gtest.h>

#include "sse/sse_subscription.h"
#include "stream/event.h"

namespace tw::sse {
namespace {

TEST(TokenWireSseFormat, WritesOurEventsWithTheirIds) {
  TokenWireSseFormat f("s_1", "gpt2");
  std::string out;
  f.AppendPreamble(&out);
  EXPECT_EQ(out, "retry: 1000\n\n");
  stream::Event start = stream::Event::Start(2);
  start.seq = 1;
  stream::Event tok = stream::Event::Token(0, 15496, "Hello");
  tok.seq = 2;
  out.clear();
  EXPECT_EQ(f.AppendEvent(start, &out), SseFormat::Bytes::kEvent);
  EXPECT_EQ(f.AppendEvent(tok, &out), SseFormat::Bytes::kEvent);
  EXPECT_EQ(out,
            "id: 1\nevent: start\ndata: {\"stream\":\"s_1\",\"model\":\"gpt2\",\"prompt_tokens\":2}\n\n"
            "id: 2\nevent: token\ndata: {\"index\":0,\"token\":15496,\"text\":\"Hello\"}\n\n");
  out.clear();
  f.AppendEnding(stream::SubscriberEnd(ErrorCode::kSlowClient, "behind", 2), &out);
  EXPECT_EQ(out, "event: error\ndata: {\"type\":\"slow_client\",\"message\":\"behind\",\"retryable\":true,"
                 "\"resume_from\":2}\n\n");
}

// Every subscriber of a stream gets the bytes the first one wrote: the
// second format copies the event's cached encoding instead of writing it
// again (a planted value shows which happened).
TEST(TokenWireSseFormat, AnEventIsEncodedOnceForAllItsSubscribers) {
  TokenWireSseFormat first("s_1", "gpt2"), second("s_1", "gpt2");
  first.SetShared(true);
  second.SetShared(true);
  stream::Event ev = stream::Event::Token(4, 318, " is");
  ev.seq = 9;
  const std::string& cache = ev.wire[static_cast<int>(stream::Wire::kSse)];
  EXPECT_TRUE(cache.empty());
  std::string a, b;
  first.AppendEvent(ev, &a);
  EXPECT_EQ(cache, a);
  ev.wire[static_cast<int>(stream::Wire::kSse)] = "planted\n\n";
  second.AppendEvent(ev, &b);
  EXPECT_EQ(b, "planted\n\n");
  // A lone subscriber's bytes go straight out: nothing is cached.
  stream::Event lone = stream::Event::Token(5, 318, " is");
  lone.seq = 10;
  std::string c;
  TokenWireSseFormat only("s_1", "gpt2");
  only.AppendEvent(lone, &c);
  EXPECT_EQ(c, "id: 10\nevent: token\ndata: {\"index\":5,\"token\":318,\"text\":\" is\"}\n\n");
  EXPECT_TRUE(lone.wire[static_cast<int>(stream::Wire::kSse)].empty());
}

}  // namespace
}  // namespace tw::sse
