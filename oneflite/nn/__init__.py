"""Neural-network building blocks: modules and the functional API."""

from . import functional
from .modules import LogSoftmax, Module, Softmax

__all__ = ["LogSoftmax", "Module", "Softmax", "functional"]
