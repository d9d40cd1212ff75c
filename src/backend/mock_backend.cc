#include "backend/mock_backend.h"

#include <algorithm>
#include <cmath>

#include "backend/token_emitter.h"
#include "tokenizer/tokenizer.h"

namespace tw::backend {

namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Ordinary GPT-2 tokens only: never <|endoftext|> (50256), so a mock stream
// ends by length, stop string or cancel.
constexpr uint64_t kMockVocab = 50000;

}  // namespace

struct MockBackend::Sequence {
  std::string id;
  std::shared_ptr<stream::Stream> stream;
  GenerationRequest request;
  bool paused = false;
  bool first_due_pending = true;  // the TTFT delay has not elapsed yet
  stream::Clock::time_point next_due;
  uint64_t ticket = 0;  // current schedule entry; 0 = not scheduled
  std::unique_ptr<TokenEmitter> emit;  // the tokens produced so far, their text, the end rules
  std::shared_ptr<EmissionLog> log;  // shared with logs_; written under mu_
};

int32_t MockBackend::TokenAt(const std::vector<int32_t>& prompt, uint64_t seed, int index) {
  uint64_t h = SplitMix64(seed);
  for (int32_t t : prompt) h = SplitMix64(h ^ static_cast<uint32_t>(t));
  return static_cast<int32_t>(SplitMix64(h + static_cast<uint64_t>(index)) % kMockVocab);
}

MockBackend::MockBackend(const MockOptions& options, const tokenizer::Tokenizer* tokenizer)
    : options_(options),
      tokenizer_(tokenizer),
      interval_(std::chrono::duration_cast<stream::Clock::duration>(
          std::chrono::duration<double>(1.0 / std::max(options.tokens_per_s, 1e-3)))),
      origin_(stream::Clock::now()) {
  thread_ = std::thread([this] { Run(); });
}

stream::Clock::time_point MockBackend::OnGrid(stream::Clock::time_point t) const {
  if (!options_.step_clock || t <= origin_) return options_.step_clock ? origin_ : t;
  const auto steps = (t - origin_ + interval_ - stream::Clock::duration(1)) / interval_;
  return origin_ + steps * interval_;
}

MockBackend::~MockBackend() { Shutdown(); }

bool MockBackend::Submit(std::shared_ptr<stream::Stream> stream, GenerationRequest request,
                         ApiError* refusal) {
  if (request.grammar) {
    // Its tokens are synthetic: no grammar could hold them.
    if (refusal) {
      *refusal = ApiError::Make(ErrorCode::kInvalidRequest,
                                "structured output needs a model backend (--backend cpu or cuda); the mock's tokens "
                                "are synthetic");
    }
    return false;
  }
  MutexLock lock(mu_);
  if (stopping_) {
    if (refusal) {
      *refusal = ApiError::Make(ErrorCode::kShuttingDown, "the server is shutting down");
      refusal->retry_after_ms = 1000;
    }
    return false;
  }
  Command c{Command::Kind::kSubmit, stream->id(), std::move(stream), std::move(request),
            stream::Clock::now()};
  inbox_.push_back(std::move(c));
  live_++;
  cv_.notify_one();
  return true;
}

void MockBackend::Cancel(const std::string& stream_id) {
  MutexLock lock(mu_);
  auto it = logs_.find(stream_id);
  if (it != logs_.end() && it->second->cancel_requested == stream::Clock::time_point{}) {
    it->second->cancel_requested = stream::Clock::now();
  }
  inbox_.push_back(Command{Command::Kind::kCancel, stream_id, nullptr, {}, stream::Clock::now()});
  cv_.notify_one();
}

void MockBackend::SetPaused(const std::string& stream_id, bool paused) {
  MutexLock lock(mu_);
  inbox_.push_back(Command{paused ? Command::Kind::kPause : Command::Kind::kResume, stream_id,
                           nullptr, {}, stream::Clock::now()});
  cv_.notify_one();
}

void MockBackend::Shutdown() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

void MockBackend::Stats(std::vector<StatField>* out) const {
  MutexLock lock(mu_);
  out->push_back({"running", static_cast<int64_t>(live_)});
  out->push_back({"waiting", 0});
}

size_t MockBackend::live_count() const {
  MutexLock lock(mu_);
  return live_;
}

bool MockBackend::GetEmissionLog(const std::string& stream_id, EmissionLog* out) const {
  MutexLock lock(mu_);
  auto it = logs_.find(stream_id);
  if (it == logs_.end()) return false;
  *out = *it->second;
  return true;
}

void MockBackend::Log(Sequence& s, int32_t token) {
  MutexLock lock(mu_);
  s.log->tokens.push_back(token);
}

void MockBackend::Apply(Command& c) {
  auto it = seqs_.find(c.id);
  switch (c.kind) {
    case Command::Kind::kSubmit: {
      auto s = std::make_unique<Sequence>();
      s->id = c.id;
      s->stream = std::move(c.stream);
      s->request = std::move(c.request);
      // No end-of-text token in the mock's synthetic vocabulary.
      s->emit = std::make_unique<TokenEmitter>(tokenizer_, s->request, -1);
      s->next_due = OnGrid(s->request.arrival + std::chrono::milliseconds(options_.ttft_ms));
      {
        MutexLock lock(mu_);
        // Created here unless a cancel arrived before this submit was applied.
        std::shared_ptr<EmissionLog>& log = logs_[s->id];
        if (!log) log = std::make_shared<EmissionLog>();
        s->log = log;
        log_order_.push_back(s->id);
        while (log_order_.size() > options_.max_logged_streams) {
          logs_.erase(log_order_.front());
          log_order_.pop_front();
        }
      }
      std::shared_ptr<Sequence> shared(std::move(s));
      Schedule(shared);
      seqs_[shared->id] = std::move(shared);
      break;
    }
    case Command::Kind::kCancel:
      if (it != seqs_.end()) Finish(*it->second, stream::FinishReason::kCancelled);
      break;
    case Command::Kind::kPause:
      if (it != seqs_.end() && !it->second->paused) {
        Sequence& s = *it->second;
        s.paused = true;
        s.ticket = 0;  // its schedule entry is stale now
      }
      break;
    case Command::Kind::kResume:
      if (it != seqs_.end() && it->second->paused) {
        Sequence& s = *it->second;
        s.paused = false;
        // The first token still waits out its TTFT; later ones keep the rate.
        s.next_due = OnGrid(s.first_due_pending ? std::max(s.next_due, c.at) : c.at + interval_);
        Schedule(it->second);
      }
      break;
  }
}

