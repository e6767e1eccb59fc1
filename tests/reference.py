"""The oracle: softmax and log_softmax in NumPy float64, with PyTorch's semantics.

Deliberately plain (subtract the max, exponentiate, normalize) so that it is obviously right.
It never calls oneflite. Per slice along ``dim``:

- NaN anywhere makes the whole slice NaN;
- a slice of all -inf is all NaN (-inf - -inf);
- a slice holding +inf is all NaN (inf - inf);
- otherwise -inf entries give exactly 0 (log_softmax: -inf);
- a 0-d input is one slice of one element: 1.0 (log_softmax: 0.0).
"""

from __future__ import annotations

import numpy as np

__all__ = ["implicit_dim", "log_softmax_ref", "softmax_ref"]


def implicit_dim(ndim: int) -> int:
    """The dim softmax uses when given ``dim=None``: 0 for 0-, 1- and 3-d inputs, else 1."""
    return 0 if ndim in (0, 1, 3) else 1


def _as_slices(x: np.ndarray, dim: int) -> tuple[np.ndarray, int]:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0:
        if dim not in (0, -1):
            raise IndexError(f"dim {dim} for a 0-d array")
        return x.reshape(1), 0
    return x, dim


def softmax_ref(x: np.ndarray, dim: int) -> np.ndarray:
    """exp(x - max) / sum(exp(x - max)) along ``dim``, in float64."""
    shape = np.shape(x)
    x, dim = _as_slices(x, dim)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore", under="ignore"):
        # np.max propagates NaN, which then reaches every element of the slice.
        shifted = x - np.max(x, axis=dim, keepdims=True) if x.size else x
        e = np.exp(shifted)
        y = e / np.sum(e, axis=dim, keepdims=True)
    return y.reshape(shape)


def log_softmax_ref(x: np.ndarray, dim: int) -> np.ndarray:
    """x - max - log(sum(exp(x - max))) along ``dim``, in float64."""
    shape = np.shape(x)
    x, dim = _as_slices(x, dim)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore", under="ignore"):
        shifted = x - np.max(x, axis=dim, keepdims=True) if x.size else x
        y = shifted - np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))
    return y.reshape(shape)
