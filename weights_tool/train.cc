// weights_tool train: flags (train::ParseTrainFlags) -> train::RunTraining.
#include <cstdio>

#include "train/train_loop.h"
#include "commands.h"  // weights_tool/ is not on the include path

namespace tw::weights_tool {

int Train(int argc, char** argv) {
  const char* usage = train::TrainUsage();
  train::TrainOptions options;
  bool help = false;
  Status st = train::ParseTrainFlags(argc, argv, &options, &help);
  if (help) {
    std::fputs(usage, stdout);
    return 0;
  }
  if (!st.ok()) {
    std::fprintf(stderr, "weights_tool train: %s\n\n%s", st.message().c_str(), usage);
    return 2;
  }
  st = train::RunTraining(options, stdout);
  if (!st.ok()) {
    std::fprintf(stderr, "weights_tool train: %s\n", st.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace tw::weights_tool
