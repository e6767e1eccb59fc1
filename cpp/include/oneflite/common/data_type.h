// Element types a oneflite tensor can hold, and the few facts every layer needs about them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace oneflite {

// The numeric values are part of the ABI shared by the core library, the CUDA backend and
// out-of-tree extensions: append new types, never reorder.
enum class DataType : int32_t {
  kFloat16 = 0,
  kBFloat16 = 1,
  kFloat32 = 2,
  kFloat64 = 3,
  kInt32 = 4,
  kInt64 = 5,
  kBool = 6,
};

inline constexpr int kNumDataTypes = 7;

size_t SizeOf(DataType dtype);
// The Python-facing name: "float16", "bfloat16", "float32", ...
const char* NameOf(DataType dtype);
bool IsFloatingPoint(DataType dtype);

}  // namespace oneflite
