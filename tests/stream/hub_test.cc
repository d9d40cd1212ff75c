// StreamHub: attach/replay/live handover, policies, linger, cancel, shutdown.
// Real EventLoop on a thread; a fake backend (the test is the producer) and
// fake subscriptions whose "socket room" the test controls.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "backend/backend.h"
#include "wire/event_json.h"
#include "stream/hub.h"
#include "stream/loop_fixture.h"

namespace tw::stream {
namespace {

using tw::testing::LoopThread;
using tw::testing::WaitFor;

class FakeBackend : public backend::Backend {
 public:
  const char* kind() const override { return "fake"; }
  std::string model_name() const override { return "fake"; }
  int context_length() const override { return 1024; }
  bool Submit(std::shared_ptr<Stream> s, backend::GenerationRequest, ApiError*) override {
    std::lock_guard<std::mutex> lock(mu);
    streams[s->id()] = s;
    return true;
  }
  // Like a real backend, the producer has exited by the time a cancel is
  // counted: a test that sees Cancels() == 1 may rely on producer_exited().
  void Cancel(const std::string& id) override {
    std::shared_ptr<Stream> s;
    {
      std::lock_guard<std::mutex> lock(mu);
      s = streams[id];
    }
    if (s) s->Finish(Event::Done(FinishReason::kCancelled, 1, 0));
    std::lock_guard<std::mutex> lock(mu);
    cancels[id]++;
  }
  void SetPaused(const std::string& id, bool p) override {
    std::lock_guard<std::mutex> lock(mu);
    paused[id] = p;
    pause_calls++;
  }
  void Shutdown() override {}
  void Stats(std::vector<backend::StatField>*) const override {}

  bool IsPaused(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu);
    return paused[id];
  }
  int Cancels(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu);
    return cancels[id];
  }

  std::mutex mu;
  std::map<std::string, std::shared_ptr<Stream>> streams;
  std::map<std::string, int> cancels;
  std::map<std::string, bool> paused;
  int pause_calls = 0;
};

// A transport whose socket takes `room` more events (unbounded if < 0).
class FakeSub : public Subscription {
 public:
  DeliverResult Deliver(const Event& ev) override {
    std::lock_guard<std::mutex> lock(mu);
    if (gone) return DeliverResult::kGone;
    if (room == 0) return DeliverResult::kNoRoom;
    if (room > 0) room--;
    seqs.push_back(ev.seq);
    shared_seen.push_back(stream_shared());
    return DeliverResult::kTaken;
  }
  void Complete() override {
    std::lock_guard<std::mutex> lock(mu);
    completed = true;
  }
  void End(const ApiError& e) override {
    std::lock_guard<std::mutex> lock(mu);
    ended = true;
    end = e;
  }
  std::vector<uint64_t> Seqs() {
    std::lock_guard<std::mutex> lock(mu);
    return seqs;
  }
  bool Completed() {
    std::lock_guard<std::mutex> lock(mu);
    return completed;
  }
  bool Ended() {
    std::lock_guard<std::mutex> lock(mu);
    return ended;
  }

  std::mutex mu;
  int room = -1;
  bool gone = false;
  bool completed = false;
  bool ended = false;
  ApiError end;
  std::vector<uint64_t> seqs;
  std::vector<bool> shared_seen;  // stream_shared() at each delivery
};

// Declare FakeSubs before the HubFixture: a subscriber still attached when a
// test ends must outlive the hub and its loop thread, which may still deliver
// to it until the fixture is destroyed.
struct HubFixture {
  explicit HubFixture(HubOptions o = HubOptions()) : options(o) {
    hub = lt.Call([&] { return std::make_unique<StreamHub>(lt.loop(), &backend, options); });
  }
  ~HubFixture() {
    lt.Call([&] {
      hub.reset();
      return 0;
    });
    lt.Stop();
  }
  std::shared_ptr<Stream> Start(Policy p, FakeSub* sub, uint64_t after = 0) {
    return lt.Call([&] {
      auto s = hub->Create(p);
      s->Append(Event::Start(1));
      backend.Submit(s, {}, nullptr);
      if (sub) {
        uint64_t oldest;
        EXPECT_EQ(hub->Attach(s, sub, after, &oldest), Stream::AttachResult::kOk);
      } else {
        hub->StartDetached(s);
      }
      return s;
    });
  }
  HubOptions options;
  LoopThread lt;
  FakeBackend backend;
  std::unique_ptr<StreamHub> hub;
};

bool Contiguous(const std::vector<uint64_t>& v, uint64_t first, uint64_t last) {
  if (v.size() != last - first + 1) return false;
  for (size_t i = 0; i < v.size(); i++) {
    if (v[i] != first + i) return false;
  }
  return true;
}

