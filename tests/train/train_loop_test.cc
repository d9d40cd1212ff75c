// weights_tool train's flags (each refused with a message naming the flag)
// and whole runs: bad corpora refused before any training, a tiny run that
// writes its checkpoint and CSV log, and the same checkpoint bytes from 1
// and 3 threads.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/gpt2.h"
#include "train/train_loop.h"

namespace tw::train {
namespace {

Status Parse(std::vector<std::string> args, TrainOptions* o, bool* help) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return ParseTrainFlags(static_cast<int>(argv.size()), argv.data(), o, help);
}

// The error for `args` (after --corpus c --out o), "" if they parse.
std::string ParseError(std::vector<std::string> args) {
  args.insert(args.begin(), {"--corpus", "c", "--out", "o"});
  TrainOptions o;
  bool help = false;
  Status st = Parse(args, &o, &help);
  return st.ok() ? "" : st.message();
}

TEST(TrainFlags, DefaultsAndValues) {
  TrainOptions o;
  bool help = false;
  ASSERT_TRUE(Parse({"--corpus", "c.txt", "--out", "dir"}, &o, &help).ok());
  EXPECT_EQ(o.corpus, "c.txt");
  EXPECT_EQ(o.out_dir, "dir");
  EXPECT_EQ(o.layers, 4);
  EXPECT_EQ(o.positions, 1024);
  EXPECT_EQ(o.threads, 0);
  EXPECT_FALSE(o.bf16);
  ASSERT_TRUE(Parse({"--corpus", "c", "--out", "d", "--layers", "2", "--heads", "2", "--embd", "64", "--positions",
                     "128", "--seq", "128", "--batch", "3", "--steps", "9", "--lr", "3e-4", "--min-lr", "0",
                     "--warmup", "9", "--weight-decay", "0", "--clip", "0", "--seed", "18446744073709551615",
                     "--threads", "3", "--val-every", "0", "--val-windows", "5", "--checkpoint-every", "4", "--log",
                     "l.csv", "--dtype", "bf16"},
                    &o, &help)
                  .ok());
  EXPECT_TRUE(o.bf16);
  EXPECT_EQ(o.embd, 64);
  EXPECT_EQ(o.seq, 128);
  EXPECT_EQ(o.steps, 9);
  EXPECT_DOUBLE_EQ(o.lr, 3e-4);
  EXPECT_EQ(o.min_lr, 0.0);
  EXPECT_EQ(o.seed, 18446744073709551615ull);
  EXPECT_EQ(o.checkpoint_every, 4);
  EXPECT_EQ(o.log_path, "l.csv");
  // Defaults that would contradict the flags given follow them.
  ASSERT_TRUE(Parse({"--corpus", "c", "--out", "d", "--steps", "5", "--lr", "1e-5"}, &o, &help).ok());
  EXPECT_EQ(o.warmup, 5);
  EXPECT_DOUBLE_EQ(o.min_lr, 1e-5);
  ASSERT_TRUE(Parse({"--help"}, &o, &help).ok());
  EXPECT_TRUE(help);
}

TEST(TrainFlags, EachBadValueIsRefusedByName) {
  TrainOptions o;
  bool help = false;
  EXPECT_EQ(Parse({"--out", "d"}, &o, &help).message(), "train needs --corpus FILE");
  EXPECT_EQ(Parse({"--corpus", "c"}, &o, &help).message(), "train needs --out DIR");
  EXPECT_EQ(ParseError({"--layers"}), "missing value after --layers");
  EXPECT_EQ(ParseError({"--bogus", "1"}), "unknown flag '--bogus'");
  EXPECT_EQ(ParseError({"stray"}), "unexpected argument 'stray'");
  EXPECT_EQ(ParseError({"--layers", "0"}), "--layers wants an integer in [1, 64], got '0'");
  EXPECT_EQ(ParseError({"--batch", "two"}), "--batch wants an integer in [1, 4096], got 'two'");
  EXPECT_EQ(ParseError({"--steps", "1.5"}), "--steps wants an integer in [1, 100000000], got '1.5'");
  EXPECT_EQ(ParseError({"--lr", "-1"}), "--lr wants a number in [1e-12, 10], got '-1'");
  EXPECT_EQ(ParseError({"--lr", "nan"}), "--lr wants a number in [1e-12, 10], got 'nan'");
  EXPECT_EQ(ParseError({"--clip", "x"}), "--clip wants a number in [0, 1e+12], got 'x'");
  EXPECT_EQ(ParseError({"--seed", "-3"}), "--seed wants a non-negative integer, got '-3'");
  EXPECT_EQ(ParseError({"--threads", "0"}), "--threads wants an integer in [1, 1024], got '0'");
  EXPECT_EQ(ParseError({"--dtype", "f16"}), "--dtype wants f32 or bf16, got 'f16'");
  EXPECT_EQ(ParseError({"--embd", "100", "--heads", "3"}), "--embd 100 must be a multiple of --heads 3");
  EXPECT_EQ(ParseError({"--seq", "2048"}), "--seq 2048 exceeds --positions 1024");
  EXPECT_EQ(ParseError({"--lr", "1e-3", "--min-lr", "1e-2"}), "--min-lr must not exceed --lr");
  EXPECT_EQ(ParseError({"--steps", "10", "--warmup", "11"}), "--warmup 11 exceeds --steps 10");
}

class TrainRun : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tw_train_run_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  // A small model that trains in a blink: 1 layer, 16 wide, 16 tokens a window.
  TrainOptions Small(const std::string& corpus, const std::string& out) {
    return TrainOptions{.corpus = corpus, .out_dir = dir_ + "/" + out, .layers = 1, .heads = 2, .embd = 16,
                        .positions = 32, .seq = 16, .batch = 2, .steps = 3, .warmup = 1, .threads = 1,
                        .val_every = 2, .val_windows = 3};
  }
  static std::string Slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static std::string Fortunes(int n) {
    std::string text;
    for (int i = 0; i < n; ++i) text += "Fortune number " + std::to_string(i) + " says: bugs hide in edge cases.\n%\n";
    return text;
  }
  std::string dir_;
};

