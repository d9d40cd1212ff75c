// weights_tool: make, inspect and verify GPT-2 model folders.
//
//   weights_tool random  --shape tiny|gpt2 [--seed S] --out DIR
//   weights_tool inspect PATH      (a .safetensors file or a model folder)
//   weights_tool inspect DIR --weights bf16|q8
//   weights_tool verify  DIR
//   weights_tool train   --corpus FILE --out DIR [flags]
//
// `random` writes a complete Hugging Face-layout folder: config.json,
// model.safetensors (random weights, real key layout including the
// h.N.attn.bias buffers; see src/model/random_weights.h), vocab.json and
// merges.txt (the GPT-2 vocabulary embedded in this binary). Same seed, same
// bytes. `train` trains a GPT-2 on a text file (src/train/train_loop.h).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "model/random_weights.h"
#include "tokenizer/embedded.h"
#include "train/train_loop.h"
#include "commands.h"  // weights_tool/ is not on the include path

namespace tw::weights_tool {
namespace {

constexpr const char* kUsageHead =
    "usage:\n"
    "  weights_tool random  --shape tiny|gpt2 [--seed S] --out DIR\n"
    "      Write a GPT-2 folder with random weights: config.json, model.safetensors\n"
    "      (F32, Hugging Face key layout with h.N.attn.bias mask buffers),\n"
    "      vocab.json and merges.txt (GPT-2's vocabulary). Deterministic: the same\n"
    "      shape and seed give byte-identical files. --seed defaults to 0.\n"
    "      tiny: 2 layers, 4 heads, 64 wide, 1024 positions, vocab 50257 (~22 MB; the\n"
    "            model tokenwire serves without --model).\n"
    "      gpt2: 12 layers, 12 heads, 768 wide, 1024 positions (124M, 548 MB).\n"
    "  weights_tool inspect PATH\n"
    "      List the tensors of a .safetensors file (or DIR/model.safetensors):\n"
    "      dtype, shape, byte range; metadata; for a folder, config.json and the\n"
    "      GPT-2 loader's verdict. Exit 1 if the file is invalid.\n"
    "  weights_tool inspect DIR --weights f32|bf16|q8\n"
    "      For each matrix tokenwire --weights packs (every layer's four, and the\n"
    "      LM head wte^T): bytes in float32 and in the format, and the format's\n"
    "      error against the file: max |err|, max |err| / max |w|, RMS error.\n"
    "  weights_tool verify DIR\n"
    "      Full validation: LoadGpt2 (config, every tensor name/dtype/shape),\n"
    "      every weight finite, and the tokenizer files (vocab.json + merges.txt,\n"
    "      or encoder.json + vocab.bpe) load and match the config. Exit 0 or 1.\n";
constexpr const char* kUsageTail = "  weights_tool --help\n";
// kUsageHead, train's flags (train::TrainUsage), kUsageTail.
const std::string kUsage = std::string(kUsageHead) + train::TrainUsage() + kUsageTail;

int Usage(const char* why) {
  if (why) std::fprintf(stderr, "weights_tool: %s\n\n", why);
  std::fputs(kUsage.c_str(), stderr);
  return 2;
}

bool WriteWholeFile(const std::string& path, std::string_view bytes, std::string* err) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    *err = "fopen('" + path + "'): " + std::strerror(errno);
    return false;
  }
  const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int e = errno;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed) {
    *err = "write('" + path + "'): " + std::strerror(wrote ? errno : e);
    return false;
  }
  return true;
}

int Random(int argc, char** argv) {
  std::string shape, out;
  uint64_t seed = 0;
  for (int i = 0; i < argc; i++) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage.c_str(), stdout);
      return 0;
    }
    if (i + 1 >= argc) return Usage(("missing value after " + std::string(a)).c_str());
    const char* v = argv[++i];
    if (a == "--shape") {
      shape = v;
    } else if (a == "--out") {
      out = v;
    } else if (a == "--seed") {
      char* end = nullptr;
      errno = 0;
      seed = std::strtoull(v, &end, 10);
      if (errno != 0 || end == v || *end != '\0' || v[0] == '-') {
        return Usage(("--seed wants a non-negative integer, got '" + std::string(v) + "'").c_str());
      }
    } else {
      return Usage(("unknown flag '" + std::string(a) + "'").c_str());
    }
  }
  if (shape.empty()) return Usage("random needs --shape tiny|gpt2");
  if (out.empty()) return Usage("random needs --out DIR");
  model::RandomGpt2Options o;
  if (!model::NamedGpt2Shape(shape, &o.config)) {
    return Usage(("unknown --shape '" + shape + "' (tiny or gpt2)").c_str());
  }
  o.seed = seed;
  int last_tenth = -1;
  o.progress = [&](uint64_t done, uint64_t total) {
    const int tenth = total == 0 ? 10 : static_cast<int>(done * 10 / total);
    if (tenth != last_tenth) {
      last_tenth = tenth;
      std::fprintf(stderr, "model.safetensors: %3d%% (%llu / %llu MB)\n", tenth * 10,
                   static_cast<unsigned long long>(done >> 20),
                   static_cast<unsigned long long>(total >> 20));
    }
  };
  Status st = model::WriteRandomGpt2(out, o);
  if (!st.ok()) {
    std::fprintf(stderr, "weights_tool random: %s\n", st.message().c_str());
    return 1;
  }
  std::string err;
  if (!WriteWholeFile(out + "/vocab.json", tokenizer::EmbeddedEncoderJson(), &err) ||
      !WriteWholeFile(out + "/merges.txt", tokenizer::EmbeddedVocabBpe(), &err)) {
    std::fprintf(stderr, "weights_tool random: %s\n", err.c_str());
    return 1;
  }
  std::printf("wrote %s: config.json, model.safetensors, vocab.json, merges.txt "
              "(shape %s, seed %llu)\n",
              out.c_str(), shape.c_str(), static_cast<unsigned long long>(seed));
  return 0;
}

}  // namespace
}  // namespace tw::weights_tool

int main(int argc, char** argv) {
  using namespace tw::weights_tool;
  if (argc < 2) return Usage("no command");
  const std::string_view cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(kUsage.c_str(), stdout);
    return 0;
  }
  if (cmd == "random") return Random(argc - 2, argv + 2);
  if (cmd == "train") return Train(argc - 2, argv + 2);
  if (cmd == "inspect" || cmd == "verify") {
    if (argc == 3 && (std::string_view(argv[2]) == "--help" || std::string_view(argv[2]) == "-h")) {
      std::fputs(kUsage.c_str(), stdout);
      return 0;
    }
    if (cmd == "inspect" && argc == 5 && std::string_view(argv[3]) == "--weights") {
      return InspectWeights(argv[2], argv[4]);
    }
    if (argc != 3) {
      return Usage((std::string(cmd) + " takes exactly one path" +
                    (cmd == "inspect" ? " (then optionally --weights F)" : ""))
                       .c_str());
    }
    return cmd == "inspect" ? Inspect(argv[2]) : Verify(argv[2]);
  }
  return Usage(("unknown command '" + std::string(cmd) + "'").c_str());
}
