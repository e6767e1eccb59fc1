"""Hypothesis strategies for oneflite, in the style of minitorch's tensor strategies.

A drawn :class:`Case` is a oneflite tensor together with what the oracle needs to know about it:
the values it holds (as NumPy, read independently of oneflite's compute), how it was laid out
(contiguous, a oneflite view with a storage offset, a strided or broadcast NumPy array, a
misaligned buffer) and the memory behind it, so a test can check the input was left untouched.

Arguments are drawn the same way: :func:`dim_args` mixes valid dims with out-of-range ones and
values of the wrong type, :func:`dtype_args` mixes valid dtypes with None and junk.
:func:`expected_errors` states, from the documented contract alone, which exceptions a call may
raise; an empty set means the call must succeed and match the float64 reference.

Settings profiles (select with the HYPOTHESIS_PROFILE environment variable):

- ``ci`` (default): bounded and derandomized, so every CI run draws the same examples;
- ``long``: at least 100,000 examples per test (``FUZZ_LONG_EXAMPLES`` to change), fresh random
  draws each run; ``tools/fuzz_long.sh`` runs it. Failures print a ``@reproduce_failure`` blob.
"""

from __future__ import annotations

import functools
import operator
import os
import warnings
from typing import Any

import numpy as np
from conftest import ALL_DTYPES, FINITE_MAX, FLOAT_DTYPES
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import oneflite

# ---- settings profiles -------------------------------------------------------------------

# Health checks that only say "this strategy draws a lot" are expected here: the strategies
# build tensors of up to a few thousand elements on purpose. pyproject.toml turns warnings into
# errors, so the choice is made explicitly rather than left to defaults.
_SUPPRESSED = [
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.filter_too_much,
    HealthCheck.large_base_example,
]
_COMMON: dict[str, Any] = {
    "deadline": None,
    "database": None,  # nothing written into the source tree; failures print a blob instead
    "print_blob": True,
    "suppress_health_check": _SUPPRESSED,
}
settings.register_profile("ci", max_examples=200, derandomize=True, **_COMMON)
settings.register_profile(
    "long",
    max_examples=int(os.environ.get("FUZZ_LONG_EXAMPLES", "100000")),
    derandomize=False,
    **_COMMON,
)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)

# When a test fails, Hypothesis's pytest plugin imports its patch writer, which imports libcst
# where that is installed, whose import raises a DeprecationWarning (mypy_extensions.TypedDict)
# that pyproject.toml's filterwarnings = ["error"] turns into an INTERNALERROR hiding the
# failure. Importing it here, with that warning silenced, keeps a failure a plain failure.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import hypothesis.extra._patching  # noqa: F401
    except ImportError:  # libcst absent: the plugin skips patches and imports nothing
        pass

# ---- dtypes and devices --------------------------------------------------------------------

# The strategy factories below are cached: building a strategy costs more than drawing from it.

CUDA = oneflite.cuda.is_available()
DEVICE_NAMES = ["cpu", "cuda"] if CUDA else ["cpu"]


def numpy_dtype(dtype: oneflite.dtype) -> np.dtype:
    """The NumPy dtype holding the same bits as ``dtype`` (bfloat16 through ml_dtypes)."""
    if dtype == oneflite.bfloat16:
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype({"bool": np.bool_}.get(dtype.name, dtype.name))


def is_floating(dtype: oneflite.dtype) -> bool:
    return dtype in FLOAT_DTYPES


@functools.cache
def devices() -> st.SearchStrategy[str]:
    """'cpu', and 'cuda' when a GPU is usable."""
    return st.sampled_from(DEVICE_NAMES)


@functools.cache
def dtypes(floating_only: bool = False) -> st.SearchStrategy[oneflite.dtype]:
    """Every oneflite dtype (or only the floating ones)."""
    return st.sampled_from(FLOAT_DTYPES if floating_only else ALL_DTYPES)


# ---- rounding, the oracle's side of dtype= -------------------------------------------------

# (significand bits, smallest normal exponent) of the narrow floating formats.
_FORMATS = {
    oneflite.float16: (11, -14),
    oneflite.bfloat16: (8, -126),
    oneflite.float32: (24, -126),
}


