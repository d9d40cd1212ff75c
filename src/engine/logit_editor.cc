#include "engine/logit_editor.h"

#include <cmath>

namespace tw::engine {

LogitEditor::LogitEditor(const backend::GenerationRequest& r, int32_t eos)
    : rep_(r.repetition_penalty),
      presence_(r.presence_penalty),
      frequency_(r.frequency_penalty),
      penalties_(r.repetition_penalty != 1.0f || r.presence_penalty != 0.0f || r.frequency_penalty != 0.0f),
      min_tokens_(r.min_tokens) {
  for (const auto& [id, bias] : r.logit_bias) states_[static_cast<size_t>(Slot(id))].bias = bias;
  if (min_tokens_ > 0) {
    auto hold = [&](int32_t id) {
      const int s = Slot(id);
      if (!states_[static_cast<size_t>(s)].held) held_.push_back(s);
      states_[static_cast<size_t>(s)].held = true;
    };
    if (eos >= 0 && !r.ignore_eos) hold(eos);
    for (int32_t id : r.stop_token_ids) hold(id);
  }
  if (rep_ != 1.0f) {
    for (int32_t id : r.prompt_tokens) states_[static_cast<size_t>(Slot(id))].in_prompt = true;
  }
  for (size_t s = 0; s < edits_.size(); s++) Refresh(static_cast<int>(s));
}

int LogitEditor::Slot(int32_t id) {
  auto [it, added] = slot_.try_emplace(id, static_cast<int>(edits_.size()));
  if (added) {
    LogitEdit e;
    e.id = id;
    edits_.push_back(e);
    states_.emplace_back();
  }
  return it->second;
}

void LogitEditor::Refresh(int slot) {
  const State& st = states_[static_cast<size_t>(slot)];
  LogitEdit& e = edits_[static_cast<size_t>(slot)];
  e.bias = st.held ? -INFINITY : st.bias;
  e.rep = st.in_prompt || st.count > 0 ? rep_ : 1.0f;
  e.sub = st.count > 0 ? frequency_ * static_cast<float>(st.count) + presence_ : 0.0f;
}

void LogitEditor::OnToken(int32_t id, int produced) {
  if (penalties_) {
    const int s = Slot(id);
    states_[static_cast<size_t>(s)].count++;
    Refresh(s);
  }
  if (produced == min_tokens_) {
    for (int s : held_) {
      states_[static_cast<size_t>(s)].held = false;
      Refresh(s);
    }
    held_.clear();
  }
}

}  // namespace tw::engine
