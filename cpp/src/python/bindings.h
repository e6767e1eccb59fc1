// The pieces of the oneflite._C module, each bound in its own file.
#pragma once

#include <pybind11/pybind11.h>

#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "oneflite/framework/tensor.h"

namespace oneflite::python {

// Runs fn with the GIL released, safely even when the interpreter ends the thread meanwhile.
Tensor CallWithoutGil(const std::function<Tensor()>& fn);

// Whether Python objects may still be released: false once the interpreter is finalizing.
bool PythonIsAlive();

// Runs `release`, which touches Python objects, with the GIL held: now if this thread holds the
// GIL, else on the next thread that comes back into Python through oneflite. It never waits for
// the GIL, so destructors and deleters may call it (gil.cpp says why they must not wait). Once
// the interpreter is finalizing it does nothing: the objects are leaked.
void ReleaseWithGil(std::function<void()> release);
void ReleaseReference(PyObject* object);  // a Py_DECREF through ReleaseWithGil
// Runs the releases that threads without the GIL left behind. Call with the GIL held.
void RunPendingReleases();

// A Python exception raised by Python code that oneflite's C++ called, carried as a C++
// exception to the pybind11 boundary and raised there again, unchanged. Unlike
// py::error_already_set it may be destroyed without the GIL (its reference goes through
// ReleaseReference), so it can cross the code that runs with the GIL released.
class PythonError : public std::exception {
 public:
  // Takes the current Python error. Call with the GIL held and an error set.
  static PythonError Fetch();
  const char* what() const noexcept override;
  // Sets it as the current Python error. Call with the GIL held.
  void Restore() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

void BindCommon(pybind11::module_& m);            // dtype, device, exceptions
void BindTensor(pybind11::module_& m);            // Tensor, NumPy and DLPack interop
void BindFunctional(pybind11::module_& m);        // _C.functional
void BindRegistry(pybind11::module_& m);          // listings of every layer's registry, plugins
void BindDevices(pybind11::module_& m);           // _C.cuda
void BindTrace(pybind11::module_& m);             // oneflite.trace() recording
void BindPythonPrimitives(pybind11::module_& m);  // primitives written in Python

}  // namespace oneflite::python
