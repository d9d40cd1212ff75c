#include "train/train_loop.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "cpu/thread_pool.h"
#include "model/random_weights.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
#include "train/corpus.h"
#include "train/optimizer.h"
#include "train/trainer.h"

namespace tw::train {
namespace {

constexpr int kGpt2Vocab = 50257;

Status ParseInt(std::string_view flag, const char* v, long long lo, long long hi, int* out) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi) {
    return Status::Error(std::string(flag) + " wants an integer in [" + std::to_string(lo) + ", " +
                         std::to_string(hi) + "], got '" + v + "'");
  }
  *out = static_cast<int>(x);
  return Status::Ok();
}

Status ParseReal(std::string_view flag, const char* v, double lo, double hi, double* out) {
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v, &end);
  if (errno != 0 || end == v || *end != '\0' || !std::isfinite(x) || x < lo || x > hi) {
    char range[96];
    std::snprintf(range, sizeof range, "[%g, %g]", lo, hi);
    return Status::Error(std::string(flag) + " wants a number in " + range + ", got '" + v + "'");
  }
  *out = x;
  return Status::Ok();
}

// The validation loss over `starts`' windows, batch by batch (each window
// weighs the same).
Status ValidationLoss(Gpt2Trainer<float>& t, const std::vector<int32_t>& tokens, const std::vector<size_t>& starts,
                      std::vector<int32_t>* in, std::vector<int32_t>* tgt, double* out) {
  const int B = t.shape().max_batch, T = t.shape().seq;
  double sum = 0;
  for (size_t first = 0; first < starts.size(); first += B) {
    const int n = static_cast<int>(std::min<size_t>(B, starts.size() - first));
    for (int b = 0; b < n; ++b) {
      std::memcpy(in->data() + static_cast<size_t>(b) * T, tokens.data() + starts[first + b], sizeof(int32_t) * T);
      std::memcpy(tgt->data() + static_cast<size_t>(b) * T, tokens.data() + starts[first + b] + 1, sizeof(int32_t) * T);
    }
    double loss = 0;
    Status st = t.Loss(in->data(), tgt->data(), n, &loss);
    if (!st.ok()) return st;
    sum += loss * n;
  }
  *out = sum / static_cast<double>(starts.size());
  return Status::Ok();
}

}  // namespace

const char* TrainUsage() {
  return "  weights_tool train --corpus FILE --out DIR [flags]\n"
         "      Train a GPT-2 from scratch on a text file, on the CPU, and write a Hugging\n"
         "      Face folder tokenwire serves (config.json, model.safetensors F32 or BF16,\n"
         "      vocab.json,\n"
         "      merges.txt). A fortune file (\"%\" lines) is one document per fortune, any\n"
         "      other file one document; <|endoftext|> between documents; every 20th\n"
         "      document (the last 5 % of tokens, for one document) is held out for\n"
         "      validation. GPT-2's\n"
         "      initialisation, AdamW (betas 0.9/0.95, decay on matrices and embeddings\n"
         "      only), global norm clip, linear warmup then cosine to --min-lr. Same corpus,\n"
         "      flags and seed: the same model bit for bit, whatever --threads. The\n"
         "      defaults take about 9 minutes on two cores (2M tokens).\n"
         "      --layers N (4)  --heads N (4)  --embd N (128)  --positions N (1024)\n"
         "      --seq T (256)  --batch B (16)  --steps N (500)\n"
         "      --lr X (2e-3)  --min-lr X (2e-4)  --warmup N (20)  --weight-decay X (0.1)\n"
         "      --clip X (1.0; 0: none)  --seed N (0)  --threads N (all)\n"
         "      --val-every N (50; 0: none)  --val-windows N (32)\n"
         "      --dtype f32|bf16 (f32: the checkpoint's tensors; bf16 rounds them to\n"
         "      nearest even, half the file, and reports the rounded model's validation\n"
         "      loss too)\n"
         "      --checkpoint-every N (0: at the end only)  --log FILE (CSV: step,\n"
         "      train_loss, val_loss, lr, grad_norm, tokens, elapsed_s)\n";
}