void MockBackend::Produce(const std::shared_ptr<Sequence>& sp, stream::Clock::time_point now) {
  Sequence& s = *sp;
  int32_t token = TokenAt(s.request.prompt_tokens, s.request.seed, s.emit->produced());
  Log(s, token);
  TokenEmitter::Emit e = s.emit->Push(token);
  s.first_due_pending = false;
  stream::Event event = stream::Event::Token(e.index, token, std::move(e.text));
  if (s.request.logprobs >= 0) event.logprobs = Logprobs(token, s.request.logprobs);
  if (s.request.prompt_logprobs >= 0 && e.index == 0) {
    // The prompt's, as synthetic as the tokens': each prompt token the most
    // likely after the one before it.
    auto prompt = std::make_shared<stream::PromptLogprobs>();
    for (size_t j = 0; j < s.request.prompt_tokens.size(); j++) {
      const int32_t id = s.request.prompt_tokens[j];
      stream::TokenLogprobs lp = *Logprobs(id, s.request.prompt_logprobs);
      lp.sampled.rank = 1;
      for (size_t t = 0; t < lp.top.size(); t++) lp.top[t].rank = static_cast<int32_t>(t + 1);
      if (j == 0) lp = stream::TokenLogprobs{lp.sampled, {}, /*none=*/true};
      prompt->push_back(std::move(lp));
    }
    event.prompt_logprobs = std::move(prompt);
  }
  s.stream->Append(std::move(event));
  if (e.done) {
    Finish(s, e.reason);
    return;
  }
  s.next_due += interval_;
  if (s.next_due < now - 100 * interval_) s.next_due = OnGrid(now);  // don't burst after a stall
  Schedule(sp);
}

std::shared_ptr<const stream::TokenLogprobs> MockBackend::Logprobs(int32_t token, int k) const {
  // Synthetic: the produced token is the most likely at probability 1/2;
  // alternative j (j >= 1) has 2^-(j+1), its id a hash of (token, j).
  auto lp = std::make_shared<stream::TokenLogprobs>();
  auto entry = [&](int32_t id, int j) {
    return stream::TokenLogprob{id, -static_cast<double>(j + 1) * std::log(2.0),
                                std::string(tokenizer_->TokenBytes(id))};
  };
  lp->sampled = entry(token, 0);
  for (int j = 0; j < k; j++) {
    int32_t id = token;
    if (j > 0) id = static_cast<int32_t>(SplitMix64(static_cast<uint64_t>(token) * 31 + static_cast<uint64_t>(j)) % kMockVocab);
    lp->top.push_back(entry(id, j));
  }
  return lp;
}

void MockBackend::Schedule(const std::shared_ptr<Sequence>& s) {
  s->ticket = next_ticket_++;
  schedule_.push(Due{s->next_due, s->ticket, s});
}

void MockBackend::Finish(Sequence& s, stream::FinishReason reason) {
  int prompt = static_cast<int>(s.request.prompt_tokens.size());
  // The log records the exit first: whoever learns of the exit through the
  // stream (a DELETE's 204) then also finds it in the log.
  {
    MutexLock lock(mu_);
    s.log->exited = true;
    s.log->finish_reason = stream::FinishReasonName(reason);
    s.log->exit_time = stream::Clock::now();
    live_--;
  }
  s.stream->Finish(stream::Event::Done(reason, prompt, s.emit->produced()));
  s.ticket = 0;       // any schedule entry is stale
  seqs_.erase(s.id);  // a stale entry may keep s alive until it is popped
}

void MockBackend::Run() {
  std::vector<Command> batch;
  for (;;) {
    {
      MutexLock lock(mu_);
      // Drop stale schedule entries (paused or finished sequences).
      while (!schedule_.empty() && schedule_.top().seq->ticket != schedule_.top().ticket) schedule_.pop();
      if (schedule_.empty()) {
        while (inbox_.empty() && !stopping_) lock.Wait(cv_);
      } else {
        const stream::Clock::time_point due = schedule_.top().when;
        while (inbox_.empty() && !stopping_ && lock.WaitUntil(cv_, due)) {
        }
      }
      batch.swap(inbox_);
      if (stopping_) {
        lock.Unlock();
        for (auto& c : batch) {
          if (c.kind == Command::Kind::kSubmit) {
            // Accepted but never started: still finish it exactly once.
            Apply(c);
          }
        }
        batch.clear();
        while (!seqs_.empty()) Finish(*seqs_.begin()->second, stream::FinishReason::kCancelled);
        return;
      }
    }
    for (auto& c : batch) Apply(c);
    batch.clear();
    auto now = stream::Clock::now();
    while (!schedule_.empty() && schedule_.top().when <= now) {
      Due due = schedule_.top();
      schedule_.pop();
      if (due.seq->ticket != due.ticket) continue;  // paused, finished or rescheduled
      due.seq->ticket = 0;
      Produce(due.seq, now);
    }
  }
}

}  // namespace tw::backend
