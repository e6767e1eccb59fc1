"""A minimal ``Module`` base and the softmax modules."""

from __future__ import annotations

from typing import Any

from .._C import Tensor
from . import functional as F

__all__ = ["LogSoftmax", "Module", "Softmax"]


class Module:
    """Base class for layers: subclasses implement :meth:`forward`; calling the module runs it.

    oneflite modules hold no parameters yet, so this base is deliberately small: it provides
    the call protocol and a readable ``repr`` built from :meth:`extra_repr`.
    """

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def extra_repr(self) -> str:
        """The text shown inside the parentheses of ``repr(module)``."""
        return ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.extra_repr()})"


class Softmax(Module):
    """Applies :func:`oneflite.nn.functional.softmax` along ``dim``.

    Example::

        >>> import oneflite
        >>> m = oneflite.nn.Softmax(dim=-1)
        >>> m
        Softmax(dim=-1)
        >>> m(oneflite.tensor([0.0, 0.0]))
        tensor([0.5, 0.5], dtype=oneflite.float32)
    """

    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """Applies :func:`oneflite.nn.functional.log_softmax` along ``dim``.

    Example::

        >>> import oneflite
        >>> oneflite.nn.LogSoftmax(dim=0)(oneflite.tensor([0.0, 0.0]))
        tensor([-0.6931472, -0.6931472], dtype=oneflite.float32)
    """

    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
