"""softmax and log_softmax against the float64 NumPy oracle in reference.py.

Every case runs over device x dtype x {softmax, log_softmax}. 16-bit inputs are compared with
the reference computed on the input as rounded to 16 bits, so only the computation and the
output rounding are measured.
"""

from __future__ import annotations

import zlib
from typing import Callable, NamedTuple

import numpy as np
import pytest
from conftest import (
    DEVICES,
    FINITE_MAX,
    FLOAT_DTYPES,
    assert_close,
    dtype_id,
    make_tensor,
    to_float64,
)
from reference import implicit_dim, log_softmax_ref, softmax_ref

import oneflite
import oneflite.nn.functional as F


class Op(NamedTuple):
    name: str
    fn: Callable[..., oneflite.Tensor]
    ref: Callable[[np.ndarray, int], np.ndarray]

    @property
    def log(self) -> bool:
        """Whether results are in the log domain (compared with a log tolerance)."""
        return self.name == "log_softmax"


OPS = [
    pytest.param(Op("softmax", F.softmax, softmax_ref), id="softmax"),
    pytest.param(Op("log_softmax", F.log_softmax, log_softmax_ref), id="log_softmax"),
]


@pytest.fixture(params=OPS)
def op(request: pytest.FixtureRequest) -> Op:
    return request.param


def seed_of(*parts: object) -> int:
    """A stable seed per test case, so each case draws different values."""
    return zlib.crc32(repr(parts).encode())


def random_values(shape: tuple[int, ...], seed: int, scale: float = 3.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) * scale


def check(op: Op, x: oneflite.Tensor, dim: int | None, expected_dim: int) -> oneflite.Tensor:
    """Runs op on x along dim and compares with the reference along expected_dim."""
    x_values = to_float64(x)  # the input as it is stored, after rounding to its dtype
    y = op.fn(x, dim)
    assert y.dtype == x.dtype
    assert y.shape == x.shape
    assert y.device == x.device
    assert_close(to_float64(y), op.ref(x_values, expected_dim), x.dtype, log=op.log)
    return y


# ---- shapes x dims -------------------------------------------------------------------------


def _all_dims(shape: tuple[int, ...]) -> list[int | None]:
    n = max(len(shape), 1)
    return [*range(n), *range(-n, 0), None]


SHAPES = [
    (),
    (1,),
    (7,),
    (1025,),
    (4097,),
    (33, 15),
    (511, 1536),
    (2, 1),
    (3, 1025),
    (4, 5, 6),
    (2, 3, 4, 5),
]

SHAPE_DIM_CASES = [
    pytest.param(shape, dim, id=f"{'x'.join(map(str, shape)) or '0d'}-dim{dim}")
    for shape in SHAPES
    for dim in _all_dims(shape)
]


@pytest.mark.parametrize(("shape", "dim"), SHAPE_DIM_CASES)
def test_matches_reference_for_every_shape_and_dim(op, device, float_dtype, shape, dim):
    x = make_tensor(random_values(shape, seed_of(op.name, shape, dim)), float_dtype, device)
    expected_dim = implicit_dim(len(shape)) if dim is None else dim
    check(op, x, dim, expected_dim)


@pytest.mark.parametrize(("ndim", "expected"), [(0, 0), (1, 0), (2, 1), (3, 0), (4, 1), (5, 1)])
def test_dim_none_uses_the_implicit_rule(op, device, ndim, expected):
    shape = (2, 3, 4, 5, 3)[:ndim]
    x = make_tensor(random_values(shape, seed_of(op.name, ndim)), oneflite.float64, device)
    y = to_float64(op.fn(x))
    assert_close(y, op.ref(to_float64(x), expected), oneflite.float64, log=op.log)
    if ndim >= 2:  # and differs from every other dim
        for other in range(ndim):
            if other != expected:
                assert not np.allclose(y, op.ref(to_float64(x), other))


@pytest.mark.parametrize("seed", range(4))
def test_matches_reference_for_fresh_random_inputs(op, device, float_dtype, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(1, 40, size=int(rng.integers(1, 4))))
    dim = int(rng.integers(-len(shape), len(shape)))
    scale = float(rng.choice([0.1, 1.0, 10.0]))
    x = make_tensor(rng.standard_normal(shape) * scale, float_dtype, device)
    check(op, x, dim, dim)


