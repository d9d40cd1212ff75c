// kernels/device.h over the CUDA runtime.
#include "kernels/device.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>

#include "kernels/common.cuh"

namespace tw::kernels {

int DeviceCount(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    cudaGetLastError();  // clear the sticky error
    return 0;
  }
  if (n == 0 && why) *why = "cudaGetDeviceCount: no CUDA device";
  return n;
}

std::string DeviceSummary() {
  int dev = 0;
  cudaDeviceProp p{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
    cudaGetLastError();
    return "no device";
  }
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  char buf[768];
  std::snprintf(buf, sizeof(buf), "%s, compute %d.%d, %d SMs, %.1f GiB, L2 %d MiB, driver %d.%d, runtime %d.%d",
                p.name, p.major, p.minor, p.multiProcessorCount,
                static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024 * 1024), p.l2CacheSize >> 20,
                drv / 1000, (drv % 1000) / 10, rt / 1000, (rt % 1000) / 10);
  return buf;
}

int MultiprocessorCount() {
  int dev = 0, n = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

Status Malloc(void** ptr, size_t bytes) {
  *ptr = nullptr;
  return CudaStatus(cudaMalloc(ptr, bytes), ("cudaMalloc(" + std::to_string(bytes) + " bytes)").c_str());
}
Status Free(void* ptr) { return CudaStatus(cudaFree(ptr), "cudaFree"); }
Status MallocHost(void** ptr, size_t bytes) {
  *ptr = nullptr;
  return CudaStatus(cudaMallocHost(ptr, bytes), ("cudaMallocHost(" + std::to_string(bytes) + " bytes)").c_str());
}
Status FreeHost(void* ptr) { return CudaStatus(cudaFreeHost(ptr), "cudaFreeHost"); }
Status Memset(void* dst, int value, size_t bytes, void* stream) {
  return CudaStatus(cudaMemsetAsync(dst, value, bytes, kernels::AsStream(stream)), "cudaMemsetAsync");
}
Status CopyToDevice(void* dst, const void* src, size_t bytes, void* stream) {
  return CudaStatus(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, kernels::AsStream(stream)),
                    "cudaMemcpyAsync(host to device)");
}
Status CopyToHost(void* dst, const void* src, size_t bytes, void* stream) {
  return CudaStatus(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, kernels::AsStream(stream)),
                    "cudaMemcpyAsync(device to host)");
}
Status CopyOnDevice(void* dst, const void* src, size_t bytes, void* stream) {
  return CudaStatus(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, kernels::AsStream(stream)),
                    "cudaMemcpyAsync(device to device)");
}
Status StreamCreate(void** stream) {
  cudaStream_t s = nullptr;
  Status st = CudaStatus(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  *stream = s;
  return st;
}
Status StreamDestroy(void* stream) {
  return CudaStatus(cudaStreamDestroy(kernels::AsStream(stream)), "cudaStreamDestroy");
}
Status StreamSync(void* stream) {
  return CudaStatus(cudaStreamSynchronize(kernels::AsStream(stream)), "cudaStreamSynchronize");
}
Status DeviceSync() { return CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }
Status LastError(const char* what) { return CudaStatus(cudaGetLastError(), what); }

Status GraphBegin(void* stream) {
  return CudaStatus(cudaStreamBeginCapture(kernels::AsStream(stream), cudaStreamCaptureModeThreadLocal),
                    "cudaStreamBeginCapture");
}
Status GraphEnd(void* stream, void** exec) {
  // Every path destroys what the runtime handed back: the graph always (the
  // instance does not need it), the instance unless it is returned.
  *exec = nullptr;
  cudaGraph_t g = nullptr;
  Status s = CudaStatus(cudaStreamEndCapture(kernels::AsStream(stream), &g), "cudaStreamEndCapture");
  cudaGraphExec_t e = nullptr;
  if (s.ok()) s = CudaStatus(cudaGraphInstantiate(&e, g, 0), "cudaGraphInstantiate");
  if (g != nullptr) cudaGraphDestroy(g);
  if (!s.ok()) {
    if (e != nullptr) cudaGraphExecDestroy(e);
    return s;
  }
  *exec = e;
  return s;
}
Status GraphLaunch(void* exec, void* stream) {
  return CudaStatus(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec), kernels::AsStream(stream)),
                    "cudaGraphLaunch");
}
Status GraphDestroy(void* exec) {
  return CudaStatus(cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec)), "cudaGraphExecDestroy");
}