TEST_F(TrainRun, BadCorporaAreRefusedBeforeTraining) {
  Status st = RunTraining(Small(dir_ + "/missing.txt", "m"), nullptr);
  EXPECT_NE(st.message().find("missing.txt"), std::string::npos) << st.message();
  st = RunTraining(Small(Write("empty.txt", ""), "m"), nullptr);
  EXPECT_NE(st.message().find("empty or blank"), std::string::npos) << st.message();
  st = RunTraining(Small(Write("short.txt", "Too short for a window."), "m"), nullptr);
  EXPECT_NE(st.message().find("fewer than one window of --seq + 1 = 17"), std::string::npos) << st.message();
  // Enough training text, too little held out for one validation window.
  st = RunTraining(Small(Write("few.txt", Fortunes(12)), "m"), nullptr);
  EXPECT_NE(st.message().find("validation tokens"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("--val-every 0"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/m")) << "nothing written";
  // An --out that cannot be made fails before the first step.
  TrainOptions bad_out = Small(Write("fortunes.txt", Fortunes(60)), "m");
  bad_out.out_dir = "/proc/no/such/dir";
  bad_out.steps = 1000000;
  st = RunTraining(bad_out, nullptr);
  EXPECT_NE(st.message().find("--out: mkdir('/proc/no')"), std::string::npos) << st.message();
  TrainOptions no_val = Small(dir_ + "/few.txt", "m");
  no_val.val_every = 0;
  EXPECT_TRUE(RunTraining(no_val, nullptr).ok());
}

TEST_F(TrainRun, WritesTheCheckpointAndTheLogAndIsTheSameOnAnyThreadCount) {
  const std::string corpus = Write("fortunes.txt", Fortunes(60));
  TrainOptions one = Small(corpus, "one");
  one.log_path = dir_ + "/log.csv";
  one.checkpoint_every = 2;
  ASSERT_TRUE(RunTraining(one, nullptr).ok());
  TrainOptions three = Small(corpus, "three");
  three.threads = 3;
  ASSERT_TRUE(RunTraining(three, nullptr).ok());
  std::unique_ptr<model::Gpt2Model> m;
  Status st = model::LoadGpt2(one.out_dir, &m);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(m->config().n_embd, 16);
  EXPECT_EQ(m->config().vocab_size, 50257);
  for (const char* f : {"vocab.json", "merges.txt", "config.json"}) {
    EXPECT_TRUE(std::filesystem::exists(one.out_dir + "/" + f)) << f;
  }
  const std::string a = Slurp(one.out_dir + "/model.safetensors"), b = Slurp(three.out_dir + "/model.safetensors");
  ASSERT_GT(a.size(), 50257u * 16 * 4);
  EXPECT_TRUE(a == b) << "1 and 3 threads: the same bytes";
  // step,train_loss,val_loss,lr,grad_norm,tokens,elapsed_s: val at steps 2 and 3 (the last).
  std::istringstream log(Slurp(one.log_path));
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(log, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "step,train_loss,val_loss,lr,grad_norm,tokens,elapsed_s");
  EXPECT_EQ(lines[1].rfind("1,", 0), 0u);
  EXPECT_NE(lines[1].find(",,"), std::string::npos) << "no validation at step 1: " << lines[1];
  EXPECT_EQ(lines[2].find(",,"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find(",96,"), std::string::npos) << "3 steps x 2 windows x 16 tokens: " << lines[3];
}

}  // namespace
}  // namespace tw::train
