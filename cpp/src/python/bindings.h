// The pieces of the oneflite._C module, each bound in its own file.
#pragma once

#include <pybind11/pybind11.h>

namespace oneflite::python {

void BindCommon(pybind11::module_& m);      // dtype, device, exceptions
void BindTensor(pybind11::module_& m);      // Tensor, NumPy and DLPack interop
void BindFunctional(pybind11::module_& m);  // _C.functional
void BindRegistry(pybind11::module_& m);    // listings of every layer's registry, plugins
void BindDevices(pybind11::module_& m);     // _C.cuda
void BindTrace(pybind11::module_& m);       // oneflite.trace() recording
void BindPythonPrimitives(pybind11::module_& m);  // primitives written in Python

}  // namespace oneflite::python
