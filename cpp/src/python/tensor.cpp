// oneflite._C.Tensor and its interop with NumPy and DLPack.
//
// Only what needs C++ lives here: metadata, views, and zero-copy exchange of memory. Python-level
// conveniences (repr, .to(), the DLPack protocol's argument handling) are in oneflite/_tensor.py.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <numeric>

#include "bindings.h"
#include "oneflite/common/error.h"
#include "oneflite/ep/device_manager.h"
#include "oneflite/framework/dlpack.h"
#include "oneflite/framework/tensor.h"
#include "oneflite/functional/functional.h"

namespace py = pybind11;

namespace oneflite::python {

namespace {

py::tuple ToTuple(const std::vector<int64_t>& values) {
  py::tuple tuple(values.size());
  for (size_t i = 0; i < values.size(); ++i) { tuple[i] = py::int_(values[i]); }
  return tuple;
}

// A dim of a tensor with at least one dim; a 0-d tensor has no size or stride to index.
size_t DimOfNonScalar(const Tensor& t, int64_t dim) {
  ONEFLITE_CHECK(t.ndim() > 0, IndexError, "Dimension specified as ", dim,
                 " but tensor has no dimensions");
  return static_cast<size_t>(WrapDim(dim, t.ndim()));
}

// Elements spanned by a view of `shape` and `stride` (0 for an empty view).
int64_t SpanInElements(const Shape& shape, const Stride& stride) {
  int64_t last = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) { return 0; }
    last += (shape[i] - 1) * stride[i];
  }
  return last + 1;
}

// ---- NumPy ---------------------------------------------------------------------------------

// Wraps a NumPy array's memory without copying; the array stays alive while the tensor does.
// `dtype` is the oneflite dtype oneflite/_tensor.py matched to the array's dtype.
Tensor FromNumpy(const py::array& array, DataType dtype) {
  ONEFLITE_CHECK(static_cast<size_t>(array.itemsize()) == SizeOf(dtype), TypeError,
                 "numpy itemsize ", array.itemsize(), " does not match ", NameOf(dtype));
  const int64_t itemsize = array.itemsize();
  Shape shape(array.ndim());
  Stride stride(array.ndim());
  for (py::ssize_t i = 0; i < array.ndim(); ++i) {
    shape[i] = array.shape(i);
    const int64_t byte_stride = array.strides(i);
    ONEFLITE_CHECK(byte_stride >= 0, ValueError,
                   "from_numpy: arrays with negative strides are not supported; "
                   "pass a copy (array.copy()) instead");
    ONEFLITE_CHECK(byte_stride % itemsize == 0, ValueError,
                   "from_numpy: strides that are not a multiple of the element size are not "
                   "supported; pass a copy (array.copy()) instead");
    stride[i] = byte_stride / itemsize;
  }
  CheckShape(shape, 1, "from_numpy");  // a view: its element count must fit
  const size_t nbytes = static_cast<size_t>(SpanInElements(shape, stride) * itemsize);
  PyObject* owner = array.ptr();
  Py_INCREF(owner);
  auto storage = std::make_shared<Storage>(const_cast<void*>(array.data()), nbytes, Device{},
                                           [owner](void*) { ReleaseReference(owner); });
  storage->set_writable(array.writeable());
  return Tensor(std::move(storage), std::move(shape), std::move(stride), 0, dtype);
}

