#include "api/generate_cli.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend/text_assembler.h"
#include "cpu/thread_pool.h"
#include "engine/block_allocator.h"
#include "model/forward.h"
#include "model/gpt2.h"
#include "model/kv_cache.h"
#include "model/sampling.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_stream.h"

namespace tw::api {

namespace {

const char kUsage[] =
    "usage: tokenwire generate --model DIR [--max-new-tokens N] [--temperature T]\n"
    "                          [--top-k K] [--top-p P] [--seed S] [--stop STR]\n"
    "                          [--threads N] [--block-size N] \"prompt\"\n"
    "Streams the completion to stdout as it is produced; a summary line goes to stderr.\n"
    "Defaults: --max-new-tokens 64, --temperature 0 (greedy), --top-k 0 (off), --top-p 1 (off),\n"
    "          --seed 0, --threads 0 (one per core), --block-size 16.\n";

struct GenerateFlags {
  std::string model_dir;
  std::string prompt;
  bool has_prompt = false;
  int64_t max_new_tokens = 64;
  double temperature = 0.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  uint64_t seed = 0;
  int64_t threads = 0;
  int64_t block_size = 16;
  std::vector<std::string> stop;
};

bool ParseI64(std::string_view s, int64_t* out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool ParseDouble(const std::string& s, double* out) {
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return !s.empty() && end != nullptr && *end == '\0';
}

Status ParseFlags(int argc, char** argv, int first, GenerateFlags* f) {
  for (int i = first; i < argc; i++) {
    std::string a = argv[i];
    auto value = [&](std::string* v) -> Status {
      if (i + 1 >= argc) return Status::Error(a + ": missing value");
      *v = argv[++i];
      return Status::Ok();
    };
    std::string v;
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      if (Status s = value(&v); !s.ok()) return s;
      int64_t n = 0;
      double d = 0;
      if (a == "--model") {
        f->model_dir = v;
      } else if (a == "--max-new-tokens") {
        if (!ParseI64(v, &n) || n < 1 || n > 1 << 20) return Status::Error("--max-new-tokens: 1..1048576");
        f->max_new_tokens = n;
      } else if (a == "--temperature") {
        if (!ParseDouble(v, &d) || !(d >= 0 && d <= 100)) return Status::Error("--temperature: 0..100");
        f->temperature = d;
      } else if (a == "--top-k") {
        if (!ParseI64(v, &n) || n < 0) return Status::Error("--top-k: >= 0");
        f->top_k = n;
      } else if (a == "--top-p") {
        if (!ParseDouble(v, &d) || !(d > 0 && d <= 1)) return Status::Error("--top-p: (0, 1]");
        f->top_p = d;
      } else if (a == "--seed") {
        if (!ParseI64(v, &n) || n < 0) return Status::Error("--seed: a non-negative integer");
        f->seed = static_cast<uint64_t>(n);
      } else if (a == "--threads") {
        if (!ParseI64(v, &n) || n < 0 || n > 1024) return Status::Error("--threads: 0..1024");
        f->threads = n;
      } else if (a == "--block-size") {
        if (!ParseI64(v, &n) || n < 1 || n > 1024) return Status::Error("--block-size: 1..1024");
        f->block_size = n;
      } else if (a == "--stop") {
        if (v.empty()) return Status::Error("--stop: an empty stop string");
        f->stop.push_back(v);
      } else {
        return Status::Error("unknown flag '" + a + "'");
      }
    } else {
      if (f->has_prompt) return Status::Error("one prompt only (quote it)");
      f->prompt = a;
      f->has_prompt = true;
    }
  }
  if (f->model_dir.empty()) return Status::Error("--model DIR is required");
  if (!f->has_prompt) return Status::Error("missing the prompt");
  return Status::Ok();
}

}  // namespace

int GenerateMain(int argc, char** argv, int first) {
  for (int i = first; i < argc; i++) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  GenerateFlags f;
  if (Status s = ParseFlags(argc, argv, first, &f); !s.ok()) {
    std::fprintf(stderr, "tokenwire generate: %s\n%s", s.message().c_str(), kUsage);
    return 2;
  }
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "tokenwire generate: %s\n", s.message().c_str());
    return 1;
  };

  std::unique_ptr<model::Gpt2Model> gpt2;
  if (Status s = model::LoadGpt2(f.model_dir, &gpt2); !s.ok()) return fail(s);
  tokenizer::Tokenizer tok;
  if (Status s = tokenizer::Tokenizer::LoadFromDirOrEmbedded(f.model_dir, &tok); !s.ok()) return fail(s);
  const model::Gpt2Config& cfg = gpt2->config();

  std::vector<int32_t> prompt = tok.Encode(f.prompt);
  if (prompt.empty()) return fail(Status::Error("the prompt encodes to no tokens"));
  int64_t total = static_cast<int64_t>(prompt.size()) + f.max_new_tokens;
  if (total > cfg.n_ctx) {
    return fail(Status::Error("prompt tokens (" + std::to_string(prompt.size()) + ") + --max-new-tokens (" +
                              std::to_string(f.max_new_tokens) + ") exceed the model context of " +
                              std::to_string(cfg.n_ctx)));
  }

  // One sequence: just enough KV blocks for it, allocated once.
  model::KvCacheConfig kc;
  kc.block_size_tokens = static_cast<int>(f.block_size);
  kc.num_blocks = model::BlocksFor(static_cast<int>(total), kc.block_size_tokens);
  std::unique_ptr<model::KvPool> kv;
  if (Status s = model::KvPool::Create(cfg, kc, &kv); !s.ok()) return fail(s);
  cpu::ThreadPool pool(f.threads > 0 ? static_cast<int>(f.threads) : cpu::ThreadPool::HardwareThreads());
  model::ForwardLimits fl;
  fl.max_batch = 1;
  std::unique_ptr<model::Gpt2Forward> fwd;
  if (Status s = model::Gpt2Forward::Create(*gpt2, kv.get(), &pool, fl, &fwd); !s.ok()) return fail(s);

  engine::BlockAllocator blocks(kc.num_blocks);
  model::SeqState seq;
  if (!blocks.Alloc(kc.num_blocks, &seq.block_table)) return fail(Status::Error("KV allocation failed"));

  std::vector<float> logits(static_cast<size_t>(cfg.vocab_size));
  if (Status s = fwd->Prefill(&seq, prompt.data(), static_cast<int>(prompt.size()), logits.data());
      !s.ok()) {
    return fail(s);
  }
  model::Sampler sampler(cfg.vocab_size);
  model::Rng rng(f.seed);
  model::SamplingParams sp;
  sp.temperature = static_cast<float>(f.temperature);
  sp.top_k = static_cast<int>(f.top_k);
  sp.top_p = static_cast<float>(f.top_p);
  tokenizer::Utf8StreamDecoder utf8;
  backend::TextAssembler text(f.stop);
  const char* reason = "length";
  int produced = 0;
  for (;;) {
    int32_t next = sampler.Sample(logits.data(), sp, &rng);
    produced++;
    if (next == cfg.eos_token_id) {
      reason = "eos";
      break;
    }
    backend::TextAssembler::Step step = text.Push(utf8.Push(tok.TokenBytes(next)));
    std::fwrite(step.text.data(), 1, step.text.size(), stdout);
    std::fflush(stdout);
    if (step.stopped) {
      reason = "stop";
      break;
    }
    if (produced >= f.max_new_tokens) break;
    model::SeqState* seqs[1] = {&seq};
    if (Status s = fwd->DecodeBatch(seqs, &next, 1, logits.data()); !s.ok()) return fail(s);
  }
  if (std::string_view(reason) != "stop") {
    std::string tail = text.Push(utf8.Flush()).text + text.Flush();
    std::fwrite(tail.data(), 1, tail.size(), stdout);
  }
  std::fputs("\n", stdout);
  std::fprintf(stderr, "[%d prompt tokens, %d generated, finish_reason=%s]\n",
               static_cast<int>(prompt.size()), produced, reason);
  return 0;
}

}  // namespace tw::api
