// The help texts cannot drift from the flags the parsers accept:
//   - every flag `tokenwire generate --help` names is accepted, and every
//     flag generate accepts is in its help and in `tokenwire --help`;
//   - every flag `tokenwire serve --help` names is accepted, and every flag
//     src/app/config.cc spells out (as the parser compares names) is in it;
//   - generate, like serve, runs without --model (random tiny weights).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app/config.h"
#include "app/generate_cli.h"
#include "support/source_text.h"

namespace tw::app {
namespace {

using ::tw::testing::FlagNames;
using ::tw::testing::ReadSourceFile;

// Parses {flag, value, "a prompt"} with `parse`; returns the error ("" if none).
template <typename Parse>
std::string TryFlag(const std::string& flag, const std::string& value, Parse parse) {
  std::vector<std::string> args = {"tokenwire", "cmd", flag, value, "a prompt"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  Status s = parse(static_cast<int>(argv.size()), argv.data());
  return s.ok() ? "" : s.message();
}

// True if `message` refuses `flag` itself as unknown (a value-less flag such
// as --lab leaves "1" behind, which is refused as a prompt or a flag: fine).
bool RefusesAsUnknown(const std::string& message, const std::string& flag) {
  return message.find("unknown flag '" + flag + "'") != std::string::npos;
}

TEST(HelpTexts, GenerateHelpNamesExactlyTheFlagsGenerateAccepts) {
  const std::vector<std::string> accepted = GenerateFlagNames();
  ASSERT_GE(accepted.size(), 9u);
  const std::set<std::string> in_help = FlagNames(GenerateUsage());
  EXPECT_EQ(in_help, std::set<std::string>(accepted.begin(), accepted.end())) << GenerateUsage();
  for (const std::string& flag : in_help) {
    const std::string err = TryFlag(flag, "1", [](int argc, char** argv) {
      GenerateFlags f;
      return ParseGenerateFlags(argc, argv, 2, &f);
    });
    EXPECT_FALSE(RefusesAsUnknown(err, flag)) << flag << ": " << err;
  }
  EXPECT_TRUE(RefusesAsUnknown(TryFlag("--no-such-flag", "1",
                                       [](int argc, char** argv) {
                                         GenerateFlags f;
                                         return ParseGenerateFlags(argc, argv, 2, &f);
                                       }),
                               "--no-such-flag"));
}

TEST(HelpTexts, ProgramHelpNamesEveryGenerateFlag) {
  const std::set<std::string> in_help = FlagNames(ProgramUsage());
  for (const std::string& flag : GenerateFlagNames()) {
    EXPECT_TRUE(in_help.count(flag)) << flag << " is missing from `tokenwire --help`:\n" << ProgramUsage();
  }
  EXPECT_NE(ProgramUsage().find("tokenwire serve --help"), std::string::npos);
  EXPECT_NE(ProgramUsage().find("tokenwire generate --help"), std::string::npos);
}

TEST(HelpTexts, GenerateRunsWithoutModelLikeServe) {
  // Neither command requires --model: both default to the built-in model.
  GenerateFlags f;
  std::vector<std::string> args = {"tokenwire", "generate", "Hello"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  Status s = ParseGenerateFlags(static_cast<int>(argv.size()), argv.data(), 2, &f);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(f.model_dir, "");
  EXPECT_NE(GenerateUsage().find("default: the built-in model"), std::string::npos);
  EXPECT_NE(ServeHelp().find("default: the built-in model"), std::string::npos);

  // And it runs: on the built-in model silently, on --model random-tiny
  // saying on stderr that the weights are random.
  for (const bool random : {false, true}) {
    std::vector<std::string> run = {"tokenwire", "generate", "--max-new-tokens", "4", "--threads", "1"};
    if (random) run.insert(run.end(), {"--model", "random-tiny"});
    run.push_back("Hello");
    std::vector<char*> run_argv;
    for (auto& a : run) run_argv.push_back(a.data());
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    const int rc = GenerateMain(static_cast<int>(run_argv.size()), run_argv.data(), 2);
    const std::string out = ::testing::internal::GetCapturedStdout();
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, 0) << err;
    EXPECT_EQ(err.find("random weights") != std::string::npos, random) << err;
    EXPECT_NE(err.find("[1 prompt tokens, "), std::string::npos) << err;
    // Random weights write all 4 tokens; the trained model may end a
    // fortune (end of text) sooner.
    if (random) {
      EXPECT_NE(err.find("4 generated, finish_reason=length]"), std::string::npos) << err;
      EXPECT_FALSE(out.empty());
    }
  }
}

TEST(HelpTexts, ServeHelpNamesOnlyFlagsServeAccepts) {
  const std::set<std::string> in_help = FlagNames(ServeHelp());
  ASSERT_GT(in_help.size(), 40u);
  for (const std::string& flag : in_help) {
    // Values that pass where a value is checked; what matters is that the
    // name is known (a range error is fine here).
    const std::string err = TryFlag(flag, flag == "--backend" ? "mock" : "1", [](int argc, char** argv) {
      Config cfg;
      return ParseServeFlags(argc - 1, argv, 2, &cfg);  // without the prompt
    });
    EXPECT_FALSE(RefusesAsUnknown(err, flag)) << flag << ": " << err;
  }
  EXPECT_TRUE(RefusesAsUnknown(TryFlag("--no-such-flag", "1",
                                       [](int argc, char** argv) {
                                         Config cfg;
                                         return ParseServeFlags(argc - 1, argv, 2, &cfg);
                                       }),
                               "--no-such-flag"));
}

TEST(HelpTexts, EveryFlagServesParserKnowsIsInServeHelp) {
  // The serve parser compares names with string literals ("--model", and
  // the kIntFlags table): every "--name" literal in its source must be in
  // the help. (Error messages quote flags too; those are real flags.)
  const std::string source = ReadSourceFile("src/app/config.cc");
  std::set<std::string> literals;
  for (size_t i = source.find("\"--"); i != std::string::npos; i = source.find("\"--", i + 1)) {
    size_t j = i + 3;
    while (j < source.size() && ((source[j] >= 'a' && source[j] <= 'z') || (source[j] >= '0' && source[j] <= '9') ||
                                 source[j] == '-')) {
      ++j;
    }
    if (j > i + 3) literals.insert(source.substr(i + 1, j - i - 1));
  }
  ASSERT_GT(literals.size(), 40u);
  const std::set<std::string> in_help = FlagNames(ServeHelp());
  for (const std::string& flag : literals) {
    if (RemovedFlag(flag) != nullptr) {  // refused with a reason, never offered
      EXPECT_FALSE(in_help.count(flag)) << flag << " was removed but is still in `tokenwire serve --help`";
      continue;
    }
    EXPECT_TRUE(in_help.count(flag)) << flag << " is in src/app/config.cc but not in `tokenwire serve --help`";
  }
  EXPECT_NE(RemovedFlag("--prefill-batch-tokens"), nullptr);
  EXPECT_EQ(RemovedFlag("--max-num-batched-tokens"), nullptr);
}

}  // namespace
}  // namespace tw::app
