"""CUDA device queries: ``oneflite.cuda.is_available()`` and friends, and the memory oneflite
holds on each GPU.

Device memory comes from the device's stream-ordered pool (cudaMallocAsync). A tensor's block,
once the tensor is dropped, is kept for the next tensor of the same size rather than handed
back: handing it back queues an operation on the GPU's stream, which costs about 0.6 us of GPU
time between two kernels (an H200). ``memory_allocated`` counts the bytes of live tensors,
``memory_cached`` the bytes kept (at most an eighth of the device's memory), and
``empty_cache`` hands the kept blocks back to the pool, where other allocations, oneflite's or
another library's, can use them. An allocation the pool cannot satisfy empties the cache and
tries again.
"""

from __future__ import annotations

from . import _C

__all__ = [
    "device_count",
    "empty_cache",
    "is_available",
    "is_compiled",
    "memory_allocated",
    "memory_cached",
    "synchronize",
]


def is_compiled() -> bool:
    """True when this build of oneflite includes the CUDA backend."""
    return _C.cuda.is_compiled()


def is_available() -> bool:
    """True when the CUDA backend is built and at least one GPU is usable."""
    return _C.cuda.is_available()


def device_count() -> int:
    """The number of usable GPUs (0 without a backend, driver or GPU)."""
    return _C.cuda.device_count()


def _device(device: _C.device | str | int | None) -> _C.device:
    """``device`` as a device object: None is ``cuda:0``, an int N is ``cuda:N``."""
    if device is None:
        device = 0
    if isinstance(device, int) and not isinstance(device, bool):
        device = f"cuda:{device}"
    return _C.device(str(device)) if isinstance(device, str) else device


def synchronize(device: _C.device | str | int | None = None) -> None:
    """Wait until all of oneflite's queued work on ``device`` (default ``cuda:0``) is done."""
    _C.cuda.synchronize(_device(device))


def memory_allocated(device: _C.device | str | int | None = None) -> int:
    """Bytes of ``device``'s memory (default ``cuda:0``) in oneflite's live tensors, each
    rounded up to 512 bytes."""
    return _C.cuda.memory_allocated(_device(device))


def memory_cached(device: _C.device | str | int | None = None) -> int:
    """Bytes of ``device``'s memory (default ``cuda:0``) that oneflite keeps from dropped
    tensors, for reuse by tensors of the same size."""
    return _C.cuda.memory_cached(_device(device))


def empty_cache(device: _C.device | str | int | None = None) -> None:
    """Hand the memory oneflite keeps from dropped tensors on ``device`` (default ``cuda:0``)
    back to the device's memory pool."""
    _C.cuda.empty_cache(_device(device))
