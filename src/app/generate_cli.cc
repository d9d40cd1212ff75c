#include "app/generate_cli.h"

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
#include "model/serving_model.h"
#include "model/sampling.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_stream.h"

namespace tw::app {

namespace {

// One flag of `tokenwire generate`: the parser and both usage texts are
// made from this table, so what is accepted and what is documented agree.
struct FlagSpec {
  const char* name;   // "--max-new-tokens"
  const char* value;  // how the usage names its value: "N"
  const char* help;   // what it does, and its default
  Status (*set)(const std::string& v, GenerateFlags* f);
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

const FlagSpec kFlags[] = {
    {"--model", "DIR", "Hugging Face GPT-2 folder; default: random tiny GPT-2 weights (as serve)",
     [](const std::string& v, GenerateFlags* f) -> Status {
       if (v.empty()) return Status::Error("--model: an empty folder name");
       f->model_dir = v;
       return Status::Ok();
     }},
    {"--max-new-tokens", "N", "tokens to generate at most (1..1048576); default 64",
     [](const std::string& v, GenerateFlags* f) -> Status {
       int64_t n = 0;
       if (!ParseI64(v, &n) || n < 1 || n > 1 << 20) return Status::Error("--max-new-tokens: 1..1048576");
       f->max_new_tokens = n;
       return Status::Ok();
     }},
    {"--temperature", "T", "sampling temperature (0..100; 0 = greedy); default 0",
     [](const std::string& v, GenerateFlags* f) -> Status {
       double d = 0;
       if (!ParseDouble(v, &d) || !(d >= 0 && d <= 100)) return Status::Error("--temperature: 0..100");
       f->temperature = d;
       return Status::Ok();
     }},
    {"--top-k", "K", "sample among the K likeliest tokens (0 = off); default 0",
     [](const std::string& v, GenerateFlags* f) -> Status {
       int64_t n = 0;
       if (!ParseI64(v, &n) || n < 0) return Status::Error("--top-k: >= 0");
       f->top_k = n;
       return Status::Ok();
     }},
    {"--top-p", "P", "nucleus sampling, in (0, 1] (1 = off); default 1",
     [](const std::string& v, GenerateFlags* f) -> Status {
       double d = 0;
       if (!ParseDouble(v, &d) || !(d > 0 && d <= 1)) return Status::Error("--top-p: (0, 1]");
       f->top_p = d;
       return Status::Ok();
     }},
    {"--seed", "S", "sampling seed (the same seed gives the same text); default 0",
     [](const std::string& v, GenerateFlags* f) -> Status {
       int64_t n = 0;
       if (!ParseI64(v, &n) || n < 0) return Status::Error("--seed: a non-negative integer");
       f->seed = static_cast<uint64_t>(n);
       return Status::Ok();
     }},
    {"--stop", "STR", "end the text before STR (give it again for several); default none",
     [](const std::string& v, GenerateFlags* f) -> Status {
       if (v.empty()) return Status::Error("--stop: an empty stop string");
       f->stop.push_back(v);
       return Status::Ok();
     }},
    {"--threads", "N", "CPU threads (0..1024; 0 = one per core); default 0",
     [](const std::string& v, GenerateFlags* f) -> Status {
       int64_t n = 0;
       if (!ParseI64(v, &n) || n < 0 || n > 1024) return Status::Error("--threads: 0..1024");
       f->threads = n;
       return Status::Ok();
     }},
    {"--weights", "F", "matmul weights: f32 (the exact reference), bf16 or q8; default f32",
     [](const std::string& v, GenerateFlags* f) -> Status {
       if (Status s = cpu::ParseWeightFormat(v.c_str(), &f->weights); !s.ok()) return Status::Error("--weights: " + s.message());
       return Status::Ok();
     }},
    {"--block-size", "N", "tokens per KV block (1..1024); default 16",
     [](const std::string& v, GenerateFlags* f) -> Status {
       int64_t n = 0;
       if (!ParseI64(v, &n) || n < 1 || n > 1024) return Status::Error("--block-size: 1..1024");
       f->block_size = n;
       return Status::Ok();
     }},
};

}  // namespace

std::string GenerateSynopsis(size_t indent) {
  const std::string head = "tokenwire generate";
  const size_t width = 90;
  const std::string pad(indent + head.size(), ' ');
  std::string out = head;
  size_t column = indent + head.size();
  auto add = [&](const std::string& word) {
    if (column + 1 + word.size() > width) {
      out += "\n" + pad;
      column = pad.size();
    }
    out += " " + word;
    column += 1 + word.size();
  };
  for (const FlagSpec& f : kFlags) add("[" + std::string(f.name) + " " + f.value + "]");
  add("\"prompt\"");
  return out + "\n";
}

std::string GenerateUsage() {
  std::string u = "usage: " + GenerateSynopsis(7) +
                  "Streams one completion to stdout as it is produced; a summary line goes to stderr.\n\n";
  for (const FlagSpec& f : kFlags) {
    std::string line = "  " + std::string(f.name) + " " + f.value;
    line.append(line.size() < 24 ? 24 - line.size() : 1, ' ');
    u += line + f.help + "\n";
  }
  return u;
}

std::string ProgramUsage() {
  return "usage: tokenwire serve [flags]        (tokenwire serve --help for every flag)\n"
         "       " + GenerateSynopsis(7) +
         "                                      (tokenwire generate --help for what each does)\n";
}

std::vector<std::string> GenerateFlagNames() {
  std::vector<std::string> names;
  for (const FlagSpec& f : kFlags) names.push_back(f.name);
  return names;
}

Status ParseGenerateFlags(int argc, char** argv, int first, GenerateFlags* f) {
  for (int i = first; i < argc; i++) {
    const std::string a = argv[i];
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      const FlagSpec* spec = nullptr;
      for (const FlagSpec& s : kFlags) {
        if (a == s.name) spec = &s;
      }
      if (spec == nullptr) return Status::Error("unknown flag '" + a + "'");
      if (i + 1 >= argc) return Status::Error(a + ": missing value");
      if (Status s = spec->set(argv[++i], f); !s.ok()) return s;
    } else {
      if (f->has_prompt) return Status::Error("one prompt only (quote it)");
      f->prompt = a;
      f->has_prompt = true;
    }
  }
  if (!f->has_prompt) return Status::Error("missing the prompt");
  return Status::Ok();
}

int GenerateMain(int argc, char** argv, int first) {
  for (int i = first; i < argc; i++) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(GenerateUsage().c_str(), stdout);
      return 0;
    }
  }
  GenerateFlags f;
  if (Status s = ParseGenerateFlags(argc, argv, first, &f); !s.ok()) {
    std::fprintf(stderr, "tokenwire generate: %s\n%s", s.message().c_str(), GenerateUsage().c_str());
    return 2;
  }
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "tokenwire generate: %s\n", s.message().c_str());
    return 1;
  };

  // The model `tokenwire serve` would load: the folder, or random tiny weights.
  std::shared_ptr<const model::Gpt2Model> gpt2;
  std::string name;
  if (Status s = model::LoadModelForServing(f.model_dir, &gpt2, &name); !s.ok()) {
    return fail(Status::Error("--model: " + s.message()));
  }
  if (f.model_dir.empty()) {
    std::fprintf(stderr, "tokenwire generate: no --model: random tiny GPT-2 weights (%s, seed 0), so the "
                 "text is noise\n", name.c_str());
  }
  tokenizer::Tokenizer tok;
  Status ts = f.model_dir.empty() ? tokenizer::Tokenizer::LoadEmbedded(&tok)
                                  : tokenizer::Tokenizer::LoadFromDirOrEmbedded(f.model_dir, &tok);
  if (!ts.ok()) return fail(ts);
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
  fl.weights = f.weights;
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

}  // namespace tw::app
