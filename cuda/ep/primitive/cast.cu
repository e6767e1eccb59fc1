// The CUDA backend for cast. Conversions go through the same widened types as the CPU reference
// (double for floats, int64 for integers), so both backends give bit-identical results.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "ep/cuda_element_types.h"
#include "ep/cuda_stream.h"
#include "oneflite/ep/primitive/cast.h"

namespace oneflite::ep::primitive {

namespace {

constexpr int kBlockSize = 256;

template <typename From>
__device__ __forceinline__ auto Widen(From v) {
  if constexpr (std::is_same_v<From, __half>) {
    return static_cast<double>(__half2float(v));
  } else if constexpr (std::is_same_v<From, __nv_bfloat16>) {
    return static_cast<double>(__bfloat162float(v));
  } else if constexpr (std::is_integral_v<From>) {
    return static_cast<int64_t>(v);
  } else {
    return static_cast<double>(v);
  }
}

// Float to integer: the GPU's conversion truncates and saturates, but NaN must become 0, which
// it does not guarantee, so NaN is handled first. Doubles narrow to 16 bits in one rounding.
template <typename To, typename Wide>
__device__ __forceinline__ To Narrow(Wide v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != 0;
  } else if constexpr (std::is_same_v<To, __half>) {
    return __double2half(static_cast<double>(v));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return __double2bfloat16(static_cast<double>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<Wide>) {
    return isnan(v) ? To(0) : static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <typename From, typename To>
__global__ void CastKernel(int64_t n, const From* __restrict__ x, To* __restrict__ y) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[i] = Narrow<To>(Widen(x[i]));
  }
}

template <typename From, typename To>
class CastImpl final : public Cast {
 public:
  void Launch(Stream* stream, const void* x, void* y, int64_t n) override {
    if (n == 0) { return; }
    auto* cuda = static_cast<CudaStream*>(stream);
    const int64_t blocks_needed = (n + kBlockSize - 1) / kBlockSize;
    const int max_blocks = cuda->device_info().sm_count * (2048 / kBlockSize) * 4;
    const int grid = static_cast<int>(std::min<int64_t>(blocks_needed, max_blocks));
    CastKernel<From, To><<<grid, kBlockSize, 0, cuda->cuda_stream()>>>(
        n, static_cast<const From*>(x), static_cast<To*>(y));
    ONEFLITE_CUDA_CHECK_LAUNCH();
  }
};

class CudaCastFactory final : public CastFactory {
 public:
  std::unique_ptr<Cast> New(DataType from, DataType to) override {
    return VisitDataType<CudaElementTypes>(from, [&](auto from_tag) {
      return VisitDataType<CudaElementTypes>(to, [](auto to_tag) -> std::unique_ptr<Cast> {
        return std::make_unique<CastImpl<decltype(from_tag), decltype(to_tag)>>();
      });
    });
  }
};

ONEFLITE_REGISTER_PRIMITIVE(CastFactory, DeviceType::kCUDA, "cuda", 100, CudaCastFactory,
                            DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                            DataType::kFloat64, DataType::kInt32, DataType::kInt64,
                            DataType::kBool);

}  // namespace

}  // namespace oneflite::ep::primitive