def test_softmax_rows_sum_to_one(device, float_dtype):
    x = make_tensor(random_values((17, 301), seed_of("sum")), float_dtype, device)
    y = to_float64(F.softmax(x, -1))
    assert np.all(y >= 0) and np.all(y <= 1)
    np.testing.assert_allclose(y.sum(axis=-1), 1.0, rtol=0, atol=301 * 4e-3)
    if float_dtype in (oneflite.float32, oneflite.float64):
        np.testing.assert_allclose(y.sum(axis=-1), 1.0, rtol=0, atol=1e-5)


def test_log_softmax_exp_sums_to_one(device, float_dtype):
    x = make_tensor(random_values((9, 100), seed_of("logsum")), float_dtype, device)
    y = to_float64(F.log_softmax(x, 1))
    assert np.all(y <= 0)
    np.testing.assert_allclose(np.exp(y).sum(axis=1), 1.0, rtol=0, atol=5e-2)


def test_log_softmax_stays_finite_where_softmax_underflows(device):
    values = np.array([[0.0, -200.0, -1000.0]])
    x = make_tensor(values, oneflite.float32, device)
    assert to_float64(F.softmax(x, 1))[0, 2] == 0.0
    y = to_float64(F.log_softmax(x, 1))
    assert np.all(np.isfinite(y))
    assert_close(y, log_softmax_ref(values, 1), oneflite.float32, log=True)


# ---- views ---------------------------------------------------------------------------------


def _views(device: str, dtype: oneflite.dtype, seed: int):
    """(description, tensor view, the same values as a NumPy float64 array)."""
    base = random_values((6, 10), seed)
    x = make_tensor(base, dtype, device)
    stored = to_float64(x)
    cube = random_values((4, 5, 6), seed + 1)
    c = make_tensor(cube, dtype, device)
    cube_stored = to_float64(c)
    flat = random_values((17,), seed + 2)
    f = make_tensor(flat, dtype, device)
    flat_stored = to_float64(f)
    return [
        ("transpose", x.transpose(0, 1), stored.T),
        ("transpose-negative", x.transpose(-1, -2), stored.T),
        ("permute", c.permute(2, 0, 1), cube_stored.transpose(2, 0, 1)),
        ("permute-tuple", c.permute((1, 2, 0)), cube_stored.transpose(1, 2, 0)),
        ("transpose-3d", c.transpose(0, 2), cube_stored.transpose(2, 1, 0)),
        ("rows-from-1-step-2-cols", x[1:, ::2], stored[1:, ::2]),
        ("cols-from-3", x[:, 3:], stored[:, 3:]),
        ("offset-1", f[1:], flat_stored[1:]),
        ("offset-1-step-3", f[1::3], flat_stored[1::3]),
        ("offset-1-2d", x[1:, 1:], stored[1:, 1:]),
        ("row", x[2], stored[2]),
        ("column", x[:, 7], stored[:, 7]),
        ("inserted-dim", x[:, None, 2:], stored[:, None, 2:]),
        ("ellipsis", c[..., 1:4], cube_stored[..., 1:4]),
        ("transposed-slice", x[1:5, 2:9:3].transpose(0, 1), stored[1:5, 2:9:3].T),
    ]


VIEW_NAMES = [v[0] for v in _views("cpu", oneflite.float64, 0)]


@pytest.mark.parametrize("view", VIEW_NAMES)
def test_matches_reference_on_views(op, device, float_dtype, view):
    _, x, values = next(v for v in _views(device, float_dtype, seed_of(view)) if v[0] == view)
    assert x.shape == values.shape
    for dim in _all_dims(values.shape):
        expected_dim = implicit_dim(values.ndim) if dim is None else dim
        y = op.fn(x, dim)
        assert y.is_contiguous()
        assert_close(
            to_float64(y), op.ref(values, expected_dim), float_dtype, log=op.log, err_msg=f"{dim}"
        )


