// The CUDA side of the device layer: a stream bound to one device, the facts about that device
// the primitives size their launches by, and the error check every CUDA call goes through.
#pragma once

#include <cuda_runtime.h>

#include "oneflite/common/error.h"
#include "oneflite/ep/stream.h"

// Throws oneflite::RuntimeError carrying CUDA's own error string and the failing call.
#define ONEFLITE_CUDA_CHECK(expr)                                                              \
  do {                                                                                         \
    const cudaError_t oneflite_cuda_status = (expr);                                           \
    if (oneflite_cuda_status != cudaSuccess) {                                                 \
      ONEFLITE_THROW(::oneflite::RuntimeError,                                                 \
                     "CUDA error: ", cudaGetErrorString(oneflite_cuda_status), " (",           \
                     cudaGetErrorName(oneflite_cuda_status), ") in `" #expr "` at ", __FILE__, \
                     ":", __LINE__);                                                           \
    }                                                                                          \
  } while (0)

// After a kernel launch: catches bad launch configurations without synchronizing.
#define ONEFLITE_CUDA_CHECK_LAUNCH() ONEFLITE_CUDA_CHECK(cudaGetLastError())

namespace oneflite::ep {

// What launch heuristics need to know about a device, read once when its stream is made.
struct CudaDeviceInfo {
  int index = 0;
  int sm_count = 0;
  int max_threads_per_sm = 0;
  int max_threads_per_block = 0;
  int max_shared_memory_per_block = 0;        // the default limit (48 KiB)
  int max_shared_memory_per_block_optin = 0;  // the opt-in limit (about 227 KiB on Hopper)
  int max_shared_memory_per_sm = 0;
  int l2_cache_bytes = 0;
  int clock_khz = 0;         // the SM clock's peak rate
  int memory_clock_khz = 0;  // the DRAM clock's peak rate; data moves on both of its edges
  int memory_bus_bits = 0;   // the DRAM interface's width
  int major = 0;
  int minor = 0;

  // Reads the fields above for device `index` from the runtime. Inline, so that a program that
  // links the CUDA primitives without the framework (tools/softmax_lab.cu) reads them alike.
  static CudaDeviceInfo Read(int index);

  // The DRAM's peak bandwidth, in GB/s: 3352 on an H100 (SXM, HBM3), 4814 on an H200 (HBM3e).
  double PeakDramGBps() const { return 2.0 * memory_clock_khz * 1e3 * memory_bus_bits / 8 / 1e9; }
  // The same shared out over the SMs: 25 on an H100, 36 on an H200. How many bytes an SM must
  // keep in flight to draw its share grows with it, and some launch plans depend on that.
  double PeakDramGBpsPerSm() const { return sm_count > 0 ? PeakDramGBps() / sm_count : 0.0; }
};

inline CudaDeviceInfo CudaDeviceInfo::Read(int index) {
  auto attribute = [index](cudaDeviceAttr attr) {
    int value = 0;
    ONEFLITE_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, index));
    return value;
  };
  CudaDeviceInfo info;
  info.index = index;
  info.sm_count = attribute(cudaDevAttrMultiProcessorCount);
  info.max_threads_per_sm = attribute(cudaDevAttrMaxThreadsPerMultiProcessor);
  info.max_threads_per_block = attribute(cudaDevAttrMaxThreadsPerBlock);
  info.max_shared_memory_per_block = attribute(cudaDevAttrMaxSharedMemoryPerBlock);
  info.max_shared_memory_per_block_optin = attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  info.max_shared_memory_per_sm = attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor);
  info.l2_cache_bytes = attribute(cudaDevAttrL2CacheSize);
  info.clock_khz = attribute(cudaDevAttrClockRate);
  info.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate);
  info.memory_bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth);
  info.major = attribute(cudaDevAttrComputeCapabilityMajor);
  info.minor = attribute(cudaDevAttrComputeCapabilityMinor);
  return info;
}

class CudaStream final : public Stream {
 public:
  // Creates a non-blocking stream on device `index`.
  explicit CudaStream(int index);
  ~CudaStream() override;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  Device device() const override { return Device{DeviceType::kCUDA, info_.index}; }
  void Sync() override;

  cudaStream_t cuda_stream() const { return stream_; }
  const CudaDeviceInfo& device_info() const { return info_; }

 private:
  cudaStream_t stream_ = nullptr;
  CudaDeviceInfo info_;
};

// Makes `device` current for the lifetime of the guard, restoring the previous one after.
class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int device);
  ~CudaDeviceGuard();
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace oneflite::ep
