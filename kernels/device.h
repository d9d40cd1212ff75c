// The CUDA runtime behind plain C++: device memory, copies, streams, events
// and graphs as opaque handles, so that src/cuda, the GPU tests and the
// kernel launchers' callers never include a CUDA header.
//
// Every call returns tw::Status naming the runtime call and its error
// string. Streams and graphs are `void*` (a cudaStream_t / cudaGraphExec_t
// underneath); nullptr is the default stream.
//
// Threads: the runtime's rules (a stream is used by one thread at a time
// here). Memory: what the caller asks for, no hidden pools. Never: exits or
// throws on a CUDA error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace tw::kernels {

// Devices visible to this process; 0 (and *why filled) when there is no
// usable device or driver (e.g. "CUDA driver version is insufficient").
int DeviceCount(std::string* why);
// "NVIDIA H200, compute 9.0, 132 SMs, 139.8 GiB, driver 13.0, runtime 13.0"
std::string DeviceSummary();
// Multiprocessors of the current device (0 on error).
int MultiprocessorCount();

Status Malloc(void** ptr, size_t bytes);
Status Free(void* ptr);
Status MallocHost(void** ptr, size_t bytes);  // pinned host memory
Status FreeHost(void* ptr);
Status Memset(void* dst, int value, size_t bytes, void* stream = nullptr);
Status CopyToDevice(void* dst, const void* src, size_t bytes, void* stream = nullptr);
Status CopyToHost(void* dst, const void* src, size_t bytes, void* stream = nullptr);
Status CopyOnDevice(void* dst, const void* src, size_t bytes, void* stream = nullptr);
Status StreamCreate(void** stream);
Status StreamDestroy(void* stream);
Status StreamSync(void* stream);
Status DeviceSync();
// The last launch error (cudaGetLastError), as a Status naming `what`.
Status LastError(const char* what);

// Graphs: capture every launch on `stream` between Begin and End into an
// executable graph; Launch replays it on the same stream. On an error End
// leaves *exec null and nothing behind.
Status GraphBegin(void* stream);
Status GraphEnd(void* stream, void** exec);
Status GraphLaunch(void* exec, void* stream);
Status GraphDestroy(void* exec);

// Timing with device events: Start/Stop record on `stream`; ElapsedMs
// synchronizes on the stop event. EventPairCreate makes both events or
// (on an error) neither.
struct EventPair {
  void* start = nullptr;
  void* stop = nullptr;
};
Status EventPairCreate(EventPair* ev);
Status EventPairDestroy(EventPair* ev);
Status EventRecord(void* event, void* stream);
Status ElapsedMs(const EventPair& ev, float* ms);

// The device's ceilings, measured now (the floors of the benches): a large
// device-to-device copy (bytes read + written per second) and an fp32 FMA
// loop over every SM (2 flops per FMA). Each the best of a few timed runs.
Status MeasureCeilings(double* copy_gbps, double* fp32_tflops);

// A device buffer owned by a C++ object (freed on destruction).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { Reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) { Reset(); ptr_ = o.ptr_; bytes_ = o.bytes_; o.ptr_ = nullptr; o.bytes_ = 0; }
    return *this;
  }
  Status Allocate(size_t bytes) {
    Reset();
    Status s = Malloc(&ptr_, bytes);
    if (s.ok()) bytes_ = bytes;
    return s;
  }
  void Reset() {
    if (ptr_ != nullptr) Free(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* get() const { return ptr_; }
  template <typename T> T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace tw::kernels
