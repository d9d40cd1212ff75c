// SeqState: what the engine keeps per sequence, reduced to what the tests and
// benches that drive model::Gpt2Forward directly need: a block table and a
// length. Prefill / Batch / DecodeBatch below make the engine's
// views (engine::SeqView) of it, call the forward pass, and advance the
// length when the call succeeds, as the engine does after a step.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "engine/runner.h"
#include "model/forward.h"

namespace tw::model {

struct SeqState {
  std::vector<int32_t> block_table;  // may hold spare blocks beyond length
  int length = 0;                    // tokens [0, length) are in the cache
};

inline engine::SeqView ViewOf(const SeqState& s, const int32_t* tokens, int n) {
  engine::SeqView v;
  v.block_table = s.block_table.data();
  v.num_blocks = static_cast<int>(s.block_table.size());
  v.cached = s.length;
  v.tokens = tokens;
  v.n = n;
  return v;
}

inline Status Prefill(Gpt2Forward& f, SeqState* s, const int32_t* tokens, int n, float* last_logits,
                      float* all_logits = nullptr) {
  Status st = f.Prefill(ViewOf(*s, tokens, n), last_logits, all_logits);
  if (st.ok()) s->length += n;
  return st;
}

// sample (may be null: every row samples): SeqView::sample of each row.
inline Status Batch(Gpt2Forward& f, SeqState* const* seqs, const int32_t* const* tokens, const int* n, int B,
                    float* logits, const bool* sample = nullptr) {
  std::vector<engine::SeqView> views;
  for (int b = 0; b < B; ++b) {
    views.push_back(ViewOf(*seqs[b], tokens[b], n[b]));
    if (sample != nullptr) views.back().sample = sample[b];
  }
  Status st = f.Batch(views.data(), B, logits);
  if (st.ok()) {
    for (int b = 0; b < B; ++b) seqs[b]->length += n[b];
  }
  return st;
}

inline Status DecodeBatch(Gpt2Forward& f, SeqState* const* seqs, const int32_t* tokens, int B, float* logits) {
  std::vector<engine::SeqView> views;
  for (int b = 0; b < B; ++b) views.push_back(ViewOf(*seqs[b], tokens + b, 1));
  Status st = f.DecodeBatch(views.data(), B, logits);
  if (st.ok()) {
    for (int b = 0; b < B; ++b) seqs[b]->length += 1;
  }
  return st;
}

}  // namespace tw::model
