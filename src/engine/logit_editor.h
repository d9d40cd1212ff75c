// LogitEditor: one sequence's logit edits (common/logit_edit.h), kept up to
// date token by token, so that a step hands the runner the row's edits as
// they stand (SamplingRow::edits) without a pass over the context.
//
// What it tracks, per id that any control names (at most one edit per id):
//   - logit_bias's bias;
//   - whether min_tokens holds it back (-inf): the end-of-text id (unless
//     ignore_eos) and every stop_token_ids id, while fewer than min_tokens
//     tokens were generated (vLLM's MinTokensLogitsProcessor);
//   - repetition_penalty, for an id in the prompt or generated so far;
//   - frequency_penalty * count + presence_penalty, over the generated ids.
// An id none of them touches has no edit. A row's edits depend only on its
// own request and tokens, so a stream's tokens stay those it would draw alone.
//
// Threads: the engine thread's. Memory: one entry per distinct id named by
// the request or present in its prompt and output (with penalties on),
// bounded by the context plus kMaxNamedIds.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "common/logit_edit.h"

namespace tw::engine {

class LogitEditor {
 public:
  // The request's controls; `eos` the model's end-of-text id (< 0: none).
  LogitEditor(const backend::GenerationRequest& request, int32_t eos);

  // The token just drawn; `produced` tokens are generated now (this one included).
  void OnToken(int32_t id, int produced);

  const LogitEdit* data() const { return edits_.empty() ? nullptr : edits_.data(); }
  int size() const { return static_cast<int>(edits_.size()); }

 private:
  struct State {
    float bias = 0.0f;
    int count = 0;          // times generated
    bool in_prompt = false;
    bool held = false;      // min_tokens holds it back
  };
  // The entry of `id`, created (no edit yet) if missing.
  int Slot(int32_t id);
  // edits_[slot] from states_[slot].
  void Refresh(int slot);

  float rep_, presence_, frequency_;
  bool penalties_;  // any penalty on: every prompt and output id gets an entry
  int min_tokens_;
  std::unordered_map<int32_t, int> slot_;  // id -> index in edits_ and states_
  std::vector<LogitEdit> edits_;
  std::vector<State> states_;
  std::vector<int> held_;  // slots min_tokens holds back, freed at min_tokens
};

}  // namespace tw::engine
