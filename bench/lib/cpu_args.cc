#include "cpu_args.h"

namespace tw::bench {

std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    out.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

Status ParseIsaList(const std::string& list, std::vector<cpu::Isa>* out) {
  out->clear();
  for (const std::string& name : SplitList(list)) {
    bool found = false;
    for (cpu::Isa i : {cpu::Isa::kScalar, cpu::Isa::kAvx2, cpu::Isa::kAvx512}) {
      if (name != cpu::IsaName(i)) continue;
      if (!cpu::IsaSupported(i)) return Status::Error("--isa: " + name + " is not supported here");
      out->push_back(i);
      found = true;
    }
    if (!found) return Status::Error("--isa: '" + name + "' is not scalar, avx2 or avx512");
  }
  return Status::Ok();
}

Status ParseWeightList(const std::string& list, std::vector<cpu::WeightFormat>* out) {
  out->clear();
  for (const std::string& name : SplitList(list)) {
    cpu::WeightFormat f;
    if (Status st = cpu::ParseWeightFormat(name.c_str(), &f); !st.ok()) return Status::Error("--weights: " + st.message());
    out->push_back(f);
  }
  return Status::Ok();
}

}  // namespace tw::bench
