"""An out-of-tree oneflite extension.

Importing it (oneflite does so through the ``oneflite.backends`` entry point) registers:

* ``custom_online``: a CPU backend for oneflite's existing ``softmax`` primitive;
* ``gelu``: a new primitive kind with its op, kernel and functor, called as :func:`gelu`.
"""

from __future__ import annotations

import oneflite

from . import _ext

__all__ = ["gelu"]


def gelu(x: oneflite.Tensor) -> oneflite.Tensor:
    """GELU, ``x * Phi(x)``, through oneflite's layers: functor -> op -> kernel -> primitive."""
    if not isinstance(x, oneflite.Tensor):
        raise TypeError(f"gelu(): expected a oneflite.Tensor, got {type(x).__name__}")
    return _ext.gelu(x)
