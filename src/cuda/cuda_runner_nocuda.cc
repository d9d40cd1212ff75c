// MakeCudaRunner in a build without CUDA (the default `make`): --backend cuda
// is refused at start-up with the cause.
#include "cuda/cuda_runner.h"

namespace tw::cuda {

Status MakeCudaRunner(std::shared_ptr<const model::Gpt2Model>, const engine::RunnerLimits&,
                      const CudaRunnerOptions&, std::unique_ptr<engine::ModelRunner>*) {
  return Status::Error(
      "--backend cuda: this binary was built without CUDA (build it with `make CUDA=1` on a machine "
      "with the CUDA toolkit; see README, GPU build)");
}

Status CudaLastLogits(engine::ModelRunner*, int, std::vector<float>*) {
  return Status::Error("this build has no CUDA runner");
}

Status CudaStats(const engine::ModelRunner*, CudaRunnerStats*) { return Status::Error("this build has no CUDA runner"); }

}  // namespace tw::cuda
