// oneflite._C: the pybind11 boundary between the Python functional layer and the C++ core.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "oneflite/common/data_type.h"
#include "oneflite/common/device.h"
#include "oneflite/common/error.h"

namespace py = pybind11;

namespace oneflite::python {

void BindCommon(py::module_& m) {
  // Each C++ error class surfaces as the Python exception its name promises.
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) { std::rethrow_exception(error); }
    } catch (const PythonError& e) {
      e.Restore();  // a Python backend's own exception, unchanged
    } catch (const IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const Error& e) { PyErr_SetString(PyExc_RuntimeError, e.what()); }
  });

  py::enum_<DataType>(m, "dtype", "The element type of a tensor, e.g. oneflite.float32.")
      .value("float16", DataType::kFloat16)
      .value("bfloat16", DataType::kBFloat16)
      .value("float32", DataType::kFloat32)
      .value("float64", DataType::kFloat64)
      .value("int32", DataType::kInt32)
      .value("int64", DataType::kInt64)
      .value("bool", DataType::kBool)
      .def_property_readonly(
          "itemsize", [](DataType d) { return SizeOf(d); }, "Bytes per element.")
      .def_property_readonly(
          "is_floating_point", [](DataType d) { return IsFloatingPoint(d); },
          "True for float16, bfloat16, float32 and float64.");

  py::class_<Device>(m, "device", "Where a tensor lives: 'cpu', 'cuda' or 'cuda:N'.")
      .def(py::init([](const std::string& spec) { return Device::Parse(spec); }), py::arg("spec"))
      .def(py::init([](const std::string& type, int index) {
             ONEFLITE_CHECK(type.find(':') == std::string::npos, ValueError,
                            "give the index once: device('cuda', 0), not device('cuda:0', 0)");
             ONEFLITE_CHECK(index >= 0, ValueError, "device index must be >= 0, got ", index);
             return Device::Parse(type + ":" + std::to_string(index));
           }),
           py::arg("type"), py::arg("index"))
      .def_property_readonly("type", [](const Device& d) { return NameOf(d.type); })
      .def_property_readonly("index", [](const Device& d) { return d.index; })
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__eq__",
           [](const Device& a, const std::string& b) {
             try {
               return a == Device::Parse(b);
             } catch (const ValueError&) { return false; }
           })
      .def("__eq__", [](const Device&, const py::object&) { return false; })
      .def("__hash__", [](const Device& d) { return static_cast<int>(d.type) * 1024 + d.index; })
      .def("__str__", &Device::ToString)
      .def("__repr__", [](const Device& d) {
        if (d.type == DeviceType::kCPU) { return std::string("device(type='cpu')"); }
        return "device(type='" + std::string(NameOf(d.type)) +
               "', index=" + std::to_string(d.index) + ")";
      });
  py::implicitly_convertible<std::string, Device>();
}

}  // namespace oneflite::python

PYBIND11_MODULE(_C, m) {
  m.doc() = "oneflite's C++ core: tensors, the functor library and every registry.";
  oneflite::python::BindCommon(m);
  oneflite::python::BindTensor(m);
  oneflite::python::BindFunctional(m);
  oneflite::python::BindRegistry(m);
  oneflite::python::BindDevices(m);
  oneflite::python::BindTrace(m);
  oneflite::python::BindPythonPrimitives(m);
}
