// The ring, the attach/append handover, and the notifier.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "stream/stream.h"

namespace tw::stream {
namespace {

std::shared_ptr<Stream> MakeStream(size_t window, Notifier* n = nullptr) {
  StreamLimits limits;
  limits.resume_window_events = window;
  limits.max_subscribers = 2;
  return std::make_shared<Stream>("s_test", limits, n);
}

TEST(Stream, SequenceNumbersStartAtOneAndAreContiguous) {
  auto s = MakeStream(8);
  for (int i = 1; i <= 5; i++) EXPECT_EQ(s->Append(Event::Token(0, 0, "")), static_cast<uint64_t>(i));
  std::vector<EventPtr> out;
  ASSERT_TRUE(s->ReadFrom(1, 100, &out));
  ASSERT_EQ(out.size(), 5u);
  for (size_t i = 0; i < out.size(); i++) EXPECT_EQ(out[i]->seq, i + 1);
}

TEST(Stream, RingEvictsOldestAndReportsWindow) {
  auto s = MakeStream(4);
  for (int i = 0; i < 10; i++) s->Append(Event::Token(i, i, std::string(i + 1, 'x')));
  EXPECT_EQ(s->head_seq(), 10u);
  EXPECT_EQ(s->oldest_seq(), 7u);
  EXPECT_EQ(s->event_count(), 4u);
  // Each event counts its fixed part and its text.
  EXPECT_EQ(s->bytes_held(), 4 * sizeof(Event) + 7u + 8 + 9 + 10);
  std::vector<EventPtr> out;
  EXPECT_FALSE(s->ReadFrom(6, 10, &out));
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(s->ReadFrom(7, 10, &out));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0]->seq, 7u);
  EXPECT_EQ(out[0]->text, std::string(7, 'x'));
  EXPECT_EQ(out[0]->index, 6);
  EXPECT_EQ(out[3]->seq, 10u);
  ASSERT_TRUE(s->ReadFrom(11, 10, &out));
  EXPECT_TRUE(out.empty());
}

TEST(Stream, AttachRefusesACursorOutsideTheWindow) {
  auto s = MakeStream(4);
  for (int i = 0; i < 10; i++) s->Append(Event::Token(0, 0, ""));
  uint64_t oldest = 0;
  int a = 0, b = 0, c = 0;
  EXPECT_EQ(s->Attach(&a, 5, &oldest), Stream::AttachResult::kWindowExceeded);
  EXPECT_EQ(oldest, 7u);
  EXPECT_EQ(s->Attach(&a, 6, &oldest), Stream::AttachResult::kOk);  // next is 7: held
  EXPECT_EQ(s->Attach(&b, 10, &oldest), Stream::AttachResult::kOk);
  EXPECT_EQ(s->Attach(&c, 10, &oldest), Stream::AttachResult::kTooManySubscribers);
  EXPECT_EQ(s->subscriber_count(), 2u);
  EXPECT_EQ(s->Detach(&a), 1u);
  EXPECT_EQ(s->Detach(&a), 1u);  // idempotent
}

TEST(Stream, FinishIsAtomicWithTheTerminalEventAndIdempotent) {
  auto s = MakeStream(8);
  s->Append(Event::Start(1));
  s->Finish(Event::Done(FinishReason::kLength, 1, 0));
  EXPECT_TRUE(s->finished());
  EXPECT_TRUE(s->producer_exited());
  EXPECT_EQ(s->head_seq(), 2u);
  s->Finish(Event::Done(FinishReason::kCancelled, 1, 0));
  EXPECT_EQ(s->Append(Event::Token(0, 0, "")), 0u);
  EXPECT_EQ(s->head_seq(), 2u);
  std::vector<EventPtr> out;
  ASSERT_TRUE(s->ReadFrom(2, 1, &out));
  EXPECT_TRUE(out[0]->terminal());
  EXPECT_EQ(out[0]->finish_reason, FinishReason::kLength);  // the first Finish stands
}