def test_matches_reference_on_a_0d_view_with_storage_offset(op, device, float_dtype):
    x = make_tensor(random_values((3, 4), seed_of("0d-view")), float_dtype, device)[2, 1]
    assert x.ndim == 0 and x.storage_offset() == 9
    for dim in (0, -1, None):
        assert_close(to_float64(op.fn(x, dim)), op.ref(np.float64(0.5), 0), float_dtype, log=op.log)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_matches_reference_on_non_contiguous_numpy_arrays(op, float_dtype, dim):
    if float_dtype == oneflite.bfloat16:
        ml_dtypes = pytest.importorskip("ml_dtypes")
        np_dtype = np.dtype(ml_dtypes.bfloat16)
    else:
        np_dtype = np.dtype(float_dtype.name)
    array = random_values((7, 12), seed_of("numpy", dim)).astype(np_dtype)
    strided = array[:, ::2]
    x = oneflite.from_numpy(strided)
    assert not x.is_contiguous()
    assert x.stride() == (12, 2)
    assert_close(
        to_float64(op.fn(x, dim)), op.ref(strided.astype(np.float64), dim), float_dtype, log=op.log
    )


def test_matches_reference_on_numpy_array_with_offset_and_steps(op):
    array = random_values((5, 9, 4), seed_of("numpy3d"))
    view = array[1:, 2::3, 1:]
    x = oneflite.from_numpy(view)
    for dim in range(3):
        assert_close(to_float64(op.fn(x, dim)), op.ref(view, dim), oneflite.float64, log=op.log)


# ---- edge values ---------------------------------------------------------------------------

INF = np.inf
NAN = np.nan
BIG = 1e30  # clipped to each dtype's finite range


def _edge_rows(dtype: oneflite.dtype) -> dict[str, list[float]]:
    big = min(BIG, FINITE_MAX[dtype])
    return {
        "plus-inf": [INF, 1.0, 2.0, -1.0, 0.0],
        "minus-inf": [-INF, 1.0, 2.0, -1.0, 0.0],
        "nan": [NAN, 1.0, 2.0, -1.0, 0.0],
        "nan-last": [1.0, 2.0, -1.0, 0.0, NAN],
        "all-minus-inf": [-INF, -INF, -INF, -INF, -INF],
        "mixed-minus-inf": [-INF, 0.0, -INF, 3.0, -INF],
        "one-finite": [-INF, -INF, 5.0, -INF, -INF],
        "plus-and-minus-inf": [INF, -INF, 0.0, 1.0, 2.0],
        "two-plus-inf": [INF, INF, 0.0, 1.0, 2.0],
        "nan-and-minus-inf": [-INF, NAN, -INF, 0.0, 1.0],
        "1e4": [1e4, -1e4, 0.0, 1e4, 9999.0],
        "minus-1e4": [-1e4, -1e4, -9999.0, -1e4, -1e4],
        "big": [big, -big, 0.0, big / 2, -big / 2],
        "minus-big": [-big, -big, -big, -big, -big],
        "all-equal": [3.5, 3.5, 3.5, 3.5, 3.5],
        "zeros": [0.0, 0.0, 0.0, 0.0, 0.0],
    }


EDGE_NAMES = list(_edge_rows(oneflite.float64))


def _check_exact_edges(op: Op, values: np.ndarray, y: np.ndarray, axis: int) -> None:
    """Where a slice is finite but for -inf entries, those give exactly 0 (log: -inf)."""
    with np.errstate(invalid="ignore"):
        clean = ~np.any(np.isnan(values) | (values == INF), axis=axis, keepdims=True)
        clean &= np.any(np.isfinite(values), axis=axis, keepdims=True)
    minus_inf = (values == -INF) & clean
    expected = 0.0 if op.name == "softmax" else -INF
    assert np.all(y[minus_inf] == expected)
    nan_slices = np.broadcast_to(~clean, values.shape)
    assert np.all(np.isnan(y[nan_slices]))


@pytest.mark.parametrize("edge", EDGE_NAMES)
def test_matches_reference_on_edge_values(op, device, float_dtype, edge):
    values = np.array([_edge_rows(float_dtype)[edge]])
    x = make_tensor(values, float_dtype, device)
    stored = to_float64(x)
    y = to_float64(op.fn(x, -1))
    assert_close(y, op.ref(stored, 1), float_dtype, log=op.log)
    _check_exact_edges(op, stored, y, axis=1)


def test_matches_reference_on_all_edge_rows_along_dim_0(op, device, float_dtype):
    # Each column of the matrix is one edge case: the transposed path through the functor.
    values = np.array(list(_edge_rows(float_dtype).values())).T
    x = make_tensor(values, float_dtype, device)
    stored = to_float64(x)
    y = to_float64(op.fn(x, 0))
    assert_close(y, op.ref(stored, 0), float_dtype, log=op.log)
    _check_exact_edges(op, stored, y, axis=0)


