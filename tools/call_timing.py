"""What a benchmark call costs on the GPU besides its kernel (NOTES.md, item 31).

On a machine with an NVIDIA GPU and torch, with oneflite's CUDA build installed:

    python tools/call_timing.py

For a few short-row shapes (98304 rows) it prints, in microseconds, the median time between
CUDA events around each call, as python -m oneflite.bench takes it (the L2 flushed before each
call): a device copy, oneflite's softmax and log_softmax, and torch's softmax; each provider
also with its output kept until after the end event ("_hold"), so that the output's free falls
outside the timed region. A difference between the two is work the free queues on the stream.
"""

from __future__ import annotations

import statistics
import sys
from typing import Any, Callable

import torch

import oneflite
import oneflite.nn.functional as F
from oneflite import _C
from oneflite.bench import _l2_flush

SHAPES = [("float16", 32), ("float16", 100), ("float32", 64), ("float32", 100)]


def median_us(
    fn: Callable[[], Any], flush: Callable[[], Any], hold: bool = False, reps: int = 60
) -> float:
    for _ in range(5):
        fn()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        flush()
        start.record()
        out = fn()
        if not hold:
            del out
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
        out = None
    return statistics.median(times)


def providers(t: Any, x: oneflite.Tensor, dst: Any) -> dict[str, Callable[[], Any]]:
    return {
        "copy": lambda: dst.copy_(t),
        "oneflite": lambda: F.softmax(x, dim=1),
        "oneflite_log": lambda: F.log_softmax(x, dim=1),
        "torch": lambda: torch.softmax(t, dim=1),
    }


def main() -> int:
    if not oneflite.cuda.is_available():
        print("call_timing: needs a CUDA GPU", file=sys.stderr)
        return 1
    stream = torch.cuda.ExternalStream(_C._native_stream(oneflite.device("cuda:0")))
    with torch.cuda.stream(stream):
        flush = _l2_flush(torch)
        idle = median_us(lambda: None, flush)
        print(f"events around nothing: {idle:.2f} us")
        for dtype, cols in SHAPES:
            generator = torch.Generator(device="cuda").manual_seed(0)
            t = (
                torch.randn(
                    98304, cols, device="cuda", generator=generator, dtype=getattr(torch, dtype)
                )
                * 3
            )
            x = oneflite.from_dlpack(t)
            dst = torch.empty_like(t)
            line = {}
            for name, call in providers(t, x, dst).items():
                line[name] = median_us(call, flush)
                if name != "copy":
                    line[name + "_hold"] = median_us(call, flush, hold=True)
            print(dtype, cols, " ".join(f"{k}={v:.2f}" for k, v in line.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
