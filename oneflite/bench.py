"""``python -m oneflite.bench``: how fast is oneflite's softmax, next to its ceiling and its peers?

A row-wise softmax reads x once and writes y once, exactly the bytes a copy moves. So the
speed of light at each shape is the device's copy bandwidth at that shape, and every provider
is reported as GB/s = 2 * bytes(x) / time, and as a fraction of a same-shape copy timed in the
same run.

Providers:
  * ``oneflite``: the highest-priority backend (CUDA kernels on the GPU, ``fast`` on the CPU);
  * ``copy``: a copy of the same bytes on the same device, the ceiling (on the CPU with torch's
    threads when torch is importable, else NumPy's single thread);
  * ``torch``: ``torch.softmax`` (on the GPU its op, ``aten::_softmax``, given the output), when
    torch is importable;
  * ``triton``: a one-row-per-program Triton kernel in the design of the Triton tutorial (GPU);
  * ``numpy``: a plain NumPy softmax (CPU).

Every result is checked against a float64 reference before it is timed. GPU times come from CUDA
events around each call on one shared stream (oneflite's, which torch and Triton are pointed at),
the median of 100 calls after warm-up, the providers' calls taken in turns. Where a tensor lies in
memory moves even a copy's bandwidth by up to 0.9%, more than some margins between the providers,
so every call of a round uses the same memory (one input, and oneflite's output block, lent to the
others), and the rounds take four such placements in turn (``--placements``), so that no provider
is timed at one lucky or unlucky address. Before each timed call the stream reads a buffer four
times the size of the L2 cache: short rows make tensors of only 6-50 MB, which a previous call
would otherwise leave in L2. The flush reads rather than writes, so that the timed call does not
pay for writing back dirty lines, and it keeps the GPU busy while the host launches the call, so
launch cost is not timed (``--overhead`` measures that). CPU times use the median of wall-clock
repeats (``--statistic min``: the minimum, for a machine shared with other jobs), each right after
an untimed call of the same provider: there nothing is flushed, and every CPU provider runs on warm
caches and an awake thread pool. NumPy is timed in rounds of its own, after the others': its calls
take tens of milliseconds on one core, long enough for the other cores to fall idle, and a
16-thread call after 35 ms of idle ran about 40% slower than back to back (the 16-core host of an
H100), a cost that fell on whichever provider came next in the round.

Each peer's ratio to oneflite (its time over oneflite's: above 1, oneflite is faster) comes with
a 95% confidence interval from a paired bootstrap over the rounds: rounds are drawn with
replacement, the same rounds for both providers, and the ratio of their medians (or minima) is
taken again for each draw. Pairing by round is right because both calls of a round share its
placement in memory and the machine's state at that moment, so what slows one slows the other and
only the noise of the ratio remains (NumPy's rounds are not oneflite's: there the pairs are
independent draws, which the same resampling treats correctly). The interval covers this run on
this machine, not the spread between runs or between machines; a peer is ahead beyond noise where
the whole interval is below 1.

Examples::

    python -m oneflite.bench                       # full sweep on every available device
    python -m oneflite.bench --quick --device cpu  # a short run, as CI does
    python -m oneflite.bench --device cpu --threads 1  # oneflite and torch on one thread each
    python -m oneflite.bench --device cpu --statistic min  # on a busy machine
    python -m oneflite.bench --device cuda --dtypes float16 --cols 1024 4096
    python -m oneflite.bench --overhead            # per-call dispatch cost of a 1x8 softmax
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

import oneflite
from oneflite import _C

SWEEP_COLS = [32, 64, 100, 128, 256, 512, 768, 1000, 1024, 1025, 1536, 2048, 3072, 4096, 5000,
              8192, 12345, 16384, 32768, 65536]
QUICK_COLS = [32, 1000, 4096]
GPU_PLACEMENTS = 4  # places in memory a GPU shape's rounds take in turn (Placements)
DTYPES = {"float32": oneflite.float32, "float16": oneflite.float16,
          "bfloat16": oneflite.bfloat16, "float64": oneflite.float64}
OPS = ("softmax", "log_softmax")
PEERS = ("torch", "triton", "numpy")  # the providers compared with oneflite (copy is the ceiling)
ALONE = ("numpy",)  # timed in rounds of their own: one core for tens of ms idles the others
CONFIDENCE = 0.95  # of the interval around each peer's ratio to oneflite (speedup_interval)
# Tolerances of the pre-timing check, against a float64 reference of the same (rounded) input.
TOLERANCE = {"float64": (1e-12, 1e-10), "float32": (1e-5, 1e-4), "float16": (2e-3, 1e-2),
             "bfloat16": (1.6e-2, 4e-2)}


def rows_for(cols: int, device: str, quick: bool) -> int:
    """About 100M elements per tensor on the GPU, 4M on the CPU (and 16x less with --quick)."""
    if device == "cuda":
        rows = 98304 if cols <= 2048 else 2**27 // cols
    else:
        rows = max(1, 2**22 // cols)
    return max(1, rows // 16) if quick else rows


# ---- optional peers ----------------------------------------------------------------------------

def _import_torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def _triton_row_softmax() -> Any:
    """The Triton tutorial's design: one program per row, the row in one power-of-two block.
    The jitted kernel, or None where triton is not importable (it needs no torch, so
    tools/triton_cubins.py can compile it for a GPU this machine does not have)."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def row_softmax(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offsets = tl.arange(0, BLOCK)
        mask = offsets < n_cols
        x = tl.load(in_ptr + row * in_stride + offsets, mask=mask, other=-float("inf"))
        x = x.to(tl.float32)
        shifted = x - tl.max(x, axis=0)
        numerator = tl.exp(shifted)
        y = numerator / tl.sum(numerator, axis=0)
        tl.store(out_ptr + row * out_stride + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)

    return row_softmax


