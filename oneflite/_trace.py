"""``oneflite.trace()``: record how calls travel through the five layers.

::

    with oneflite.trace() as t:
        oneflite.nn.functional.softmax(x, dim=0)
    print(t)

Recording is per thread, and traces nest (see :func:`trace`). While no trace is active every
hook is a single flag check, in Python and in C++, so tracing costs nothing when it is off.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

from . import _C

__all__ = ["Trace", "TraceEvent", "trace"]


class _ThreadState(threading.local):
    # trace() blocks open on this thread.
    open = 0


# The functional layer describes its call only when this thread is recording: it checks
# `active and local.open`. `active` counts the blocks open in all threads, so that the check
# costs one global read while nobody traces; it changes only under _lock. The C++ side keeps
# its own per-thread recordings.
active = 0
local = _ThreadState()
_lock = threading.Lock()


@dataclass(frozen=True)
class TraceEvent:
    """One step of a call: its nesting depth, its layer and what happened there."""

    depth: int
    layer: str
    text: str


class Trace:
    """The events recorded by one ``with oneflite.trace()`` block; ``print`` shows a tree."""

    def __init__(self) -> None:
        self.events: list[TraceEvent] = []

    def layers(self) -> list[str]:
        """The layer of each event, in order."""
        return [e.layer for e in self.events]

    def __len__(self) -> int:
        return len(self.events)

    def __repr__(self) -> str:
        return f"<oneflite.Trace with {len(self.events)} events>"

    def __str__(self) -> str:
        lines = []
        for i, event in enumerate(self.events):
            # Draw each ancestor's rail, then this event's branch.
            prefix = ""
            for level in range(event.depth):
                if level == event.depth - 1:
                    prefix += "└─ " if self._is_last_child(i) else "├─ "
                else:
                    prefix += "   " if self._ancestor_done(i, level + 1) else "│  "
            lines.append(f"{prefix}{event.layer:<10} {event.text}")
        return "\n".join(lines)

    def _is_last_child(self, i: int) -> bool:
        depth = self.events[i].depth
        for later in self.events[i + 1:]:
            if later.depth < depth:
                return True
            if later.depth == depth:
                return False
        return True

    def _ancestor_done(self, i: int, level: int) -> bool:
        # Whether the ancestor of event i at depth `level` has no later siblings.
        for j in range(i, -1, -1):
            if self.events[j].depth == level:
                return self._is_last_child(j)
        return True


class _Recording:
    def __init__(self) -> None:
        self.trace = Trace()
        self._id: int | None = None
        self._thread: int | None = None

    def __enter__(self) -> Trace:
        global active
        if self._id is not None:
            raise RuntimeError(
                "this oneflite.trace() is already recording; nest a new oneflite.trace() instead"
            )
        self.trace = Trace()
        self._id = _C._trace_start()
        self._thread = threading.get_ident()
        local.open += 1
        with _lock:
            active += 1
        return self.trace

    def __exit__(self, *exc: object) -> None:
        global active
        if self._id is None:
            raise RuntimeError("this oneflite.trace() is not recording")
        if self._thread != threading.get_ident():
            raise RuntimeError(
                "a oneflite.trace() must end on the thread that started it; it is still recording"
            )
        events = _C._trace_stop(self._id)
        self._id = self._thread = None
        local.open -= 1
        with _lock:
            active -= 1
        self.trace.events = [TraceEvent(*e) for e in events]


def trace() -> _Recording:
    """Record the layers of every oneflite call made in this thread inside the block.

    Recording is per thread: calls made by other threads meanwhile are not recorded, and each
    thread may trace its own calls at the same time. Traces nest: a ``trace()`` inside another
    (directly, or in a Python backend called from a traced call) records the calls made while it
    is open, with depths counted from its own start, and the outer one records those calls too.
    Blocks on one thread may also end in another order than they began (interleaved generators
    or coroutines). A block must end on the thread that started it; a ``trace()`` object records
    one block at a time.

    Example::

        >>> import oneflite
        >>> x = oneflite.tensor([[1.0, 2.0, 3.0]])
        >>> with oneflite.trace() as t:
        ...     _ = oneflite.nn.functional.softmax(x, dim=1)
        >>> t.layers()
        ['functional', 'functor', 'functor', 'functor', 'op', 'kernel', 'primitive']
    """
    return _Recording()


def call(text: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` as a traced functional-layer call described by ``text``."""
    _C._trace_begin("functional", text)
    try:
        return fn(*args)
    finally:
        _C._trace_end()


def describe(t: Any) -> str:
    """A short description of an argument for trace text."""
    if isinstance(t, _C.Tensor):
        return f"Tensor{tuple(t.shape)} {t.dtype.name} on {t.device}"
    return repr(t)