TEST(Notifier, CoalescesWakeupsAndNeverLosesOne) {
  // A fake "loop": posted functions queue up and run when the test says.
  std::mutex mu;
  std::vector<std::function<void()>> posted;
  std::atomic<int> drained_events{0};
  std::shared_ptr<Stream> s;
  uint64_t seen = 0;
  Notifier n(
      [&](std::function<void()> fn) {
        std::lock_guard<std::mutex> lock(mu);
        posted.push_back(std::move(fn));
      },
      [&](std::vector<std::shared_ptr<Stream>>& dirty) {
        for (auto& d : dirty) {
          // Like the hub: read everything after the cursor, in batches.
          std::vector<EventPtr> out;
          do {
            ASSERT_TRUE(d->ReadFrom(seen + 1, 64, &out));
            seen += out.size();
            drained_events += static_cast<int>(out.size());
          } while (!out.empty());
        }
      });
  s = MakeStream(10000, &n);
  std::thread producer([&] {
    for (int i = 0; i < 5000; i++) s->Append(Event::Token(0, 0, ""));
  });
  // Drain concurrently with the producer, like the I/O thread would.
  for (;;) {
    std::vector<std::function<void()>> run;
    {
      std::lock_guard<std::mutex> lock(mu);
      run.swap(posted);
    }
    for (auto& f : run) f();
    if (seen == 5000) break;
    std::this_thread::yield();
  }
  producer.join();
  EXPECT_EQ(drained_events.load(), 5000);
}

// --stream-interval N: after the first token (TTFT is never delayed), a
// stream announces every N-th token; start and terminal events at once; a
// hold older than the bound is taken by the hub's timer (TakeHeld).
TEST(StreamInterval, AnnouncesTheFirstTokenThenEveryNthAndTerminalsAtOnce) {
  std::shared_ptr<Stream> s;
  std::vector<std::function<void()>> pending;
  Notifier n([&](std::function<void()> fn) { pending.push_back(std::move(fn)); },
             [&](std::vector<std::shared_ptr<Stream>>&) {});
  StreamLimits limits;
  limits.stream_interval = 4;
  s = std::make_shared<Stream>("s_iv", limits, &n);
  auto drain = [&] {
    int posted = static_cast<int>(pending.size());
    for (auto& f : pending) f();  // clears the dirty flag, as the loop would
    pending.clear();
    return posted;
  };
  s->Append(Event::Start(1));
  EXPECT_EQ(drain(), 1) << "start: announced at once";
  s->Append(Event::Token(0, 1, "a"));
  EXPECT_EQ(drain(), 1) << "the first token: at once";
  for (int i = 1; i <= 3; i++) {
    s->Append(Event::Token(i, 1, "b"));
    EXPECT_EQ(drain(), 0) << "token " << i << " is held";
  }
  s->Append(Event::Token(4, 1, "c"));
  EXPECT_EQ(drain(), 1) << "the fourth held token completes the group";
  s->Append(Event::Token(5, 1, "d"));
  EXPECT_EQ(drain(), 0);
  // The hub's timer: not yet old enough, then old enough.
  const Clock::time_point now = Clock::now();
  EXPECT_FALSE(s->TakeHeld(now, std::chrono::hours(1)));
  EXPECT_TRUE(s->TakeHeld(now + std::chrono::milliseconds(10), std::chrono::milliseconds(5)));
  EXPECT_FALSE(s->TakeHeld(now + std::chrono::milliseconds(10), std::chrono::milliseconds(5)))
      << "taken once";
  // After a take, the next token starts a new group of four.
  for (int i = 6; i <= 8; i++) {
    s->Append(Event::Token(i, 1, "e"));
    EXPECT_EQ(drain(), 0);
  }
  s->Append(Event::Token(9, 1, "f"));
  EXPECT_EQ(drain(), 1);
  s->Append(Event::Token(10, 1, "g"));
  s->Finish(Event::Done(FinishReason::kLength, 1, 11));
  EXPECT_EQ(drain(), 1) << "the terminal event announces what is held";
  EXPECT_EQ(s->head_seq(), 13u) << "every event has its own id";
}

TEST(StreamInterval, OneAnnouncesEveryToken) {
  int posts = 0;
  std::vector<std::function<void()>> pending;
  Notifier n([&](std::function<void()> fn) { pending.push_back(std::move(fn)); },
             [&](std::vector<std::shared_ptr<Stream>>&) {});
  auto s = std::make_shared<Stream>("s_one", StreamLimits{}, &n);
  for (int i = 0; i < 10; i++) {
    s->Append(Event::Token(i, 1, "x"));
    posts += static_cast<int>(pending.size());
    for (auto& f : pending) f();
    pending.clear();
  }
  EXPECT_EQ(posts, 10);
  EXPECT_FALSE(s->TakeHeld(Clock::now() + std::chrono::hours(1), std::chrono::milliseconds(1)));
}

}  // namespace
}  // namespace tw::stream
