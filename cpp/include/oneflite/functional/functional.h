// The functional API in C++: one free function per registered functor.
//
// Each call looks its functor up in the FunctionLibrary once (a function-local static) and then
// calls it. This is what the Python bindings call, and what C++ code (including other functors)
// should call.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "oneflite/common/data_type.h"
#include "oneflite/common/device.h"
#include "oneflite/framework/tensor.h"

namespace oneflite::functional {

// Softmax of `x` along `dim` (None: the implicit rule, dim 0 for ndim 0, 1 or 3, else dim 1),
// computed in `dtype` when given (x is cast first).
Tensor Softmax(const Tensor& x, std::optional<int64_t> dim, std::optional<DataType> dtype);
Tensor LogSoftmax(const Tensor& x, std::optional<int64_t> dim, std::optional<DataType> dtype);

// A new contiguous tensor holding x with its dims reordered: out.shape[i] = x.shape[perm[i]].
Tensor Transpose(const Tensor& x, const std::vector<int64_t>& perm);
// x itself when already contiguous, else a contiguous copy.
Tensor Contiguous(const Tensor& x);
// x itself when already of `dtype`, else a converted contiguous copy.
Tensor Cast(const Tensor& x, DataType dtype);
// x itself when already on `device`, else a contiguous copy there.
Tensor Copy(const Tensor& x, const Device& device);

}  // namespace oneflite::functional
