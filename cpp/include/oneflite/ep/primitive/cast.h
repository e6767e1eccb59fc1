// Primitive kind "cast": converts n contiguous elements from one dtype to another.
#pragma once

#include <cstdint>
#include <memory>

#include "oneflite/ep/primitive/primitive.h"
#include "oneflite/ep/stream.h"

namespace oneflite::ep::primitive {

// y[i] = x[i] converted, for i < n: to nearest (ties to even) into floating types; float to
// integer truncates toward zero, saturating at the integer range, with NaN giving 0;
// anything to bool is `x != 0`. x and y are aligned for their dtypes.
class Cast : public Primitive {
 public:
  virtual void Launch(Stream* stream, const void* x, void* y, int64_t n) = 0;
};

class CastFactory : public PrimitiveFactory<Cast, DataType, DataType> {
 public:
  static constexpr const char* kKind = "cast";
};

}  // namespace oneflite::ep::primitive