// Fairness: a subscriber resuming far behind is handed at most
// write_batch_events per loop iteration; the rest follows in the next ones,
// complete and in order, and a live subscriber of another stream is served
// in between.
TEST(Hub, ALongBacklogIsHandedOutAtMostABatchPerIteration) {
  HubOptions o;
  o.write_batch_events = 16;
  HubFixture f(o);
  // Loop iterations, counted before each sleep (loop thread only).
  auto iteration = std::make_shared<uint64_t>(0);
  f.lt.Call([&] {
    f.lt.loop()->SetBeforeSleep([iteration] { ++*iteration; });
    return 0;
  });
  struct CountingSub : FakeSub {
    std::shared_ptr<uint64_t> iteration;
    std::map<uint64_t, int> per_iteration;  // loop thread only
    DeliverResult Deliver(const Event& ev) override {
      DeliverResult r = FakeSub::Deliver(ev);
      if (r == DeliverResult::kTaken) per_iteration[*iteration]++;
      return r;
    }
  };
  CountingSub late, live;
  late.iteration = live.iteration = iteration;
  auto s = f.Start(Policy::kDropSlow, nullptr);
  for (int i = 0; i < 200; i++) s->Append(Event::Token(i, 0, ""));
  s->Finish(Event::Done(FinishReason::kLength, 1, 200));
  auto other = f.Start(Policy::kDropSlow, &live);
  f.lt.Call([&] {
    uint64_t oldest;
    EXPECT_EQ(f.hub->Attach(s, &late, 0, &oldest), Stream::AttachResult::kOk);
    return 0;
  });
  other->Append(Event::Token(0, 0, ""));  // a live event while the backlog drains
  ASSERT_TRUE(WaitFor([&] { return late.Completed(); }));
  ASSERT_TRUE(WaitFor([&] { return live.Seqs().size() == 2; }));
  EXPECT_TRUE(Contiguous(late.Seqs(), 1, 202));
  std::map<uint64_t, int> per = f.lt.Call([&] { return late.per_iteration; });
  int most = 0;
  for (const auto& [it, n] : per) most = std::max(most, n);
  EXPECT_LE(most, 16) << "one iteration handed out more than write_batch_events";
  EXPECT_GE(per.size(), 202u / 16) << "the backlog took at least 13 iterations";
  f.lt.Call([&] {
    f.lt.loop()->SetBeforeSleep(nullptr);
    return 0;
  });
}

// --stream-interval: a token held in an incomplete group still reaches the
// subscriber, by the hub's timer, within the bound; the group's ids are
// contiguous.
TEST(Hub, AHeldTokenIsDeliveredWithinTheIntervalBound) {
  HubOptions o;
  o.stream_interval = 8;
  o.stream_interval_bound_ms = 20;
  o.stream_limits.stream_interval = 8;
  FakeSub sub;
  HubFixture f(o);
  auto s = f.Start(Policy::kDropSlow, &sub);
  s->Append(Event::Token(0, 1, "a"));  // the first token: at once
  ASSERT_TRUE(WaitFor([&] { return sub.Seqs().size() == 2; }));
  const auto t0 = std::chrono::steady_clock::now();
  s->Append(Event::Token(1, 1, "b"));  // held: the group of 8 is not full
  s->Append(Event::Token(2, 1, "c"));
  ASSERT_TRUE(WaitFor([&] { return sub.Seqs().size() == 4; }, 2000));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(waited, std::chrono::milliseconds(20 + 200)) << "held past the bound (plus scheduling slack)";
  EXPECT_TRUE(Contiguous(sub.Seqs(), 1, 4));
}

// A transport learns whether its stream has other subscribers (so a format
// caches an event's bytes only for a fan-out).
TEST(Hub, TransportsLearnWhetherTheirStreamIsShared) {
  FakeSub a, b;
  HubFixture f;
  auto s = f.Start(Policy::kDropSlow, &a);
  s->Append(Event::Token(0, 1, "x"));
  ASSERT_TRUE(WaitFor([&] { return a.Seqs().size() == 2; }));
  f.lt.Call([&] {
    uint64_t oldest;
    EXPECT_EQ(f.hub->Attach(s, &b, 2, &oldest), Stream::AttachResult::kOk);
    return 0;
  });
  s->Append(Event::Token(1, 1, "y"));
  ASSERT_TRUE(WaitFor([&] { return a.Seqs().size() == 3 && b.Seqs().size() == 1; }));
  std::lock_guard<std::mutex> la(a.mu), lb(b.mu);
  EXPECT_FALSE(a.shared_seen[0]);
  EXPECT_FALSE(a.shared_seen[1]);
  EXPECT_TRUE(a.shared_seen[2]);
  EXPECT_TRUE(b.shared_seen[0]);
}

