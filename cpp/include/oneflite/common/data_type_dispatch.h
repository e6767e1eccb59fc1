// From a run-time DataType to a compile-time element type: the switch every primitive factory
// needs, written once, for the built-in backends and for extensions alike.
//
//   std::unique_ptr<Gelu> New(DataType dtype) override {
//     return VisitFloatingDataType(dtype, [](auto tag) -> std::unique_ptr<Gelu> {
//       return std::make_unique<CpuGelu<decltype(tag)>>();
//     });
//   }
//
// The visitor is called with a value-initialized element of the type (a tag; only its type
// matters) and the visit returns what the visitor returns, so every instantiation of the visitor
// must return the same type. Where a visit has no type to call it with, it returns that type
// value-initialized: nullptr for a factory's std::unique_ptr, which the registry reports as
// "no primitive for this dtype".
#pragma once

#include <cstddef>
#include <cstdint>

#include "oneflite/common/data_type.h"
#include "oneflite/common/error.h"
#include "oneflite/common/float16.h"

namespace oneflite {

// The C++ types that stand for the two 16-bit dtypes. Host code uses oneflite::float16 and
// bfloat16 (HostElementTypes); CUDA code passes ElementTypes<__half, __nv_bfloat16>
// (CudaElementTypes, cuda/ep/cuda_element_types.h), which hold the same bits, so a tensor's
// pointer may be reinterpreted as either.
template <typename Float16, typename BFloat16>
struct ElementTypes {
  using float16_type = Float16;
  using bfloat16_type = BFloat16;
};
using HostElementTypes = ElementTypes<float16, bfloat16>;

// Calls fn(T{}) with T the element type of `dtype`, for the floating-point dtypes only (float16,
// bfloat16, float32, float64): fn is instantiated for those four types alone, and any other dtype
// returns the visitor's result type value-initialized. A code outside the DataType enum throws
// ValueError.
template <typename Types = HostElementTypes, typename Fn>
auto VisitFloatingDataType(DataType dtype, Fn&& fn) -> decltype(fn(float{})) {
  switch (dtype) {
    case DataType::kFloat16:
      return fn(typename Types::float16_type{});
    case DataType::kBFloat16:
      return fn(typename Types::bfloat16_type{});
    case DataType::kFloat32:
      return fn(float{});
    case DataType::kFloat64:
      return fn(double{});
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kBool:
      return {};
  }
  ONEFLITE_THROW(ValueError, "unknown dtype code ", static_cast<int>(dtype));
}

// As VisitFloatingDataType, for every dtype.
template <typename Types = HostElementTypes, typename Fn>
auto VisitDataType(DataType dtype, Fn&& fn) -> decltype(fn(float{})) {
  switch (dtype) {
    case DataType::kInt32:
      return fn(int32_t{});
    case DataType::kInt64:
      return fn(int64_t{});
    case DataType::kBool:
      return fn(bool{});
    default:
      return VisitFloatingDataType<Types>(dtype, fn);
  }
}

// Calls fn(U{}) with U the unsigned integer of `bytes` bytes (1, 2, 4 or 8), for primitives that
// move elements without looking at them (permute): one instance per width rather than per dtype.
// Any other width returns the visitor's result type value-initialized.
template <typename Fn>
auto VisitElementWidth(size_t bytes, Fn&& fn) -> decltype(fn(uint32_t{})) {
  switch (bytes) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    case 8:
      return fn(uint64_t{});
    default:
      return {};
  }
}

}  // namespace oneflite
