// The C++ functional API: each function finds its functor once and calls it.
#include "oneflite/functional/functional.h"

#include "oneflite/framework/trace.h"
#include "oneflite/functional/function_library.h"

namespace oneflite::functional {

// Finds the functor on the first call only: the function-local static is initialized once,
// thread-safely, and later calls go straight to the std::function.
#define ONEFLITE_FUNCTIONAL_CALL(Sig, name, ...)                                  \
  static const std::function<Sig> fn = FunctionLibrary::Global().Find<Sig>(name); \
  ONEFLITE_TRACE_SCOPE(trace_scope, "functor", name);                             \
  return fn(__VA_ARGS__)

Tensor Softmax(const Tensor& x, std::optional<int64_t> dim, std::optional<DataType> dtype) {
  using Sig = Tensor(const Tensor&, std::optional<int64_t>, std::optional<DataType>);
  ONEFLITE_FUNCTIONAL_CALL(Sig, "Softmax", x, dim, dtype);
}

Tensor LogSoftmax(const Tensor& x, std::optional<int64_t> dim, std::optional<DataType> dtype) {
  using Sig = Tensor(const Tensor&, std::optional<int64_t>, std::optional<DataType>);
  ONEFLITE_FUNCTIONAL_CALL(Sig, "LogSoftmax", x, dim, dtype);
}

Tensor Transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  using Sig = Tensor(const Tensor&, const std::vector<int64_t>&);
  ONEFLITE_FUNCTIONAL_CALL(Sig, "Transpose", x, perm);
}

Tensor Contiguous(const Tensor& x) {
  using Sig = Tensor(const Tensor&);
  ONEFLITE_FUNCTIONAL_CALL(Sig, "Contiguous", x);
}

Tensor Cast(const Tensor& x, DataType dtype) {
  using Sig = Tensor(const Tensor&, DataType);
  ONEFLITE_FUNCTIONAL_CALL(Sig, "Cast", x, dtype);
}

Tensor Copy(const Tensor& x, const Device& device) {
  using Sig = Tensor(const Tensor&, const Device&);
  ONEFLITE_FUNCTIONAL_CALL(Sig, "Copy", x, device);
}

#undef ONEFLITE_FUNCTIONAL_CALL

}  // namespace oneflite::functional