// A NumPy array viewing a CPU tensor's memory; it keeps the tensor's storage alive.
py::array ToNumpy(const Tensor& tensor, const py::dtype& numpy_dtype) {
  ONEFLITE_CHECK(tensor.device().type == DeviceType::kCPU, TypeError, "can't convert a tensor on '",
                 tensor.device().ToString(), "' to numpy; copy it to the host first with .cpu()");
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  std::vector<py::ssize_t> strides(tensor.ndim());
  for (int64_t i = 0; i < tensor.ndim(); ++i) {
    strides[i] = tensor.stride()[i] * static_cast<int64_t>(tensor.element_size());
  }
  auto* keep = new Tensor(tensor);
  py::capsule owner(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  // An empty tensor may have no memory at all; NumPy still wants a non-null pointer.
  static char empty_buffer[16];
  void* data = tensor.numel() == 0 ? empty_buffer : tensor.data_ptr();
  py::array array(numpy_dtype, shape, strides, data, owner);
  if (!tensor.writable()) {
    py::detail::array_proxy(array.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  }
  return array;
}

// ---- DLPack ----------------------------------------------------------------------------------

dlpack::DLDataType ToDLDataType(DataType dtype) {
  const uint8_t bits = static_cast<uint8_t>(SizeOf(dtype) * 8);
  switch (dtype) {
    case DataType::kFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64:
      return {dlpack::kDLFloat, bits, 1};
    case DataType::kBFloat16:
      return {dlpack::kDLBfloat, bits, 1};
    case DataType::kInt32:
    case DataType::kInt64:
      return {dlpack::kDLInt, bits, 1};
    case DataType::kBool:
      return {dlpack::kDLBool, bits, 1};
  }
  ONEFLITE_THROW(ValueError, "unknown dtype");
}

DataType FromDLDataType(const dlpack::DLDataType& t) {
  ONEFLITE_CHECK(t.lanes == 1, TypeError, "from_dlpack: vector dtypes (lanes=", t.lanes,
                 ") are not supported");
  switch (t.code) {
    case dlpack::kDLFloat:
      if (t.bits == 16) { return DataType::kFloat16; }
      if (t.bits == 32) { return DataType::kFloat32; }
      if (t.bits == 64) { return DataType::kFloat64; }
      break;
    case dlpack::kDLBfloat:
      if (t.bits == 16) { return DataType::kBFloat16; }
      break;
    case dlpack::kDLInt:
      if (t.bits == 32) { return DataType::kInt32; }
      if (t.bits == 64) { return DataType::kInt64; }
      break;
    case dlpack::kDLBool:
      if (t.bits == 8) { return DataType::kBool; }
      break;
    default:
      break;
  }
  ONEFLITE_THROW(TypeError, "from_dlpack: unsupported dtype (code ", int(t.code), ", ", int(t.bits),
                 " bits); oneflite holds float16, bfloat16, float32, float64, "
                 "int32, int64 and bool");
}

// What an exported capsule owns: the tensor (so its memory stays alive) and the arrays the
// DLTensor points into.
struct ExportContext {
  Tensor tensor;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

template <typename Managed>
void FillDLTensor(const Tensor& tensor, ExportContext* ctx, Managed* managed) {
  dlpack::DLTensor& dl = managed->dl_tensor;
  dl.data = tensor.data_ptr();
  const Device& device = tensor.device();
  dl.device = {device.type == DeviceType::kCPU ? dlpack::kDLCPU : dlpack::kDLCUDA,
               device.type == DeviceType::kCPU ? 0 : device.index};
  dl.ndim = static_cast<int32_t>(tensor.ndim());
  dl.dtype = ToDLDataType(tensor.dtype());
  dl.shape = ctx->shape.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = 0;
  managed->manager_ctx = ctx;
}

template <typename Managed>
void DeleteExported(Managed* managed) {
  delete static_cast<ExportContext*>(managed->manager_ctx);
  delete managed;
}

template <typename Managed>
void DeleteUnconsumedCapsule(PyObject* capsule, const char* name) {
  // A capsule a consumer took was renamed "used_..."; only an untaken one still owns its tensor.
  if (PyCapsule_IsValid(capsule, name)) {
    auto* managed = static_cast<Managed*>(PyCapsule_GetPointer(capsule, name));
    managed->deleter(managed);
  }
}

py::capsule ToDLPack(const Tensor& tensor, bool versioned) {
  auto* ctx = new ExportContext{tensor, tensor.shape(), tensor.stride()};
  if (versioned) {
    auto* managed = new dlpack::DLManagedTensorVersioned{};
    managed->version = {1, 0};
    managed->flags = tensor.writable() ? 0 : dlpack::kDLPackFlagReadOnly;
    FillDLTensor(tensor, ctx, managed);
    managed->deleter = DeleteExported<dlpack::DLManagedTensorVersioned>;
    PyObject* capsule = PyCapsule_New(managed, "dltensor_versioned", [](PyObject* c) {
      DeleteUnconsumedCapsule<dlpack::DLManagedTensorVersioned>(c, "dltensor_versioned");
    });
    if (capsule == nullptr) {
      managed->deleter(managed);
      throw py::error_already_set();
    }
    return py::reinterpret_steal<py::capsule>(capsule);
  }
  auto* managed = new dlpack::DLManagedTensor{};
  FillDLTensor(tensor, ctx, managed);
  managed->deleter = DeleteExported<dlpack::DLManagedTensor>;
  PyObject* capsule = PyCapsule_New(managed, "dltensor", [](PyObject* c) {
    DeleteUnconsumedCapsule<dlpack::DLManagedTensor>(c, "dltensor");
  });
  if (capsule == nullptr) {
    managed->deleter(managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

template <typename Managed>
Tensor TensorFromManaged(Managed* managed, bool read_only) {
  const dlpack::DLTensor& dl = managed->dl_tensor;
  // Ownership passes to the storage as soon as the capsule is renamed, so build nothing that
  // can throw between here and the Storage, except through `release`.
  auto release = [managed](void*) {
    // The producer's deleter may touch Python objects (NumPy's does). A storage deleter may run
    // on a thread without the GIL, so it must not wait for it (see gil.cpp).
    ReleaseWithGil([managed] {
      if (managed->deleter != nullptr) { managed->deleter(managed); }
    });
  };
  Device device;
  if (dl.device.device_type == dlpack::kDLCPU) {
    device = Device{DeviceType::kCPU, 0};
  } else if (dl.device.device_type == dlpack::kDLCUDA) {
    device = Device{DeviceType::kCUDA, dl.device.device_id};
  } else {
    release(nullptr);
    ONEFLITE_THROW(TypeError, "from_dlpack: unsupported device type ", dl.device.device_type,
                   "; oneflite takes CPU and CUDA memory");
  }
  DataType dtype;
  Shape shape;
  Stride stride;
  try {
    ONEFLITE_CHECK(dl.ndim >= 0 && (dl.ndim == 0 || dl.shape != nullptr), ValueError,
                   "from_dlpack: malformed tensor (ndim ", dl.ndim, ")");
    shape.assign(dl.shape, dl.shape + dl.ndim);
    dtype = FromDLDataType(dl.dtype);
    if (dl.strides != nullptr) {
      stride.assign(dl.strides, dl.strides + dl.ndim);
    } else {
      stride = ContiguousStride(shape);
    }
    CheckShape(shape, 1, "from_dlpack");  // a view (maybe broadcast): its element count must fit
    for (int64_t s : stride) {
      ONEFLITE_CHECK(s >= 0, ValueError, "from_dlpack: negative strides are not supported");
    }
  } catch (...) {
    release(nullptr);
    throw;
  }
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  const size_t nbytes = static_cast<size_t>(SpanInElements(shape, stride)) * SizeOf(dtype);
  auto storage = std::make_shared<Storage>(data, nbytes, device, release);
  storage->set_writable(!read_only);
  return Tensor(std::move(storage), std::move(shape), std::move(stride), 0, dtype);
}

// Takes ownership of the tensor inside a DLPack capsule (versioned or not).
Tensor FromDLPack(const py::capsule& capsule) {
  PyObject* object = capsule.ptr();
  if (PyCapsule_IsValid(object, "dltensor_versioned")) {
    auto* managed = static_cast<dlpack::DLManagedTensorVersioned*>(
        PyCapsule_GetPointer(object, "dltensor_versioned"));
    ONEFLITE_CHECK(managed->version.major == 1, TypeError, "from_dlpack: DLPack version ",
                   managed->version.major, ".", managed->version.minor,
                   " is not supported (oneflite reads 1.x)");
    PyCapsule_SetName(object, "used_dltensor_versioned");
    return TensorFromManaged(managed, (managed->flags & dlpack::kDLPackFlagReadOnly) != 0);
  }
  if (PyCapsule_IsValid(object, "dltensor")) {
    auto* managed = static_cast<dlpack::DLManagedTensor*>(PyCapsule_GetPointer(object, "dltensor"));
    PyCapsule_SetName(object, "used_dltensor");
    return TensorFromManaged(managed, false);
  }
  ONEFLITE_THROW(ValueError,
                 "from_dlpack: expected an unconsumed DLPack capsule ('dltensor' or "
                 "'dltensor_versioned'); a capsule can be consumed only once");
}

std::vector<int64_t> DimsFromArgs(const py::args& args) {
  // permute(0, 2, 1) and permute((0, 2, 1)) both work.
  if (args.size() == 1 && !py::isinstance<py::int_>(args[0])) {
    return py::cast<std::vector<int64_t>>(args[0]);
  }
  return py::cast<std::vector<int64_t>>(args);
}

}  // namespace

void BindTensor(py::module_& m) {
  py::class_<Tensor>(m, "Tensor", "A strided view of device memory with a dtype.")
      .def_property_readonly(
          "shape", [](const Tensor& t) { return ToTuple(t.shape()); },
          "The size of each dim, as a tuple of ints; () for a 0-d tensor.")
      .def(
          "size",
          [](const Tensor& t, std::optional<int64_t> dim) -> py::object {
            if (!dim) { return ToTuple(t.shape()); }
            return py::int_(t.shape()[DimOfNonScalar(t, *dim)]);
          },
          py::arg("dim") = py::none(),
          "The shape as a tuple, or with ``dim`` the size of that dim (negative counts from the "
          "end).")
      .def(
          "stride",
          [](const Tensor& t, std::optional<int64_t> dim) -> py::object {
            if (!dim) { return ToTuple(t.stride()); }
            return py::int_(t.stride()[DimOfNonScalar(t, *dim)]);
          },
          py::arg("dim") = py::none(),
          "The step between neighbouring elements of each dim, in elements, as a tuple; or with "
          "``dim`` the stride of that dim.")
      .def("storage_offset", &Tensor::storage_offset,
           "Where this view's first element sits in its storage, counted in elements.")
      .def_property_readonly("dtype", &Tensor::dtype, "The element type, a ``oneflite.dtype``.")
      .def_property_readonly("device", &Tensor::device,
                             "The device whose memory holds the elements, a ``oneflite.device``.")
      .def_property_readonly("ndim", &Tensor::ndim, "The number of dims; 0 for a 0-d tensor.")
      .def_property_readonly(
          "is_cuda", [](const Tensor& t) { return t.device().type == DeviceType::kCUDA; },
          "True when the elements are in the memory of a CUDA device.")
      .def("dim", &Tensor::ndim, "The number of dims, as ``ndim``.")
      .def("numel", &Tensor::numel, "The number of elements: the product of the shape.")
      .def("element_size", &Tensor::element_size, "The size of one element, in bytes.")
      .def("is_contiguous", &Tensor::is_contiguous,
           "True when the elements lie in row-major (C) order without gaps; dims of size 1 may "
           "have any stride.")
      .def(
          "data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); },
          "The address of the first element, as an int (0 when there is no memory).")
      .def(
          "__len__",
          [](const Tensor& t) {
            ONEFLITE_CHECK(t.ndim() > 0, TypeError, "len() of a 0-d tensor");
            return t.shape()[0];
          },
          "The size of dim 0; a 0-d tensor has no len().")
      .def(
          "transpose",
          [](const Tensor& t, int64_t dim0, int64_t dim1) {
            const int d0 = static_cast<int>(WrapDim(dim0, t.ndim()));
            const int d1 = static_cast<int>(WrapDim(dim1, t.ndim()));
            if (t.ndim() == 0) { return t; }  // a 0-d tensor is its own transpose
            return t.Transpose(d0, d1);
          },
          py::arg("dim0"), py::arg("dim1"), "A view with dims dim0 and dim1 swapped.")
      .def(
          "permute",
          [](const Tensor& t, const py::args& args) {
            const std::vector<int64_t> dims = DimsFromArgs(args);
            ONEFLITE_CHECK(static_cast<int64_t>(dims.size()) == t.ndim(), ValueError,
                           "permute: expected ", t.ndim(), " dims, got ", dims.size());
            std::vector<int> perm(dims.size());
            for (size_t i = 0; i < dims.size(); ++i) {
              perm[i] = static_cast<int>(WrapDim(dims[i], t.ndim()));
            }
            return t.Permute(perm);
          },
          "A view with dims reordered: permute(1, 0) or permute((1, 0)).")
      .def(
          "contiguous",
          [](const Tensor& t) { return CallWithoutGil([&] { return functional::Contiguous(t); }); },
          "This tensor if contiguous, else a contiguous copy.")
      .def("_as_strided", &Tensor::AsStrided, py::arg("shape"), py::arg("stride"),
           py::arg("storage_offset"),
           "A view of the same storage with this shape, stride and storage offset (elements).")
      .def("_is_same", &Tensor::is_same,
           "True when both are the same tensor, not merely views of the same memory.")
      .def_property_readonly("_writable", &Tensor::writable,
                             "False when the memory is read-only, as a read-only NumPy array's.")
      .def("_numpy", &ToNumpy, py::arg("numpy_dtype"),
           "A NumPy array of numpy_dtype viewing this CPU tensor's memory.")
      .def("_to_dlpack", &ToDLPack, py::arg("versioned"),
           "A DLPack capsule owning a reference to this tensor; versioned: DLPack 1.x.");

  m.def("_from_numpy", &FromNumpy, py::arg("array"), py::arg("dtype"));
  m.def("_from_dlpack_capsule", &FromDLPack, py::arg("capsule"));
  m.def(
      "_empty",
      [](const Shape& shape, DataType dtype, const Device& device) {
        return Tensor::Empty(shape, dtype, device);
      },
      py::arg("shape"), py::arg("dtype"), py::arg("device"));
}

}  // namespace oneflite::python
