// The CPU "reference" backend for permute: a strided gather into a contiguous output.
#include <cstring>
#include <vector>

#include "oneflite/common/data_type_dispatch.h"
#include "oneflite/ep/primitive/permute.h"

namespace oneflite::ep::primitive::cpu {

namespace {

// One element of src at `offset` elements. The source may be a view that starts at any byte (an
// unaligned NumPy array): a memcpy loads it without assuming alignment, and compiles to a plain
// load where the target allows unaligned ones.
template <typename Word>
Word LoadElement(const unsigned char* src, int64_t offset) {
  Word value;
  std::memcpy(&value, src + offset * static_cast<int64_t>(sizeof(Word)), sizeof(Word));
  return value;
}

// Walks dst in order with an odometer over its dims; the source offset moves by the permuted
// source stride of whichever dim ticks, so no index is ever divided. dst is fresh memory, aligned.
template <typename Word>
void PermuteCopy(int ndim, const int64_t* src_dims, const int64_t* src_strides,
                 const unsigned char* src, const int* perm, Word* dst) {
  std::vector<int64_t> dims(ndim), strides(ndim), index(ndim, 0);
  int64_t count = 1;
  for (int i = 0; i < ndim; ++i) {
    dims[i] = src_dims[perm[i]];
    strides[i] = src_strides[perm[i]];
    count *= dims[i];
  }
  if (count == 0) { return; }
  if (ndim == 0) {
    dst[0] = LoadElement<Word>(src, 0);
    return;
  }
  const int last = ndim - 1;
  const int64_t inner = dims[last];
  const int64_t inner_stride = strides[last];
  int64_t src_offset = 0;
  for (int64_t done = 0; done < count; done += inner) {
    for (int64_t j = 0; j < inner; ++j) {
      dst[done + j] = LoadElement<Word>(src, src_offset + j * inner_stride);
    }
    // Tick the odometer over the outer dims.
    for (int d = last - 1; d >= 0; --d) {
      src_offset += strides[d];
      if (++index[d] < dims[d]) { break; }
      src_offset -= strides[d] * dims[d];
      index[d] = 0;
    }
  }
}

template <typename Word>
class PermuteImpl final : public Permute {
 public:
  void Launch(Stream* /*stream*/, int ndim, const int64_t* src_dims, const int64_t* src_strides,
              const void* src, const int* perm, void* dst) override {
    PermuteCopy<Word>(ndim, src_dims, src_strides, static_cast<const unsigned char*>(src), perm,
                      static_cast<Word*>(dst));
  }
};

// Permute only moves bytes, so it is instantiated per element width, not per dtype.
class ReferencePermuteFactory final : public PermuteFactory {
 public:
  std::unique_ptr<Permute> New(DataType dtype) override {
    return VisitElementWidth(SizeOf(dtype), [](auto word) -> std::unique_ptr<Permute> {
      return std::make_unique<PermuteImpl<decltype(word)>>();
    });
  }
};

ONEFLITE_REGISTER_PRIMITIVE(PermuteFactory, DeviceType::kCPU, "reference", 0,
                            ReferencePermuteFactory, DataType::kFloat16, DataType::kBFloat16,
                            DataType::kFloat32, DataType::kFloat64, DataType::kInt32,
                            DataType::kInt64, DataType::kBool);

}  // namespace

}  // namespace oneflite::ep::primitive::cpu
