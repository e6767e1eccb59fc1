"""CUDA device queries: ``oneflite.cuda.is_available()`` and friends."""

from __future__ import annotations

from . import _C

__all__ = ["device_count", "is_available", "is_compiled", "synchronize"]


def is_compiled() -> bool:
    """True when this build of oneflite includes the CUDA backend."""
    return _C.cuda.is_compiled()


def is_available() -> bool:
    """True when the CUDA backend is built and at least one GPU is usable."""
    return _C.cuda.is_available()


def device_count() -> int:
    """The number of usable GPUs (0 without a backend, driver or GPU)."""
    return _C.cuda.device_count()


def synchronize(device: _C.device | str | int | None = None) -> None:
    """Wait until all of oneflite's queued work on ``device`` (default ``cuda:0``) is done."""
    if device is None:
        device = 0
    if isinstance(device, int) and not isinstance(device, bool):
        device = f"cuda:{device}"
    _C.cuda.synchronize(_C.device(str(device)) if isinstance(device, str) else device)
