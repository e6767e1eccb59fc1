#include "ep/cuda_stream.h"

namespace oneflite::ep {

namespace {

int Attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  ONEFLITE_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, device));
  return value;
}

}  // namespace

CudaStream::CudaStream(int index) {
  CudaDeviceGuard guard(index);
  info_.index = index;
  info_.sm_count = Attribute(cudaDevAttrMultiProcessorCount, index);
  info_.max_threads_per_sm = Attribute(cudaDevAttrMaxThreadsPerMultiProcessor, index);
  info_.max_threads_per_block = Attribute(cudaDevAttrMaxThreadsPerBlock, index);
  info_.max_shared_memory_per_block = Attribute(cudaDevAttrMaxSharedMemoryPerBlock, index);
  info_.max_shared_memory_per_block_optin = Attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, index);
  info_.max_shared_memory_per_sm = Attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, index);
  info_.l2_cache_bytes = Attribute(cudaDevAttrL2CacheSize, index);
  info_.clock_khz = Attribute(cudaDevAttrClockRate, index);
  info_.major = Attribute(cudaDevAttrComputeCapabilityMajor, index);
  info_.minor = Attribute(cudaDevAttrComputeCapabilityMinor, index);
  ONEFLITE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaStream::~CudaStream() {
  // Never throw from a destructor; at process exit the runtime may already be unloading.
  if (stream_ != nullptr) { cudaStreamDestroy(stream_); }
}

void CudaStream::Sync() { ONEFLITE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

CudaDeviceGuard::CudaDeviceGuard(int device) {
  ONEFLITE_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) {
    ONEFLITE_CUDA_CHECK(cudaSetDevice(device));
  } else {
    previous_ = -1;  // nothing to restore
  }
}

CudaDeviceGuard::~CudaDeviceGuard() {
  if (previous_ >= 0) { cudaSetDevice(previous_); }
}

}  // namespace oneflite::ep
