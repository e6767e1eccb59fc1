// oneflite._C.functional: the functors, callable from Python.
//
// The GIL is released for the whole call: argument conversion happens before, and everything
// below the functor layer is C++ (a Python-registered primitive takes the GIL back itself).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#ifdef __GLIBCXX__
#include <cxxabi.h>
#endif

#include <exception>
#include <functional>
#include <optional>

#include "bindings.h"
#include "oneflite/functional/functional.h"

namespace py = pybind11;

namespace oneflite::python {

Tensor CallWithoutGil(const std::function<Tensor()>& fn) {
  // Not py::call_guard<gil_scoped_release>: at interpreter exit CPython ends a daemon thread
  // that asks for the GIL back by unwinding it (pthread_exit), and an unwind that starts inside
  // a destructor (the guard's) aborts the process. Here the GIL is taken back in an ordinary
  // frame, which unwinds cleanly.
  std::optional<Tensor> result;
  std::exception_ptr error;
  PyThreadState* state = PyEval_SaveThread();
  try {
    result = fn();
#ifdef __GLIBCXX__
  } catch (abi::__forced_unwind&) {
    throw;  // the thread is being ended (a Python-registered primitive asked for the GIL)
#endif
  } catch (...) { error = std::current_exception(); }
  PyEval_RestoreThread(state);
  // What the call dropped without the GIL (a storage that held a NumPy array) is released now.
  RunPendingReleases();
  if (error) { std::rethrow_exception(error); }
  return std::move(*result);
}

void BindFunctional(py::module_& m) {
  py::module_ f = m.def_submodule("functional", "The C++ functor layer.");
  using OptDim = std::optional<int64_t>;
  using OptType = std::optional<DataType>;
  f.def(
      "softmax",
      [](const Tensor& x, OptDim dim, OptType dtype) {
        return CallWithoutGil([&] { return functional::Softmax(x, dim, dtype); });
      },
      py::arg("x"), py::arg("dim") = py::none(), py::arg("dtype") = py::none());
  f.def(
      "log_softmax",
      [](const Tensor& x, OptDim dim, OptType dtype) {
        return CallWithoutGil([&] { return functional::LogSoftmax(x, dim, dtype); });
      },
      py::arg("x"), py::arg("dim") = py::none(), py::arg("dtype") = py::none());
  f.def(
      "transpose",
      [](const Tensor& x, const std::vector<int64_t>& perm) {
        return CallWithoutGil([&] { return functional::Transpose(x, perm); });
      },
      py::arg("x"), py::arg("perm"));
  f.def(
      "contiguous",
      [](const Tensor& x) { return CallWithoutGil([&] { return functional::Contiguous(x); }); },
      py::arg("x"));
  f.def(
      "cast",
      [](const Tensor& x, DataType dtype) {
        return CallWithoutGil([&] { return functional::Cast(x, dtype); });
      },
      py::arg("x"), py::arg("dtype"));
  f.def(
      "copy",
      [](const Tensor& x, const Device& device) {
        return CallWithoutGil([&] { return functional::Copy(x, device); });
      },
      py::arg("x"), py::arg("device"));
}

}  // namespace oneflite::python
