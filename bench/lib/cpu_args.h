// The kernel levels and weight formats a CPU bench runs, from its --isa and
// --weights lists ("avx512,avx2", "f32,bf16,q8"). Shared by
// bench/cpu_model's programs.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "cpu/kernels.h"

namespace tw::bench {

// "a,b,c" -> {"a", "b", "c"} (an empty list gives one empty name).
std::vector<std::string> SplitList(const std::string& list);

// Each name a level this CPU and build support (cpu::IsaSupported), in the
// list's order; else an error naming the flag and the name.
Status ParseIsaList(const std::string& list, std::vector<cpu::Isa>* out);

// Each name a weight format (cpu::ParseWeightFormat), in the list's order;
// else an error naming the flag.
Status ParseWeightList(const std::string& list, std::vector<cpu::WeightFormat>* out);

}  // namespace tw::bench
