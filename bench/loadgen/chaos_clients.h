// The clients of the chaos scenario (scenarios_chaos.cc) and how the ending
// of each one is judged.
//
// A Spec is one reproducible generation (prompt token ids, seed, sampling)
// with its reference: its tokens at full length from one uninterrupted
// /v1/generate. A client draws a Spec and a max_new_tokens; when it ends,
// what it saw goes into a Tally: a stream's tokens must be the reference's
// first max_new_tokens (a prefix of them for a stream cancelled on purpose),
// with no event id skipped or seen twice, and it must end the way its kind
// allows (refusals with 503 overloaded are counted apart, not verified).
//
// MainSide runs the HTTP clients on one Engine: SSE streams (clean, a
// quarter with logprobs; dropped and resumed, deleted, stalled under each
// policy), pipelined requests, clients that never read, large bodies,
// non-streamed requests whose clients leave (queued or running, on every
// such endpoint), slow readers of large answers on connections that close
// after them (Connection: close, HTTP/1.0), and n-choice streams whose first
// choice is deleted. RunWebSocketSide runs WebSocket
// streams (dropped and resumed) on a WsEngine of its own. Each keeps every
// one of its client slots busy until the load ends: when a client ends, it
// is judged and the slot starts the next one (0.1-1 s later if it was
// refused with a 503, as a client honouring Retry-After backs off).
//
// Thread: a MainSide belongs to its Engine's thread; RunWebSocketSide runs on
// the thread that calls it (the scenario gives it one). Both only read the
// Specs. Memory: one client per slot, plus the ended ones for 5 s (a
// timer they set may still fire); per stream one record per token.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "loadgen/engine.h"

namespace tw::loadgen::chaos {

constexpr int kTokensPerStream = 128;  // prompt + max_new_tokens of every stream (within the model's context)
constexpr int kMaxBodyBytes = 65536;   // the server's --max-body-bytes (the scenario sets it)
constexpr int kSpecs = 48;             // reproducible generations the streams draw from

int Pick(std::mt19937_64& rng, int lo, int hi);  // uniform in [lo, hi]

// One reproducible generation; `ref` is its tokens at full length from one
// uninterrupted /v1/generate.
struct Spec {
  std::vector<int32_t> prompt;
  uint64_t seed = 0;
  double temperature = 0;
  int top_k = 0;
  double top_p = 1;
  std::vector<int32_t> ref;
  int max_new() const { return kTokensPerStream - static_cast<int>(prompt.size()); }
};

// The request JSON of `s` at max_new_tokens n (with a policy if not empty).
std::string SpecBody(const Spec& s, int n, const std::string& policy = "");
// A short, medium or long max_new_tokens (a third each: 1-16, 17-64, 65 to
// the stream's budget).
int PickLength(std::mt19937_64& rng, const Spec& s);
// A /v1/generate answer's tokens and finish_reason; false if it is not one.
bool ParseGenerate(const std::string& body, std::vector<int32_t>* tokens, std::string* finish);

// What the clients of one kind ("sse clean", "stall drop_slow", ...) did.
struct KindTally {
  uint64_t started = 0, ended = 0, refused = 0, unexpected = 0;
  uint64_t resumes = 0;         // reconnections (SSE: GET with Last-Event-ID; WebSocket: resume op)
  uint64_t detach_resumes = 0;  // of those, after the server detached the reader (slow_client)
  std::map<std::string, uint64_t> endings;  // how its clients ended -> count
};

struct Tally {
  std::map<std::string, KindTally> kinds;
  uint64_t verified = 0;  // streams and answers compared with their reference
  uint64_t tokens_expected = 0, tokens_received = 0;
  uint64_t lost = 0, duplicated = 0, gaps = 0, mismatched = 0;
  uint64_t unexpected = 0;
  std::vector<std::string> examples;  // the first unexpected outcomes, described

  void Unexpected(KindTally* k, const std::string& kind, const std::string& what);
  void Merge(const Tally& o);
  uint64_t Ended() const;
  uint64_t Hung() const;  // clients judged as still running after the drain
};

class Actor;

// The HTTP clients on one Engine. Slots: 4 clean SSE streams, 4 dropped and
// resumed (one in five leaves for good instead), 2 deleted, 3 stalled (the
// three policies in turn), 1 pipelined, 2 that never read, 1 large body,
// 2 abandoned non-streamed requests, 1 slow reader of a closing answer,
// 1 n-choice stream with a failed choice.
class MainSide {
 public:
  // `text` is tokenized by the pipelined clients; `text_tokens` is its
  // reference. `model` is the id /v1/completions must name.
  MainSide(Engine* e, uint16_t port, const std::vector<Spec>* specs, std::string text,
           const std::vector<int32_t>* text_tokens, std::string model, uint64_t seed);
  ~MainSide();

  // Starts every slot; none starts a new client at or after `load_end_us`,
  // and clients that hold a connection on purpose let go then.
  void Begin(double load_end_us);
  bool AllOver() const;   // every slot empty (after the load)
  size_t Running() const;
  void JudgeHung();       // after the drain: the clients still running

  Tally tally;

 private:
  enum class Slot { kClean, kDrops, kDelete, kStall, kPipelined, kNeverRead, kLargeBody, kAbandon, kCloseReader, kChoices };
  void Reap();
  void Spawn(size_t i);
  std::unique_ptr<Actor> LargeBody(uint64_t nth, const Spec& spec);

  Engine* engine_;
  uint16_t port_;
  const std::vector<Spec>* specs_;
  std::string text_;
  const std::vector<int32_t>* text_tokens_;
  std::string model_;
  std::mt19937_64 rng_;
  double load_end_us_ = 0;
  std::vector<Slot> slots_;
  std::vector<std::unique_ptr<Actor>> active_, retired_;
  std::map<Slot, uint64_t> spawned_;  // clients started by slot kind (rotates the variants)
  size_t backing_off_ = 0;            // slots waiting after a refusal
  uint64_t next_tag_ = 0;
};

// WebSocket streams in `slots` slots until `load_end_us`, then until they
// end (at most `drain_s` more); into *tally. A failure to start is *error.
void RunWebSocketSide(uint16_t port, const std::vector<Spec>* specs, int slots, double load_end_us, double drain_s,
                      uint64_t seed, Tally* tally, std::string* error);

}  // namespace tw::loadgen::chaos