TEST(Hub, LiveDeliveryCompletesOnTerminalEvent) {
  FakeSub sub;
  HubFixture f;
  auto s = f.Start(Policy::kDropSlow, &sub);
  for (int i = 0; i < 20; i++) s->Append(Event::Token(0, 0, ""));
  s->Finish(Event::Done(FinishReason::kLength, 1, 20));
  ASSERT_TRUE(WaitFor([&] { return sub.Completed(); }));
  EXPECT_TRUE(Contiguous(sub.Seqs(), 1, 22));
  EXPECT_EQ(f.lt.Call([&] { return f.hub->subscriber_count(); }), 0u);
  EXPECT_EQ(f.lt.Call([&] { return f.hub->counters().tokens_delivered; }), 20u);
}

// The handover: a subscriber attaching while the producer appends gets every
// event after its cursor exactly once, whichever side wins each race.
TEST(Hub, ReplayThenLiveHandoverUnderRacingAppends) {
  for (int round = 0; round < 30; round++) {
    HubFixture f;
    auto s = f.Start(Policy::kDropSlow, nullptr);
    std::mt19937 rng(round);
    const int total = 400;
    std::thread producer([&] {
      for (int i = 0; i < total; i++) {
        s->Append(Event::Token(0, 0, ""));
        if (i % 50 == 0) std::this_thread::yield();
      }
      s->Finish(Event::Done(FinishReason::kLength, 1, total));
    });
    // Several subscribers attach at racing moments with different cursors.
    std::vector<std::unique_ptr<FakeSub>> subs;
    std::vector<uint64_t> afters;
    for (int k = 0; k < 4; k++) {
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
      subs.push_back(std::make_unique<FakeSub>());
      FakeSub* sub = subs.back().get();
      uint64_t after = f.lt.Call([&] { return s->head_seq() / 2; });
      afters.push_back(after);
      f.lt.Call([&] {
        uint64_t oldest;
        return f.hub->Attach(s, sub, after, &oldest);
      });
    }
    producer.join();
    for (size_t k = 0; k < subs.size(); k++) {
      ASSERT_TRUE(WaitFor([&] { return subs[k]->Completed(); })) << "round " << round;
      EXPECT_TRUE(Contiguous(subs[k]->Seqs(), afters[k] + 1, total + 2))
          << "round " << round << " sub " << k << " after " << afters[k] << " got "
          << subs[k]->Seqs().size();
    }
  }
}

TEST(Hub, ResumeBeyondWindowIsRefusedWithOldestAvailable) {
  HubOptions o;
  o.stream_limits.resume_window_events = 8;
  FakeSub sub;
  HubFixture f(o);
  auto s = f.Start(Policy::kDropSlow, nullptr);
  for (int i = 0; i < 20; i++) s->Append(Event::Token(0, 0, ""));
  uint64_t oldest = 0;
  auto r = f.lt.Call([&] { return f.hub->Attach(s, &sub, 3, &oldest); });
  EXPECT_EQ(r, Stream::AttachResult::kWindowExceeded);
  EXPECT_EQ(oldest, 14u);
  EXPECT_TRUE(sub.Seqs().empty());
  r = f.lt.Call([&] { return f.hub->Attach(s, &sub, 13, &oldest); });
  EXPECT_EQ(r, Stream::AttachResult::kOk);
  ASSERT_TRUE(WaitFor([&] { return sub.Seqs().size() == 8; }));
  EXPECT_TRUE(Contiguous(sub.Seqs(), 14, 21));
}

// A cursor naming an event that does not exist is refused (kPastHead, with
// the head), on a live stream and a finished one, including ids that would
// wrap around in after_seq + 1. A cursor at the terminal event of a finished
// stream attaches and completes at once with nothing delivered.
TEST(Hub, ResumePastTheHeadIsRefusedAndAtTheTerminalEventCompletesEmpty) {
  FakeSub at_head;
  FakeSub last;
  HubFixture f;
  auto s = f.Start(Policy::kDropSlow, nullptr);
  for (int i = 0; i < 5; i++) s->Append(Event::Token(0, 0, ""));  // head: 6 (start is 1)
  for (uint64_t after : {uint64_t{7}, uint64_t{INT64_MAX}, UINT64_MAX}) {
    FakeSub sub;
    uint64_t oldest = 0, head = 0;
    auto r = f.lt.Call([&] { return f.hub->Attach(s, &sub, after, &oldest, &head); });
    EXPECT_EQ(r, Stream::AttachResult::kPastHead) << after;
    EXPECT_EQ(head, 6u);
    EXPECT_FALSE(sub.Completed());
  }
  s->Finish(Event::Done(FinishReason::kLength, 1, 5));  // event 7
  uint64_t oldest = 0, head = 0;
  auto r = f.lt.Call([&] { return f.hub->Attach(s, &at_head, 7, &oldest, &head); });
  EXPECT_EQ(r, Stream::AttachResult::kOk);
  // Completed inside Attach, on the I/O thread: nothing to wait for.
  EXPECT_TRUE(at_head.Completed());
  EXPECT_TRUE(at_head.Seqs().empty());
  EXPECT_EQ(f.lt.Call([&] { return f.hub->subscriber_count(); }), 0u);
  for (uint64_t after : {uint64_t{8}, uint64_t{INT64_MAX}, UINT64_MAX}) {
    FakeSub sub;
    r = f.lt.Call([&] { return f.hub->Attach(s, &sub, after, &oldest, &head); });
    EXPECT_EQ(r, Stream::AttachResult::kPastHead) << after;
    EXPECT_EQ(head, 7u);
  }
  // One before the terminal event: exactly that event.
  r = f.lt.Call([&] { return f.hub->Attach(s, &last, 6, &oldest, &head); });
  EXPECT_EQ(r, Stream::AttachResult::kOk);
  EXPECT_EQ(last.Seqs(), std::vector<uint64_t>{7});
  EXPECT_TRUE(last.Completed());
}

