// Listings of every layer's registry, and loading of backend libraries.
#include <dlfcn.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "bindings.h"
#include "oneflite/common/error.h"
#include "oneflite/ep/primitive/primitive.h"
#include "oneflite/framework/kernel.h"
#include "oneflite/framework/op.h"
#include "oneflite/functional/function_library.h"

namespace py = pybind11;

namespace oneflite::python {

namespace {

py::list DTypeNames(const std::vector<DataType>& dtypes) {
  py::list names;
  for (DataType d : dtypes) { names.append(NameOf(d)); }
  return names;
}

}  // namespace

void BindRegistry(py::module_& m) {
  py::module_ r = m.def_submodule("registry", "Read-only views of oneflite's registries.");

  r.def("functors", [] {
    py::list out;
    for (const auto& info : functional::FunctionLibrary::Global().List()) {
      out.append(py::dict(py::arg("name") = info.name, py::arg("signature") = info.signature));
    }
    return out;
  });

  r.def("ops", [] {
    py::list out;
    for (const OpDef* def : OpRegistry::Global().List()) {
      out.append(py::dict(py::arg("name") = def->name, py::arg("inputs") = def->inputs,
                          py::arg("outputs") = def->outputs, py::arg("attrs") = def->attrs,
                          py::arg("doc") = def->doc));
    }
    return out;
  });

  r.def("kernels", [] {
    py::list out;
    for (const KernelRegistration* k : KernelRegistry::Global().List()) {
      out.append(py::dict(py::arg("op") = k->op_name, py::arg("name") = k->kernel_name,
                          py::arg("priority") = k->priority, py::arg("match") = k->match_doc));
    }
    return out;
  });

  r.def("primitives", [] {
    py::list out;
    auto& registry = ep::primitive::PrimitiveRegistry::Global();
    for (const auto& info : registry.List()) {
      out.append(py::dict(py::arg("kind") = info.kind, py::arg("device") = NameOf(info.device_type),
                          py::arg("name") = info.name, py::arg("priority") = info.priority,
                          py::arg("dtypes") = DTypeNames(info.dtypes)));
    }
    return out;
  });

  // Forcing one primitive backend per kind (None: stop). The public API over this is
  // oneflite.primitive.use().
  m.def(
      "_force_primitive",
      [](const std::string& kind, std::optional<std::string> name) {
        ep::primitive::PrimitiveRegistry::Global().Force(kind, std::move(name));
      },
      py::arg("kind"), py::arg("name"));
  m.def(
      "_forced_primitive",
      [](const std::string& kind) {
        return ep::primitive::PrimitiveRegistry::Global().Forced(kind);
      },
      py::arg("kind"));

  // Loads a shared library whose static initializers register backends (the CUDA backend, or
  // a user's extension). Its symbols stay private unless global_symbols is set: a backend only
  // needs to reach the core library, which it links by name.
  m.def(
      "load_library",
      [](const std::string& path, bool global_symbols) {
        void* handle = dlopen(path.c_str(), RTLD_NOW | (global_symbols ? RTLD_GLOBAL : RTLD_LOCAL));
        if (handle == nullptr) {
          const char* message = dlerror();
          ONEFLITE_THROW(RuntimeError, "could not load '", path,
                         "': ", message ? message : "unknown error");
        }
      },
      py::arg("path"), py::arg("global_symbols") = false, py::call_guard<py::gil_scoped_release>(),
      "Load a shared library of backends; its static registrations run as it loads.");
}

}  // namespace oneflite::python
