// The interpreter runs one OpExpr eagerly, always in the same four steps:
//   1. infer the outputs' dtype, shape and device from the inputs and attributes;
//   2. allocate the outputs (contiguous) on that device;
//   3. find the kernel for (device type, input dtype), cached in the OpExpr;
//   4. compute on the device's stream.
#pragma once

#include "oneflite/framework/attr_map.h"
#include "oneflite/framework/op.h"
#include "oneflite/framework/tensor.h"

namespace oneflite {

// Throws ValueError for a wrong number of inputs, ValueError for inputs on different devices,
// NotImplementedError when no kernel serves (op, device, dtype).
TensorTuple Interpret(const OpExpr& op, const TensorTuple& inputs, const AttrMap& attrs = {});

}  // namespace oneflite
