#include "oneflite/common/data_type.h"

#include "oneflite/common/error.h"

namespace oneflite {

size_t SizeOf(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 2;
    case DataType::kFloat32:
    case DataType::kInt32:
      return 4;
    case DataType::kFloat64:
    case DataType::kInt64:
      return 8;
    case DataType::kBool:
      return 1;
  }
  ONEFLITE_THROW(ValueError, "unknown dtype code ", static_cast<int>(dtype));
}

const char* NameOf(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16:
      return "float16";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kBool:
      return "bool";
  }
  ONEFLITE_THROW(ValueError, "unknown dtype code ", static_cast<int>(dtype));
}

bool IsFloatingPoint(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64:
      return true;
    default:
      return false;
  }
}

}  // namespace oneflite
