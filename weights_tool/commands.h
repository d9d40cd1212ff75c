// weights_tool subcommands (see main.cc for the command line). Each returns
// the process exit code: 0 success, 1 the check or the write failed, 2 usage.
// Single-threaded start-up code: prints to stdout/stderr and may exit.
#pragma once

#include <string>

namespace tw::weights_tool {

int Inspect(const std::string& path);
// inspect DIR --weights F: per matrix, bytes and error of weight format F.
int InspectWeights(const std::string& dir, const std::string& format_name);
int Verify(const std::string& dir);
// train FLAGS (argv after "train"): train::RunTraining; train::TrainUsage()
// is printed for --help and after a usage error.
int Train(int argc, char** argv);

}  // namespace tw::weights_tool