// A stream is submitted before its creator attaches. However far a fast
// producer runs ahead in that gap, nothing is evicted until the creator's
// attach (or StartDetached): the creator reads from event 1. After that the
// window applies again.
TEST(Hub, CreatorAttachingAfterAFastProducerStillGetsEveryEvent) {
  HubOptions o;
  o.stream_limits.resume_window_events = 8;
  FakeSub creator;
  FakeSub late;
  HubFixture f(o);
  auto s = f.lt.Call([&] {
    auto st = f.hub->Create(Policy::kDropSlow);
    st->Append(Event::Start(1));
    f.backend.Submit(st, {}, nullptr);
    return st;
  });
  for (int i = 0; i < 30; i++) s->Append(Event::Token(0, 0, ""));  // the producer ran ahead
  uint64_t oldest = 0;
  auto r = f.lt.Call([&] { return f.hub->Attach(s, &creator, 0, &oldest); });
  EXPECT_EQ(r, Stream::AttachResult::kOk);
  EXPECT_EQ(oldest, 1u);
  ASSERT_TRUE(WaitFor([&] { return creator.Seqs().size() == 31; }));
  EXPECT_TRUE(Contiguous(creator.Seqs(), 1, 31));
  // The hold is gone: the ring is back to the window.
  s->Append(Event::Token(0, 0, ""));
  ASSERT_TRUE(WaitFor([&] { return creator.Seqs().size() == 32; }));
  r = f.lt.Call([&] { return f.hub->Attach(s, &late, 0, &oldest); });
  EXPECT_EQ(r, Stream::AttachResult::kWindowExceeded);
  EXPECT_EQ(oldest, 25u);
  // Declared detached (POST /v1/streams): the hold ends there too.
  auto d = f.lt.Call([&] {
    auto st = f.hub->Create(Policy::kDropSlow);
    st->Append(Event::Start(1));
    f.backend.Submit(st, {}, nullptr);
    return st;
  });
  for (int i = 0; i < 30; i++) d->Append(Event::Token(0, 0, ""));
  EXPECT_EQ(f.lt.Call([&] { return d->Attach(&late, 0, &oldest); }), Stream::AttachResult::kOk)
      << "held: event 1 is still there";
  d->Detach(&late);
  f.lt.Call([&] {
    f.hub->StartDetached(d);
    return 0;
  });
  EXPECT_EQ(f.lt.Call([&] { return d->Attach(&late, 0, &oldest); }), Stream::AttachResult::kWindowExceeded);
  EXPECT_EQ(oldest, 24u);
}

TEST(Hub, DropSlowDetachesWithResumeFromAndGenerationContinues) {
  HubOptions o;
  o.subscriber_lag_events = 10;
  FakeSub sub;
  FakeSub again;
  HubFixture f(o);
  sub.room = 5;  // takes start + 4 tokens, then its socket is full
  auto s = f.Start(Policy::kDropSlow, &sub);
  for (int i = 0; i < 30; i++) s->Append(Event::Token(0, 0, ""));
  ASSERT_TRUE(WaitFor([&] { return sub.Ended(); }));
  EXPECT_STREQ(sub.end.type(), "slow_client");
  EXPECT_EQ(sub.end.resume_from, 5);
  EXPECT_TRUE(Contiguous(sub.Seqs(), 1, 5));
  EXPECT_EQ(f.backend.Cancels(s->id()), 0);
  EXPECT_FALSE(f.backend.IsPaused(s->id()));
  // The client resumes from resume_from and gets the rest with no hole.
  f.lt.Call([&] {
    uint64_t oldest;
    return f.hub->Attach(s, &again, 5, &oldest);
  });
  s->Finish(Event::Done(FinishReason::kLength, 1, 30));
  ASSERT_TRUE(WaitFor([&] { return again.Completed(); }));
  EXPECT_TRUE(Contiguous(again.Seqs(), 6, 32));
  EXPECT_EQ(f.lt.Call([&] { return f.hub->counters().slow_client_detaches; }), 1u);
}

