// Primitives implemented in Python: the C++ adapter that lets a Python function serve as a
// backend of the "softmax" or "log_softmax" kind, exactly like a built-in one.
//
// The kernel layer cannot tell the difference: it asks the registry for a primitive, gets a
// PythonSoftmax, and calls Launch. Launch takes the GIL and calls the function with x and y as
// (rows, cols) tensors; the function writes y. CallPythonFunction says how that stays safe when
// the interpreter exits meanwhile.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#ifdef __GLIBCXX__
#include <cxxabi.h>
#endif

#include <algorithm>
#include <exception>

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
Tensor OwnedCopy(const void* data, int64_t rows, int64_t cols, DataType dtype, const Device& device,
                 ep::DeviceManager* manager) {
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
bool Kept(const Tensor& tensor, PyObject* obj) {
  return Py_REFCNT(obj) > 1 || tensor.use_count() > 2 || tensor.storage().use_count() > 1;
}

// The type's name without its module, as Python's own messages print it.
std::string ShortTypeName(PyObject* obj) {
  const std::string name = Py_TYPE(obj)->tp_name;
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

struct PythonFunction {
  PyObject* fn;  // a strong reference
  std::string name;
  PythonFunction(py::function function, std::string name)
      : fn(function.release().ptr()), name(std::move(name)) {}
  PythonFunction(const PythonFunction&) = delete;
  PythonFunction& operator=(const PythonFunction&) = delete;
  // The last primitive holding a backend may go on a thread without the GIL.
  ~PythonFunction() { ReleaseReference(fn); }
};

// How deeply Python backends are nested on this thread: a backend may call oneflite, which may
// reach another Python backend, or the same one. Every level holds C++ frames (oneflite's,
// pybind11's, CPython's) that Python's recursion limit does not weigh, so a backend that calls
// its own kind could overflow the C stack before that limit trips: on a small thread stack, or
// under AddressSanitizer's larger frames. Past this depth the call raises RecursionError.
constexpr int kMaxPythonBackendDepth = 64;
thread_local int python_backend_depth = 0;

struct PythonBackendDepth {
  PythonBackendDepth() { ++python_backend_depth; }
  ~PythonBackendDepth() { --python_backend_depth; }
  PythonBackendDepth(const PythonBackendDepth&) = delete;
  PythonBackendDepth& operator=(const PythonBackendDepth&) = delete;
};

// Calls the backend's function on x and y with the GIL held, and checks what it did.
//
// At interpreter exit (Python 3.11 to 3.13), CPython ends a daemon thread that asks for the GIL
// back by unwinding its stack with pthread_exit: here in PyGILState_Ensure, or in the middle of
// the function when it let another thread run. That unwind does not hold the GIL, so the frames
// it crosses must not touch Python. This one holds only raw references, which the unwind leaves
// behind (the process is exiting), and gives the GIL back only on the ordinary way out. (With a
// pybind11 object or gil_scoped_acquire here, the unwind would decref objects and release a GIL
// it does not hold, corrupting the interpreter that the main thread is finalizing.) Errors leave
// as C++ exceptions that are safe to destroy without the GIL: PythonError for the function's own.
void CallPythonFunction(const PythonFunction& function, const Tensor& x, const Tensor& y) {
  const PyGILState_STATE gil = PyGILState_Ensure();
  PyObject* x_obj = nullptr;
  PyObject* y_obj = nullptr;
  PyObject* result = nullptr;
  std::exception_ptr error;
  try {
    RunPendingReleases();
    if (python_backend_depth >= kMaxPythonBackendDepth) {
      PyErr_Format(PyExc_RecursionError,
                   "primitive backend '%s' is called %d Python backends deep on this thread: a "
                   "backend that calls its own kind recurses without end",
                   function.name.c_str(), python_backend_depth);
      throw PythonError::Fetch();
    }
    const PythonBackendDepth depth;
    x_obj = py::cast(x).release().ptr();
    y_obj = py::cast(y).release().ptr();
    result = PyObject_CallFunctionObjArgs(function.fn, x_obj, y_obj, nullptr);
    if (result == nullptr) { throw PythonError::Fetch(); }
    ONEFLITE_CHECK(result == Py_None, TypeError, "primitive backend '", function.name,
                   "' must write its output into y and return None, but returned a ",
                   ShortTypeName(result));
    ONEFLITE_CHECK(!Kept(x, x_obj) && !Kept(y, y_obj), RuntimeError, "primitive backend '",
                   function.name,
                   "' kept a reference to its x or y tensor after returning; a backend must "
                   "not hold on to them (copy what you need to keep)");
#ifdef __GLIBCXX__
  } catch (abi::__forced_unwind&) {
    throw;  // the thread is being ended without the GIL: leave every reference behind
#endif
  } catch (...) { error = std::current_exception(); }
  Py_XDECREF(result);
  Py_XDECREF(y_obj);
  Py_XDECREF(x_obj);
  PyGILState_Release(gil);
  if (error) { std::rethrow_exception(error); }
}

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
    CallPythonFunction(*fn_, x_tensor, y_tensor);
    manager->SynchronizeDevice(device.index);
    manager->Memcpy(stream, y, y_tensor.data_ptr(),
                    static_cast<size_t>(rows * cols) * SizeOf(dtype_),
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
  auto function = std::make_shared<PythonFunction>(std::move(fn), name);
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
          RegisterPythonSoftmax<ep::primitive::LogSoftmaxFactory>(kind, device.type, name, priority,
                                                                  std::move(dtypes), std::move(fn));
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