def triton_launch_config(cols: int) -> tuple[int, int]:
    """The Triton kernel's (BLOCK, num_warps) for rows of `cols` columns: the row in the next
    power of two, on more warps as it grows."""
    block = 1 << max(cols - 1, 0).bit_length()
    return block, 4 if block < 2048 else (8 if block < 4096 else 16)


def _triton_softmax() -> Callable[[Any], Any] | None:
    """The Triton kernel as a softmax of 2-d torch tensors (rows of any stride, unit column
    stride), or None where torch or triton is not importable."""
    torch = _import_torch()
    row_softmax = _triton_row_softmax()
    if torch is None or row_softmax is None:
        return None

    def launch(x: Any, y: Any, **options: Any) -> Any:
        """Runs the kernel on x into y and returns the compiled kernel (`options`: Triton's
        compile options, for tools/triton_cubins.py)."""
        rows, cols = x.shape
        block, num_warps = triton_launch_config(cols)
        return row_softmax[(rows,)](y, x, x.stride(0), y.stride(0), cols, BLOCK=block,
                                    num_warps=num_warps, **options)

    def softmax(x: Any, out: Any = None) -> Any:
        y = torch.empty_like(x) if out is None else out
        launch(x, y)
        return y

    softmax.launch = launch  # type: ignore[attr-defined]  # tools/triton_cubins.py's way in
    return softmax


# ---- timing -------------------------------------------------------------------------------------

@dataclass
class WithOutput:
    """A call into an output made before it is timed: ``make()`` runs outside the timed region,
    where its host work cannot outlast the L2 flush that hides the host's launch work, then
    ``run(output)`` is timed."""

    make: Callable[[], Any]
    run: Callable[[Any], Any]

    def __call__(self) -> Any:
        return self.run(self.make())


@dataclass
class Input:
    """One placement's input: the oneflite tensor and, on the GPU, a torch view of its memory."""

    x: oneflite.Tensor
    tx: Any


class Placements:
    """Where in memory each round of a GPU shape's timed calls runs: the rounds take K places in
    turn, and every call of a round uses the same one, an input and an output block.

    The inputs are K copies of x. The outputs come from oneflite's allocator, which hands a
    freed block to the next allocation of its size (the last freed first): before each call the
    round's block is let go (``release``), the call's output takes it, and the output is kept
    (``hold``) until the round comes round again. So oneflite's own output and the block lent to
    a peer (``Bench._output_like``) land in the round's block alike. The timer's warm-up visits
    every placement once before any call is timed, so that no timed call makes a block
    (Timer.samples). ``used`` records the output's address of every timed call, by provider."""

    def __init__(self, inputs: list[Input]) -> None:
        self.inputs = inputs
        self.index = 0
        self._held: list[Any] = [None] * len(inputs)
        self.used: dict[str, list[int]] = {}

    def start_round(self, n: int) -> None:
        self.index = n % len(self.inputs)

    @property
    def input(self) -> Input:
        return self.inputs[self.index]

    def release(self) -> None:
        self._held[self.index] = None

    def keep(self, output: Any) -> None:
        """Keeps the output as the round's block, recording nothing (the warm-up's calls)."""
        self._held[self.index] = output

    def hold(self, name: str, output: Any) -> None:
        self.keep(output)
        self.used.setdefault(name, []).append(output.data_ptr() if output is not None else 0)


