// The extension's Python module. Tensors cross the boundary as oneflite.Tensor objects: pybind11
// shares the type that oneflite._C registered.
#include <pybind11/pybind11.h>

#include "oneflite/framework/tensor.h"
#include "oneflite/framework/trace.h"
#include "oneflite/functional/function_library.h"

namespace py = pybind11;

PYBIND11_MODULE(_ext, m) {
  m.doc() = "oneflite_custom: an out-of-tree softmax backend and a 'gelu' primitive kind.";
  m.def(
      "gelu",
      [](const oneflite::Tensor& x) {
        using Sig = oneflite::Tensor(const oneflite::Tensor&);
        static const auto gelu = oneflite::functional::FunctionLibrary::Global().Find<Sig>("Gelu");
        ONEFLITE_TRACE_SCOPE(scope, "functor", "Gelu");
        return gelu(x);
      },
      py::arg("x"), py::call_guard<py::gil_scoped_release>());
}
