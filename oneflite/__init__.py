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

from . import cuda, nn, primitive, registry  # noqa: E402
from ._C import Tensor, device, dtype  # noqa: E402
from ._C import load_library  # noqa: E402
from ._tensor import from_dlpack, from_numpy, tensor  # noqa: E402
from ._trace import Trace, trace  # noqa: E402
from .nn.functional import log_softmax, softmax  # noqa: E402

float16 = dtype.float16
bfloat16 = dtype.bfloat16
float32 = dtype.float32
float64 = dtype.float64
int32 = dtype.int32
int64 = dtype.int64
bool = dtype.bool  # noqa: A001 - mirrors the dtype's name, as numpy and torch do
half = float16
float = float32  # noqa: A001
double = float64

primitive._apply_environment()

try:
    from importlib.metadata import version as _version

    __version__ = _version("oneflite")
except Exception:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = [
    "Tensor",
    "Trace",
    "bfloat16",
    "bool",
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
    "half",
    "int32",
    "int64",
    "load_library",
    "log_softmax",
    "nn",
    "primitive",
    "registry",
    "softmax",
    "tensor",
    "trace",
]