TEST(Hub, PauseProducerPausesOverTheLagAndResumesWhenCaughtUp) {
  HubOptions o;
  o.subscriber_lag_events = 10;
  FakeSub sub;
  HubFixture f(o);
  sub.room = 3;
  auto s = f.Start(Policy::kPauseProducer, &sub);
  for (int i = 0; i < 15; i++) s->Append(Event::Token(0, 0, ""));
  ASSERT_TRUE(WaitFor([&] { return f.backend.IsPaused(s->id()); }));
  EXPECT_FALSE(sub.Ended());
  // The reader catches up: unbounded room, then the transport says so.
  {
    std::lock_guard<std::mutex> lock(sub.mu);
    sub.room = -1;
  }
  f.lt.Call([&] {
    f.hub->OnWritable(&sub);
    return 0;
  });
  ASSERT_TRUE(WaitFor([&] { return !f.backend.IsPaused(s->id()); }));
  EXPECT_TRUE(Contiguous(sub.Seqs(), 1, 16));
}

TEST(Hub, PauseProducerPausesWhileNobodyIsAttached) {
  FakeSub sub;
  HubFixture f;
  auto s = f.Start(Policy::kPauseProducer, nullptr);
  ASSERT_TRUE(WaitFor([&] { return f.backend.IsPaused(s->id()); }));
  f.lt.Call([&] {
    uint64_t oldest;
    return f.hub->Attach(s, &sub, 0, &oldest);
  });
  ASSERT_TRUE(WaitFor([&] { return !f.backend.IsPaused(s->id()); }));
}

TEST(Hub, PauseThenCancelCancelsAfterTheStallTimeout) {
  HubOptions o;
  o.subscriber_lag_events = 4;
  o.stall_timeout_ms = 30;
  FakeSub sub;
  HubFixture f(o);
  sub.room = 2;
  auto s = f.Start(Policy::kPauseThenCancel, &sub);
  for (int i = 0; i < 10; i++) s->Append(Event::Token(0, 0, ""));
  ASSERT_TRUE(WaitFor([&] { return f.backend.Cancels(s->id()) == 1; }));
  EXPECT_TRUE(s->producer_exited());
  EXPECT_EQ(f.lt.Call([&] { return f.hub->counters().stall_cancels; }), 1u);
}