def round_to(values: np.ndarray, dtype: oneflite.dtype) -> np.ndarray:
    """float64 ``values`` rounded once, to nearest even, to ``dtype`` (subnormals included);
    magnitudes past the largest finite value become infinities. NaN and inf pass through.

    Plain NumPy, no oneflite: the oracle for what ``dtype=`` casts to. Exact for values that
    float64 holds exactly (every int32, int64 up to 2**53 and every narrower float)."""
    v = np.asarray(values, dtype=np.float64)
    if dtype == oneflite.float64:
        return v.copy()
    bits, emin = _FORMATS[dtype]
    out = v.copy()
    finite = np.isfinite(v) & (v != 0)
    a = np.abs(v[finite])
    _, e = np.frexp(a)  # a = m * 2**e with m in [0.5, 1): the binade's exponent is e - 1
    quantum = np.ldexp(1.0, np.maximum(e - 1, emin) - (bits - 1))
    with np.errstate(over="ignore"):  # rounding up past float64's range: inf, as it should be
        r = np.rint(a / quantum) * quantum  # both steps exact: quantum is a power of two
    r[r > FINITE_MAX[dtype]] = np.inf
    out[finite] = np.copysign(r, v[finite])
    return out


def stored_float64(t: oneflite.Tensor) -> np.ndarray:
    """The values a tensor holds, as a fresh float64 array, read through NumPy (a CUDA tensor is
    first copied to the host)."""
    host = t.cpu() if t.is_cuda else t
    return np.array(host.numpy(), copy=True).astype(np.float64)


# ---- values ----------------------------------------------------------------------------------

INF = float("inf")
NAN = float("nan")
# Values at the edges of every dtype's range and of exp's: overflow and underflow thresholds,
# subnormals, the largest finite halves and floats.
SPECIAL_FLOATS = [
    INF, -INF, NAN, 0.0, -0.0, 1.0, -1.0, 1e4, -1e4, 9999.0, -9999.0, 1e30, -1e30, 3e38, -3e38,
    1e300, -1e300, 65504.0, -65504.0, 65519.0, 5e-324, -5e-324, 1e-45, 1e-40, 1e-30, 6e-8,
    88.0, -88.0, 89.0, -104.0, 709.0, -745.0, 11.0, -17.0,
]  # fmt: skip


def _clip(value: float, dtype: oneflite.dtype) -> float:
    top = FINITE_MAX[dtype]
    return value if not np.isfinite(value) else max(-top, min(top, value))


@functools.cache
def float_elements(dtype: oneflite.dtype) -> st.SearchStrategy[float]:
    """Typical values, edge values and anything finite or not, clipped to the dtype's range."""
    return st.one_of(
        st.floats(-10.0, 10.0),
        st.sampled_from(SPECIAL_FLOATS),
        st.floats(allow_nan=True, allow_infinity=True),
        st.floats(-1e5, 1e5),
    ).map(lambda v: _clip(v, dtype))


@functools.cache
def int_elements(dtype: oneflite.dtype) -> st.SearchStrategy[int]:
    if dtype == oneflite.bool:
        return st.booleans()
    # int64 values stay within 2**53, where float64 (the oracle's type) holds them exactly.
    top = 2**31 - 1 if dtype == oneflite.int32 else 2**53
    return st.one_of(st.integers(-20, 20), st.integers(-top - 1 if top < 2**53 else -top, top))


@functools.cache
def elements(dtype: oneflite.dtype) -> st.SearchStrategy[Any]:
    return float_elements(dtype) if is_floating(dtype) else int_elements(dtype)


# Below this many elements every value is drawn by Hypothesis (and shrinks well); above it the
# bulk comes from a seeded generator and Hypothesis places edge values into it.
_ELEMENTWISE_LIMIT = 64


@st.composite
def values(draw: st.DrawFn, shape: tuple[int, ...], dtype: oneflite.dtype) -> np.ndarray:
    """A NumPy array of ``shape`` in ``dtype``'s NumPy type, exactly as oneflite will hold it."""
    np_dtype = numpy_dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if n <= _ELEMENTWISE_LIMIT:
        flat = draw(st.lists(elements(dtype), min_size=n, max_size=n))
        raw = np.array(flat, dtype=np.float64 if is_floating(dtype) else object)
    else:
        seed = draw(st.integers(0, 2**32 - 1))
        rng = np.random.default_rng(seed)
        if is_floating(dtype):
            scale = draw(st.sampled_from([0.0, 1e-3, 1.0, 3.0, 30.0, 1e4, 1e30]))
            raw = np.clip(rng.standard_normal(n) * scale, -FINITE_MAX[dtype], FINITE_MAX[dtype])
        elif dtype == oneflite.bool:
            raw = rng.integers(0, 2, n).astype(object)
        else:
            raw = rng.integers(-1000, 1000, n).astype(object)
        for position, value in draw(
            st.lists(st.tuples(st.integers(0, n - 1), elements(dtype)), max_size=8)
        ):
            raw[position] = value
    with np.errstate(over="ignore", invalid="ignore"):
        return raw.astype(np_dtype).reshape(shape)


