// The sampling controls on the CPU path (engine::LogitEditor's edits applied
// with common/logit_edit.h, then model::Sampler and model::ComputeLogprobs)
// against tests/data/sampling_controls/reference.json: a float64 model of
// vLLM's logits processors written independently in Python
// (make_reference.py beside it).
//
// Tolerances: processed logits within 1e-5 relative (float32 arithmetic
// against float64 on the same float32 inputs); log-probabilities within
// 1e-4 absolute (values below -9999 are reported at -9999); top-20 ids
// exact; draws exact where the uniform lies more than 1e-4 of the kept mass
// from a boundary of the reference's inverse CDF (no case here is closer).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "common/logit_edit.h"
#include "engine/logit_editor.h"
#include "engine/runner.h"
#include "json/json.h"
#include "model/sampling.h"
#include "support/chunking.h"

namespace tw {
namespace {

struct Reference {
  int vocab = 0;
  int32_t eos = 0;
  std::vector<std::vector<float>> rows;
  json::Value doc;
};

const Reference& Ref() {
  static const Reference* ref = [] {
    auto* r = new Reference;
    bool ok = false;
    const std::string text = testing::ReadFile(testing::DataPath("sampling_controls/reference.json"), &ok);
    EXPECT_TRUE(ok) << "tests/data/sampling_controls/reference.json";
    json::ParseLimits lim;
    lim.max_bytes = text.size() + 1;
    const Status s = json::Parse(text, &r->doc, lim);
    EXPECT_TRUE(s.ok()) << s.message();
    r->vocab = static_cast<int>(r->doc.Find("vocab")->as_int());
    r->eos = static_cast<int32_t>(r->doc.Find("eos")->as_int());
    for (const json::Value& row : r->doc.Find("rows")->items()) {
      std::vector<float> x;
      for (const json::Value& v : row.items()) x.push_back(static_cast<float>(v.as_double()));
      r->rows.push_back(std::move(x));
    }
    return r;
  }();
  return *ref;
}

double Num(const json::Value& c, const char* key, double dflt) {
  const json::Value* v = c.Find(key);
  return v ? v->as_double() : dflt;
}

std::vector<int32_t> Ids(const json::Value& c, const char* key) {
  std::vector<int32_t> out;
  if (const json::Value* v = c.Find(key)) {
    for (const json::Value& i : v->items()) out.push_back(static_cast<int32_t>(i.as_int()));
  }
  return out;
}

backend::GenerationRequest RequestOf(const json::Value& c) {
  backend::GenerationRequest r;
  r.temperature = static_cast<float>(Num(c, "temperature", 0));
  r.top_k = static_cast<int>(Num(c, "top_k", 0));
  r.top_p = static_cast<float>(Num(c, "top_p", 1));
  r.min_p = static_cast<float>(Num(c, "min_p", 0));
  r.repetition_penalty = static_cast<float>(Num(c, "repetition_penalty", 1));
  r.presence_penalty = static_cast<float>(Num(c, "presence_penalty", 0));
  r.frequency_penalty = static_cast<float>(Num(c, "frequency_penalty", 0));
  r.min_tokens = static_cast<int>(Num(c, "min_tokens", 0));
  r.ignore_eos = c.Find("ignore_eos") && c.Find("ignore_eos")->as_bool();
  r.stop_token_ids = Ids(c, "stop_token_ids");
  r.prompt_tokens = Ids(c, "prompt");
  if (const json::Value* b = c.Find("logit_bias")) {
    for (const auto& [k, v] : b->members()) r.logit_bias.emplace_back(std::stoi(k), static_cast<float>(v.as_double()));
  }
  return r;
}

// The case's row with its edits applied, as the CPU runner does after
// feeding the editor the case's output tokens one by one.
std::vector<float> Processed(const json::Value& c) {
  const Reference& ref = Ref();
  const backend::GenerationRequest r = RequestOf(c);
  engine::LogitEditor editor(r, ref.eos);
  const std::vector<int32_t> out = Ids(c, "output");
  for (size_t j = 0; j < out.size(); j++) editor.OnToken(out[j], static_cast<int>(j) + 1);
  std::vector<float> x = ref.rows[static_cast<size_t>(c.Find("row")->as_int())];
  for (int j = 0; j < editor.size(); j++) {
    const LogitEdit& e = editor.data()[j];
    x[static_cast<size_t>(e.id)] = ApplyLogitEdit(x[static_cast<size_t>(e.id)], e);
  }
  return x;
}

TEST(SamplingControls, ProcessedLogitsMatchTheFloat64Reference) {
  int n = 0;
  for (const json::Value& c : Ref().doc.Find("cases")->items()) {
    const std::vector<float> x = Processed(c);
    const auto& want = c.Find("processed")->items();
    ASSERT_EQ(want.size(), x.size());
    for (size_t i = 0; i < x.size(); i++) {
      if (want[i].is_null()) {
        EXPECT_EQ(x[i], -INFINITY) << "case " << n << " id " << i;
      } else {
        const double w = want[i].as_double();
        EXPECT_NEAR(x[i], w, 1e-5 * std::max(1.0, std::fabs(w))) << "case " << n << " id " << i;
      }
    }
    n++;
  }
  EXPECT_EQ(n, 14);
}

TEST(SamplingControls, LogprobsAndTopIdsMatchTheReference) {
  int n = 0;
  for (const json::Value& c : Ref().doc.Find("cases")->items()) {
    const std::vector<float> x = Processed(c);
    engine::SampledToken o;
    o.id = static_cast<int32_t>(c.Find("top_ids")->items()[0].as_int());
    model::ComputeLogprobs(x.data(), Ref().vocab, static_cast<float>(Num(c, "temperature", 0)), 20, &o);
    ASSERT_EQ(o.top_count, 20);
    for (int j = 0; j < 20; j++) {
      EXPECT_EQ(o.top_ids[j], c.Find("top_ids")->items()[static_cast<size_t>(j)].as_int()) << "case " << n << " rank " << j;
      const double w = std::max(engine::kMinLogprob, c.Find("top_logprobs")->items()[static_cast<size_t>(j)].as_double());
      EXPECT_NEAR(o.top_logprobs[j], w, 1e-4) << "case " << n << " rank " << j;
    }
    n++;
  }
}

TEST(SamplingControls, DrawsAndGreedyChoicesMatchTheReference) {
  int n = 0, draws = 0;
  model::Sampler sampler(Ref().vocab);
  for (const json::Value& c : Ref().doc.Find("cases")->items()) {
    const std::vector<float> x = Processed(c);
    const backend::GenerationRequest r = RequestOf(c);
    const model::SamplingParams p{r.temperature, r.top_k, r.top_p, r.min_p};
    if (const json::Value* g = c.Find("greedy")) {
      EXPECT_EQ(sampler.Sample(x.data(), p, 0.5f), g->as_int()) << "case " << n;
    } else {
      std::vector<int32_t> kept = Ids(c, "kept");
      for (const json::Value& d : c.Find("draws")->items()) {
        const float u = static_cast<float>(d.Find("u")->as_double());
        const int32_t id = sampler.Sample(x.data(), p, u);
        EXPECT_TRUE(std::binary_search(kept.begin(), kept.end(), id)) << "case " << n << " u " << u << " id " << id;
        if (d.Find("margin")->as_double() > 1e-4) {
          EXPECT_EQ(id, d.Find("id")->as_int()) << "case " << n << " u " << u;
          draws++;
        }
      }
    }
    n++;
  }
  EXPECT_GE(draws, 60);  // nearly every draw is clear of a boundary
}

TEST(SamplingControls, MinPIsTheTopKOfItsCount) {
  // min_p keeps the ids at or above MinPThreshold: the same draws as a
  // top-k of their count, at every uniform.
  const Reference& ref = Ref();
  model::Sampler sampler(ref.vocab);
  for (const std::vector<float>& x : ref.rows) {
    for (float min_p : {0.001f, 0.05f, 0.3f, 0.9f, 1.0f}) {
      for (float t : {0.5f, 1.0f, 1.7f}) {
        const float mx = *std::max_element(x.begin(), x.end());
        const float floor = MinPThreshold(mx, t, MinPLog(min_p));
        const int k = static_cast<int>(std::count_if(x.begin(), x.end(), [&](float v) { return v >= floor; }));
        ASSERT_GE(k, 1);
        for (float u : {0.0f, 0.2f, 0.5f, 0.77f, 0.9999f}) {
          EXPECT_EQ(sampler.Sample(x.data(), {t, 0, 1.0f, min_p}, u), sampler.Sample(x.data(), {t, k, 1.0f, 0.0f}, u))
              << "min_p " << min_p << " T " << t << " u " << u;
        }
      }
    }
  }
}

TEST(SamplingControls, LogitEditorKeepsOneEditPerIdAndFreesHeldIdsAtMinTokens) {
  backend::GenerationRequest r;
  r.prompt_tokens = {5, 5, 6};
  r.repetition_penalty = 1.5f;
  r.frequency_penalty = 0.5f;
  r.presence_penalty = 0.25f;
  r.logit_bias = {{6, 2.0f}, {9, -1.0f}};
  r.min_tokens = 2;
  r.stop_token_ids = {9};
  engine::LogitEditor ed(r, /*eos=*/7);
  auto edit = [&](int32_t id) {
    for (int j = 0; j < ed.size(); j++) {
      if (ed.data()[j].id == id) return ed.data()[j];
    }
    return LogitEdit{-1, 0, 0, 0};
  };
  EXPECT_EQ(ed.size(), 4);  // 6 and 9 (bias), 7 (end-of-text held), 5 (prompt)
  EXPECT_EQ(edit(9).bias, -INFINITY);
  EXPECT_EQ(edit(7).bias, -INFINITY);
  EXPECT_EQ(edit(6).bias, 2.0f);
  EXPECT_EQ(edit(6).rep, 1.5f);
  EXPECT_EQ(edit(5).rep, 1.5f);
  EXPECT_EQ(edit(5).sub, 0.0f);  // the prompt does not count for frequency or presence
  ed.OnToken(5, 1);
  EXPECT_EQ(edit(5).sub, 0.5f * 1 + 0.25f);
  EXPECT_EQ(edit(9).bias, -INFINITY);  // one token: still held
  ed.OnToken(5, 2);
  EXPECT_EQ(edit(5).sub, 0.5f * 2 + 0.25f);
  EXPECT_EQ(edit(9).bias, -1.0f);  // min_tokens reached: its own bias again
  EXPECT_EQ(edit(7).bias, 0.0f);
  EXPECT_EQ(edit(9).rep, 1.0f);
  ed.OnToken(11, 3);
  EXPECT_EQ(edit(11).rep, 1.5f);
  EXPECT_EQ(ed.size(), 5);
}

}  // namespace
}  // namespace tw
