#include "ep/cuda_stream.h"

namespace oneflite::ep {

CudaStream::CudaStream(int index) {
  CudaDeviceGuard guard(index);
  info_ = CudaDeviceInfo::Read(index);
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