# ---- shapes ----------------------------------------------------------------------------------

# Row lengths around the boundaries of vector widths, warp and block sizes.
BOUNDARY_COLS = [1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256,
                 257, 511, 512, 513, 1023, 1024, 1025, 2047, 2049, 4097]  # fmt: skip


@functools.cache
def shapes(max_dims: int = 4) -> st.SearchStrategy[tuple[int, ...]]:
    """Shapes from 0-d up to ``max_dims`` dims, zero-size dims included; mostly small, some with
    long rows, a few large enough for the CPU backend to split rows across threads."""
    small = st.lists(st.integers(0, 6), min_size=0, max_size=max_dims).map(tuple)
    long_rows = st.tuples(
        st.integers(1, 4), st.one_of(st.sampled_from(BOUNDARY_COLS), st.integers(1, 3000))
    )
    wide = st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 40))
    threaded = st.tuples(st.integers(9, 12), st.integers(3700, 4100))  # > 2**15 elements
    return st.one_of(small, small, long_rows, wide, threaded)


# ---- tensors, laid out every way -----------------------------------------------------------

LAYOUTS_ANY_DEVICE = ["contiguous", "oneflite_view"]
LAYOUTS_CPU_ONLY = ["numpy_view", "numpy_broadcast", "numpy_misaligned"]


class Case:
    """A drawn input tensor and what the oracle knows about it."""

    def __init__(
        self,
        tensor: oneflite.Tensor,
        values: np.ndarray,
        layout: str,
        device: str,
        watched: list[tuple[str, Any]] | None = None,
    ) -> None:
        self.tensor = tensor
        self.values = values  # what the tensor holds, in its NumPy type
        self.layout = layout
        self.device = device
        # Memory behind the tensor the call must leave alone: (label, a function reading it).
        self.watched = watched or []

    @property
    def dtype(self) -> oneflite.dtype:
        return self.tensor.dtype

    @property
    def float64(self) -> np.ndarray:
        return np.asarray(self.values).astype(np.float64)

    def snapshot(self) -> list[tuple[str, bytes]]:
        return [(label, read()) for label, read in self.watched]

    def __repr__(self) -> str:
        t = self.tensor
        body = np.array2string(self.float64, threshold=40, edgeitems=3, separator=", ")
        return (
            f"Case({t.dtype.name} {tuple(t.shape)} on {self.device}, layout={self.layout}, "
            f"stride={t.stride()}, offset={t.storage_offset()}, values={body})"
        )


def _poison(np_dtype: np.dtype) -> Any:
    """A value for memory outside a view: NaN for floats, so a stray read shows in results."""
    if np_dtype.kind == "b":
        return True
    if np_dtype.kind in "iu":
        return np.iinfo(np_dtype).max
    return np.nan


