// Primitives implemented in Python: the C++ adapter that lets a Python function serve as a
// backend of the "softmax" or "log_softmax" kind, exactly like a built-in one.
//
// The kernel layer cannot tell the difference: it asks the registry for a primitive, gets a
// PythonSoftmax, and calls Launch. Launch takes the GIL and calls the function with x and y as
// (rows, cols) tensors; the function writes y.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>

#include "bindings.h"
#include "oneflite/common/error.h"
#include "oneflite/ep/device_manager.h"
#include "oneflite/ep/primitive/softmax.h"
#include "oneflite/framework/tensor.h"

namespace py = pybind11;

namespace oneflite::python {

namespace {

using ep::primitive::PrimitiveRegistry;

// A (rows, cols) tensor with memory of its own on `device`, holding a copy of `data` if given.
// Python backends get these rather than views of the caller's memory, so whatever they keep
// stays valid after the call.
Tensor OwnedCopy(const void* data, int64_t rows, int64_t cols, DataType dtype,
                 const Device& device, ep::DeviceManager* manager) {
  Tensor tensor = Tensor::Empty({rows, cols}, dtype, device);
  if (data != nullptr) {
    manager->Memcpy(manager->GetStream(device.index), tensor.data_ptr(), data,
                    static_cast<size_t>(rows * cols) * SizeOf(dtype),
                    ep::MemcpyKind::kDeviceToDevice);
  }
  return tensor;
}

// Whether Python kept x or y: the object itself, a handle beyond this frame's and the object's
// (a NumPy array from .numpy()), or a view (another tensor on the same storage).
bool Kept(const Tensor& tensor, const py::object& obj) {
  return obj.ref_count() > 1 || tensor.use_count() > 2 || tensor.storage().use_count() > 1;
}

struct PythonFunction {
  py::function fn;
  std::string name;
  ~PythonFunction() {
    // Backends may be dropped while the interpreter is shutting down; leak rather than crash.
    if (!PythonIsAlive()) {
      fn.release();
      return;
    }
    py::gil_scoped_acquire gil;
    fn = py::function();
  }
};

template <typename Interface>
class PythonSoftmax final : public Interface {
 public:
  PythonSoftmax(std::shared_ptr<PythonFunction> fn, DataType dtype)
      : fn_(std::move(fn)), dtype_(dtype) {}

  void Launch(ep::Stream* stream, int64_t rows, int64_t cols, const void* x, void* y) override {
    const Device device = stream->device();
    ep::DeviceManager* manager = ep::GetDeviceManager(device);
    // The function may use any library on any stream: order it after oneflite's queued work
    // and oneflite's later work after it by synchronizing the device on both sides.
    manager->SynchronizeDevice(device.index);
    ONEFLITE_CHECK(PythonIsAlive(), RuntimeError, "primitive backend '", fn_->name,
                   "' is written in Python, and the interpreter is shutting down");
    const Tensor x_tensor = OwnedCopy(x, rows, cols, dtype_, device, manager);
    const Tensor y_tensor = OwnedCopy(nullptr, rows, cols, dtype_, device, manager);
    {
      py::gil_scoped_acquire gil;
      py::object x_obj = py::cast(x_tensor);
      py::object y_obj = py::cast(y_tensor);
      py::object result = fn_->fn(x_obj, y_obj);
      ONEFLITE_CHECK(result.is_none(), TypeError, "primitive backend '", fn_->name,
                     "' must write its output into y and return None, but returned a ",
                     std::string(py::str(py::type::of(result).attr("__name__"))));
      ONEFLITE_CHECK(!Kept(x_tensor, x_obj) && !Kept(y_tensor, y_obj), RuntimeError,
                     "primitive backend '", fn_->name,
                     "' kept a reference to its x or y tensor after returning; a backend must "
                     "not hold on to them (copy what you need to keep)");
    }
    manager->SynchronizeDevice(device.index);
    manager->Memcpy(stream, y, y_tensor.data_ptr(), static_cast<size_t>(rows * cols) * SizeOf(dtype_),
                    ep::MemcpyKind::kDeviceToDevice);
  }

  std::string Describe(int64_t rows, int64_t cols) const override {
    return "Python function " + fn_->name;
  }

 private:
  std::shared_ptr<PythonFunction> fn_;
  DataType dtype_;
};

template <typename FactoryT>
class PythonSoftmaxFactory final : public FactoryT {
 public:
  using Interface = typename FactoryT::PrimitiveType;
  PythonSoftmaxFactory(std::shared_ptr<PythonFunction> fn, std::vector<DataType> dtypes)
      : fn_(std::move(fn)), dtypes_(std::move(dtypes)) {}

  std::unique_ptr<Interface> New(DataType dtype) override {
    if (std::find(dtypes_.begin(), dtypes_.end(), dtype) == dtypes_.end()) { return nullptr; }
    return std::make_unique<PythonSoftmax<Interface>>(fn_, dtype);
  }

 private:
  std::shared_ptr<PythonFunction> fn_;
  std::vector<DataType> dtypes_;
};

template <typename FactoryT>
void RegisterPythonSoftmax(const std::string& kind, DeviceType device, const std::string& name,
                           int priority, std::vector<DataType> dtypes, py::function fn) {
  auto function = std::make_shared<PythonFunction>(PythonFunction{std::move(fn), name});
  auto factory = std::make_shared<PythonSoftmaxFactory<FactoryT>>(function, dtypes);
  PrimitiveRegistry::Global().Register({kind, device, name, priority, std::move(dtypes)},
                                       std::move(factory));
}

}  // namespace

void BindPythonPrimitives(py::module_& m) {
  m.def(
      "_register_python_primitive",
      [](const std::string& kind, const Device& device, const std::string& name, int priority,
         std::vector<DataType> dtypes, py::function fn) {
        ONEFLITE_CHECK(!dtypes.empty(), ValueError, "register(): give at least one dtype");
        for (DataType d : dtypes) {
          ONEFLITE_CHECK(IsFloatingPoint(d), ValueError, "register(): '", kind,
                         "' primitives compute floating-point types, not ", NameOf(d));
        }
        if (kind == ep::primitive::SoftmaxFactory::kKind) {
          RegisterPythonSoftmax<ep::primitive::SoftmaxFactory>(kind, device.type, name, priority,
                                                               std::move(dtypes), std::move(fn));
        } else if (kind == ep::primitive::LogSoftmaxFactory::kKind) {
          RegisterPythonSoftmax<ep::primitive::LogSoftmaxFactory>(
              kind, device.type, name, priority, std::move(dtypes), std::move(fn));
        } else {
          ONEFLITE_THROW(ValueError, "register(): unknown or unsupported primitive kind '", kind,
                         "'; Python backends can be registered for 'softmax' and 'log_softmax'");
        }
      },
      py::arg("kind"), py::arg("device"), py::arg("name"), py::arg("priority"), py::arg("dtypes"),
      py::arg("fn"));

  m.def(
      "_unregister_primitive",
      [](const std::string& kind, const Device& device, const std::string& name) {
        PrimitiveRegistry::Global().Unregister(kind, device.type, name);
      },
      py::arg("kind"), py::arg("device"), py::arg("name"));
}

}  // namespace oneflite::python
