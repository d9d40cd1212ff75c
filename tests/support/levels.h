// The CPU kernel levels a test can run here, for tests that repeat at every
// level. A level this CPU lacks (or TW_CPU_MAX_ISA caps away) is skipped,
// and the first call says so on stderr, so a log shows what did not run.
#pragma once

#include <cstdio>
#include <vector>

#include "cpu/kernels.h"

namespace tw::testing {

inline std::vector<cpu::Isa> SupportedLevels() {
  static const std::vector<cpu::Isa> levels = [] {
    std::vector<cpu::Isa> out;
    for (cpu::Isa i : {cpu::Isa::kScalar, cpu::Isa::kAvx2, cpu::Isa::kAvx512}) {
      if (cpu::IsaSupported(i)) {
        out.push_back(i);
      } else {
        std::fprintf(stderr, "note: kernel level %s is not available here (CPU or TW_CPU_MAX_ISA): "
                             "its cases are skipped\n", cpu::IsaName(i));
      }
    }
    return out;
  }();
  return levels;
}

}  // namespace tw::testing
