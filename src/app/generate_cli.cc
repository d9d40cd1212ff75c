#include "app/generate_cli.h"

#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "app/backends.h"
#include "backend/backend.h"
#include "common/mutex.h"
#include "cpu/thread_pool.h"
#include "engine/engine.h"
#include "model/gpt2.h"
#include "model/serving_model.h"
#include "stream/stream.h"
#include "tokenizer/tokenizer.h"

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
    {"--model", "DIR",
     "Hugging Face GPT-2 folder, or random-tiny (random weights); default: the built-in model (as serve)",
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

Status Generate(const GenerateFlags& f, const std::function<void(std::string_view)>& on_text,
                GenerateOutcome* out) {
  *out = GenerateOutcome();
  // The model `tokenwire serve` would load: the folder, the default model or
  // random tiny weights.
  std::shared_ptr<const model::Gpt2Model> gpt2;
  std::string name;
  if (Status s = model::LoadModelForServing(f.model_dir, &gpt2, &name); !s.ok()) {
    return Status::Error("--model: " + s.message());
  }
  out->model_name = name;
  tokenizer::Tokenizer tok;
  Status ts = model::IsBuiltInModel(f.model_dir) ? tokenizer::Tokenizer::LoadEmbedded(&tok)
                                  : tokenizer::Tokenizer::LoadFromDirOrEmbedded(f.model_dir, &tok);
  if (!ts.ok()) return ts;
  const int n_ctx = gpt2->config().n_ctx;

  backend::GenerationRequest r;
  r.prompt_tokens = tok.Encode(f.prompt);
  if (r.prompt_tokens.empty()) return Status::Error("the prompt encodes to no tokens");
  const int64_t total = static_cast<int64_t>(r.prompt_tokens.size()) + f.max_new_tokens;
  if (total > n_ctx) {
    return Status::Error("prompt tokens (" + std::to_string(r.prompt_tokens.size()) + ") + --max-new-tokens (" +
                         std::to_string(f.max_new_tokens) + ") exceed the model context of " +
                         std::to_string(n_ctx));
  }
  r.max_new_tokens = static_cast<int>(f.max_new_tokens);
  r.temperature = static_cast<float>(f.temperature);
  r.top_k = static_cast<int>(f.top_k);
  r.top_p = static_cast<float>(f.top_p);
  r.seed = f.seed;
  r.has_seed = true;  // the same --seed, the same text: as "seed" in a request to the server
  r.stop = f.stop;
  out->prompt_tokens = static_cast<int>(r.prompt_tokens.size());

  // The server's engine and runner factory, sized for this one sequence.
  engine::EngineOptions eo;
  eo.model_name = name;
  eo.max_batch = 1;
  eo.block_size_tokens = static_cast<int>(f.block_size);
  eo.num_kv_blocks = engine::BlocksFor(static_cast<int>(total), eo.block_size_tokens);
  eo.prefix_cache = false;
  eo.threads = f.threads > 0 ? static_cast<int>(f.threads) : cpu::ThreadPool::HardwareThreads();
  RunnerOptions ro;
  ro.weights = cpu::WeightFormatName(f.weights);
  std::unique_ptr<engine::ModelRunner> runner;
  if (Status s = MakeRunner("cpu", gpt2, engine::RunnerLimitsFor(eo, n_ctx), ro, &runner); !s.ok()) return s;
  std::unique_ptr<engine::Engine> e;
  if (Status s = engine::Engine::Create(std::move(runner), &tok, eo, &e); !s.ok()) return s;

  // The engine appends to the stream on its thread; its notifier hands this
  // thread each "new events" wake-up, as the server's event loop gets them.
  Mutex mu;
  std::condition_variable cv;
  std::vector<std::function<void()>> posted;
  stream::Notifier notifier(
      [&](std::function<void()> fn) {
        MutexLock lock(mu);
        posted.push_back(std::move(fn));
        cv.notify_one();
      },
      [](std::vector<std::shared_ptr<stream::Stream>>&) {});
  stream::StreamLimits limits;
  // Every event stays until read (start, the tokens, the end): nothing is
  // lost to a slow stdout, and the memory is bounded by --max-new-tokens.
  limits.resume_window_events = static_cast<size_t>(f.max_new_tokens) + 2;
  auto st = std::make_shared<stream::Stream>("generate", limits, &notifier);
  ApiError refusal;
  if (!e->Submit(st, r, &refusal)) return Status::Error(refusal.message);

  Status result = Status::Ok();
  std::vector<stream::EventPtr> events;
  uint64_t next = 1;
  for (bool finished = false; !finished;) {
    if (!st->ReadFrom(next, 256, &events)) return Status::Error("generate: events lost");
    for (const stream::EventPtr& ev : events) {
      next = ev->seq + 1;
      if (ev->type == stream::EventType::kToken) {
        out->tokens.push_back(ev->token);
        if (!ev->text.empty()) on_text(ev->text);
      } else if (ev->type == stream::EventType::kDone) {
        out->finish_reason = stream::FinishReasonName(ev->finish_reason);
        finished = true;
      } else if (ev->type == stream::EventType::kError) {
        result = Status::Error(ev->error ? ev->error->message : "the engine failed");
        finished = true;
      }
    }
    if (finished || !events.empty()) continue;
    std::vector<std::function<void()>> run;
    {
      MutexLock lock(mu);
      while (posted.empty()) lock.Wait(cv);
      run.swap(posted);
    }
    for (auto& fn : run) fn();
  }
  e->Shutdown();
  // A wake-up posted after the last read: run it, so the notifier holds no
  // stream once this returns.
  MutexLock lock(mu);
  for (auto& fn : posted) fn();
  return result;
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
  if (f.model_dir == model::kRandomTinyModel) {
    std::fprintf(stderr, "tokenwire generate: --model random-tiny: random weights (seed 0), so the text "
                 "is noise\n");
  }
  GenerateOutcome o;
  Status s = Generate(
      f,
      [](std::string_view text) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
      },
      &o);
  if (!s.ok()) {
    std::fprintf(stderr, "tokenwire generate: %s\n", s.message().c_str());
    return 1;
  }
  std::fputs("\n", stdout);
  std::fprintf(stderr, "[%d prompt tokens, %zu generated, finish_reason=%s]\n", o.prompt_tokens,
               o.tokens.size(), o.finish_reason.c_str());
  return 0;
}

}  // namespace tw::app
