// Tensor: a strided view of a Storage, with a dtype.
//
// A Tensor is a cheap handle (one shared pointer); copies share the same view. Views made by
// transpose, permute and as_strided share the storage, as in NumPy and PyTorch. Strides and the
// storage offset are counted in elements.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "oneflite/common/data_type.h"
#include "oneflite/common/device.h"
#include "oneflite/framework/storage.h"

namespace oneflite {

using Shape = std::vector<int64_t>;
using Stride = std::vector<int64_t>;

// Row-major strides of a contiguous tensor of `shape`.
Stride ContiguousStride(const Shape& shape);
// Product of the dims; 1 for a 0-d shape.
int64_t NumElements(const Shape& shape);
// Checks that `shape` has no negative dim and that its element count and its size in bytes
// (at `itemsize` bytes an element) fit in int64; throws ValueError naming `what` otherwise.
// New tensors pass their itemsize; views of outside data (NumPy, DLPack, as_strided), which
// may be broadcast and so span few bytes, pass 1, so that element counts cannot overflow.
void CheckShape(const Shape& shape, size_t itemsize, const char* what);
// `dim` made non-negative for a tensor of `ndim` dims; a 0-d tensor accepts -1 and 0, as if it
// had one dim. Throws IndexError "Dimension out of range (...)" otherwise.
int64_t WrapDim(int64_t dim, int64_t ndim);
// "(2, 3)" for messages.
std::string ShapeToString(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor; defined() is false

  Tensor(std::shared_ptr<Storage> storage, Shape shape, Stride stride, int64_t storage_offset,
         DataType dtype);

  // A new contiguous, uninitialized tensor.
  static Tensor Empty(const Shape& shape, DataType dtype, const Device& device);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl_->shape; }
  const Stride& stride() const { return impl_->stride; }
  int64_t storage_offset() const { return impl_->storage_offset; }
  DataType dtype() const { return impl_->dtype; }
  const Device& device() const { return impl_->storage->device(); }
  const std::shared_ptr<Storage>& storage() const { return impl_->storage; }
  int64_t ndim() const { return static_cast<int64_t>(impl_->shape.size()); }
  int64_t numel() const { return NumElements(impl_->shape); }
  size_t element_size() const { return SizeOf(impl_->dtype); }
  // True when the elements are laid out row-major with no gaps (size-1 dims may have any stride).
  bool is_contiguous() const;

  // Address of element [0, ..., 0].
  void* data_ptr() const;
  // True when data_ptr() is a multiple of the element size, as code that loads whole elements
  // needs. Memory oneflite allocates always is; a view of a NumPy or DLPack buffer may start at
  // any byte.
  bool is_aligned() const;
  // False for memory that must not be written (a read-only NumPy array, a DLPack tensor its
  // producer marked read-only). oneflite never writes its inputs; views it hands out of such
  // memory (NumPy arrays, DLPack capsules) are marked read-only too.
  bool writable() const { return impl_->storage->writable(); }

  // Views sharing this tensor's storage. Dims are already wrapped (non-negative).
  Tensor Permute(const std::vector<int>& perm) const;
  Tensor Transpose(int dim0, int dim1) const;
  // Throws IndexError / ValueError when the view would reach outside the storage.
  Tensor AsStrided(const Shape& shape, const Stride& stride, int64_t storage_offset) const;

  // How many handles share this tensor: lets a lender check that nobody kept a borrowed one.
  long use_count() const { return impl_.use_count(); }

  // Identity: true when both handles refer to the same tensor object.
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

 private:
  struct Impl {
    std::shared_ptr<Storage> storage;
    Shape shape;
    Stride stride;
    int64_t storage_offset = 0;
    DataType dtype = DataType::kFloat32;
  };
  std::shared_ptr<const Impl> impl_;
};

using TensorTuple = std::vector<Tensor>;

}  // namespace oneflite
