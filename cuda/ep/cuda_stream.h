// The CUDA side of the device layer: a stream bound to one device, the facts about that device
// the primitives size their launches by, and the error check every CUDA call goes through.
#pragma once

#include <cuda_runtime.h>

#include "oneflite/common/error.h"
#include "oneflite/ep/stream.h"

// Throws oneflite::RuntimeError carrying CUDA's own error string and the failing call.
#define ONEFLITE_CUDA_CHECK(expr)                                                      \
  do {                                                                                 \
    const cudaError_t oneflite_cuda_status = (expr);                                   \
    if (oneflite_cuda_status != cudaSuccess) {                                         \
      ONEFLITE_THROW(::oneflite::RuntimeError, "CUDA error: ",                         \
                     cudaGetErrorString(oneflite_cuda_status), " (",                   \
                     cudaGetErrorName(oneflite_cuda_status), ") in `" #expr "` at ",   \
                     __FILE__, ":", __LINE__);                                         \
    }                                                                                  \
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
  int clock_khz = 0;  // the SM clock's peak rate
  int major = 0;
  int minor = 0;
};

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