@pytest.mark.parametrize("cols", [1, 33, 1025, 4097])
@pytest.mark.parametrize("big", [1e4, 1e30])
def test_matches_reference_on_long_rows_with_one_big_value(op, device, float_dtype, cols, big):
    rng = np.random.default_rng(seed_of("one-big", cols, big))
    values = rng.standard_normal((3, cols))
    values[0, rng.integers(cols)] = min(big, FINITE_MAX[float_dtype])
    values[1, rng.integers(cols)] = -min(big, FINITE_MAX[float_dtype])
    values[2, -1] = min(big, FINITE_MAX[float_dtype])
    x = make_tensor(values, float_dtype, device)
    check(op, x, 1, 1)


def test_softmax_of_a_dominant_value_is_exactly_one_and_zero(device, float_dtype):
    values = np.array([[0.0, 1e4, 0.0, -5.0]])
    y = to_float64(F.softmax(make_tensor(values, float_dtype, device), 1))
    np.testing.assert_array_equal(y, [[0.0, 1.0, 0.0, 0.0]])


def test_0d_softmax_is_one_and_log_softmax_is_zero(device, float_dtype):
    x = make_tensor(np.float64(-7.25), float_dtype, device)
    assert to_float64(F.softmax(x)).item() == 1.0
    assert to_float64(F.log_softmax(x)).item() == 0.0
    assert F.softmax(x).shape == ()


# ---- empty tensors -------------------------------------------------------------------------

EMPTY_CASES = [
    pytest.param(shape, dim, id=f"{'x'.join(map(str, shape))}-dim{dim}")
    for shape in [(0,), (0, 5), (5, 0), (2, 0, 3)]
    for dim in _all_dims(shape)
]


@pytest.mark.parametrize(("shape", "dim"), EMPTY_CASES)
def test_empty_input_gives_empty_output_of_same_shape_and_dtype(
    op, device, float_dtype, shape, dim
):
    x = make_tensor(np.zeros(shape), float_dtype, device)
    y = op.fn(x, dim)
    assert y.shape == shape
    assert y.dtype == float_dtype
    assert y.device == x.device
    assert y.numel() == 0
    assert to_float64(y).shape == shape


# ---- dtype= --------------------------------------------------------------------------------

INT_OR_BOOL = [
    pytest.param(oneflite.int64, id="int64"),
    pytest.param(oneflite.int32, id="int32"),
    pytest.param(oneflite.bool, id="bool"),
]


@pytest.mark.parametrize("in_dtype", INT_OR_BOOL)
@pytest.mark.parametrize("out_dtype", [oneflite.float32, oneflite.float64], ids=dtype_id)
def test_dtype_argument_computes_integer_and_bool_input_in_that_dtype(
    op, device, in_dtype, out_dtype
):
    rng = np.random.default_rng(seed_of("int", in_dtype.name))
    values = rng.integers(-20, 20, size=(4, 9)).astype(np.float64)
    if in_dtype == oneflite.bool:
        values = (values > 0).astype(np.float64)
    x = make_tensor(values, in_dtype, device)
    y = op.fn(x, 1, dtype=out_dtype)
    assert y.dtype == out_dtype
    assert x.dtype == in_dtype
    assert_close(to_float64(y), op.ref(values, 1), out_dtype, log=op.log)


def test_dtype_argument_float16_input_computes_in_float32(op, device):
    values = random_values((5, 300), seed_of("f16->f32")) * 5
    x = make_tensor(values, oneflite.float16, device)
    y = op.fn(x, -1, dtype=oneflite.float32)
    assert y.dtype == oneflite.float32
    assert_close(to_float64(y), op.ref(to_float64(x), -1), oneflite.float32, log=op.log)


def test_dtype_argument_float32_input_to_float16(op, device):
    values = random_values((5, 64), seed_of("f32->f16"))
    x = make_tensor(values, oneflite.float32, device)
    y = op.fn(x, 0, dtype=oneflite.float16)
    assert y.dtype == oneflite.float16
    rounded = to_float64(x.to(oneflite.float16))
    assert_close(to_float64(y), op.ref(rounded, 0), oneflite.float16, log=op.log)


def test_dtype_argument_equal_to_input_dtype_changes_nothing(op, device, float_dtype):
    x = make_tensor(random_values((3, 8), seed_of("same")), float_dtype, device)
    np.testing.assert_array_equal(
        to_float64(op.fn(x, 1, dtype=float_dtype)), to_float64(op.fn(x, 1))
    )


