// Helpers for the engine tests: the tiny golden GPT-2 (tests/data/golden/
// tiny-gpt2), streams without an I/O thread, and collecting a finished
// stream's events.
//
// The suites run against the runner interface: MakeEngine builds the runner
// named by the environment variable TW_TEST_RUNNER ("cpu" by default; "cuda"
// in a CUDA build on a GPU, which is how make test-gpu runs these same
// suites on the CUDA runner) through the server's own factory.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "app/backends.h"
#include "engine/engine.h"
#include "json/json.h"
#include "model/gpt2.h"
#include "stream/stream.h"
#include "support/chunking.h"
#include "tokenizer/tokenizer.h"

namespace tw::testing {

// The model and tokenizer, loaded once per test binary.
struct TinyModel {
  std::shared_ptr<const model::Gpt2Model> model;
  tokenizer::Tokenizer tokenizer;
  static const TinyModel& Get() {
    static TinyModel* m = [] {
      auto* t = new TinyModel;
      std::unique_ptr<model::Gpt2Model> g;
      Status s = model::LoadGpt2(DataPath("golden/tiny-gpt2"), &g);
      EXPECT_TRUE(s.ok()) << s.message();
      t->model = std::move(g);
      s = tokenizer::Tokenizer::LoadFromDir(DataPath("golden/tiny-gpt2"), &t->tokenizer);
      EXPECT_TRUE(s.ok()) << s.message();
      return t;
    }();
    return *m;
  }
};

// "cpu" unless TW_TEST_RUNNER names another runner.
inline std::string TestRunnerKind() {
  const char* k = std::getenv("TW_TEST_RUNNER");
  return k != nullptr && *k != 0 ? k : "cpu";
}

inline std::unique_ptr<engine::Engine> MakeEngine(engine::EngineOptions o) {
  const TinyModel& m = TinyModel::Get();
  std::unique_ptr<engine::ModelRunner> runner;
  Status s = app::MakeRunner(TestRunnerKind(), m.model, engine::RunnerLimitsFor(o, m.model->config().n_ctx),
                             app::RunnerOptions(), &runner);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return nullptr;
  std::unique_ptr<engine::Engine> e;
  s = engine::Engine::Create(std::move(runner), &m.tokenizer, o, &e);
  EXPECT_TRUE(s.ok()) << s.message();
  return e;
}

inline std::shared_ptr<stream::Stream> NewStream(const std::string& id) {
  return std::make_shared<stream::Stream>(id, stream::StreamLimits{}, nullptr);
}

// A stream of the lab policy `naive`: its producer waits for its readers.
inline std::shared_ptr<stream::Stream> NewGatedStream(const std::string& id) {
  stream::StreamLimits limits;
  auto lab = std::make_shared<stream::LabStreamOptions>();
  lab->waits_for_readers = true;
  limits.lab = lab;
  return std::make_shared<stream::Stream>(id, limits, nullptr);
}

// What a finished stream contained.
struct Outcome {
  std::vector<int32_t> tokens;
  std::string text;
  std::string finish_reason;  // done events
  std::string error_type;     // error events
  bool retryable = false;
  int64_t completion_tokens = -1;
  int terminal_events = 0;
};

// Parses an SSE data line (the HTTP-level tests read JSON from the wire).
inline json::Value ParseEvent(const std::string& data) {
  json::Value v;
  json::ParseLimits lim;
  lim.max_bytes = data.size() + 1;
  Status s = json::Parse(data, &v, lim);
  EXPECT_TRUE(s.ok()) << s.message() << " in " << data;
  return v;
}

// Token events appended so far.
inline size_t TokenCount(const stream::Stream& s) {
  std::vector<stream::EventPtr> evs;
  s.ReadFrom(1, 1 << 20, &evs);
  size_t n = 0;
  for (auto& e : evs) n += e->type == stream::EventType::kToken ? 1 : 0;
  return n;
}

inline Outcome Read(const stream::Stream& s) {
  Outcome o;
  std::vector<stream::EventPtr> evs;
  EXPECT_TRUE(s.ReadFrom(1, 1 << 20, &evs));
  for (auto& e : evs) {
    if (e->type == stream::EventType::kToken) {
      EXPECT_EQ(e->index, static_cast<int32_t>(o.tokens.size()));
      o.tokens.push_back(e->token);
      o.text += e->text;
    } else if (e->type == stream::EventType::kDone) {
      o.terminal_events++;
      o.finish_reason = stream::FinishReasonName(e->finish_reason);
      o.completion_tokens = e->completion_tokens;
    } else if (e->type == stream::EventType::kError) {
      o.terminal_events++;
      EXPECT_TRUE(e->error != nullptr);
      if (e->error) {
        o.error_type = e->error->type();
        o.retryable = e->error->retryable;
      }
    }
  }
  return o;
}

// TW_TEST_TIMEOUT_SCALE (default 1) multiplies every wait's bound: the CUDA
// runner on the CPU emulator (make test-gpu-emu) takes a fraction of a second
// per step where the CPU runner takes a millisecond. Bounds only: no test
// waits for a time to pass.
inline int TimeoutScale() {
  const char* s = std::getenv("TW_TEST_TIMEOUT_SCALE");
  const int v = s != nullptr ? std::atoi(s) : 1;
  return v > 0 ? v : 1;
}

inline bool WaitFor(const std::function<bool()>& pred, int timeout_ms = 20000) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t{timeout_ms} * TimeoutScale());
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

