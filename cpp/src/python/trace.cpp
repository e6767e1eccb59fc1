// oneflite._C trace hooks: start/stop a recording (by id: they nest), and let the Python layer add
// its own events.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "oneflite/common/error.h"
#include "oneflite/framework/trace.h"

namespace py = pybind11;

namespace oneflite::python {

void BindTrace(py::module_& m) {
  m.def("_trace_start", [] { return trace::Start(); });
  m.def(
      "_trace_stop",
      [](uint64_t id) {
        py::list events;
        for (const trace::Event& e : trace::Stop(id)) {
          events.append(py::make_tuple(e.depth, e.layer, e.text));
        }
        return events;
      },
      py::arg("id"));
  m.def("_trace_begin", [](const std::string& layer, const std::string& text) {
    // The layer name must outlive the event: copy it into the text's storage via std::string.
    static const char* const kLayers[] = {"functional", "functor", "op", "kernel", "primitive"};
    for (const char* known : kLayers) {
      if (layer == known) {
        trace::Begin(known, text);
        return;
      }
    }
    ONEFLITE_THROW(ValueError, "unknown trace layer '", layer, "'");
  });
  m.def("_trace_end", [] { trace::End(); });
}

}  // namespace oneflite::python
