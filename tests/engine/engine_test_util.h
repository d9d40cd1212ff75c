// Helpers for the engine tests: the tiny golden GPT-2 (tests/data/golden/
// tiny-gpt2), streams without an I/O thread, and collecting a finished
// stream's events.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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

inline std::unique_ptr<engine::Engine> MakeEngine(engine::EngineOptions o) {
  const TinyModel& m = TinyModel::Get();
  std::unique_ptr<engine::Engine> e;
  Status s = engine::Engine::Create(m.model, &m.tokenizer, o, &e);
  EXPECT_TRUE(s.ok()) << s.message();
  return e;
}

inline std::shared_ptr<stream::Stream> NewStream(const std::string& id) {
  return std::make_shared<stream::Stream>(id, stream::StreamLimits{}, nullptr);
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
    json::Value v = ParseEvent(e->data);
    if (e->type == stream::EventType::kToken) {
      EXPECT_EQ(v.Find("index")->as_int(), static_cast<int64_t>(o.tokens.size()));
      o.tokens.push_back(static_cast<int32_t>(v.Find("token")->as_int()));
      o.text += v.Find("text")->as_string();
    } else if (e->type == stream::EventType::kDone) {
      o.terminal_events++;
      o.finish_reason = v.Find("finish_reason")->as_string();
      o.completion_tokens = v.Find("usage")->Find("completion_tokens")->as_int();
    } else if (e->type == stream::EventType::kError) {
      o.terminal_events++;
      o.error_type = v.Find("type")->as_string();
      o.retryable = v.Find("retryable")->as_bool();
    }
  }
  return o;
}

inline bool WaitFor(const std::function<bool()>& pred, int timeout_ms = 20000) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

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

}  // namespace tw::testing
