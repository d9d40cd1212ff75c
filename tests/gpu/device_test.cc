// kernels/device.h on the device: its error paths release what they made.
// The failures are injected by the CPU emulator (tests/cudaemu), whose
// counters of live events, graphs and graph instances show a leak, so these
// cases run in the emulator's build only (make test-gpu-emu).
#include "kernels/device.h"

#include <gtest/gtest.h>

#include <string>

#include "gpu/gpu_test_util.h"

#if defined(TW_CUDA_EMULATOR)
#include <cuda_runtime.h>

namespace tw::kernels {
namespace {

// A call that failed names the runtime call, and nothing it made is left.
void ExpectNoLeak(const cudaemu::Counters& before, const char* what) {
  const cudaemu::Counters now = cudaemu::GetCounters();
  EXPECT_EQ(now.live_events, before.live_events) << what;
  EXPECT_EQ(now.live_graphs, before.live_graphs) << what;
  EXPECT_EQ(now.live_graph_execs, before.live_graph_execs) << what;
  EXPECT_EQ(now.live_device_allocations, before.live_device_allocations) << what;
  EXPECT_EQ(now.live_streams, before.live_streams) << what;
}

TEST(DeviceCalls, EventPairCreateLeavesNothingWhenItsSecondEventFails) {
  const cudaemu::Counters before = cudaemu::GetCounters();
  cudaemu::FailNext("cudaEventCreate", cudaErrorMemoryAllocation, /*skip=*/1);
  EventPair ev;
  const Status s = EventPairCreate(&ev);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cudaEventCreate"), std::string::npos) << s.message();
  EXPECT_EQ(ev.start, nullptr);
  EXPECT_EQ(ev.stop, nullptr);
  ExpectNoLeak(before, "EventPairCreate");
}

TEST(DeviceCalls, MeasureCeilingsReleasesItsEventsAndBuffersOnEveryFailure) {
  struct Case {
    const char* api;
    int skip;
  };
  // Its second event, its first buffer, the first record of the copy loop.
  for (const Case& c : {Case{"cudaEventCreate", 1}, Case{"cudaMalloc", 0}, Case{"cudaEventRecord", 0}}) {
    const cudaemu::Counters before = cudaemu::GetCounters();
    cudaemu::FailNext(c.api, cudaErrorMemoryAllocation, c.skip);
    double gbps = 0, tflops = 0;
    const Status s = MeasureCeilings(&gbps, &tflops);
    EXPECT_FALSE(s.ok()) << c.api;
    EXPECT_NE(s.message().find(c.api), std::string::npos) << s.message();
    (void)cudaGetLastError();
    ExpectNoLeak(before, c.api);
  }
}

TEST(DeviceCalls, GraphEndReleasesTheGraphWhenCaptureOrInstantiationFails) {
  void* stream = nullptr;
  TW_ASSERT_OK(StreamCreate(&stream));
  DeviceBuffer buf;
  TW_ASSERT_OK(buf.Allocate(64));
  struct Case {
    const char* what;
    const char* api;  // injected, or null: the capture is invalidated by a sync inside it
  };
  for (const Case& c : {Case{"instantiation fails", "cudaGraphInstantiate"}, Case{"capture fails", "cudaStreamEndCapture"},
                        Case{"capture invalidated", nullptr}}) {
    const cudaemu::Counters before = cudaemu::GetCounters();
    TW_ASSERT_OK(GraphBegin(stream));
    TW_ASSERT_OK(Memset(buf.get(), 0, 64, stream));
    if (c.api != nullptr) {
      cudaemu::FailNext(c.api, cudaErrorMemoryAllocation);
    } else {
      EXPECT_FALSE(StreamSync(stream).ok());  // not allowed while capturing: invalidates it
    }
    void* exec = reinterpret_cast<void*>(1);
    const Status s = GraphEnd(stream, &exec);
    EXPECT_FALSE(s.ok()) << c.what;
    EXPECT_EQ(exec, nullptr) << c.what;
    (void)cudaGetLastError();
    ExpectNoLeak(before, c.what);
  }
  TW_ASSERT_OK(StreamDestroy(stream));
}

}  // namespace
}  // namespace tw::kernels
#endif  // TW_CUDA_EMULATOR