# ---- output properties ---------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, 2, None])
def test_output_is_a_new_contiguous_tensor_and_input_is_unchanged(op, device, float_dtype, dim):
    x = make_tensor(random_values((3, 4, 5), seed_of("props", dim)), float_dtype, device)
    x = x.permute(1, 2, 0)[:, 1:]  # non-contiguous, with an offset
    before = to_float64(x)
    strides = x.stride()
    y = op.fn(x, dim)
    assert y.is_contiguous()
    assert y.shape == x.shape
    assert y.dtype == x.dtype
    assert y.device == x.device
    assert y.data_ptr() != x.data_ptr()
    assert x.stride() == strides
    np.testing.assert_array_equal(to_float64(x), before)


def test_input_is_unchanged_for_contiguous_last_dim(op, device, float_dtype):
    x = make_tensor(random_values((4, 6), seed_of("unchanged")), float_dtype, device)
    before = to_float64(x)
    y = op.fn(x, -1)
    assert y.data_ptr() != x.data_ptr()
    np.testing.assert_array_equal(to_float64(x), before)


def test_results_are_deterministic(op, device, float_dtype):
    x = make_tensor(random_values((64, 513), seed_of("determinism")), float_dtype, device)
    np.testing.assert_array_equal(to_float64(op.fn(x, 1)), to_float64(op.fn(x, 1)))


# ---- every backend -------------------------------------------------------------------------


def _backends(kind: str, device_type: str, dtype: oneflite.dtype) -> list[str]:
    return [
        p["name"]
        for p in oneflite.registry.primitives()
        if p["kind"] == kind and p["device"] == device_type and dtype.name in p["dtypes"]
    ]


# Row lengths around the boundaries a backend may switch strategy at: vector widths, warp and
# block sizes, shared-memory limits.
BACKEND_COLS = [
    1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512,
    513, 1023, 1024, 1025, 2047, 2048, 2049, 4097, 8191, 8193, 16385, 65537, 131073,
]  # fmt: skip


