"""oneflite: a small operator framework with OneFlow-style layering.

A call such as ``oneflite.nn.functional.softmax(x, dim)`` travels through five registered
layers: Functional (Python) -> Functor -> Op -> Kernel -> Primitive. See ``python -m oneflite``
for what is registered in each layer, and the docs for a walk through the call chain.
"""

from __future__ import annotations

import os as _os
from pathlib import Path as _Path

from . import _C

# Backends live in shared libraries next to the core; loading one runs its registrations.
_PACKAGE_DIR = _Path(__file__).resolve().parent
_CUDA_BACKEND = _PACKAGE_DIR / "liboneflite_cuda.so"
if _CUDA_BACKEND.exists() and _os.environ.get("ONEFLITE_DISABLE_CUDA", "") in ("", "0"):
    _C.load_library(str(_CUDA_BACKEND))

from . import cpu, cuda, nn, primitive, registry  # noqa: E402
from ._C import (  # noqa: E402
    Tensor,
    device,
    dtype,
    get_num_threads,
    load_library,
    set_num_threads,
)
from ._tensor import from_dlpack, from_numpy, tensor  # noqa: E402
from ._trace import Trace, trace  # noqa: E402
from .nn.functional import log_softmax, softmax  # noqa: E402

float16 = dtype.float16
bfloat16 = dtype.bfloat16
float32 = dtype.float32
float64 = dtype.float64
int32 = dtype.int32
int64 = dtype.int64
bool = dtype.bool  # mirrors the dtype's name, as numpy and torch do
half = float16
float = float32
double = float64

primitive._apply_environment()

#: Pass as CMAKE_PREFIX_PATH to find_package(oneflite) from a C++ extension.
cmake_prefix_path = str(_PACKAGE_DIR)
#: The public C++ headers.
include_dir = str(_PACKAGE_DIR / "include")


def _load_entry_point_backends() -> None:
    """Import the packages that announce backends in the ``oneflite.backends`` entry-point group
    (set ONEFLITE_DISABLE_ENTRY_POINTS=1 to skip). A package that fails to load is reported as a
    warning, so one broken plugin cannot make oneflite unimportable."""
    if _os.environ.get("ONEFLITE_DISABLE_ENTRY_POINTS", "") not in ("", "0"):
        return
    import warnings
    from importlib.metadata import entry_points

    try:
        found = entry_points(group="oneflite.backends")
    except TypeError:  # Python 3.9's entry_points() takes no group
        found = entry_points().get("oneflite.backends", [])
    for entry in found:
        try:
            loaded = entry.load()
            if callable(loaded):
                loaded()
        except Exception as error:  # any failure of a plugin is reported
            warnings.warn(f"oneflite: backend entry point {entry.name!r} ({entry.value}) failed "
                          f"to load: {error!r}", RuntimeWarning, stacklevel=2)

try:
    from importlib.metadata import version as _version

    __version__ = _version("oneflite")
except Exception:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

_load_entry_point_backends()

__all__ = [
    "Tensor",
    "Trace",
    "bfloat16",
    "bool",
    "cmake_prefix_path",
    "cpu",
    "cuda",
    "device",
    "double",
    "dtype",
    "float",
    "float16",
    "float32",
    "float64",
    "from_dlpack",
    "from_numpy",
    "get_num_threads",
    "half",
    "int32",
    "int64",
    "load_library",
    "log_softmax",
    "nn",
    "primitive",
    "registry",
    "set_num_threads",
    "softmax",
    "tensor",
    "trace",
]