def _misaligned_empty(shape: tuple[int, ...], np_dtype: np.dtype) -> np.ndarray:
    """An array of ``shape`` whose data starts one byte past an aligned address."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * np_dtype.itemsize
    buffer = np.zeros(nbytes + 64, dtype=np.uint8)
    start = (-buffer.ctypes.data) % 64 + 1  # 64-byte aligned, plus one
    return buffer[start : start + nbytes].view(np_dtype).reshape(shape)


@st.composite
def _view_recipe(draw: st.DrawFn, shape: tuple[int, ...]):
    """A permutation, per-dim steps and offsets, and the base shape a view of ``shape`` needs."""
    ndim = len(shape)
    perm = draw(st.permutations(range(ndim)))
    steps = [draw(st.integers(1, 3)) for _ in shape]
    starts = [draw(st.integers(0, 2)) for _ in shape]
    # Size of each dim of the permuted base: enough for start + (size - 1) * step + 1 (+ slack).
    needed = [
        starts[i] + ((shape[i] - 1) * steps[i] + 1 if shape[i] else 0) + draw(st.integers(0, 1))
        for i in range(ndim)
    ]
    base_shape = [0] * ndim
    for i, p in enumerate(perm):
        base_shape[p] = needed[i]
    slices = tuple(
        slice(starts[i], starts[i] + (shape[i] - 1) * steps[i] + 1, steps[i])
        if shape[i]
        else slice(starts[i], starts[i])
        for i in range(ndim)
    )
    return tuple(perm), tuple(base_shape), slices


def _watch_numpy(array: np.ndarray) -> tuple[str, Any]:
    return ("numpy base array", lambda: array.tobytes())


def _watch_tensor(t: oneflite.Tensor) -> tuple[str, Any]:
    return ("base tensor", lambda: stored_float64(t).tobytes())


@st.composite
def cases(
    draw: st.DrawFn,
    dtype: st.SearchStrategy[oneflite.dtype] | None = None,
    device: st.SearchStrategy[str] | None = None,
    shape: st.SearchStrategy[tuple[int, ...]] | None = None,
    layouts: list[str] | None = None,
) -> Case:
    """A tensor of any dtype and shape on any device, contiguous or a view."""
    dt = draw(dtype if dtype is not None else dtypes())
    dev = draw(device if device is not None else devices())
    shp = draw(shape if shape is not None else shapes())
    allowed = layouts or LAYOUTS_ANY_DEVICE + LAYOUTS_CPU_ONLY
    if dev != "cpu":
        allowed = [name for name in allowed if name in LAYOUTS_ANY_DEVICE] or ["contiguous"]
    layout = draw(st.sampled_from(allowed))
    np_dtype = numpy_dtype(dt)
    ndim = len(shp)

    if layout == "contiguous":
        vals = draw(values(shp, dt))
        t = oneflite.tensor(vals, device=dev)
        return Case(t, vals, layout, dev, [_watch_tensor(t)])

    if layout == "numpy_broadcast":
        broadcast = [draw(st.booleans()) for _ in shp]
        source_shape = tuple(1 if b else n for n, b in zip(shp, broadcast))
        source = draw(values(source_shape, dt))
        view = np.broadcast_to(source, shp)
        return Case(oneflite.from_numpy(view), view, layout, dev, [_watch_numpy(source)])

    if layout == "numpy_misaligned":
        vals = draw(values(shp, dt))
        array = _misaligned_empty(shp, np_dtype)
        array[...] = vals
        return Case(oneflite.from_numpy(array), array, layout, dev, [_watch_numpy(array)])

    # A view with a permutation, steps and a storage offset into a larger base, whose memory
    # outside the view holds poison.
    vals = draw(values(shp, dt))
    if ndim == 0:
        index = draw(st.integers(0, 3))
        base = np.full((index + 1 + draw(st.integers(0, 2)),), _poison(np_dtype), dtype=np_dtype)
        base[index] = vals
        numpy_view = base[index, ...]  # 0-d, `index` elements into the base

        def view_of(t: oneflite.Tensor) -> oneflite.Tensor:
            return t[index]

    else:
        perm, base_shape, slices = draw(_view_recipe(shp))
        base = np.full(base_shape, _poison(np_dtype), dtype=np_dtype)
        base.transpose(perm)[slices] = vals
        numpy_view = base.transpose(perm)[slices]

        def view_of(t: oneflite.Tensor) -> oneflite.Tensor:
            return (t.permute(perm) if ndim > 1 else t)[slices]

    if layout == "numpy_view":
        return Case(oneflite.from_numpy(numpy_view), numpy_view, layout, dev, [_watch_numpy(base)])
    base_tensor = oneflite.tensor(base, device=dev)
    return Case(view_of(base_tensor), numpy_view, layout, dev, [_watch_tensor(base_tensor)])


# ---- arguments -------------------------------------------------------------------------------

# Dims that oneflite gets wrong today, each pinned by its own failing test in test_fuzz.py and
# kept out of dim_args so the broad fuzz tests keep exploring past them. Once fixed, add them to
# dim_args.
#  - integers past int64 (IndexError expected; pybind11 raises its overload TypeError);
BEYOND_INT64 = st.one_of(
    st.integers(min_value=2**63, max_value=2**200),
    st.integers(min_value=-(2**200), max_value=-(2**63) - 1),
    st.just(np.uint64(2**63)),
)
#  - oneflite dtypes, which are pybind11 enums with __index__ (TypeError expected; they are
#    taken as the dims 0 to 6).
DTYPES_AS_DIMS = st.sampled_from(ALL_DTYPES)


@functools.cache
def valid_dims(ndim: int) -> st.SearchStrategy[Any]:
    """Dims in range: ints, NumPy ints, and None (the implicit rule)."""
    n = max(ndim, 1)
    valid = st.integers(-n, n - 1)
    return st.one_of(
        valid,
        st.none(),
        valid.map(np.int64),
        valid.map(np.int32),
        valid.map(np.int8),
        st.integers(0, n - 1).map(np.uint8),
    )


@functools.cache
def out_of_range_dims(ndim: int) -> st.SearchStrategy[int]:
    """Ints (within int64) outside [-n, n-1]."""
    n = max(ndim, 1)
    return st.one_of(
        st.integers(n, n + 3),
        st.integers(-n - 4, -n - 1),
        st.integers(n, 2**63 - 1),
        st.integers(-(2**63), -n - 1),
        st.sampled_from([2**31 - 1, 2**31, -(2**31) - 1, 2**63 - 1, -(2**63)]).filter(
            lambda d: not -n <= d < n
        ),
    )


WRONG_TYPE_DIMS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, -1.0]),
    st.text(max_size=2),
    st.booleans(),
    st.sampled_from(
        [
            np.bool_(True),
            np.bool_(False),
            np.float64(0.0),
            np.float32(1.0),
            [0],
            (0,),
            1j,
            b"0",
            slice(0, 1),
            object(),
            oneflite.device("cpu"),
        ]
    ),
)


@functools.cache
def dim_args(ndim: int) -> st.SearchStrategy[Any]:
    """Dims in range, out of range, and of wrong types."""
    return st.one_of(valid_dims(ndim), valid_dims(ndim), out_of_range_dims(ndim), WRONG_TYPE_DIMS)


JUNK_DTYPES = ["float32", np.float32, np.dtype("float64"), float, int, bool, 0, 1.0, True,
               oneflite.device("cpu"), [oneflite.float32], "bfloat16"]  # fmt: skip


@functools.cache
def dtype_args() -> st.SearchStrategy[Any]:
    """``dtype=`` values: None, every oneflite dtype, and things that are not dtypes."""
    return st.one_of(st.none(), st.none(), dtypes(), st.sampled_from(JUNK_DTYPES))


JUNK_INPUTS = [None, 1.0, 3, [1.0, 2.0], (1.0,), "x", np.ones(3), np.float32(1.0),
               oneflite.float32, oneflite.device("cpu")]  # fmt: skip


@functools.cache
def junk_inputs() -> st.SearchStrategy[Any]:
    return st.sampled_from(JUNK_INPUTS)


# ---- the contract --------------------------------------------------------------------------


def classify_dim(dim: Any, ndim: int) -> tuple[str, int | None]:
    """('ok', axis) with the axis to reduce over, ('type', None) or ('index', None), from the
    documented rules alone: ints and NumPy ints (not bools) are dims, None is the implicit
    rule, anything else (a oneflite.dtype too) is a TypeError; an int outside [-n, n-1]
    (n = max(ndim, 1)) is an IndexError."""
    n = max(ndim, 1)
    if dim is None:
        return "ok", 0 if ndim in (0, 1, 3) else 1
    if isinstance(dim, (bool, np.bool_, oneflite.dtype)):
        return "type", None
    try:
        d = operator.index(dim)
    except TypeError:
        return "type", None
    if not -n <= d < n:
        return "index", None
    return "ok", d % n


def expected_errors(
    x: Any, dim: Any, dtype_arg: Any, forced: str | None = None
) -> tuple[set[type], oneflite.dtype | None, int | None]:
    """(the exceptions the call may raise, the result dtype, the axis) for
    ``op(x, dim, dtype=dtype_arg)`` with backend ``forced`` forced for the op's kind.

    An empty set means the call must succeed. When several defects apply, any of their
    exceptions is accepted: the contract does not order them."""
    if not isinstance(x, oneflite.Tensor):
        return {TypeError}, None, None
    errors: set[type] = set()
    if dtype_arg is not None and not isinstance(dtype_arg, oneflite.dtype):
        errors.add(TypeError)
        dtype_arg = None
    status, axis = classify_dim(dim, x.ndim)
    if status == "type":
        errors.add(TypeError)
    elif status == "index":
        errors.add(IndexError)
    result = dtype_arg if dtype_arg is not None else x.dtype
    if not is_floating(result):
        errors.add(TypeError)
    if not serves(forced, x.device.type, result):
        errors.add(NotImplementedError)
    return errors, result, axis


# Which backends serve which (device, dtype): the built-in ones serve every floating dtype on
# their device. Tests that register their own add them here.
BACKEND_SERVES: dict[str, set[tuple[str, str]]] = {
    "fast": {("cpu", d.name) for d in FLOAT_DTYPES},
    "reference": {("cpu", d.name) for d in FLOAT_DTYPES},
    "cuda": {("cuda", d.name) for d in FLOAT_DTYPES},
}


def serves(forced: str | None, device_type: str, dtype: oneflite.dtype) -> bool:
    if not is_floating(dtype):
        return True  # a TypeError comes first; no NotImplementedError is owed
    if forced is None:
        return True
    return (device_type, dtype.name) in BACKEND_SERVES.get(forced, set())