Status ParseTrainFlags(int argc, char** argv, TrainOptions* out, bool* help) {
  TrainOptions o;
  *help = false;
  bool set_min_lr = false, set_warmup = false;
  for (int i = 0; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      *help = true;
      return Status::Ok();
    }
    if (a.substr(0, 2) != "--") return Status::Error("unexpected argument '" + std::string(a) + "'");
    if (i + 1 >= argc) return Status::Error("missing value after " + std::string(a));
    const char* v = argv[++i];
    Status st;
    if (a == "--corpus") o.corpus = v;
    else if (a == "--out") o.out_dir = v;
    else if (a == "--log") o.log_path = v;
    else if (a == "--dtype") {
      const std::string_view d = v;
      if (d != "f32" && d != "bf16") st = Status::Error("--dtype wants f32 or bf16, got '" + std::string(v) + "'");
      o.bf16 = d == "bf16";
    }
    else if (a == "--layers") st = ParseInt(a, v, 1, 64, &o.layers);
    else if (a == "--heads") st = ParseInt(a, v, 1, 64, &o.heads);
    else if (a == "--embd") st = ParseInt(a, v, 1, 4096, &o.embd);
    else if (a == "--positions") st = ParseInt(a, v, 1, 16384, &o.positions);
    else if (a == "--seq") st = ParseInt(a, v, 1, 16384, &o.seq);
    else if (a == "--batch") st = ParseInt(a, v, 1, 4096, &o.batch);
    else if (a == "--steps") st = ParseInt(a, v, 1, 100000000, &o.steps);
    else if (a == "--warmup") {
      st = ParseInt(a, v, 0, 100000000, &o.warmup);
      set_warmup = true;
    }
    else if (a == "--threads") st = ParseInt(a, v, 1, 1024, &o.threads);
    else if (a == "--val-every") st = ParseInt(a, v, 0, 100000000, &o.val_every);
    else if (a == "--val-windows") st = ParseInt(a, v, 1, 1000000, &o.val_windows);
    else if (a == "--checkpoint-every") st = ParseInt(a, v, 0, 100000000, &o.checkpoint_every);
    else if (a == "--lr") st = ParseReal(a, v, 1e-12, 10, &o.lr);
    else if (a == "--min-lr") {
      st = ParseReal(a, v, 0, 10, &o.min_lr);
      set_min_lr = true;
    } else if (a == "--weight-decay") st = ParseReal(a, v, 0, 10, &o.weight_decay);
    else if (a == "--clip") st = ParseReal(a, v, 0, 1e12, &o.clip);
    else if (a == "--seed") {
      char* end = nullptr;
      errno = 0;
      o.seed = std::strtoull(v, &end, 10);
      if (errno != 0 || end == v || *end != '\0' || v[0] == '-') {
        st = Status::Error("--seed wants a non-negative integer, got '" + std::string(v) + "'");
      }
    } else {
      return Status::Error("unknown flag '" + std::string(a) + "'");
    }
    if (!st.ok()) return st;
  }
  if (o.corpus.empty()) return Status::Error("train needs --corpus FILE");
  if (o.out_dir.empty()) return Status::Error("train needs --out DIR");
  if (o.embd % o.heads != 0) {
    return Status::Error("--embd " + std::to_string(o.embd) + " must be a multiple of --heads " +
                         std::to_string(o.heads));
  }
  if (o.seq > o.positions) {
    return Status::Error("--seq " + std::to_string(o.seq) + " exceeds --positions " + std::to_string(o.positions));
  }
  // Defaults that would contradict a given flag follow it: --min-lr no
  // higher than --lr, --warmup no longer than --steps.
  if (!set_min_lr) o.min_lr = std::min(o.min_lr, o.lr);
  if (!set_warmup) o.warmup = std::min(o.warmup, o.steps);
  if (o.min_lr > o.lr) return Status::Error("--min-lr must not exceed --lr");
  if (o.warmup > o.steps) {
    return Status::Error("--warmup " + std::to_string(o.warmup) + " exceeds --steps " + std::to_string(o.steps));
  }
  *out = o;
  return Status::Ok();
}

