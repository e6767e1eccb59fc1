// oneflite._C.functional: the functors, callable from Python.
//
// The GIL is released for the whole call: argument conversion happens before, and everything
// below the functor layer is C++ (a Python-registered primitive takes the GIL back itself).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "oneflite/functional/functional.h"

namespace py = pybind11;

namespace oneflite::python {

void BindFunctional(py::module_& m) {
  py::module_ f = m.def_submodule("functional", "The C++ functor layer.");
  using NoGil = py::call_guard<py::gil_scoped_release>;
  f.def("softmax", &functional::Softmax, py::arg("x"), py::arg("dim") = py::none(),
        py::arg("dtype") = py::none(), NoGil());
  f.def("log_softmax", &functional::LogSoftmax, py::arg("x"), py::arg("dim") = py::none(),
        py::arg("dtype") = py::none(), NoGil());
  f.def("transpose", &functional::Transpose, py::arg("x"), py::arg("perm"), NoGil());
  f.def("contiguous", &functional::Contiguous, py::arg("x"), NoGil());
  f.def("cast", &functional::Cast, py::arg("x"), py::arg("dtype"), NoGil());
  f.def("copy", &functional::Copy, py::arg("x"), py::arg("device"), NoGil());
}

}  // namespace oneflite::python
