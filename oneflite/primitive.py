"""Primitive backends: register your own, choose among them, list them.

A primitive kind (``"softmax"``, ``"log_softmax"``, ...) may have several named backends per
device. For each call the highest-priority backend that supports the (device, dtype) is used,
unless one is forced with :func:`use` or the ``ONEFLITE_FORCE_PRIMITIVE`` environment variable
(``"softmax=reference,log_softmax=reference"``).

Registering a softmax backend written in Python takes a few lines::

    >>> import numpy as np
    >>> import oneflite
    >>> @oneflite.primitive.register("softmax", dtypes=[oneflite.float32], name="numpy_softmax")
    ... def numpy_softmax(x, y):
    ...     a = x.numpy()                      # (rows, cols), sharing oneflite's memory
    ...     e = np.exp(a - a.max(axis=1, keepdims=True))
    ...     y.numpy()[...] = e / e.sum(axis=1, keepdims=True)
    >>> with oneflite.trace() as t:
    ...     _ = oneflite.softmax(oneflite.tensor([[0.0, 0.0]]), dim=1)
    >>> "numpy_softmax" in str(t)
    True
    >>> oneflite.primitive.unregister("softmax", "numpy_softmax")
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Iterator, Sequence
from typing import Any, Callable

from . import _C
from ._C import device as _device
from ._C import dtype as _dtype

__all__ = ["backends", "register", "unregister", "use"]

#: Kinds a Python function can implement: each is called as ``fn(x, y)`` with (rows, cols)
#: tensors, and writes ``y``.
PYTHON_KINDS = ("softmax", "log_softmax")

#: Priority given to backends registered from Python unless stated: above every built-in
#: backend, so a newly registered backend is the one used.
DEFAULT_PRIORITY = 1000

_FLOATS = (_dtype.float16, _dtype.bfloat16, _dtype.float32, _dtype.float64)


def _check_signature(fn: Callable[..., Any]) -> None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # builtins without a signature: let the call itself decide
    try:
        signature.bind(None, None)
    except TypeError:
        raise TypeError(
            f"a primitive backend is called as fn(x, y); {getattr(fn, '__name__', fn)!r} has "
            f"signature {signature}"
        ) from None


def register(
    kind: str,
    fn: Callable[[_C.Tensor, _C.Tensor], None] | None = None,
    *,
    device: str | _device = "cpu",
    dtypes: Sequence[_dtype] = _FLOATS,
    name: str | None = None,
    priority: int = DEFAULT_PRIORITY,
) -> Any:
    """Register a Python function as a backend of a primitive kind.

    Usable as a decorator (``@register("softmax", dtypes=[...])``) or a call
    (``register("softmax", fn, ...)``). The function is called as ``fn(x, y)``, where ``x`` and
    ``y`` are contiguous ``(rows, cols)`` tensors on ``device``; it writes the result into ``y``
    (for example through ``y.numpy()`` on the CPU, or ``torch.from_dlpack(y)`` on CUDA) and
    returns None. ``x`` and ``y`` are valid only during the call.

    Args:
        kind: ``"softmax"`` or ``"log_softmax"``.
        fn: the function; omit to use ``register`` as a decorator.
        device: the device type it serves, ``"cpu"`` or ``"cuda"``.
        dtypes: the floating dtypes it serves; for others the next backend is used.
        name: the backend's name (default: the function's name); unique per kind and device.
        priority: higher wins; built-in backends use 0 to 100.

    Raises:
        ValueError: an unknown kind, a duplicate name, or non-floating dtypes.
        TypeError: ``fn`` is not callable as ``fn(x, y)``, or a dtype is not a oneflite.dtype.
    """
    if kind not in PYTHON_KINDS:
        raise ValueError(f"register(): unknown or unsupported primitive kind {kind!r}; Python "
                         f"backends can be registered for {', '.join(PYTHON_KINDS)}")
    dtypes = list(dtypes)
    for d in dtypes:
        if not isinstance(d, _dtype):
            raise TypeError(f"register(): dtypes must be oneflite dtypes, got {d!r}")
    target = device if isinstance(device, _device) else _device(device)

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(function):
            raise TypeError(f"register(): expected a callable, got {type(function).__name__}")
        _check_signature(function)
        backend = name if name is not None else getattr(function, "__name__", None)
        if not backend:
            raise ValueError("register(): give the backend a name")
        _C._register_python_primitive(kind, target, backend, priority, dtypes, function)
        return function

    return decorate if fn is None else decorate(fn)


def unregister(kind: str, name: str, device: str | _device = "cpu") -> None:
    """Remove backend ``name`` of ``kind`` on ``device``. Raises ValueError if absent."""
    _C._unregister_primitive(kind, device if isinstance(device, _device) else _device(device),
                             name)


def backends(kind: str | None = None) -> list[dict[str, Any]]:
    """Registered backends (optionally of one kind), highest priority first."""
    return [p for p in _C.registry.primitives() if kind is None or p["kind"] == kind]


@contextlib.contextmanager
def use(kind: str, name: str | None) -> Iterator[None]:
    """Force backend ``name`` for ``kind`` inside the block (None: back to priorities).

    A forced backend that cannot serve a call's (device, dtype) makes the call raise
    NotImplementedError; it never falls back silently. The setting is process-wide and is
    restored when the block ends::

        with oneflite.primitive.use("softmax", "reference"):
            y = oneflite.softmax(x, dim=-1)
    """
    if name is not None and not any(p["name"] == name for p in backends(kind)):
        known = sorted({p["name"] for p in backends(kind)})
        raise ValueError(f"no {kind!r} backend named {name!r}; registered: {known}")
    previous = _C._forced_primitive(kind)
    _C._force_primitive(kind, name)
    try:
        yield
    finally:
        _C._force_primitive(kind, previous)


ENVIRONMENT_VARIABLE = "ONEFLITE_FORCE_PRIMITIVE"


def _apply_environment() -> None:
    """Force the backends named in ``ONEFLITE_FORCE_PRIMITIVE`` ("kind=name,kind=name")."""
    spec = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    for item in filter(None, (part.strip() for part in spec.split(","))):
        kind, sep, name = item.partition("=")
        if not sep or not kind.strip() or not name.strip():
            raise ValueError(f"{ENVIRONMENT_VARIABLE}: expected 'kind=name' items separated by "
                             f"commas, got {item!r}")
        _C._force_primitive(kind.strip(), name.strip())
