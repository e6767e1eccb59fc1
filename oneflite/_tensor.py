"""Tensor creation and interop: ``tensor``, ``from_numpy``, ``from_dlpack``, and the Python-level
methods of :class:`oneflite.Tensor` (conversion, ``repr``, indexing, the DLPack protocol).

The Tensor class itself is defined in C++ (``oneflite._C.Tensor``); the methods below are
attached to it here because they are argument handling and formatting, which read best in
Python.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from . import _C
from ._C import Tensor
from ._C import device as _device
from ._C import dtype as _dtype

__all__ = ["from_dlpack", "from_numpy", "tensor"]

_kDLCPU = 1
_kDLCUDA = 2

# ---- dtypes -------------------------------------------------------------------------------

_NUMPY_OF_DTYPE = {
    _dtype.float16: np.dtype(np.float16),
    _dtype.float32: np.dtype(np.float32),
    _dtype.float64: np.dtype(np.float64),
    _dtype.int32: np.dtype(np.int32),
    _dtype.int64: np.dtype(np.int64),
    _dtype.bool: np.dtype(np.bool_),
}
_DTYPE_OF_NUMPY = {v: k for k, v in _NUMPY_OF_DTYPE.items()}


def _bfloat16_numpy_dtype() -> np.dtype:
    try:
        import ml_dtypes
    except ImportError:
        raise ImportError(
            "converting bfloat16 tensors to or from numpy needs the ml_dtypes package "
            "(pip install ml_dtypes); or convert with .to(oneflite.float32) first"
        ) from None
    return np.dtype(ml_dtypes.bfloat16)


def _numpy_dtype(dtype: _dtype) -> np.dtype:
    if dtype == _dtype.bfloat16:
        return _bfloat16_numpy_dtype()
    return _NUMPY_OF_DTYPE[dtype]


def _dtype_of_numpy(np_dtype: np.dtype) -> _dtype:
    if np_dtype.name == "bfloat16" and np_dtype.itemsize == 2:
        return _dtype.bfloat16
    if not np_dtype.isnative:
        raise TypeError(f"numpy arrays in non-native byte order ({np_dtype}) are not supported; "
                        "convert with array.astype(array.dtype.newbyteorder('='))")
    try:
        return _DTYPE_OF_NUMPY[np_dtype]
    except KeyError:
        raise TypeError(
            f"numpy dtype {np_dtype} is not supported; oneflite holds float16, bfloat16, "
            "float32, float64, int32, int64 and bool"
        ) from None


def _as_device(value: Any) -> _device:
    if isinstance(value, _device):
        return value
    if isinstance(value, str):
        return _device(value)
    raise TypeError(f"expected a device or a device string, got {type(value).__name__}")


def _clone(t: Tensor) -> Tensor:
    """A contiguous copy in fresh oneflite-owned memory, whatever the layout of ``t``."""
    return _C.functional.transpose(t, list(range(t.ndim)))


# ---- creation -----------------------------------------------------------------------------


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with ``array`` (no copy); writes to one show in the other.

    The array stays alive while the tensor (or any view of it) does. bfloat16 arrays need
    ``ml_dtypes``. Arrays with negative strides are rejected: pass ``array.copy()``.
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy() expects a numpy.ndarray, got {type(array).__name__}")
    return _C._from_numpy(array, _dtype_of_numpy(array.dtype))


# numpy dtypes oneflite has no exact match for, and what tensor() stores them as.
_WIDENED = {"int8": "int32", "int16": "int32", "uint8": "int32", "uint16": "int32",
            "uint32": "int64"}


def tensor(data: Any, dtype: _dtype | None = None, device: _device | str = "cpu") -> Tensor:
    """A new tensor holding a copy of ``data``.

    Args:
        data: a (nested) list or tuple of numbers, a scalar, a numpy array, or a tensor.
        dtype: the element type. By default Python floats become float32, Python ints int64
            and bools bool; numpy arrays keep their dtype.
        device: where to put the result, e.g. ``"cpu"`` or ``"cuda:0"``.

    Example::

        >>> import oneflite
        >>> oneflite.tensor([[1, 2], [3, 4]], dtype=oneflite.float16)
        tensor([[1., 2.],
                [3., 4.]], dtype=oneflite.float16)
    """
    if dtype is not None and not isinstance(dtype, _dtype):
        raise TypeError(f"tensor(): dtype must be a oneflite.dtype, not {type(dtype).__name__}")
    target = _as_device(device)
    if isinstance(data, Tensor):
        source = data
    else:
        typed = isinstance(data, (np.ndarray, np.generic))
        array = np.asarray(data)
        if array.dtype.kind == "f" and not typed:
            array = array.astype(np.float32)  # Python floats default to float32
        elif array.dtype.name in _WIDENED:
            array = array.astype(_WIDENED[array.dtype.name])
        elif array.dtype.kind not in "fbi" and array.dtype.name != "bfloat16":
            raise TypeError(f"tensor(): can't make a tensor from data of numpy dtype "
                            f"{array.dtype}")
        source = from_numpy(np.asarray(array, order="C"))  # keeps 0-d arrays 0-d
    result = source
    if dtype is not None:
        result = _C.functional.cast(result, dtype)
    result = _C.functional.copy(result, target)
    if result._is_same(source):  # neither step copied, but tensor() never shares memory
        result = _clone(result)
    return result


def from_dlpack(obj: Any) -> Tensor:
    """A tensor sharing memory with any DLPack producer (numpy, torch, cupy, ...), no copy.

    For CUDA producers oneflite passes its own stream, so the producer orders its pending
    work before oneflite's.
    """
    if hasattr(obj, "__dlpack__"):
        device_type, device_id = obj.__dlpack_device__()
        kwargs: dict[str, Any] = {}
        if device_type == _kDLCUDA:
            kwargs["stream"] = _C._native_stream(_device("cuda", int(device_id)))
        try:
            capsule = obj.__dlpack__(max_version=(1, 0), **kwargs)
        except TypeError:  # a producer that predates DLPack 1.0 keywords
            capsule = obj.__dlpack__(**kwargs)
    else:
        capsule = obj
    return _C._from_dlpack_capsule(capsule)


# ---- Tensor methods -----------------------------------------------------------------------


def _to(self: Tensor, *args: Any, dtype: _dtype | None = None,
        device: _device | str | None = None, copy: bool = False) -> Tensor:
    """This tensor on another device and/or of another dtype.

    ``t.to(oneflite.float16)``, ``t.to("cuda")``, ``t.to("cuda", oneflite.float16)``,
    ``t.to(other)`` (other's device and dtype), or keywords. Returns ``self`` when nothing
    changes, unless ``copy=True``.
    """
    for arg in args:
        if isinstance(arg, _dtype):
            dtype = arg
        elif isinstance(arg, (str, _device)):
            device = arg
        elif isinstance(arg, Tensor):
            dtype, device = arg.dtype, arg.device
        else:
            raise TypeError(f"to() got an argument of unexpected type {type(arg).__name__}")
    result = self
    if device is not None:
        result = _C.functional.copy(result, _as_device(device))
    if dtype is not None:
        if not isinstance(dtype, _dtype):
            raise TypeError(f"to(): dtype must be a oneflite.dtype, not {type(dtype).__name__}")
        result = _C.functional.cast(result, dtype)
    if result._is_same(self):
        return _clone(self) if copy else self
    return result


def _contiguous(self: Tensor) -> Tensor:
    """This tensor if it is contiguous, else a contiguous copy.

    A contiguous view whose first element is not aligned for its dtype (of an unaligned NumPy
    array, say) is copied too: the result always suits code that loads whole elements.
    """
    result = _C.functional.contiguous(self)
    return self if result._is_same(self) else result


def _cuda(self: Tensor, device: int | str | _device | None = None) -> Tensor:
    """This tensor on a GPU (default ``cuda:0``)."""
    if device is None:
        device = "cuda:0"
    elif isinstance(device, int) and not isinstance(device, builtins.bool):
        device = f"cuda:{device}"
    return _C.functional.copy(self, _as_device(device))


def _cpu(self: Tensor) -> Tensor:
    """This tensor in host memory."""
    return _C.functional.copy(self, _device("cpu"))


def _numpy(self: Tensor) -> np.ndarray:
    """A numpy array sharing this CPU tensor's memory. bfloat16 needs ``ml_dtypes``."""
    return self._numpy(_numpy_dtype(self.dtype))


def _array(self: Tensor, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    """NumPy's array protocol: ``numpy.asarray(t)`` views a CPU tensor's memory.

    With ``dtype`` the values are converted (a copy); ``copy=True`` always copies, ``copy=False``
    raises where a copy would be needed.
    """
    array = _numpy(self)
    if dtype is not None and np.dtype(dtype) != array.dtype:
        if copy is False:
            raise ValueError(f"can't convert {self.dtype} to numpy {np.dtype(dtype)} without "
                             "a copy")
        return array.astype(dtype)
    return array.copy() if copy else array


def _dlpack(self: Tensor, *, stream: int | None = None, max_version: tuple[int, int] | None = None,
            dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """Export as a DLPack capsule (the producer side of the protocol)."""
    if dl_device is not None and tuple(dl_device) != _dlpack_device(self):
        raise BufferError(f"can't export a tensor on {self.device} to DLPack device {dl_device}")
    source = _clone(self) if copy else self
    if self.is_cuda:
        if stream == 0:
            raise ValueError("stream=0 is ambiguous in DLPack; pass 1 for the legacy default "
                             "stream or 2 for the per-thread default stream")
        if stream is None:
            stream = 1  # the protocol's default: the legacy default stream
        if stream != -1:  # -1: the consumer asks for no synchronization
            _C._make_external_stream_wait(self.device, stream)
    versioned = max_version is not None and max_version[0] >= 1
    if not versioned and not source._writable:
        raise BufferError("this tensor views read-only memory, which a DLPack consumer older "
                          "than 1.0 cannot be told about; pass max_version=(1, 0) or copy=True")
    return source._to_dlpack(versioned)


def _dlpack_device(self: Tensor) -> tuple[int, int]:
    """The DLPack device of this tensor: ``(1, 0)`` for the CPU, ``(2, index)`` for a GPU."""
    if self.is_cuda:
        return (_kDLCUDA, self.device.index)
    return (_kDLCPU, 0)


def _repr(self: Tensor) -> str:
    host = self.cpu() if self.is_cuda else self
    if host.dtype == _dtype.bfloat16:
        host = host.to(_dtype.float32)  # print bfloat16 without needing ml_dtypes
    values = host._numpy(_NUMPY_OF_DTYPE[host.dtype])
    body = np.array2string(values, separator=", ", prefix="tensor(", threshold=1000)
    fields = [body]
    if self.is_cuda:
        fields.append(f"device='{self.device}'")
    fields.append(f"dtype={self.dtype!r}")
    return f"tensor({', '.join(fields)})"


def _getitem(self: Tensor, index: Any) -> Tensor:
    """Basic indexing, as a view: integers, slices with positive steps, ``...`` and ``None``."""
    if not isinstance(index, tuple):
        index = (index,)
    ellipses = [k for k, item in enumerate(index) if item is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    explicit = sum(1 for item in index if item is not None and item is not Ellipsis)
    if explicit > self.ndim:
        raise IndexError(f"too many indices for a tensor of {self.ndim} dims: {explicit}")
    if ellipses:  # the ellipsis stands for every dim the other indices don't name
        at = ellipses[0]
        index = index[:at] + (slice(None),) * (self.ndim - explicit) + index[at + 1:]
    shape: list[int] = []
    stride: list[int] = []
    offset = self.storage_offset()
    dim = 0
    for item in index:
        if item is None:
            shape.append(1)
            stride.append(0)
        elif isinstance(item, slice):
            start, stop, step = item.indices(self.shape[dim])
            if step <= 0:
                raise ValueError("slices with a non-positive step are not supported")
            length = max(0, (stop - start + step - 1) // step)
            shape.append(length)
            stride.append(self.stride(dim) * step)
            if length > 0:
                offset += start * self.stride(dim)
            dim += 1
        else:
            if isinstance(item, (builtins.bool, np.bool_)) or not hasattr(item, "__index__"):
                raise TypeError(f"unsupported index type {type(item).__name__}: use integers, "
                                "slices, ... or None")
            i = item.__index__()
            size = self.shape[dim]
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size "
                                 f"{size}")
            offset += (i % size) * self.stride(dim)
            dim += 1
    shape.extend(self.shape[dim:])
    stride.extend(self.stride()[dim:])
    return self._as_strided(shape, stride, offset)


def _tolist(self: Tensor) -> Any:
    """The values as (nested) Python lists of numbers."""
    host = self.cpu() if self.is_cuda else self
    if host.dtype in (_dtype.float16, _dtype.bfloat16):
        host = host.to(_dtype.float32)
    return host._numpy(_NUMPY_OF_DTYPE[host.dtype]).tolist()


def _item(self: Tensor) -> Any:
    """The value of a one-element tensor as a Python number."""
    if self.numel() != 1:
        raise ValueError(f"item() needs a tensor with one element, this one has {self.numel()}")
    values = _tolist(self)
    while isinstance(values, list):
        values = values[0]
    return values


def _softmax(self: Tensor, dim: int | None = None, dtype: _dtype | None = None) -> Tensor:
    """See :func:`oneflite.nn.functional.softmax`."""
    from .nn.functional import softmax

    return softmax(self, dim, dtype)


def _log_softmax(self: Tensor, dim: int | None = None, dtype: _dtype | None = None) -> Tensor:
    """See :func:`oneflite.nn.functional.log_softmax`."""
    from .nn.functional import log_softmax

    return log_softmax(self, dim, dtype)


def _float(self: Tensor) -> Tensor:
    """This tensor as float32: ``self.to(oneflite.float32)``."""
    return self.to(_dtype.float32)


def _double(self: Tensor) -> Tensor:
    """This tensor as float64: ``self.to(oneflite.float64)``."""
    return self.to(_dtype.float64)


def _half(self: Tensor) -> Tensor:
    """This tensor as float16: ``self.to(oneflite.float16)``."""
    return self.to(_dtype.float16)


def _bfloat16(self: Tensor) -> Tensor:
    """This tensor as bfloat16: ``self.to(oneflite.bfloat16)``."""
    return self.to(_dtype.bfloat16)


def _install() -> None:
    methods = {
        "to": _to,
        "contiguous": _contiguous,
        "cuda": _cuda,
        "cpu": _cpu,
        "numpy": _numpy,
        "__array__": _array,
        "__dlpack__": _dlpack,
        "__dlpack_device__": _dlpack_device,
        "__repr__": _repr,
        "__getitem__": _getitem,
        "tolist": _tolist,
        "item": _item,
        "softmax": _softmax,
        "log_softmax": _log_softmax,
        "float": _float,
        "double": _double,
        "half": _half,
        "bfloat16": _bfloat16,
    }
    for name, method in methods.items():
        setattr(Tensor, name, method)
    _dtype.__repr__ = _dtype.__str__ = lambda self: f"oneflite.{self.name}"


_install()