// A gated stream's producer steps only as its reader takes events: marks
// every event appended so far as taken, then waits for the next one (or the
// stream's end). With it a test counts steps instead of racing the runner,
// however fast that is.
inline bool StepGated(stream::Stream& s) {
  const uint64_t head = s.head_seq();
  s.SetDeliveredThrough(head);
  return WaitFor([&] { return s.head_seq() > head || s.finished(); });
}
// StepGated, then waits until the engine publishes the end of a step (its
// step counter passes what it was before): by then every event of that step
// is appended, other streams' too. StepGated alone returns at the gated
// stream's event, and a decode row's event comes before the same step's
// prompt chunks' (the rows run decodes first): a test that counts steps
// until another stream's token needs the whole step. (The counter read
// before is exact when the previous step was waited for the same way.)
inline bool StepGatedWhole(const engine::Engine& e, stream::Stream& s) {
  const uint64_t before = e.stats().steps;
  return StepGated(s) && WaitFor([&] { return e.stats().steps > before; });
}
// Opens a gated stream's gate for good (its reader takes whatever comes).
inline void OpenGate(stream::Stream& s) { s.SetDeliveredThrough(UINT64_MAX); }

inline Outcome WaitAndRead(const stream::Stream& s, int timeout_ms = 20000) {
  EXPECT_TRUE(WaitFor([&] { return s.producer_exited(); }, timeout_ms)) << s.id() << " did not finish";
  return Read(s);
}

// Waits until the engine's published counters show nothing live and every
// block free; returns the stats.
inline engine::EngineStats WaitQuiet(const engine::Engine& e, int timeout_ms = 20000) {
  engine::EngineStats st;
  bool ok = WaitFor(
      [&] {
        st = e.stats();
        return st.running == 0 && st.waiting == 0 && st.kv_blocks_free == st.kv_blocks_total &&
               st.finished == st.submitted;
      },
      timeout_ms);
  EXPECT_TRUE(ok) << "engine not quiet: running " << st.running << " waiting " << st.waiting
                  << " free " << st.kv_blocks_free << "/" << st.kv_blocks_total << " finished "
                  << st.finished << "/" << st.submitted;
  return st;
}

// The engine's KV accounting at rest: nothing referenced (every block free
// or cached), one release per admission, no double release, every
// submitted request finished.
inline void ExpectClean(const engine::Engine& e) {
  engine::EngineStats st = WaitQuiet(e);
  EXPECT_EQ(st.releases, st.admitted);
  EXPECT_EQ(st.double_releases, 0u);
  EXPECT_EQ(st.finished, st.submitted);
}

}  // namespace tw::testing
