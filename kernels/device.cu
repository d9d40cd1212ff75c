// kernels/device.h over the CUDA runtime.
#include "kernels/device.h"

#include <cuda_runtime.h>

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
  *exec = nullptr;
  cudaGraph_t g = nullptr;
  Status s = CudaStatus(cudaStreamEndCapture(kernels::AsStream(stream), &g), "cudaStreamEndCapture");
  if (!s.ok()) return s;
  cudaGraphExec_t e = nullptr;
  s = CudaStatus(cudaGraphInstantiate(&e, g, 0), "cudaGraphInstantiate");
  cudaGraphDestroy(g);
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
  cudaEvent_t a = nullptr, b = nullptr;
  Status s = CudaStatus(cudaEventCreate(&a), "cudaEventCreate");
  if (s.ok()) s = CudaStatus(cudaEventCreate(&b), "cudaEventCreate");
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

}  // namespace tw::kernels
