// The pieces of the oneflite._C module, each bound in its own file.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>

#include "oneflite/framework/tensor.h"

namespace oneflite::python {

// Runs fn with the GIL released, safely even when the interpreter ends the thread meanwhile.
Tensor CallWithoutGil(const std::function<Tensor()>& fn);

// Whether Python objects may still be released: false once the interpreter is finalizing.
bool PythonIsAlive();

void BindCommon(pybind11::module_& m);      // dtype, device, exceptions
void BindTensor(pybind11::module_& m);      // Tensor, NumPy and DLPack interop
void BindFunctional(pybind11::module_& m);  // _C.functional
void BindRegistry(pybind11::module_& m);    // listings of every layer's registry, plugins
void BindDevices(pybind11::module_& m);     // _C.cuda
void BindTrace(pybind11::module_& m);       // oneflite.trace() recording
void BindPythonPrimitives(pybind11::module_& m);  // primitives written in Python

}  // namespace oneflite::python
