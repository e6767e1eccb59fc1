#include "oneflite/framework/tensor.h"

#include <algorithm>
#include <cstdint>
#include <sstream>

#include "oneflite/common/error.h"

namespace oneflite {

Stride ContiguousStride(const Shape& shape) {
  Stride stride(shape.size());
  int64_t running = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    stride[i] = running;
    running *= std::max<int64_t>(shape[i], 1);
  }
  return stride;
}

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) { n *= d; }
  return n;
}

void CheckShape(const Shape& shape, size_t itemsize, const char* what) {
  int64_t count = 1;
  for (int64_t d : shape) {
    ONEFLITE_CHECK(d >= 0, ValueError, what, ": negative dimension in shape ",
                   ShapeToString(shape));
    ONEFLITE_CHECK(!__builtin_mul_overflow(count, d, &count), ValueError, what, ": shape ",
                   ShapeToString(shape), " has more elements than fit in 64 bits");
  }
  int64_t nbytes = 0;
  ONEFLITE_CHECK(!__builtin_mul_overflow(count, static_cast<int64_t>(itemsize), &nbytes),
                 ValueError, what, ": a tensor of shape ", ShapeToString(shape),
                 " would need more bytes than fit in 64 bits");
}

int64_t WrapDim(int64_t dim, int64_t ndim) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  ONEFLITE_CHECK(dim >= -n && dim < n, IndexError,
                 "Dimension out of range (expected to be in range of [", -n, ", ", n - 1,
                 "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

std::string ShapeToString(const Shape& shape) {
  std::ostringstream out;
  out << "(";
  for (size_t i = 0; i < shape.size(); ++i) { out << (i ? ", " : "") << shape[i]; }
  out << (shape.size() == 1 ? ",)" : ")");
  return out.str();
}

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, Stride stride, int64_t storage_offset,
               DataType dtype) {
  ONEFLITE_CHECK(shape.size() == stride.size(), ValueError, "shape ", ShapeToString(shape),
                 " and stride ", ShapeToString(stride), " differ in length");
  auto impl = std::make_shared<Impl>();
  impl->storage = std::move(storage);
  impl->shape = std::move(shape);
  impl->stride = std::move(stride);
  impl->storage_offset = storage_offset;
  impl->dtype = dtype;
  impl_ = std::move(impl);
}

Tensor Tensor::Empty(const Shape& shape, DataType dtype, const Device& device) {
  CheckShape(shape, SizeOf(dtype), "empty");
  const size_t nbytes = static_cast<size_t>(NumElements(shape)) * SizeOf(dtype);
  return Tensor(Storage::Allocate(device, nbytes), shape, ContiguousStride(shape), 0, dtype);
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = impl_->shape.size(); i-- > 0;) {
    const int64_t dim = impl_->shape[i];
    if (dim == 0) { return true; }
    if (dim != 1 && impl_->stride[i] != expected) { return false; }
    expected *= dim;
  }
  return true;
}

void* Tensor::data_ptr() const {
  auto* base = static_cast<char*>(impl_->storage->data());
  if (base == nullptr) { return nullptr; }
  return base + impl_->storage_offset * static_cast<int64_t>(SizeOf(impl_->dtype));
}

bool Tensor::is_aligned() const {
  return reinterpret_cast<uintptr_t>(data_ptr()) % SizeOf(impl_->dtype) == 0;
}

Tensor Tensor::Permute(const std::vector<int>& perm) const {
  const size_t n = impl_->shape.size();
  ONEFLITE_CHECK(perm.size() == n, ValueError, "permute: expected ", n, " dims, got ", perm.size());
  std::vector<bool> seen(n, false);
  Shape shape(n);
  Stride stride(n);
  for (size_t i = 0; i < n; ++i) {
    const int d = perm[i];
    ONEFLITE_CHECK(d >= 0 && static_cast<size_t>(d) < n && !seen[d], ValueError,
                   "permute: dims must be a permutation of 0..", n - 1);
    seen[d] = true;
    shape[i] = impl_->shape[d];
    stride[i] = impl_->stride[d];
  }
  return Tensor(impl_->storage, std::move(shape), std::move(stride), impl_->storage_offset,
                impl_->dtype);
}

Tensor Tensor::Transpose(int dim0, int dim1) const {
  std::vector<int> perm(impl_->shape.size());
  for (size_t i = 0; i < perm.size(); ++i) { perm[i] = static_cast<int>(i); }
  std::swap(perm.at(dim0), perm.at(dim1));
  return Permute(perm);
}

Tensor Tensor::AsStrided(const Shape& shape, const Stride& stride, int64_t storage_offset) const {
  ONEFLITE_CHECK(shape.size() == stride.size(), ValueError, "as_strided: shape ",
                 ShapeToString(shape), " and stride ", ShapeToString(stride), " differ in length");
  ONEFLITE_CHECK(storage_offset >= 0, ValueError, "as_strided: negative storage offset");
  CheckShape(shape, 1, "as_strided");  // a view: its element count must fit
  // The view must stay inside the storage: find its last element.
  int64_t last = storage_offset;
  bool empty = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    ONEFLITE_CHECK(shape[i] >= 0, ValueError, "as_strided: negative size in ",
                   ShapeToString(shape));
    ONEFLITE_CHECK(stride[i] >= 0, ValueError, "as_strided: negative stride in ",
                   ShapeToString(stride));
    if (shape[i] == 0) { empty = true; }
    int64_t reach = 0;
    ONEFLITE_CHECK(!__builtin_mul_overflow(shape[i] - 1, stride[i], &reach) &&
                       !__builtin_add_overflow(last, reach, &last),
                   IndexError, "as_strided: a view of size ", ShapeToString(shape), " with stride ",
                   ShapeToString(stride), " reaches past 64-bit offsets");
  }
  const int64_t capacity = static_cast<int64_t>(impl_->storage->nbytes() / SizeOf(impl_->dtype));
  ONEFLITE_CHECK(empty || last < capacity, IndexError, "as_strided: a view of size ",
                 ShapeToString(shape), " with stride ", ShapeToString(stride), " at offset ",
                 storage_offset, " reaches element ", last, " of a storage of ", capacity);
  return Tensor(impl_->storage, shape, stride, storage_offset, impl_->dtype);
}

}  // namespace oneflite
