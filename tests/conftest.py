"""Shared parametrization and helpers: devices, dtypes, tolerances, tensor round trips.

Every numeric test runs on each device in ``DEVICES``; the CUDA cases skip when no GPU is
usable. Values go into oneflite from float64 NumPy arrays and come back as float64 NumPy arrays,
so every comparison is made in float64 against ``reference.py``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

import oneflite

ROOT = Path(__file__).resolve().parent.parent  # the repository

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param(
        "cuda",
        id="cuda",
        marks=pytest.mark.skipif(not oneflite.cuda.is_available(), reason="no CUDA GPU"),
    ),
]

FLOAT_DTYPES = [oneflite.float16, oneflite.bfloat16, oneflite.float32, oneflite.float64]
INT_DTYPES = [oneflite.int32, oneflite.int64]
ALL_DTYPES = [*FLOAT_DTYPES, *INT_DTYPES, oneflite.bool]


class Tolerance(NamedTuple):
    atol: float
    rtol: float


# For 16-bit dtypes the reference is computed on the already-rounded input, so these bound only
# the float arithmetic and the final rounding to 16 bits (half an ulp: 2^-11 and 2^-8 relative).
TOLERANCES = {
    oneflite.float16: Tolerance(atol=1e-3, rtol=5e-3),
    oneflite.bfloat16: Tolerance(atol=8e-3, rtol=2e-2),
    oneflite.float32: Tolerance(atol=1e-6, rtol=1e-5),
    oneflite.float64: Tolerance(atol=1e-12, rtol=1e-10),
}

# The largest finite value of each floating dtype, for clipping huge test values.
FINITE_MAX = {
    oneflite.float16: 65504.0,
    oneflite.bfloat16: 3.3895313892515355e38,
    oneflite.float32: float(np.finfo(np.float32).max),
    oneflite.float64: float(np.finfo(np.float64).max),
}


# Values at or beyond these round to infinity when stored in each dtype (max + half an ulp).
OVERFLOW = {
    oneflite.float16: 65520.0,
    oneflite.bfloat16: (2 - 2**-8) * 2.0**127,
    oneflite.float32: (2 - 2**-24) * 2.0**127,
    oneflite.float64: np.inf,
}


def dtype_id(dtype: oneflite.dtype) -> str:
    return dtype.name


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    """Each device oneflite can run on here: 'cpu', and 'cuda' where a GPU is usable."""
    return request.param


@pytest.fixture(params=FLOAT_DTYPES, ids=dtype_id)
def float_dtype(request: pytest.FixtureRequest) -> oneflite.dtype:
    """Each floating dtype softmax supports."""
    return request.param


def to_float64(t: oneflite.Tensor) -> np.ndarray:
    """Any oneflite tensor, on any device and of any dtype, as a fresh float64 NumPy array."""
    return np.array(t.cpu().to(oneflite.float64).numpy(), dtype=np.float64, copy=True)


def make_tensor(values: np.ndarray, dtype: oneflite.dtype, device: str = "cpu") -> oneflite.Tensor:
    """A tensor of ``dtype`` on ``device`` holding ``values`` (rounded to ``dtype``)."""
    return oneflite.tensor(np.asarray(values, dtype=np.float64), dtype=dtype, device=device)


def tolerance(dtype: oneflite.dtype, log: bool = False) -> Tolerance:
    """The tolerance for results of ``dtype``; ``log=True`` for log-domain results.

    An absolute error in log_softmax is a relative error in softmax, so log-domain results get
    softmax's relative tolerance as their absolute one. (Their error near 0 comes from the row
    sum, which grows with the row length: about 3e-6 for 1536 float32 columns.)
    """
    tol = TOLERANCES[dtype]
    return Tolerance(atol=max(tol.atol, tol.rtol), rtol=tol.rtol) if log else tol


def assert_close(
    actual: np.ndarray,
    expected: np.ndarray,
    dtype: oneflite.dtype,
    err_msg: str = "",
    log: bool = False,
) -> None:
    """Elementwise |actual - expected| <= atol + rtol * |expected|; NaN and inf must match."""
    tol = tolerance(dtype, log)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    # A result past the dtype's range is correctly stored as an infinity.
    with np.errstate(invalid="ignore"):
        expected = np.where(
            np.abs(expected) >= OVERFLOW[dtype], np.copysign(np.inf, expected), expected
        )
    np.testing.assert_allclose(
        actual, expected, atol=tol.atol, rtol=tol.rtol, equal_nan=True, err_msg=err_msg
    )


@pytest.fixture
def unforce_softmax_primitives():
    """Puts the forced softmax and log_softmax backends back as they were after the test."""
    kinds = ("softmax", "log_softmax")
    forced = getattr(oneflite._C, "_forced_primitive", lambda kind: None)
    before = {kind: forced(kind) for kind in kinds}
    try:
        yield
    finally:
        for kind in kinds:
            oneflite._C._force_primitive(kind, before[kind])


@contextlib.contextmanager
def forcing(kind: str, name: str | None) -> Iterator[None]:
    """Forces backend ``name`` (which need not exist) for ``kind`` inside the block."""
    before = oneflite._C._forced_primitive(kind)
    oneflite._C._force_primitive(kind, name)
    try:
        yield
    finally:
        oneflite._C._force_primitive(kind, before)


def run_python(*args: str, cwd: str | Path, env: dict[str, str] | None = None):
    """Runs ``python *args`` in a child that imports the same oneflite as this process."""
    paths = [p for p in sys.path if p and Path(p).is_dir()]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), **(env or {})}
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=environment,
        timeout=300,
    )


def run_cpp_check(source: Path, tmp_path: Path, *flags: str) -> str:
    """Builds a standalone C++ check (tests/cpp) against oneflite's headers and runs it: skips
    where no C++ compiler is found, fails if the build or the check fails, returns its output."""
    compiler = next((c for c in (os.environ.get("CXX"), "g++", "c++", "clang++")
                     if c and shutil.which(c)), None)
    if compiler is None:
        pytest.skip("no C++ compiler")
    binary = tmp_path / source.stem
    build = subprocess.run(
        [compiler, "-O2", "-std=c++17", "-Wall", "-Werror", *flags,
         f"-I{ROOT / 'cpp' / 'include'}", f"-I{ROOT / 'cpp' / 'src'}", str(source),
         "-o", str(binary)],
        capture_output=True, text=True, check=False, timeout=300,
    )
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(binary)], capture_output=True, text=True, check=False, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout
