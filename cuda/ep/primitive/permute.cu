// The CUDA backend for permute: a strided gather into a contiguous output.
#include <algorithm>
#include <cstdint>

#include "ep/cuda_stream.h"
#include "oneflite/common/data_type_dispatch.h"
#include "oneflite/ep/primitive/permute.h"

namespace oneflite::ep::primitive {

namespace {

constexpr int kMaxDims = 16;
constexpr int kBlockSize = 256;

// dst dims and, for each dst dim, the stride of the src dim it came from.
struct PermuteParams {
  int ndim;
  int64_t dims[kMaxDims];
  int64_t src_strides[kMaxDims];
};

// Each thread handles elements i, i + grid, ...: it unravels i over the dst dims (innermost
// first) and sums the matching src strides. IndexT is 32-bit when every index fits, which makes
// the divisions much cheaper.
template <typename Word, typename IndexT>
__global__ void PermuteKernel(PermuteParams params, IndexT count, const Word* __restrict__ src,
                              Word* __restrict__ dst) {
  for (IndexT i = blockIdx.x * static_cast<IndexT>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<IndexT>(gridDim.x) * blockDim.x) {
    IndexT rest = i;
    IndexT offset = 0;
    for (int d = params.ndim - 1; d >= 0; --d) {
      const IndexT dim = static_cast<IndexT>(params.dims[d]);
      offset += (rest % dim) * static_cast<IndexT>(params.src_strides[d]);
      rest /= dim;
    }
    dst[i] = src[offset];
  }
}

template <typename Word>
class PermuteImpl final : public Permute {
 public:
  void Launch(Stream* stream, int ndim, const int64_t* src_dims, const int64_t* src_strides,
              const void* src, const int* perm, void* dst) override {
    // Permute into dst order, dropping size-1 dims and merging neighbours that are contiguous
    // in src as well, so that common cases collapse to a few dims.
    PermuteParams params{};
    int64_t count = 1;
    int64_t max_offset = 0;
    for (int i = 0; i < ndim; ++i) {
      const int64_t dim = src_dims[perm[i]];
      const int64_t stride = src_strides[perm[i]];
      count *= dim;
      max_offset += (dim - 1) * stride;
      if (dim == 1) { continue; }
      if (params.ndim > 0 && params.src_strides[params.ndim - 1] == stride * dim) {
        params.dims[params.ndim - 1] *= dim;
        params.src_strides[params.ndim - 1] = stride;
        continue;
      }
      ONEFLITE_CHECK(params.ndim < kMaxDims, NotImplementedError, "permute on CUDA handles up to ",
                     kMaxDims, " non-mergeable dims");
      params.dims[params.ndim] = dim;
      params.src_strides[params.ndim] = stride;
      ++params.ndim;
    }
    if (count == 0) { return; }
    auto* cuda = static_cast<CudaStream*>(stream);
    const int64_t blocks_needed = (count + kBlockSize - 1) / kBlockSize;
    const int max_blocks = cuda->device_info().sm_count * (2048 / kBlockSize) * 4;
    const int grid = static_cast<int>(std::min<int64_t>(blocks_needed, max_blocks));
    const auto* in = static_cast<const Word*>(src);
    auto* out = static_cast<Word*>(dst);
    if (count < INT32_MAX && max_offset < INT32_MAX) {
      PermuteKernel<Word, uint32_t><<<grid, kBlockSize, 0, cuda->cuda_stream()>>>(
          params, static_cast<uint32_t>(count), in, out);
    } else {
      PermuteKernel<Word, int64_t>
          <<<grid, kBlockSize, 0, cuda->cuda_stream()>>>(params, count, in, out);
    }
    ONEFLITE_CUDA_CHECK_LAUNCH();
  }
};

// Permute moves bytes, so it is instantiated per element width, not per dtype.
class CudaPermuteFactory final : public PermuteFactory {
 public:
  std::unique_ptr<Permute> New(DataType dtype) override {
    return VisitElementWidth(SizeOf(dtype), [](auto word) -> std::unique_ptr<Permute> {
      return std::make_unique<PermuteImpl<decltype(word)>>();
    });
  }
};

ONEFLITE_REGISTER_PRIMITIVE(PermuteFactory, DeviceType::kCUDA, "cuda", 100, CudaPermuteFactory,
                            DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                            DataType::kFloat64, DataType::kInt32, DataType::kInt64,
                            DataType::kBool);

}  // namespace

}  // namespace oneflite::ep::primitive