@dataclass
class Timer:
    """Median (or minimum) time of each of several calls in milliseconds: CUDA events on the GPU,
    perf_counter on the CPU. The calls' repeats are interleaved, one round of every call at a
    time, so that a burst of other work on the machine lands on all of them alike rather than
    on whichever was being timed; on the GPU the rounds may take turns over places in memory
    (Placements). On the CPU each timed call follows an untimed one of the same call, so that
    it finds its own thread pool awake and its own data in cache, as it would back to back, not
    whatever the call before it left."""

    device: str
    torch: Any = None
    warmup: int = 3
    repeats: int = 20
    statistic: str = "median"
    flush: Callable[[], Any] | None = None  # queued before each timed call (GPU)

    def __call__(self, fn: Callable[[], Any]) -> float:
        return self.interleaved({"": fn})[""]

    def interleaved(self, fns: dict[str, Callable[[], Any]],
                    places: Placements | None = None) -> dict[str, float]:
        """Each call's times (``samples``) reduced to the timer's statistic."""
        return {name: self.summary(t) for name, t in self.samples(fns, places).items()}

    def samples(self, fns: dict[str, Callable[[], Any]],
                places: Placements | None = None) -> dict[str, list[float]]:
        """Every round's time of each call in milliseconds, in round order. The i-th times of
        all the calls come from round i, one placement and one moment of the machine, so they
        are paired by index (speedup_interval)."""
        for fn in fns.values():
            for _ in range(self.warmup):
                fn()
        if places is not None:
            # One more untimed pass, over every placement, so that each placement's output
            # block exists before the first timed call: else the first call at each placement
            # allocates it, and oneflite's own call (which takes its output inside the timed
            # region, as its users' calls do) paid 60-690 us for a fresh block of 100-400 MB
            # there, three or four outliers a shape (an H100).
            for n in range(len(places.inputs)):
                places.start_round(n)
                for fn in fns.values():
                    places.release()
                    places.keep(fn())
        times: dict[str, list[float]] = {name: [] for name in fns}
        for n in range(self.repeats):
            if places is not None:
                places.start_round(n)
            for name, fn in fns.items():
                if places is not None:
                    places.release()
                ms, output = self._time(fn)
                times[name].append(ms)
                if places is not None:
                    places.hold(name, output)
                del output  # else the next call's release would not free the block
        return times

    def _time(self, fn: Callable[[], Any]) -> tuple[float, Any]:
        """One timed call: its time and its output (on the GPU; None on the CPU)."""
        if self.device == "cuda":
            start = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            output = fn.make() if isinstance(fn, WithOutput) else None
            if self.flush is not None:
                self.flush()
            start.record()
            if isinstance(fn, WithOutput):
                fn.run(output)
            else:
                output = fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end), output
        fn()
        begin = time.perf_counter()
        fn()
        return (time.perf_counter() - begin) * 1e3, None

    def summary(self, times: list[float]) -> float:
        """The timer's statistic of one call's times."""
        return min(times) if self.statistic == "min" else statistics.median(times)


