"""Read-only listings of what each layer has registered.

Each function returns a list of plain dicts, so the result prints and compares easily::

    >>> import oneflite
    >>> [p["name"] for p in oneflite.registry.primitives()
    ...  if p["kind"] == "softmax" and p["device"] == "cpu"]
    ['fast', 'reference']
"""

from __future__ import annotations

from typing import Any

from . import _C

__all__ = ["functors", "kernels", "ops", "primitives"]


def functors() -> list[dict[str, Any]]:
    """Functors in the function library: ``name`` and ``signature``."""
    return _C.registry.functors()


def ops() -> list[dict[str, Any]]:
    """Op definitions: ``name``, ``inputs``, ``outputs``, ``attrs`` and ``doc``."""
    return _C.registry.ops()


def kernels() -> list[dict[str, Any]]:
    """Kernels, highest priority first: ``op``, ``name``, ``priority`` and ``match`` rule."""
    return _C.registry.kernels()


def primitives() -> list[dict[str, Any]]:
    """Primitive backends, highest priority first: ``kind``, ``device``, ``name``,
    ``priority`` and ``dtypes``."""
    return _C.registry.primitives()