@pytest.mark.usefixtures("unforce_softmax_primitives")
@pytest.mark.parametrize("cols", BACKEND_COLS)
def test_every_registered_backend_matches_the_reference(op, device, float_dtype, cols):
    rows = max(1, min(67, 200_000 // cols))
    rng = np.random.default_rng(seed_of("backend", op.name, cols))
    values = rng.standard_normal((rows + 1, cols)) * 4
    values[0, :: max(1, cols // 3)] = -np.inf  # a row with -inf entries (and some finite ones)
    if cols > 1:
        values[0, -1] = 1.0
    values[-1, -1] = min(1e4, FINITE_MAX[float_dtype])  # a row with one big value
    x = make_tensor(values, float_dtype, device)
    # x[1:] starts `cols` elements into the storage: misaligned for wide loads when cols is odd.
    inputs = {"aligned": x, "offset": x[1:]}
    names = _backends(op.name, x.device.type, float_dtype)
    assert names, f"no {op.name} backend for {x.device.type} {float_dtype.name}"
    for name in names:
        oneflite._C._force_primitive(op.name, name)
        for label, tensor in inputs.items():
            expected = op.ref(to_float64(tensor), 1)
            y = op.fn(tensor, 1)
            assert_close(
                to_float64(y), expected, float_dtype, log=op.log, err_msg=f"backend {name}, {label}"
            )
    oneflite._C._force_primitive(op.name, None)


@pytest.mark.parametrize("shape", [(150_000, 7), (40_000, 65), (3_000, 1025)], ids=str)
def test_many_rows_match_the_reference(op, device, float_dtype, shape):
    # More rows than a GPU holds at once, so kernels that loop over rows go round.
    x = make_tensor(random_values(shape, seed_of("rows", shape)), float_dtype, device)
    check(op, x, -1, -1)


# ---- the other entry points ----------------------------------------------------------------


def test_top_level_softmax_and_log_softmax_are_the_functional_ones():
    assert oneflite.softmax is F.softmax
    assert oneflite.log_softmax is F.log_softmax


@pytest.mark.parametrize("dim", [0, -1])
def test_tensor_methods_match_the_reference(device, float_dtype, dim):
    values = random_values((6, 7), seed_of("method", dim))
    x = make_tensor(values, float_dtype, device)
    stored = to_float64(x)
    assert_close(to_float64(x.softmax(dim)), softmax_ref(stored, dim), float_dtype)
    assert_close(
        to_float64(x.log_softmax(dim)), log_softmax_ref(stored, dim), float_dtype, log=True
    )
    assert_close(to_float64(x.softmax(dim=dim)), softmax_ref(stored, dim), float_dtype)
    assert_close(to_float64(x.softmax()), softmax_ref(stored, 1), float_dtype)


def test_tensor_methods_accept_dtype(device):
    x = make_tensor(np.array([[1.0, 2.0, 3.0]]), oneflite.int64, device)
    y = x.softmax(1, dtype=oneflite.float64)
    assert y.dtype == oneflite.float64
    assert_close(to_float64(y), softmax_ref(np.array([[1.0, 2.0, 3.0]]), 1), oneflite.float64)
    z = x.log_softmax(dim=1, dtype=oneflite.float32)
    assert z.dtype == oneflite.float32
    assert_close(
        to_float64(z), log_softmax_ref(np.array([[1.0, 2.0, 3.0]]), 1), oneflite.float32, log=True
    )


@pytest.mark.parametrize(
    ("module", "ref"),
    [(oneflite.nn.Softmax, softmax_ref), (oneflite.nn.LogSoftmax, log_softmax_ref)],
    ids=["Softmax", "LogSoftmax"],
)
@pytest.mark.parametrize("dim", [0, 1, -1, None])
def test_modules_match_the_reference(device, float_dtype, module, ref, dim):
    values = random_values((5, 8), seed_of("module", dim))
    x = make_tensor(values, float_dtype, device)
    m = module(dim) if dim is not None else module()
    expected_dim = implicit_dim(2) if dim is None else dim
    log = module is oneflite.nn.LogSoftmax
    assert_close(to_float64(m(x)), ref(to_float64(x), expected_dim), float_dtype, log=log)
    assert_close(to_float64(m.forward(x)), ref(to_float64(x), expected_dim), float_dtype, log=log)


def test_module_reprs_show_dim():
    assert repr(oneflite.nn.Softmax(dim=-1)) == "Softmax(dim=-1)"
    assert repr(oneflite.nn.Softmax(1)) == "Softmax(dim=1)"
    assert repr(oneflite.nn.Softmax()) == "Softmax(dim=None)"
    assert repr(oneflite.nn.LogSoftmax(dim=0)) == "LogSoftmax(dim=0)"
    assert repr(oneflite.nn.LogSoftmax()) == "LogSoftmax(dim=None)"


def test_modules_are_modules_with_a_dim_attribute():
    m = oneflite.nn.Softmax(2)
    assert isinstance(m, oneflite.nn.Module)
    assert m.dim == 2
    assert isinstance(oneflite.nn.LogSoftmax(0), oneflite.nn.Module)


def test_base_module_forward_is_abstract():
    with pytest.raises(NotImplementedError, match="Module must implement forward"):
        oneflite.nn.Module()(oneflite.tensor([1.0]))


# ---- an independent oracle -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("device_name", DEVICES)
def test_matches_torch(op, device_name, dtype):
    torch = pytest.importorskip("torch")
    torch_dtype = getattr(torch, dtype.name)
    rng = np.random.default_rng(seed_of("torch", dtype.name))
    values = rng.standard_normal((7, 33, 15)) * 4
    values[0, 0, :3] = [np.inf, 0.0, 1.0]
    values[1, 1, :] = -np.inf
    values[2, 2, :4] = [-np.inf, 1.0, -np.inf, 2.0]
    values[3, 3, 5] = np.nan
    x = make_tensor(values, dtype, device_name)
    stored = to_float64(x)
    torch_fn = getattr(torch.nn.functional, op.name)
    for dim in (0, 1, 2, -1):
        expected = torch_fn(torch.from_numpy(stored).to(torch_dtype), dim).double().numpy()
        assert_close(to_float64(op.fn(x, dim)), expected, dtype, log=op.log, err_msg=f"dim={dim}")
        # And the float64 oracle agrees with torch.
        torch64 = torch_fn(torch.from_numpy(stored), dim).numpy()
        np.testing.assert_allclose(
            op.ref(stored, dim), torch64, rtol=1e-12, atol=1e-14, equal_nan=True
        )
