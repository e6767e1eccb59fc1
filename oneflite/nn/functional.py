"""The Functional layer: the Python signatures users call.

This layer owns only what Python users see: signatures, docstrings and argument checking. It
holds no numerics. Every function hands its arguments to a C++ functor in ``oneflite._C``,
which validates them, picks the dim, casts for ``dtype=`` and runs the ops.
"""

from __future__ import annotations

import operator

from .. import _C, _trace
from .._C import Tensor
from .._C import dtype as _dtype

__all__ = ["log_softmax", "softmax"]

_functors = _C.functional


def _check_args(name: str, input: object, dim: object, dtype: object) -> int | None:
    # The common call (a Tensor, a plain int dim, no dtype) passes with three type tests; this
    # is the whole of the Python layer's cost on a tiny tensor, next to the C++ call.
    if type(dim) is int and type(input) is Tensor and dtype is None and -(2**63) <= dim < 2**63:
        return dim
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be a oneflite.Tensor, "
                        f"not {type(input).__name__}")
    if dtype is not None and not isinstance(dtype, _dtype):
        raise TypeError(f"{name}(): argument 'dtype' must be a oneflite.dtype, "
                        f"not {type(dtype).__name__}")
    if dim is None:
        return None
    if isinstance(dim, (bool, _dtype)):  # both convert to int, neither is a dim
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    try:
        index = operator.index(dim)
    except TypeError:
        raise TypeError(f"{name}(): argument 'dim' must be int, "
                        f"not {type(dim).__name__}") from None
    if not -(2**63) <= index < 2**63:  # past C++'s int64: out of range for any tensor
        n = max(input.ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {index})")
    return index


def _describe(name: str, input: Tensor, dim: int | None, dtype: _dtype | None) -> str:
    text = f"oneflite.nn.functional.{name}({_trace.describe(input)}, dim={dim}"
    return text + (f", dtype={dtype})" if dtype is not None else ")")


def softmax(input: Tensor, dim: int | None = None, dtype: _dtype | None = None) -> Tensor:
    r"""Softmax along ``dim``: :math:`y_i = e^{x_i} / \sum_j e^{x_j}`.

    Each slice along ``dim`` is rescaled so that its elements lie in [0, 1] and sum to 1.

    Args:
        input: a floating-point tensor (float16, bfloat16, float32 or float64), on any device.
        dim: the dimension to normalize over; negative values count from the end. If None,
            dim 0 is used for 0-, 1- and 3-d inputs and dim 1 otherwise.
        dtype: if given, ``input`` is cast to this dtype first and the result has it. This is
            how integer tensors are softmaxed, and how 16-bit inputs are computed in float32.

    Returns:
        A new tensor of the same shape as ``input``.

    Raises:
        TypeError: for integer or bool input without ``dtype=``, or arguments of wrong types.
        IndexError: when ``dim`` is out of range.
        NotImplementedError: when no kernel serves the input's device and dtype.

    Example::

        >>> import oneflite
        >>> x = oneflite.tensor([[1.0, 2.0, 3.0]])
        >>> oneflite.nn.functional.softmax(x, dim=1)
        tensor([[0.09003057, 0.24472848, 0.66524094]], dtype=oneflite.float32)
    """
    dim = _check_args("softmax", input, dim, dtype)
    if _trace.active and _trace.local.open:
        return _trace.call(_describe("softmax", input, dim, dtype), _functors.softmax, input,
                           dim, dtype)
    return _functors.softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, dtype: _dtype | None = None) -> Tensor:
    r"""Log of the softmax along ``dim``: :math:`y_i = x_i - \log \sum_j e^{x_j}`.

    Computed directly, not as ``log(softmax(x))``, so it stays finite where softmax
    underflows to 0.

    Args:
        input: a floating-point tensor (float16, bfloat16, float32 or float64), on any device.
        dim: the dimension to normalize over; negative values count from the end. If None,
            dim 0 is used for 0-, 1- and 3-d inputs and dim 1 otherwise.
        dtype: if given, ``input`` is cast to this dtype first and the result has it.

    Returns:
        A new tensor of the same shape as ``input``.

    Raises:
        TypeError: for integer or bool input without ``dtype=``, or arguments of wrong types.
        IndexError: when ``dim`` is out of range.
        NotImplementedError: when no kernel serves the input's device and dtype.

    Example::

        >>> import oneflite
        >>> x = oneflite.tensor([[1.0, 2.0, 3.0]])
        >>> oneflite.nn.functional.log_softmax(x, dim=1)
        tensor([[-2.407606  , -1.407606  , -0.40760598]], dtype=oneflite.float32)
    """
    dim = _check_args("log_softmax", input, dim, dtype)
    if _trace.active and _trace.local.open:
        return _trace.call(_describe("log_softmax", input, dim, dtype), _functors.log_softmax,
                           input, dim, dtype)
    return _functors.log_softmax(input, dim, dtype)