Status EventPairCreate(EventPair* ev) {
  ev->start = ev->stop = nullptr;
  cudaEvent_t a = nullptr, b = nullptr;
  Status s = CudaStatus(cudaEventCreate(&a), "cudaEventCreate");
  if (s.ok()) s = CudaStatus(cudaEventCreate(&b), "cudaEventCreate");
  if (!s.ok()) {  // both or neither
    if (a != nullptr) cudaEventDestroy(a);
    return s;
  }
  ev->start = a;
  ev->stop = b;
  return s;
}
Status EventPairDestroy(EventPair* ev) {
  if (ev->start) cudaEventDestroy(static_cast<cudaEvent_t>(ev->start));
  if (ev->stop) cudaEventDestroy(static_cast<cudaEvent_t>(ev->stop));
  ev->start = ev->stop = nullptr;
  return Status::Ok();
}
Status EventRecord(void* event, void* stream) {
  return CudaStatus(cudaEventRecord(static_cast<cudaEvent_t>(event), kernels::AsStream(stream)),
                    "cudaEventRecord");
}
Status ElapsedMs(const EventPair& ev, float* ms) {
  Status s = CudaStatus(cudaEventSynchronize(static_cast<cudaEvent_t>(ev.stop)), "cudaEventSynchronize");
  if (!s.ok()) return s;
  return CudaStatus(cudaEventElapsedTime(ms, static_cast<cudaEvent_t>(ev.start),
                                         static_cast<cudaEvent_t>(ev.stop)),
                    "cudaEventElapsedTime");
}

namespace {

__global__ void FmaLoop(float* out, int iters) {
  float a = threadIdx.x * 1e-3f, b = 1.0000001f, c = 1e-7f;
  float x0 = a, x1 = a + 1, x2 = a + 2, x3 = a + 3, x4 = a + 4, x5 = a + 5, x6 = a + 6, x7 = a + 7;
  for (int i = 0; i < iters; i++) {
    x0 = fmaf(x0, b, c); x1 = fmaf(x1, b, c); x2 = fmaf(x2, b, c); x3 = fmaf(x3, b, c);
    x4 = fmaf(x4, b, c); x5 = fmaf(x5, b, c); x6 = fmaf(x6, b, c); x7 = fmaf(x7, b, c);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}

}  // namespace

Status MeasureCeilings(double* copy_gbps, double* fp32_tflops) {
  // The events and buffers are released on every path (the buffers by
  // their destructors, the events by `release`).
  EventPair ev;
  Status s = EventPairCreate(&ev);
  if (!s.ok()) return s;
  struct Release {
    EventPair* ev;
    ~Release() { EventPairDestroy(ev); }
  } release{&ev};
  const size_t bytes = size_t{1} << 30;
  DeviceBuffer src, dst;
  s = src.Allocate(bytes);
  if (s.ok()) s = dst.Allocate(bytes);
  if (s.ok()) s = Memset(src.get(), 1, bytes);
  if (!s.ok()) return s;
  float best = 1e30f;
  for (int i = 0; i < 6 && s.ok(); i++) {
    s = EventRecord(ev.start, nullptr);
    if (s.ok()) s = CopyOnDevice(dst.get(), src.get(), bytes);
    if (s.ok()) s = EventRecord(ev.stop, nullptr);
    float ms = 0;
    if (s.ok()) s = ElapsedMs(ev, &ms);
    if (i > 0) best = std::min(best, ms);  // the first run warms up
  }
  if (s.ok()) *copy_gbps = 2.0 * bytes / (best * 1e-3) / 1e9;
  const int blocks = std::max(MultiprocessorCount(), 1) * 8, threads = 256, iters = 1 << 14;
  DeviceBuffer out;
  if (s.ok()) s = out.Allocate(static_cast<size_t>(blocks) * threads * sizeof(float));
  best = 1e30f;
  for (int i = 0; i < 4 && s.ok(); i++) {
    s = EventRecord(ev.start, nullptr);
    if (s.ok()) {
      Launch<FmaLoop>(blocks, threads, 0, nullptr, out.as<float>(), iters);
      s = LastError("FmaLoop launch");
    }
    if (s.ok()) s = EventRecord(ev.stop, nullptr);
    float ms = 0;
    if (s.ok()) s = ElapsedMs(ev, &ms);
    if (i > 0) best = std::min(best, ms);
  }
  if (s.ok()) *fp32_tflops = 2.0 * 8 * iters * static_cast<double>(blocks) * threads / (best * 1e-3) / 1e12;
  return s;
}

}  // namespace tw::kernels