Status RunTraining(const TrainOptions& o, std::FILE* progress) {
  auto say = [&](const char* fmt, auto... args) {
    if (progress) {
      std::fprintf(progress, fmt, args...);
      std::fflush(progress);
    }
  };
  tokenizer::Tokenizer tok;
  Status st = tokenizer::Tokenizer::LoadEmbedded(&tok);
  if (!st.ok()) return st;
  Corpus corpus;
  st = LoadCorpus(o.corpus, tok, &corpus);
  if (!st.ok()) return st;
  say("corpus %s: %zu bytes, %d document%s%s; %zu training tokens, %zu validation tokens (%s)\n",
      o.corpus.c_str(), corpus.bytes, corpus.documents, corpus.documents == 1 ? "" : "s",
      corpus.fortune ? " (fortune format)" : "", corpus.train.size(), corpus.val.size(),
      corpus.val_documents > 0 ? (std::to_string(corpus.val_documents) + " documents, every 20th").c_str()
                               : "its last 5 % of tokens");
  const size_t window = static_cast<size_t>(o.seq) + 1;
  if (corpus.train.size() < window) {
    return Status::Error("corpus '" + o.corpus + "': " + std::to_string(corpus.train.size()) +
                         " training tokens, fewer than one window of --seq + 1 = " + std::to_string(window) +
                         " (a longer text, or a smaller --seq)");
  }
  if (o.val_every > 0 && corpus.val.size() < window) {
    return Status::Error("corpus '" + o.corpus + "': " + std::to_string(corpus.val.size()) +
                         " validation tokens, fewer than one window of --seq + 1 = " + std::to_string(window) +
                         " (a longer text, a smaller --seq, or --val-every 0)");
  }

  // The output folder now, not after the last step: a bad --out fails the
  // run before it trains, not after.
  st = model::MakeDirs(o.out_dir);
  if (!st.ok()) return Status::Error("--out: " + st.message());

  model::Gpt2Config config;
  config.n_layer = o.layers;
  config.n_head = o.heads;
  config.n_embd = o.embd;
  config.n_ctx = o.positions;
  config.vocab_size = kGpt2Vocab;
  config.eos_token_id = tok.end_of_text_id();
  const int threads = o.threads > 0 ? o.threads : cpu::ThreadPool::HardwareThreads();
  cpu::ThreadPool pool(threads);
  TrainerShape shape;
  shape.max_batch = o.batch;
  shape.seq = o.seq;
  std::unique_ptr<Gpt2Trainer<float>> trainer;
  st = Gpt2Trainer<float>::Create(config, shape, &pool, &trainer);
  if (!st.ok()) return st;
  InitGpt2Params(config, o.seed, trainer->params());
  AdamWConfig adam;
  adam.weight_decay = o.weight_decay;
  std::unique_ptr<AdamW<float>> opt;
  st = AdamW<float>::Create(trainer->layout(), adam, &opt);
  if (!st.ok()) return st;
  const double param_mb = static_cast<double>(trainer->num_params()) * sizeof(float) / 1e6;
  say("model: %d layers, %d heads, %d wide, %d positions, vocab %d: %.2fM parameters; memory: %.0f MB "
      "(parameters, gradients, AdamW) + %.0f MB (activations, scratch); %d thread%s, kernels %s\n",
      o.layers, o.heads, o.embd, o.positions, kGpt2Vocab, trainer->num_params() / 1e6, 4 * param_mb,
      trainer->activation_bytes() / 1e6, threads, threads == 1 ? "" : "s", cpu::IsaName(cpu::ActiveIsa()));

  std::FILE* log = nullptr;
  if (!o.log_path.empty()) {
    log = std::fopen(o.log_path.c_str(), "w");
    if (log == nullptr) return Status::FromErrno("fopen('" + o.log_path + "')");
    std::fprintf(log, "step,train_loss,val_loss,lr,grad_norm,tokens,elapsed_s\n");
  }
  struct LogCloser {
    std::FILE* f;
    ~LogCloser() {
      if (f) std::fclose(f);
    }
  } closer{log};

  const size_t rows = static_cast<size_t>(o.batch) * o.seq;
  std::vector<int32_t> inputs(rows), targets(rows);
  WindowSampler sampler(corpus.train, o.seq, o.seed);
  std::vector<size_t> val_starts;
  if (o.val_every > 0) val_starts = EvenWindowStarts(corpus.val.size(), o.seq, o.val_windows);
  LrSchedule sched;
  sched.max_lr = o.lr;
  sched.min_lr = o.min_lr;
  sched.warmup_steps = o.warmup;
  sched.total_steps = o.steps;
  CheckpointOptions ckpt;
  ckpt.bf16 = o.bf16;
  double last_val = NAN;
  auto write_checkpoint = [&](int step) {
    ckpt.metadata = {{"step", std::to_string(step)}, {"seed", std::to_string(o.seed)}};
    return WriteCheckpoint(o.out_dir, config, trainer->params(), ckpt);
  };

  const auto t0 = std::chrono::steady_clock::now();
  double last_elapsed = 0;
  for (int step = 1; step <= o.steps; ++step) {
    for (int b = 0; b < o.batch; ++b) sampler.Next(inputs.data() + static_cast<size_t>(b) * o.seq,
                                                    targets.data() + static_cast<size_t>(b) * o.seq);
    double loss = 0;
    st = trainer->LossAndGradients(inputs.data(), targets.data(), o.batch, &loss);
    if (!st.ok()) return st;
    if (!std::isfinite(loss)) {
      return Status::Error("step " + std::to_string(step) + ": the loss is " + std::to_string(loss) +
                           " (diverged: try a lower --lr or a --clip)");
    }
    const double norm = ClipGradNorm(trainer->grads(), trainer->num_params(), o.clip, &pool);
    const double lr = LearningRate(sched, step - 1);
    opt->Update(trainer->params(), trainer->grads(), lr, &pool);
    double val = NAN;
    if (o.val_every > 0 && (step % o.val_every == 0 || step == o.steps)) {
      st = ValidationLoss(*trainer, corpus.val, val_starts, &inputs, &targets, &val);
      if (!st.ok()) return st;
    }
    if (!std::isnan(val)) last_val = val;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double tokens = static_cast<double>(rows) * step;
    char val_text[32] = "";
    if (!std::isnan(val)) std::snprintf(val_text, sizeof val_text, "  val %.4f", val);
    say("step %d/%d  loss %.4f%s  lr %.2e  norm %.3f  %.0f ms  %.0f tok/s  %.1f s\n", step, o.steps, loss, val_text,
        lr, norm, (elapsed - last_elapsed) * 1e3, tokens / elapsed, elapsed);
    last_elapsed = elapsed;
    if (log) {
      char val_csv[32] = "";
      if (!std::isnan(val)) std::snprintf(val_csv, sizeof val_csv, "%.6f", val);
      std::fprintf(log, "%d,%.6f,%s,%.6e,%.6f,%.0f,%.3f\n", step, loss, val_csv, lr, norm, tokens, elapsed);
      std::fflush(log);
    }
    if (o.checkpoint_every > 0 && step % o.checkpoint_every == 0 && step != o.steps) {
      st = write_checkpoint(step);
      if (!st.ok()) return st;
      say("checkpoint: %s (step %d)\n", o.out_dir.c_str(), step);
    }
  }
  // The final checkpoint records its validation loss; a bf16 one also that
  // of its rounded weights (the model as saved: the trainer's parameters are
  // rounded in place, the run being over).
  ckpt.metadata = {{"step", std::to_string(o.steps)}, {"seed", std::to_string(o.seed)}};
  if (!std::isnan(last_val)) {
    char v[32];
    std::snprintf(v, sizeof v, "%.4f", last_val);
    ckpt.metadata.push_back({"val_loss", v});
    if (o.bf16) {
      float* p = trainer->params();
      for (size_t i = 0; i < trainer->num_params(); ++i) p[i] = cpu::FloatFromBf16(cpu::Bf16FromFloat(p[i]));
      double rounded = 0;
      st = ValidationLoss(*trainer, corpus.val, val_starts, &inputs, &targets, &rounded);
      if (!st.ok()) return st;
      std::snprintf(v, sizeof v, "%.4f", rounded);
      ckpt.metadata.push_back({"val_loss_bf16", v});
      say("validation loss %.4f; with the weights rounded to bf16 %.4f\n", last_val, rounded);
    }
  }
  st = WriteCheckpoint(o.out_dir, config, trainer->params(), ckpt);
  if (!st.ok()) return st;
  say("wrote %s: config.json, model.safetensors (%s), vocab.json, merges.txt (step %d)\n", o.out_dir.c_str(),
      o.bf16 ? "BF16" : "F32", o.steps);
  if (log && std::ferror(log)) return Status::Error("writing '" + o.log_path + "' failed");
  return Status::Ok();
}

}  // namespace tw::train