TEST(Hub, LingerCancelsAnAbandonedStreamAndAttachRescuesIt) {
  HubOptions o;
  o.linger_ms = 40;
  FakeSub a;
  FakeSub b;
  HubFixture f(o);
  // Rescue: detach, re-attach within the linger time.
  auto s = f.Start(Policy::kDropSlow, &a);
  f.lt.Call([&] {
    f.hub->Detach(&a);
    return 0;
  });
  f.lt.Call([&] {
    uint64_t oldest;
    return f.hub->Attach(s, &b, 1, &oldest);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  EXPECT_EQ(f.backend.Cancels(s->id()), 0);
  // Abandon: detach and stay away.
  f.lt.Call([&] {
    f.hub->Detach(&b);
    return 0;
  });
  ASSERT_TRUE(WaitFor([&] { return f.backend.Cancels(s->id()) == 1; }));
  EXPECT_EQ(f.lt.Call([&] { return f.hub->counters().linger_cancels; }), 1u);
}

TEST(Hub, LingerZeroCancelsAtOnce) {
  HubOptions o;
  o.linger_ms = 0;
  FakeSub a;
  HubFixture f(o);
  auto s = f.Start(Policy::kDropSlow, &a);
  f.lt.Call([&] {
    f.hub->Detach(&a);
    return 0;
  });
  EXPECT_EQ(f.backend.Cancels(s->id()), 1);
}

TEST(Hub, CancelRunsWaitersOnlyAfterProducerExitAndIsIdempotent) {
  HubFixture f;
  auto s = f.Start(Policy::kDropSlow, nullptr);
  std::atomic<int> called{0};
  std::atomic<bool> exited_when_called{false};
  f.lt.Call([&] {
    f.hub->Cancel(s, [&] {
      exited_when_called = s->producer_exited();
      called++;
    });
    f.hub->Cancel(s, [&] { called++; });
    return 0;
  });
  ASSERT_TRUE(WaitFor([&] { return called == 2; }));
  EXPECT_TRUE(exited_when_called.load());
  EXPECT_EQ(f.backend.Cancels(s->id()), 1);
  // After exit: answered at once.
  f.lt.Call([&] {
    f.hub->Cancel(s, [&] { called++; });
    return 0;
  });
  EXPECT_EQ(called.load(), 3);
}

TEST(Hub, RetainExpiryForgetsTheStream) {
  HubOptions o;
  o.retain_ms = 30;
  FakeSub a;
  HubFixture f(o);
  auto s = f.Start(Policy::kDropSlow, &a);
  s->Finish(Event::Done(FinishReason::kLength, 1, 0));
  ASSERT_TRUE(WaitFor([&] { return a.Completed(); }));
  EXPECT_NE(f.lt.Call([&] { return f.hub->Find(s->id()); }), nullptr);
  ASSERT_TRUE(WaitFor([&] { return f.lt.Call([&] { return f.hub->Find(s->id()); }) == nullptr; }));
  EXPECT_EQ(f.lt.Call([&] { return f.hub->bytes_held(); }), 0u);
}

TEST(Hub, ShutdownEndsSubscribersWithResumeFromAndCancels) {
  FakeSub a;
  HubFixture f;
  auto s = f.Start(Policy::kDropSlow, &a);
  for (int i = 0; i < 3; i++) s->Append(Event::Token(0, 0, ""));
  ASSERT_TRUE(WaitFor([&] { return a.Seqs().size() == 4; }));
  f.lt.Call([&] {
    f.hub->BeginShutdown();
    return 0;
  });
  EXPECT_TRUE(a.Ended());
  EXPECT_STREQ(a.end.type(), "shutting_down");
  EXPECT_TRUE(a.end.retryable);
  EXPECT_EQ(a.end.resume_from, 4);
  EXPECT_EQ(f.backend.Cancels(s->id()), 1);
}

TEST(Hub, StreamIdsAreUnguessableAndTagged) {
  HubFixture f;
  std::set<std::string> ids;
  f.lt.Call([&] {
    f.hub->set_instance_tag("a1");
    for (int i = 0; i < 200; i++) {
      auto s = f.hub->Create(Policy::kDropSlow);
      ids.insert(s->id());
      f.hub->Abandon(s);
    }
    return 0;
  });
  EXPECT_EQ(ids.size(), 200u);
  for (const auto& id : ids) {
    ASSERT_EQ(id.size(), 2 + 3 + 32u) << id;
    EXPECT_EQ(id.substr(0, 5), "s_a1_");
  }
}

TEST(Hub, MaxStreamsBound) {
  HubOptions o;
  o.max_streams = 3;
  HubFixture f(o);
  int made = f.lt.Call([&] {
    int n = 0;
    for (int i = 0; i < 5; i++) n += f.hub->Create(Policy::kDropSlow) != nullptr;
    return n;
  });
  EXPECT_EQ(made, 3);
}

}  // namespace
}  // namespace tw::stream

namespace tw::stream {
namespace {

TEST(Hub, RetentionWaitsForAReaderThatProgressesAndEndsAStalledOne) {
  HubOptions o;
  o.retain_ms = 40;
  FakeSub reader, stalled;
  HubFixture f(o);
  reader.room = 2;
  stalled.room = 2;
  auto s = f.Start(Policy::kDropSlow, &reader);
  f.lt.Call([&] {
    uint64_t oldest;
    return f.hub->Attach(s, &stalled, 0, &oldest);
  });
  for (int i = 0; i < 10; i++) s->Append(Event::Token(0, 0, ""));
  s->Finish(Event::Done(FinishReason::kLength, 1, 10));
  // The reader takes two more events every 25 ms (faster than retain_ms).
  for (int step = 0; step < 5 && !reader.Completed(); step++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    {
      std::lock_guard<std::mutex> lock(reader.mu);
      reader.room = 2;
    }
    f.lt.Call([&] {
      f.hub->OnWritable(&reader);
      return 0;
    });
  }
  ASSERT_TRUE(WaitFor([&] { return reader.Completed(); }));
  EXPECT_TRUE(Contiguous(reader.Seqs(), 1, 12));
  ASSERT_TRUE(WaitFor([&] { return stalled.Ended(); }));
  EXPECT_STREQ(stalled.end.type(), "expired");
  EXPECT_EQ(stalled.end.resume_from, 2);
  ASSERT_TRUE(WaitFor([&] { return f.lt.Call([&] { return f.hub->Find(s->id()); }) == nullptr; }));
}

}  // namespace
}  // namespace tw::stream

// ---- lab policies (only behind --lab; DECISIONS.md "Lab policies") ---------