def speedup_interval(peer: Sequence[float], mine: Sequence[float], statistic: str = "median",
                     confidence: float = CONFIDENCE, resamples: int = 2000,
                     seed: int = 0) -> tuple[float, float]:
    """A confidence interval of statistic(peer) / statistic(mine), oneflite's speed-up over a
    peer, from a paired bootstrap over rounds: ``peer[i]`` and ``mine[i]`` are times from the
    same round (Timer.samples), and each resample draws rounds with replacement, the same rounds
    for both, so a disturbance that hit both calls of a round cancels in the ratio. The seed is
    fixed so that a run's intervals can be reproduced from its samples. One round gives the
    point ratio at both ends."""
    peer_ms = np.asarray(peer, dtype=np.float64)
    mine_ms = np.asarray(mine, dtype=np.float64)
    if peer_ms.ndim != 1 or peer_ms.shape != mine_ms.shape or not peer_ms.size:
        raise ValueError(f"paired samples need equal, non-zero lengths, got {len(peer)} and "
                         f"{len(mine)}")
    if statistic not in ("median", "min"):
        raise ValueError(f"statistic must be 'median' or 'min', got {statistic!r}")
    reduce = np.min if statistic == "min" else np.median
    rounds = np.random.default_rng(seed).integers(0, peer_ms.size, (resamples, peer_ms.size))
    ratios = reduce(peer_ms[rounds], axis=1) / reduce(mine_ms[rounds], axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


def _l2_flush(torch: Any) -> Callable[[], Any]:
    """A call that evicts the GPU's L2 cache by reading a buffer four times its size (at least
    256 MiB), on torch's current stream."""
    l2_bytes = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 64 << 20
    buffer = torch.ones(max(4 * l2_bytes, 256 << 20) // 4, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    return lambda: buffer.sum()


# ---- one shape ----------------------------------------------------------------------------------

@dataclass
class Result:
    """One provider at one shape. ``ms`` is the statistic of its timed calls (None when its
    output failed the check, ``note`` then says how). On a peer's row (PEERS) timed beside
    oneflite, ``speedup`` is the peer's ms over oneflite's, oneflite's speed-up over the peer
    (below 1: the peer was faster), and ``speedup_ci`` its [low, high] confidence interval
    (CONFIDENCE) from the paired rounds (speedup_interval); both are None on other rows."""

    device: str
    dtype: str
    op: str
    rows: int
    cols: int
    provider: str
    ms: float | None
    gbps: float | None
    fraction_of_copy: float | None = None
    note: str = ""
    speedup: float | None = None
    speedup_ci: list[float] | None = None


def _reference(x64: np.ndarray, op: str) -> np.ndarray:
    shifted = x64 - x64.max(axis=1, keepdims=True)
    if op == "softmax":
        e = np.exp(shifted)
        return e / e.sum(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _check(name: str, got: np.ndarray, want: np.ndarray, dtype: str) -> str | None:
    atol, rtol = TOLERANCE[dtype]
    bad = ~np.isclose(got, want, atol=atol, rtol=rtol)
    if bad.any():
        worst = float(np.abs(got - want).max())
        return f"{name}: {int(bad.sum())} wrong elements, max abs error {worst:.3g}"
    return None


class Bench:
    """Runs the providers at one (device, dtype, op, rows, cols) and returns their results."""

    def __init__(self, device: str, repeats: int, statistic: str = "median",
                 placements: int = GPU_PLACEMENTS) -> None:
        self.device = device
        self.placements = placements if device == "cuda" else 1
        self.last_placements: Placements | None = None  # the last shape's, for inspection
        self.torch = _import_torch()
        self.timer = Timer(device, self.torch, repeats=repeats, statistic=statistic)
        self.triton = _triton_softmax() if device == "cuda" else None
        if device == "cuda" and self.torch is None:
            raise SystemExit("the GPU benchmark needs torch for CUDA events and copies")
        if device == "cpu" and self.torch is not None:
            self.torch.set_num_threads(oneflite.get_num_threads())  # same thread count
        self.stream = None
        if device == "cuda":
            # Point torch (and Triton, which launches on torch's current stream) at oneflite's
            # stream, so all providers are ordered and timed on one stream.
            handle = _C._native_stream(oneflite.device("cuda:0"))
            self.stream = self.torch.cuda.ExternalStream(handle)
            self.timer.flush = _l2_flush(self.torch)

    def run(self, dtype: str, op: str, rows: int, cols: int, seed: int) -> list[Result]:
        if self.stream is not None:
            with self.torch.cuda.stream(self.stream):
                return self._run(dtype, op, rows, cols, seed)
        return self._run(dtype, op, rows, cols, seed)

    def _run(self, dtype: str, op: str, rows: int, cols: int, seed: int) -> list[Result]:
        torch = self.torch
        nbytes = rows * cols * DTYPES[dtype].itemsize
        x = self._random(rows, cols, dtype, seed)
        places = Placements(self._inputs(x))
        fn = oneflite.nn.functional.softmax if op == "softmax" else \
            oneflite.nn.functional.log_softmax
        providers: dict[str, Callable[[], Any]] = {
            "oneflite": lambda: fn(places.input.x, dim=1)}
        if self.device == "cuda":
            out = self._output_like(x)
            providers["copy"] = WithOutput(out, lambda y: y.copy_(places.input.tx))
        elif torch is not None:
            # torch copies with all its threads, as the softmax providers compute with theirs.
            src_t = torch.ones(nbytes, dtype=torch.uint8)
            dst_t = torch.empty_like(src_t)
            providers["copy"] = lambda: dst_t.copy_(src_t)
        else:
            # A copy of the same number of bytes (one thread: a lower ceiling); filled, so no
            # page is a shared zero page.
            src = np.ones(nbytes, dtype=np.uint8)
            dst_np = np.empty_like(src)
            providers["copy"] = lambda: np.copyto(dst_np, src)
        if self.device == "cuda":
            # torch.softmax's own op (aten::_softmax, which it dispatches to), writing into `out`.
            aten = torch.ops.aten._softmax if op == "softmax" else torch.ops.aten._log_softmax
            providers["torch"] = WithOutput(
                out, lambda y: aten.out(places.input.tx, 1, False, out=y))
            if self.triton is not None and op == "softmax":
                providers["triton"] = WithOutput(out, lambda y: self.triton(places.input.tx, y))
        elif torch is not None:
            tx = torch.from_dlpack(x)
            torch_fn = torch.softmax if op == "softmax" else torch.log_softmax
            providers["torch"] = lambda: torch_fn(tx, dim=1)
        if self.device == "cpu" and dtype in ("float32", "float64"):
            xn = x.numpy()
            providers["numpy"] = lambda: _numpy_softmax(xn, op)

        reference = self._reference(x, op, sample=min(rows, 2048))
        results = []
        timed: dict[str, Callable[[], Any]] = {}
        for name, call in providers.items():
            note = None
            if name != "copy":
                note = _check(name, self._sample(call(), rows), reference, dtype)
            if note is not None:
                results.append(Result(self.device, dtype, op, rows, cols, name, None, None,
                                      note=f"WRONG: {note}"))
            else:
                timed[name] = call
        alone = {name: timed.pop(name) for name in ALONE if name in timed}
        samples = self.timer.samples(timed, places if self.device == "cuda" else None)
        for name, call in alone.items():
            samples.update(self.timer.samples({name: call}))
        self.last_placements = places
        times = {name: self.timer.summary(t) for name, t in samples.items()}
        for name, ms in times.items():
            result = Result(self.device, dtype, op, rows, cols, name, ms,
                            2 * nbytes / (ms * 1e-3) / 1e9)
            if name in PEERS and "oneflite" in samples:
                result.speedup = ms / times["oneflite"]
                result.speedup_ci = list(speedup_interval(samples[name], samples["oneflite"],
                                                          self.timer.statistic))
            results.append(result)
        order = list(providers)
        results.sort(key=lambda r: order.index(r.provider))
        copy_ms = times.get("copy")
        for r in results:
            if r.ms is not None and copy_ms is not None:
                r.fraction_of_copy = copy_ms / r.ms
        return results

    def _inputs(self, x: oneflite.Tensor) -> list[Input]:
        """x, and on the GPU copies of it up to the number of placements, each in memory of its
        own (Placements)."""
        if self.device != "cuda":
            return [Input(x, None)]
        first = self.torch.from_dlpack(x)
        copies = [first] + [first.clone() for _ in range(self.placements - 1)]
        return [Input(oneflite.from_dlpack(t) if i else x, t) for i, t in enumerate(copies)]

    def _output_like(self, x: oneflite.Tensor) -> Callable[[], Any]:
        """Output buffers for the GPU peers, as torch tensors over memory from oneflite's
        allocator: each call takes the block oneflite's own output took (a dropped tensor's block
        is kept for the next tensor of its size), so every provider writes the same addresses.
        Where a buffer lies in memory moves even a copy's bandwidth by up to 0.9% (an H200, NOTES
        item 55 of the CUDA backend), more than some margins between the providers. The peers
        take their buffer outside the timed region (WithOutput): lent inside it, the block cost
        about 9 us of GPU time a call, up to 4x on the short rows."""
        torch = self.torch
        shape, dtype, device = list(x.shape), x.dtype, x.device
        return lambda: torch.from_dlpack(_C._empty(shape, dtype, device))

    def _random(self, rows: int, cols: int, dtype: str, seed: int) -> oneflite.Tensor:
        # Generated on the device where possible: 100M host-side normals would dominate the run.
        if self.device == "cuda":
            g = self.torch.Generator(device="cuda").manual_seed(seed)
            t = self.torch.randn(rows, cols, device="cuda", generator=g,
                                 dtype=getattr(self.torch, dtype)) * 3
            x = oneflite.from_dlpack(t)
            self._keep = t  # the torch tensor owns the memory x views
            return x
        values = np.random.default_rng(seed).standard_normal((rows, cols)) * 3
        return oneflite.tensor(values, dtype=DTYPES[dtype])

    def _sample(self, y: Any, rows: int) -> np.ndarray:
        """The first sampled rows of a provider's output, as float64 numpy."""
        n = min(rows, 2048)
        if isinstance(y, oneflite.Tensor):
            return y[:n].cpu().to(oneflite.float64).numpy()
        if isinstance(y, np.ndarray):
            return y[:n].astype(np.float64)
        return y[:n].double().cpu().numpy()

    def _reference(self, x: oneflite.Tensor, op: str, sample: int) -> np.ndarray:
        return _reference(x[:sample].cpu().to(oneflite.float64).numpy(), op)


def _numpy_softmax(x: np.ndarray, op: str) -> np.ndarray:
    shifted = x - x.max(axis=1, keepdims=True)
    if op == "softmax":
        e = np.exp(shifted)
        return e / e.sum(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


# ---- dispatch overhead --------------------------------------------------------------------------

def overhead(calls: int = 20000) -> dict[str, float]:
    """Median per-call time (microseconds) of a 1x8 float32 CPU softmax from Python."""
    x = oneflite.tensor(np.random.default_rng(0).standard_normal((1, 8)), dtype=oneflite.float32)
    timings: dict[str, Callable[[], Any]] = {
        "oneflite.nn.functional.softmax": lambda: oneflite.nn.functional.softmax(x, dim=1),
        "oneflite._C.functional.softmax (functor, no Python layer)":
            lambda: _C.functional.softmax(x, 1, None),
    }
    torch = _import_torch()
    if torch is not None:
        tx = torch.from_dlpack(x)
        timings["torch.nn.functional.softmax"] = lambda: torch.nn.functional.softmax(tx, dim=1)
    out = {}
    for name, fn in timings.items():
        for _ in range(1000):
            fn()
        batches = []
        for _ in range(20):
            begin = time.perf_counter()
            for _ in range(calls // 20):
                fn()
            batches.append((time.perf_counter() - begin) / (calls // 20) * 1e6)
        out[name] = statistics.median(batches)
    return out


# ---- report -------------------------------------------------------------------------------------

def _progress(done: int, total: int, label: str) -> None:
    width = 30
    filled = int(width * done / max(total, 1))
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label:<40}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def _speedup_text(r: Result) -> str:
    """A peer row's speed-up and interval, as "triton 0.9921x, 95% CI 0.9903-0.9948": to four
    places, since the GPU's margins and intervals are a few parts in a thousand, and an interval
    ending below 1 must not print as ending at 1.000."""
    low, high = r.speedup_ci  # type: ignore[misc]  # callers pass only rows that have one
    return f"{r.provider} {r.speedup:.4f}x, {CONFIDENCE:.0%} CI {low:.4f}-{high:.4f}"


def _peer_order(r: Result) -> tuple[str, str, str, int, int]:
    """Sorts peer rows by shape, then in the table's order of providers."""
    return r.device, r.dtype, r.op, r.cols, PEERS.index(r.provider)


def summarize(results: list[Result]) -> list[str]:
    """One line per (device, dtype, op): geomean fraction of copy, the worst shape, the
    geometric-mean speedup over each peer, and the shapes where a peer is ahead beyond noise
    (its whole interval below 1)."""
    lines = []
    keys = sorted({(r.device, r.dtype, r.op) for r in results})
    for device, dtype, op in keys:
        group = [r for r in results if (r.device, r.dtype, r.op) == (device, dtype, op)]
        mine = {r.cols: r for r in group if r.provider == "oneflite" and r.ms is not None}
        if not mine:
            continue
        fractions = [r.fraction_of_copy for r in mine.values() if r.fraction_of_copy]
        worst = min(mine.values(), key=lambda r: r.fraction_of_copy or 0)
        text = (f"{device} {dtype} {op}: {_geomean(fractions):.3f}x copy (geomean), worst "
                f"{worst.fraction_of_copy:.3f}x at cols={worst.cols}")
        for peer in PEERS:
            ratios = [p.speedup for p in group if p.provider == peer and p.speedup]
            if ratios:
                text += f"; {_geomean(ratios):.2f}x {peer} (geomean, min {min(ratios):.2f}x)"
        beyond = sorted((p for p in group if p.speedup_ci and p.speedup_ci[1] < 1),
                        key=_peer_order)
        if beyond:
            text += "; a peer ahead beyond noise at " + ", ".join(
                f"cols={p.cols} ({_speedup_text(p)})" for p in beyond)
        else:
            text += "; no peer ahead beyond noise"
        lines.append(text)
    return lines


def peers_ahead(results: list[Result]) -> list[str]:
    """Every shape where a peer took less time than oneflite, with oneflite's speed-up over it,
    the interval, and whether the peer is ahead beyond noise (the whole interval below 1) or
    within it; one line if there is no such shape."""
    ahead = sorted((r for r in results if r.speedup_ci and r.speedup < 1), key=_peer_order)
    if not ahead:
        return ["No peer was ahead of oneflite at any shape."]
    lines = [f"Where a peer was ahead of oneflite (its time over oneflite's below 1; "
             f"{CONFIDENCE:.0%} CI over the paired rounds):"]
    for r in ahead:
        verdict = "beyond noise" if r.speedup_ci[1] < 1 else "within noise"
        lines.append(f"  {r.device} {r.dtype} {r.op} cols={r.cols}: {_speedup_text(r)}: {verdict}")
    return lines


def table(results: list[Result]) -> str:
    providers = ["oneflite", "copy", "torch", "triton", "numpy"]
    present = [p for p in providers if any(r.provider == p for r in results)]
    header = f"{'device':<6} {'dtype':<8} {'op':<11} {'rows':>7} {'cols':>6} " + " ".join(
        f"{p + ' GB/s':>12}" for p in present) + f" {'oneflite/copy':>14}"
    lines = [header, "-" * len(header)]
    keys = sorted({(r.device, r.dtype, r.op, r.cols, r.rows) for r in results},
                  key=lambda k: (k[0], k[1], k[2], k[3]))
    for device, dtype, op, cols, rows in keys:
        cells = {r.provider: r for r in results
                 if (r.device, r.dtype, r.op, r.cols) == (device, dtype, op, cols)}
        row = f"{device:<6} {dtype:<8} {op:<11} {rows:>7} {cols:>6} "
        row += " ".join(f"{cells[p].gbps:>12.1f}" if p in cells and cells[p].gbps else
                        f"{('WRONG' if p in cells else '-'):>12}" for p in present)
        mine = cells.get("oneflite")
        row += f" {mine.fraction_of_copy:>14.3f}" if mine and mine.fraction_of_copy else \
            f" {'-':>14}"
        lines.append(row)
    return "\n".join(lines)


def plot(results: list[Result], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    groups = sorted({(r.device, r.dtype, r.op) for r in results})
    fig, axes = plt.subplots(len(groups), 1, figsize=(9, 3.2 * len(groups)), squeeze=False)
    for ax, (device, dtype, op) in zip(axes[:, 0], groups):
        for provider, style in (("copy", "k--"), ("oneflite", "C0-o"), ("torch", "C1-s"),
                                ("triton", "C2-^"), ("numpy", "C3-v")):
            points = sorted((r.cols, r.gbps) for r in results
                            if (r.device, r.dtype, r.op, r.provider) == (device, dtype, op,
                                                                            provider) and r.gbps)
            if points:
                ax.plot(*zip(*points), style, label=provider, markersize=4)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{op}, {dtype}, {device}")
        ax.set_xlabel("cols")
        ax.set_ylabel("GB/s (2 x bytes / time)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def environment() -> dict[str, Any]:
    info: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "oneflite": oneflite.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "oneflite_cpu_threads": oneflite.get_num_threads(),
    }
    torch = _import_torch()
    if torch is not None:
        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    try:
        import triton

        info["triton"] = triton.__version__
    except ImportError:
        pass
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m oneflite.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=["cpu", "cuda", "all"], default="all")
    parser.add_argument("--dtypes", nargs="+", choices=list(DTYPES),
                        default=["float32", "float16", "bfloat16"])
    parser.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS))
    parser.add_argument("--cols", nargs="+", type=int, help="override the sweep's columns")
    parser.add_argument("--quick", action="store_true", help="a few small shapes")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed calls per provider (default 100 on the GPU, where a call "
                             "takes microseconds and a short row's median moves by 0.5%% over "
                             "20; 20 on the CPU; 5 with --quick)")
    parser.add_argument("--out", type=Path, default=Path("bench-results"),
                        help="folder for results.json and results.png (overhead.json with "
                             "--overhead)")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for oneflite and torch alike (oneflite.set_num_threads "
                             "and torch.set_num_threads); default: oneflite's current count")
    parser.add_argument("--statistic", choices=["median", "min"], default="median",
                        help="what each provider's timed calls are reduced to (default median; "
                             "min suits a machine shared with other jobs, where the least "
                             "disturbed call is the best estimate)")
    parser.add_argument("--placements", type=int, default=GPU_PLACEMENTS,
                        help="places in memory (an input and an output block each) that a GPU "
                             f"shape's rounds of calls take in turn (default {GPU_PLACEMENTS}; "
                             "where a tensor lies moves a copy by up to 0.9%%)")
    parser.add_argument("--overhead", action="store_true",
                        help="only measure the per-call cost of a 1x8 CPU softmax")
    args = parser.parse_args(argv)
    if args.placements < 1:
        parser.error("--placements must be at least 1")
    if args.threads is not None:
        if args.threads < 1:
            parser.error("--threads must be at least 1")
        oneflite.set_num_threads(args.threads)  # Bench gives torch the same count

    if args.overhead:
        per_call = overhead(5000 if args.quick else 20000)
        for name, us in per_call.items():
            print(f"{name:<60} {us:8.2f} us/call")
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "overhead.json").write_text(
            json.dumps({"environment": environment(), "us_per_call": per_call}, indent=1))
        print(f"\nwrote {args.out / 'overhead.json'}")
        return 0

    devices = ["cpu", "cuda"] if args.device == "all" else [args.device]
    if "cuda" in devices and not oneflite.cuda.is_available():
        if args.device == "cuda":
            raise SystemExit("no CUDA device is available")
        devices.remove("cuda")
    cols_list = args.cols or (QUICK_COLS if args.quick else SWEEP_COLS)
    repeats = {d: args.repeats or (5 if args.quick else 100 if d == "cuda" else 20)
               for d in devices}

    jobs = [(d, t, o, c) for d in devices for t in args.dtypes for o in args.ops
            for c in cols_list]
    results: list[Result] = []
    benches = {d: Bench(d, repeats[d], args.statistic, args.placements) for d in devices}
    for i, (device, dtype, op, cols) in enumerate(jobs):
        _progress(i, len(jobs), f"{device} {dtype} {op} cols={cols}")
        rows = rows_for(cols, device, args.quick)
        results.extend(benches[device].run(dtype, op, rows, cols, seed=i))
    _progress(len(jobs), len(jobs), "done")

    env = environment()
    env["statistic"] = args.statistic
    env["repeats"] = repeats
    env["confidence"] = CONFIDENCE  # of every peer row's speedup_ci
    if "cuda" in devices:
        env["gpu_placements"] = args.placements
    print(f"oneflite.bench on {env.get('gpu', 'no GPU')} / {env['cpu']}, {env['date']}")
    print(", ".join(f"{k} {v}" for k, v in env.items() if k in ("oneflite", "torch", "triton",
                                                                  "numpy")))
    if "cpu" in devices:
        print(f"CPU threads: oneflite {env['oneflite_cpu_threads']}, torch "
              f"{env.get('torch_threads', '-')}; times: {args.statistic} of {repeats['cpu']} "
              "calls")
    if "cuda" in devices:
        print(f"GPU times: {args.statistic} of {repeats['cuda']} calls, each after an L2 flush, "
              f"in rounds over {args.placements} placements in memory")
    print(table(results))
    print()
    summary = summarize(results)
    for line in summary:
        print(line)
    wrong = [r for r in results if r.note.startswith("WRONG")]
    for r in wrong:
        print(f"{r.provider} {r.device} {r.dtype} {r.op} cols={r.cols}: {r.note}")
    print()
    for line in peers_ahead(results):
        print(line)

    args.out.mkdir(parents=True, exist_ok=True)
    payload = {"environment": env, "summary": summary,
               "results": [asdict(r) for r in results]}
    (args.out / "results.json").write_text(json.dumps(payload, indent=1))
    plotted = plot(results, args.out / "results.png")
    print(f"\nwrote {args.out / 'results.json'}" +
          (f" and {args.out / 'results.png'}" if plotted else " (no matplotlib: no plot)"))
    return 1 if any(r.provider == "oneflite" for r in wrong) else 0


if __name__ == "__main__":
    sys.exit(main())
