// Element-type plumbing shared by the CPU primitives: the C++ type behind each DataType, the
// type arithmetic runs in, and a dispatcher from a runtime DataType to a template instance.
#pragma once

#include <cstdint>
#include <utility>

#include "oneflite/common/data_type.h"
#include "oneflite/common/error.h"
#include "oneflite/common/float16.h"

namespace oneflite::ep::primitive::cpu {

// 16-bit floats and float32 compute in float; float64 in double.
template <typename T>
struct ComputeTypeOf {
  using type = float;
};
template <>
struct ComputeTypeOf<double> {
  using type = double;
};
template <typename T>
using ComputeType = typename ComputeTypeOf<T>::type;

// Calls fn(T{}) with T the element type of `dtype`.
template <typename Fn>
decltype(auto) DispatchDataType(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::kFloat16:
      return fn(float16{});
    case DataType::kBFloat16:
      return fn(bfloat16{});
    case DataType::kFloat32:
      return fn(float{});
    case DataType::kFloat64:
      return fn(double{});
    case DataType::kInt32:
      return fn(int32_t{});
    case DataType::kInt64:
      return fn(int64_t{});
    case DataType::kBool:
      return fn(bool{});
  }
  ONEFLITE_THROW(ValueError, "unknown dtype code ", static_cast<int>(dtype));
}

}  // namespace oneflite::ep::primitive::cpu
