// Primitive kind "permute": gathers a strided view into a new contiguous tensor with its
// dimensions reordered. A transpose is a permute; so is making a view contiguous (identity perm).
#pragma once

#include <cstdint>
#include <memory>

#include "oneflite/ep/primitive/primitive.h"
#include "oneflite/ep/stream.h"

namespace oneflite::ep::primitive {

// Let src be the view with `ndim` dims `src_dims` and element strides `src_strides` (>= 0)
// starting at `src`. Writes the contiguous row-major tensor dst with
// dst_dims[i] = src_dims[perm[i]] and dst[j_0, ..., j_{n-1}] = src[i] where i[perm[k]] = j_k.
// ndim may be 0 (one element). src and dst must not overlap. src may start at any byte (a view
// of an unaligned buffer); dst is aligned for its dtype.
class Permute : public Primitive {
 public:
  virtual void Launch(Stream* stream, int ndim, const int64_t* src_dims, const int64_t* src_strides,
                      const void* src, const int* perm, void* dst) = 0;
};

class PermuteFactory : public PrimitiveFactory<Permute, DataType> {
 public:
  static constexpr const char* kKind = "permute";
};

}  // namespace oneflite::ep::primitive