namespace tw::stream {
namespace {

// Waits until the loop has run everything posted before this call (the
// drains of the appends made so far).
void Sync(HubFixture& f) {
  f.lt.Call([] { return 0; });
}

const std::string k50(50, 'x');  // a 50-byte event payload

TEST(HubLab, UnboundedDetachesNoOneAndKeepsWhatTheSlowReaderHasNotTaken) {
  HubOptions o;
  o.subscriber_lag_events = 4;
  o.stream_limits.resume_window_events = 8;
  FakeSub lab_sub, drop_sub, keeps_up;
  HubFixture f(o);
  lab_sub.room = 3;  // takes start + 2 tokens, then its socket is full
  drop_sub.room = 3;
  auto lab = f.Start(Policy::kUnbounded, &lab_sub);
  auto drop = f.Start(Policy::kDropSlow, &drop_sub);
  auto fast = f.Start(Policy::kUnbounded, &keeps_up);
  // Let the slow reader take its three events before the burst.
  ASSERT_TRUE(WaitFor([&] { return lab_sub.Seqs().size() == 1; }));
  lab->Append(Event::Token(0, 0, ""));
  lab->Append(Event::Token(0, 0, ""));
  ASSERT_TRUE(WaitFor([&] { return lab_sub.Seqs().size() == 3; }));
  size_t last_held = lab->bytes_held();
  for (int i = 0; i < 100; i++) {
    lab->Append(Event::Token(0, 0, k50));
    drop->Append(Event::Token(0, 0, k50));
    fast->Append(Event::Token(0, 0, k50));
    if (i % 10 == 9) {
      // The held events grow with the reader's lag.
      EXPECT_GT(lab->bytes_held(), last_held);
      last_held = lab->bytes_held();
    }
  }
  Sync(f);
  ASSERT_TRUE(WaitFor([&] { return drop_sub.Ended(); }));
  EXPECT_STREQ(drop_sub.end.type(), "slow_client");
  EXPECT_EQ(drop->event_count(), 8u);  // the resume window
  // unbounded: still attached, never paused, every event held.
  EXPECT_FALSE(lab_sub.Ended());
  EXPECT_FALSE(f.backend.IsPaused(lab->id()));
  // Events 1..3 were taken and may go; the 100 it has not taken stay,
  // far beyond the window of 8.
  EXPECT_EQ(lab->event_count(), 100u);
  EXPECT_EQ(lab->oldest_seq(), 4u);
  EXPECT_EQ(lab->bytes_held(), 100u * (sizeof(Event) + 50u));
  EXPECT_EQ(lab->peak_bytes_held(), lab->bytes_held());
  // A reader that keeps up costs only the window.
  ASSERT_TRUE(WaitFor([&] { return keeps_up.Seqs().size() == 101; }));
  Sync(f);
  EXPECT_EQ(fast->event_count(), 8u);
  EXPECT_EQ(f.lt.Call([&] { return f.hub->counters().slow_client_detaches; }), 1u);
  EXPECT_EQ(f.lt.Call([&] { return f.hub->subscriber_count(); }), 2u);
  // The slow reader reads at last: it gets everything, in order, no hole.
  {
    std::lock_guard<std::mutex> lock(lab_sub.mu);
    lab_sub.room = -1;
  }
  lab->Finish(Event::Done(FinishReason::kLength, 1, 102));
  f.lt.Call([&] {
    f.hub->OnWritable(&lab_sub);
    return 0;
  });
  ASSERT_TRUE(WaitFor([&] { return lab_sub.Completed(); }));
  EXPECT_TRUE(Contiguous(lab_sub.Seqs(), 1, 104));
  EXPECT_EQ(f.lt.Call([&] { return f.hub->policy_of(*lab); }), Policy::kUnbounded);
}

TEST(HubLab, UnboundedSafetyCapBoundsTheBytesAndEndsAReaderLeftBehind) {
  HubOptions o;
  o.subscriber_lag_events = 4;
  o.stream_limits.resume_window_events = 8;
  const size_t per_event = sizeof(Event) + k50.size();
  o.lab_unbounded_max_bytes = 20 * per_event;
  FakeSub sub;
  HubFixture f(o);
  sub.room = 3;
  auto s = f.Start(Policy::kUnbounded, &sub);
  for (int i = 0; i < 100; i++) s->Append(Event::Token(0, 0, k50));
  Sync(f);
  // The cap held: never more than 20 events' bytes...
  EXPECT_LE(s->peak_bytes_held(), 20 * per_event);
  EXPECT_GE(s->peak_bytes_held(), 19 * per_event);
  // ...so the slow reader's cursor (after at most 3 events) was evicted: it
  // is told, with resume_from = the last event it took.
  ASSERT_TRUE(WaitFor([&] { return sub.Ended(); }));
  EXPECT_STREQ(sub.end.type(), "slow_client");
  ASSERT_FALSE(sub.Seqs().empty());
  EXPECT_LE(sub.Seqs().size(), 3u);
  EXPECT_EQ(static_cast<uint64_t>(sub.end.resume_from), sub.Seqs().back());
  // With nobody left to keep events for, the ring is back to its window.
  Sync(f);
  EXPECT_EQ(s->event_count(), 8u);
  EXPECT_EQ(s->oldest_seq(), 94u);
  EXPECT_FALSE(sub.end.retryable);
}

TEST(HubLab, NaivePublishesWhatTheSlowestSubscriberTookAndNeverDetachesOrPauses) {
  HubOptions o;
  o.subscriber_lag_events = 4;
  FakeSub fast, slow;
  HubFixture f(o);
  slow.room = 3;
  auto s = f.Start(Policy::kNaive, &fast);
  EXPECT_TRUE(s->waits_for_readers());
  std::atomic<int> wakes{0};
  s->SetDeliveryListener([&] { wakes++; });
  f.lt.Call([&] {
    uint64_t oldest;
    return f.hub->Attach(s, &slow, 0, &oldest);
  });
  for (int i = 0; i < 10; i++) s->Append(Event::Token(0, 0, ""));
  Sync(f);
  ASSERT_TRUE(WaitFor([&] { return fast.Seqs().size() == 11; }));
  EXPECT_EQ(s->delivered_through(), 3u);  // the slow one took start + 2 tokens
  EXPECT_FALSE(s->ReadersCaughtUp());
  EXPECT_FALSE(slow.Ended());
  EXPECT_FALSE(f.backend.IsPaused(s->id()));
  EXPECT_GT(wakes.load(), 0);
  // The slow subscriber reads: the gate opens.
  {
    std::lock_guard<std::mutex> lock(slow.mu);
    slow.room = 2;
  }
  f.lt.Call([&] {
    f.hub->OnWritable(&slow);
    return 0;
  });
  EXPECT_EQ(s->delivered_through(), 5u);
  {
    std::lock_guard<std::mutex> lock(slow.mu);
    slow.room = -1;
  }
  f.lt.Call([&] {
    f.hub->OnWritable(&slow);
    return 0;
  });
  EXPECT_EQ(s->delivered_through(), 11u);
  EXPECT_TRUE(s->ReadersCaughtUp());
  // It stalls again and then leaves: only the fast one is waited for.
  {
    std::lock_guard<std::mutex> lock(slow.mu);
    slow.room = 0;
  }
  for (int i = 0; i < 5; i++) s->Append(Event::Token(0, 0, ""));
  Sync(f);
  EXPECT_EQ(s->delivered_through(), 11u);
  f.lt.Call([&] {
    f.hub->Detach(&slow);
    return 0;
  });
  EXPECT_EQ(s->delivered_through(), 16u);
  EXPECT_TRUE(s->ReadersCaughtUp());
  EXPECT_EQ(f.lt.Call([&] { return f.hub->counters().slow_client_detaches; }), 0u);
  EXPECT_EQ(f.lt.Call([&] { return f.hub->counters().pauses; }), 0u);
  s->SetDeliveryListener(nullptr);
}

// --lab-pad-bytes: token events (only) carry a "pad" field of exactly N
// bytes on the wire, counted in the bytes held, and stay one JSON object.
TEST(HubLab, PaddingGoesIntoTokenEventsOnly) {
  StreamLimits limits;
  auto lab = std::make_shared<LabStreamOptions>();
  lab->pad_bytes = 10;
  limits.lab = lab;
  auto s = std::make_shared<Stream>("pad", limits, nullptr);
  s->Append(Event::Start(1));
  s->Append(Event::Token(0, 125, "}"));
  s->Finish(Event::Done(FinishReason::kLength, 1, 1));
  std::vector<EventPtr> evs;
  ASSERT_TRUE(s->ReadFrom(1, 10, &evs));
  ASSERT_EQ(evs.size(), 3u);
  std::string data[3];
  for (int i = 0; i < 3; i++) wire::AppendEventData(&data[i], *evs[i], wire::EventContext{"pad", "m"});
  EXPECT_EQ(data[0], "{\"stream\":\"pad\",\"model\":\"m\",\"prompt_tokens\":1}");
  EXPECT_EQ(data[1], "{\"index\":0,\"token\":125,\"text\":\"}\",\"pad\":\"..........\"}");
  EXPECT_EQ(data[2], "{\"finish_reason\":\"length\",\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}");
  EXPECT_EQ(evs[0]->lab_pad_bytes, 0u);
  EXPECT_EQ(evs[1]->lab_pad_bytes, 10u);
  EXPECT_EQ(evs[2]->lab_pad_bytes, 0u);
  EXPECT_EQ(s->bytes_held(), 3 * sizeof(Event) + 1u + 10u);
}

TEST(HubLab, ProductionPoliciesDoNotGateTheProducer) {
  HubFixture f;
  for (Policy p : {Policy::kDropSlow, Policy::kPauseProducer, Policy::kPauseThenCancel, Policy::kUnbounded}) {
    auto s = f.Start(p, nullptr);
    EXPECT_FALSE(s->waits_for_readers()) << PolicyName(p);
  }
}

}  // namespace
}  // namespace tw::stream
