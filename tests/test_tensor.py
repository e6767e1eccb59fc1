"""Tensors: creation, dtype inference, NumPy and DLPack interop, casts, views and metadata.

The oracle is NumPy (and ml_dtypes for bfloat16), never oneflite.
"""

from __future__ import annotations

import gc
import itertools

import ml_dtypes  # a test dependency (the "test" extra); required, never skipped
import numpy as np
import pytest
from conftest import ALL_DTYPES, FLOAT_DTYPES, dtype_id, make_tensor, to_float64
from reference import log_softmax_ref, softmax_ref

import oneflite

NUMPY_DTYPE = {
    oneflite.float16: np.dtype(np.float16),
    oneflite.bfloat16: np.dtype(ml_dtypes.bfloat16),
    oneflite.float32: np.dtype(np.float32),
    oneflite.float64: np.dtype(np.float64),
    oneflite.int32: np.dtype(np.int32),
    oneflite.int64: np.dtype(np.int64),
    oneflite.bool: np.dtype(np.bool_),
}
DLPACK_DTYPES = [d for d in ALL_DTYPES if d != oneflite.bfloat16]  # what numpy exchanges


def sample_array(dtype: oneflite.dtype, shape: tuple[int, ...] = (3, 4), seed: int = 0):
    """Values of ``dtype`` as a NumPy array of the matching NumPy dtype."""
    rng = np.random.default_rng(seed)
    if dtype == oneflite.bool:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype in (oneflite.int32, oneflite.int64):
        info = np.iinfo(NUMPY_DTYPE[dtype])
        return rng.integers(info.min, info.max, size=shape, dtype=NUMPY_DTYPE[dtype])
    return (rng.standard_normal(shape) * 100).astype(NUMPY_DTYPE[dtype])


# ---- dtypes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "name", "itemsize", "is_float"),
    [
        (oneflite.float16, "float16", 2, True),
        (oneflite.bfloat16, "bfloat16", 2, True),
        (oneflite.float32, "float32", 4, True),
        (oneflite.float64, "float64", 8, True),
        (oneflite.int32, "int32", 4, False),
        (oneflite.int64, "int64", 8, False),
        (oneflite.bool, "bool", 1, False),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_dtype_name_repr_itemsize_and_is_floating_point(dtype, name, itemsize, is_float):
    assert dtype.name == name
    assert repr(dtype) == f"oneflite.{name}"
    assert str(dtype) == f"oneflite.{name}"
    assert dtype.itemsize == itemsize
    assert dtype.is_floating_point is is_float
    assert getattr(oneflite, name) == dtype
    assert isinstance(dtype, oneflite.dtype)


def test_dtype_aliases():
    assert oneflite.half == oneflite.float16
    assert oneflite.float == oneflite.float32
    assert oneflite.double == oneflite.float64


def test_dtypes_are_distinct_and_hashable():
    assert len(set(ALL_DTYPES)) == 7
    assert oneflite.float32 != oneflite.float64


# ---- devices -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "type_", "index", "text", "rep"),
    [
        ("cpu", "cpu", 0, "cpu", "device(type='cpu')"),
        ("cpu:0", "cpu", 0, "cpu", "device(type='cpu')"),
        ("cuda", "cuda", 0, "cuda:0", "device(type='cuda', index=0)"),
        ("cuda:0", "cuda", 0, "cuda:0", "device(type='cuda', index=0)"),
        ("cuda:3", "cuda", 3, "cuda:3", "device(type='cuda', index=3)"),
    ],
)
def test_device_parsing_str_and_repr(spec, type_, index, text, rep):
    d = oneflite.device(spec)
    assert d.type == type_
    assert d.index == index
    assert str(d) == text
    assert repr(d) == rep


def test_device_from_type_and_index():
    assert oneflite.device("cuda", 2) == oneflite.device("cuda:2")
    assert oneflite.device("cpu", 0) == oneflite.device("cpu")
    with pytest.raises(ValueError):
        oneflite.device("cuda:0", 0)
    with pytest.raises(ValueError):
        oneflite.device("cuda", -1)


def test_device_equality_and_hash():
    assert oneflite.device("cpu") == oneflite.device("cpu:0")
    assert hash(oneflite.device("cpu")) == hash(oneflite.device("cpu:0"))
    assert oneflite.device("cuda") == oneflite.device("cuda:0")
    assert hash(oneflite.device("cuda")) == hash(oneflite.device("cuda:0"))
    assert oneflite.device("cuda:0") != oneflite.device("cuda:1")
    assert oneflite.device("cpu") != oneflite.device("cuda")
    assert oneflite.device("cpu") == "cpu"
    assert oneflite.device("cuda:1") == "cuda:1"
    assert oneflite.device("cpu") != "cuda"
    assert oneflite.device("cpu") != "not a device"
    assert len({oneflite.device("cpu"), oneflite.device("cpu:0"), oneflite.device("cuda")}) == 2


def test_device_compared_with_an_unrelated_type_is_unequal():
    # Python's convention: == with an unrelated type is False, not an error.
    assert (oneflite.device("cpu") == 3) is False
    assert (oneflite.device("cpu") != None) is True  # noqa: E711
    assert oneflite.device("cpu") not in [1, None, 2.5]


# ---- tensor(): dtype inference -------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "dtype", "shape"),
    [
        (1.5, oneflite.float32, ()),
        (3, oneflite.int64, ()),
        (True, oneflite.bool, ()),
        ([1.0, 2.0], oneflite.float32, (2,)),
        ([1, 2], oneflite.int64, (2,)),
        ([True, False], oneflite.bool, (2,)),
        ([1, 2.5], oneflite.float32, (2,)),
        ([[1, 2, 3], [4, 5, 6]], oneflite.int64, (2, 3)),
        (((1.0,), (2.0,)), oneflite.float32, (2, 1)),
        ([], oneflite.float32, (0,)),
        ([[], []], oneflite.float32, (2, 0)),
    ],
    ids=repr,
)
def test_tensor_infers_dtype_from_python_data(data, dtype, shape):
    t = oneflite.tensor(data)
    assert t.dtype == dtype
    assert t.shape == shape
    assert t.device == oneflite.device("cpu")
    np.testing.assert_array_equal(to_float64(t), np.asarray(data, dtype=np.float64))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_tensor_keeps_the_dtype_of_numpy_arrays_and_scalars(dtype):
    array = sample_array(dtype)
    t = oneflite.tensor(array)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), array)
    scalar = array.reshape(-1)[0]  # a NumPy scalar
    s = oneflite.tensor(scalar)
    assert s.dtype == dtype
    assert s.shape == ()
    assert s.numpy() == scalar


@pytest.mark.parametrize(
    ("np_dtype", "dtype"),
    [
        (np.int8, oneflite.int32),
        (np.int16, oneflite.int32),
        (np.uint8, oneflite.int32),
        (np.uint16, oneflite.int32),
        (np.uint32, oneflite.int64),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_tensor_widens_small_integer_arrays(np_dtype, dtype):
    info = np.iinfo(np_dtype)
    array = np.array([info.min, 0, 1, info.max], dtype=np_dtype)
    t = oneflite.tensor(array)
    assert t.dtype == dtype
    assert t.numpy().tolist() == array.tolist()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_tensor_dtype_argument_converts_like_numpy(dtype):
    values = [[0.0, 1.0, -2.0], [3.0, 0.5, -7.25]]
    t = oneflite.tensor(values, dtype=dtype)
    assert t.dtype == dtype
    expected = np.array(values).astype(NUMPY_DTYPE[dtype])
    np.testing.assert_array_equal(t.numpy(), expected)


# ---- tensor(): copies ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_tensor_copies_numpy_data(dtype):
    array = sample_array(dtype)
    t = oneflite.tensor(array)
    assert t.data_ptr() != array.ctypes.data
    before = array.copy()
    array[...] = array[::-1].copy() if dtype == oneflite.bool else array * 0
    np.testing.assert_array_equal(t.numpy(), before)


def test_tensor_copies_a_tensor():
    source = oneflite.tensor([1.0, 2.0, 3.0])
    for t in (oneflite.tensor(source), oneflite.tensor(source, dtype=oneflite.float32)):
        assert t.data_ptr() != source.data_ptr()
        t.numpy()[0] = 100.0
        assert source.tolist() == [1.0, 2.0, 3.0]


def test_tensor_of_a_strided_view_copies_it_contiguously():
    base = oneflite.tensor(np.arange(12.0).reshape(3, 4))
    t = oneflite.tensor(base.transpose(0, 1))
    assert t.is_contiguous()
    assert t.shape == (4, 3)
    np.testing.assert_array_equal(t.numpy(), np.arange(12.0).reshape(3, 4).T)


def test_tensor_result_is_contiguous_for_non_contiguous_numpy_input():
    array = np.arange(24.0).reshape(4, 6)[:, ::2]
    t = oneflite.tensor(array)
    assert t.is_contiguous()
    np.testing.assert_array_equal(t.numpy(), array)


# ---- NumPy round trips ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4)], ids=str)
def test_every_dtype_round_trips_through_numpy(dtype, shape):
    array = sample_array(dtype, shape, seed=len(shape))
    t = oneflite.tensor(array)
    assert t.shape == shape
    back = t.numpy()
    assert back.dtype == NUMPY_DTYPE[dtype]
    assert back.shape == shape
    np.testing.assert_array_equal(back, array)
    np.testing.assert_array_equal(np.asarray(t), array)
    assert (
        t.tolist() == array.astype(np.float64 if dtype.is_floating_point else array.dtype).tolist()
    )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_special_float_values_round_trip_through_numpy(dtype):
    array = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, 1.0], dtype=NUMPY_DTYPE[dtype])
    back = oneflite.tensor(array).numpy()
    assert back.dtype == array.dtype
    bits = f"u{array.itemsize}"
    assert back.view(bits).tolist() == array.view(bits).tolist()


# ---- from_numpy: zero copy -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_from_numpy_shares_memory_both_ways(dtype):
    array = sample_array(dtype)
    t = oneflite.from_numpy(array)
    assert t.dtype == dtype
    assert t.data_ptr() == array.ctypes.data
    array[0, 0] = array[1, 1]
    assert t.numpy()[0, 0] == array[1, 1]
    view = t.numpy()
    assert view.ctypes.data == array.ctypes.data
    view[2, 3] = view[0, 1]
    assert array[2, 3] == view[0, 1]


def test_from_numpy_of_a_view_keeps_offset_and_strides():
    base = np.arange(60.0).reshape(5, 12)
    view = base[1:, 2::3]
    t = oneflite.from_numpy(view)
    assert t.data_ptr() == view.ctypes.data
    assert t.shape == view.shape
    assert t.stride() == tuple(s // 8 for s in view.strides)
    assert not t.is_contiguous()
    np.testing.assert_array_equal(t.numpy(), view)
    base[1, 2] = -1.0
    assert t.tolist()[0][0] == -1.0


def test_from_numpy_keeps_the_array_alive():
    array = np.arange(1000.0)
    t = oneflite.from_numpy(array)
    view = t[10:20]
    del array
    gc.collect()
    assert t.numpy()[999] == 999.0
    del t
    gc.collect()
    assert view.tolist() == [float(v) for v in range(10, 20)]


def test_numpy_view_keeps_the_tensor_alive():
    t = oneflite.tensor(np.arange(100.0))
    array = t.numpy()
    del t
    gc.collect()
    np.testing.assert_array_equal(array, np.arange(100.0))


def test_from_numpy_of_0d_and_empty_arrays():
    t = oneflite.from_numpy(np.array(2.5))
    assert t.shape == () and t.item() == 2.5
    e = oneflite.from_numpy(np.zeros((0, 3), dtype=np.int32))
    assert e.shape == (0, 3) and e.numel() == 0 and e.dtype == oneflite.int32


def test_from_numpy_rejects_negative_strides_with_value_error():
    with pytest.raises(ValueError, match="negative strides"):
        oneflite.from_numpy(np.arange(5.0)[::-1])
    with pytest.raises(ValueError, match="negative strides"):
        oneflite.from_numpy(np.arange(6.0).reshape(2, 3)[:, ::-1])


def test_from_numpy_rejects_strides_not_a_multiple_of_the_itemsize():
    odd = np.lib.stride_tricks.as_strided(np.zeros(10, np.float32), shape=(3,), strides=(6,))
    with pytest.raises(ValueError, match="multiple of the element size"):
        oneflite.from_numpy(odd)


@pytest.mark.parametrize("np_dtype", [">f4", ">f8", ">i4", ">i8", ">f2"])
def test_non_native_byte_order_raises_type_error(np_dtype):
    array = np.arange(4).astype(np_dtype)
    with pytest.raises(TypeError, match="byte order"):
        oneflite.from_numpy(array)
    with pytest.raises(TypeError, match="byte order"):
        oneflite.tensor(array)


@pytest.mark.parametrize(
    "np_dtype",
    [
        np.int8,
        np.uint8,
        np.uint64,
        np.complex64,
        np.float128 if hasattr(np, "float128") else np.complex128,
    ],
)
def test_from_numpy_of_unsupported_dtype_raises_type_error(np_dtype):
    with pytest.raises(TypeError, match="not supported"):
        oneflite.from_numpy(np.zeros(3, dtype=np_dtype))


# ---- __array__ -----------------------------------------------------------------------------


def test_np_asarray_shares_memory():
    t = oneflite.tensor([[1.0, 2.0], [3.0, 4.0]])
    array = np.asarray(t)
    assert array.ctypes.data == t.data_ptr()
    assert array.dtype == np.float32
    array[0, 0] = 9.0
    assert t.tolist()[0][0] == 9.0


def test_array_protocol_copy_semantics():
    t = oneflite.tensor([1.0, 2.0, 3.0])
    shared = t.__array__()
    assert shared.ctypes.data == t.data_ptr()
    assert t.__array__(copy=False).ctypes.data == t.data_ptr()
    assert t.__array__(dtype=np.float32, copy=False).ctypes.data == t.data_ptr()
    copied = t.__array__(copy=True)
    assert copied.ctypes.data != t.data_ptr()
    np.testing.assert_array_equal(copied, [1.0, 2.0, 3.0])
    copied[0] = 5.0
    assert t.tolist() == [1.0, 2.0, 3.0]
    converted = t.__array__(dtype=np.float64)
    assert converted.dtype == np.float64
    np.testing.assert_array_equal(converted, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        t.__array__(dtype=np.float64, copy=False)
    assert np.array(t).ctypes.data != t.data_ptr()
    assert np.array(t, copy=False).ctypes.data == t.data_ptr()
    with pytest.raises(ValueError):
        np.array(t, dtype=np.int64, copy=False)


def test_numpy_of_a_view_shows_the_view():
    t = oneflite.tensor(np.arange(12.0).reshape(3, 4))
    view = t.transpose(0, 1)[1:]
    array = view.numpy()
    assert array.ctypes.data == view.data_ptr()
    np.testing.assert_array_equal(array, np.arange(12.0).reshape(3, 4).T[1:])


# ---- DLPack --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DLPACK_DTYPES, ids=dtype_id)
def test_numpy_from_dlpack_is_zero_copy(dtype):
    t = oneflite.tensor(sample_array(dtype))
    array = np.from_dlpack(t)
    assert array.dtype == NUMPY_DTYPE[dtype]
    assert array.ctypes.data == t.data_ptr()
    np.testing.assert_array_equal(array, t.numpy())


@pytest.mark.parametrize("dtype", DLPACK_DTYPES, ids=dtype_id)
def test_oneflite_from_dlpack_of_numpy_is_zero_copy(dtype):
    array = sample_array(dtype)
    t = oneflite.from_dlpack(array)
    assert t.dtype == dtype
    assert t.data_ptr() == array.ctypes.data
    np.testing.assert_array_equal(t.numpy(), array)
    array[0, 0] = array[2, 2]
    assert t.numpy()[0, 0] == array[2, 2]


@pytest.mark.parametrize("dtype", DLPACK_DTYPES, ids=dtype_id)
def test_every_numpy_dtype_round_trips_through_dlpack(dtype):
    array = sample_array(dtype, (4, 5), seed=3)
    back = np.from_dlpack(oneflite.from_dlpack(array))
    assert back.dtype == array.dtype
    assert back.ctypes.data == array.ctypes.data
    np.testing.assert_array_equal(back, array)


def test_dlpack_keeps_strides_and_offsets():
    t = oneflite.tensor(np.arange(24.0).reshape(4, 6))
    view = t.transpose(0, 1)[1:, 2:]
    array = np.from_dlpack(view)
    assert array.ctypes.data == view.data_ptr()
    assert array.strides == tuple(8 * s for s in view.stride())
    np.testing.assert_array_equal(array, np.arange(24.0).reshape(4, 6).T[1:, 2:])
    strided = np.arange(24.0).reshape(4, 6)[1:, ::2]
    back = oneflite.from_dlpack(strided)
    assert back.data_ptr() == strided.ctypes.data
    assert back.stride() == (6, 2)
    np.testing.assert_array_equal(back.numpy(), strided)


def test_from_dlpack_keeps_the_producer_alive():
    array = np.arange(50.0)
    t = oneflite.from_dlpack(array)
    del array
    gc.collect()
    assert t.tolist() == [float(v) for v in range(50)]


def test_exported_dlpack_keeps_the_tensor_alive():
    t = oneflite.tensor(np.arange(30.0))
    array = np.from_dlpack(t)
    del t
    gc.collect()
    np.testing.assert_array_equal(array, np.arange(30.0))


def test_dlpack_device_is_cpu_0():
    assert oneflite.tensor([1.0]).__dlpack_device__() == (1, 0)


def test_dlpack_capsule_can_be_consumed_only_once():
    t = oneflite.tensor([1.0, 2.0])
    for capsule in (t.__dlpack__(), t.__dlpack__(max_version=(1, 0))):
        first = oneflite.from_dlpack(capsule)
        assert first.tolist() == [1.0, 2.0]
        with pytest.raises(ValueError, match="consumed only once"):
            oneflite.from_dlpack(capsule)


def test_dlpack_capsules_are_legacy_or_versioned_on_request():
    t = oneflite.tensor([1.0])
    assert "dltensor" in repr(t.__dlpack__())
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 0)))
    assert "dltensor_versioned" not in repr(t.__dlpack__(max_version=(0, 8)))


def test_dlpack_copy_true_exports_distinct_memory():
    t = oneflite.tensor([1.0, 2.0, 3.0])
    copy = oneflite.from_dlpack(t.__dlpack__(copy=True))
    assert copy.data_ptr() != t.data_ptr()
    assert copy.tolist() == [1.0, 2.0, 3.0]
    shared = oneflite.from_dlpack(t.__dlpack__(copy=False))
    assert shared.data_ptr() == t.data_ptr()


def test_dlpack_to_another_device_raises_buffer_error():
    with pytest.raises(BufferError):
        oneflite.tensor([1.0]).__dlpack__(dl_device=(2, 0))


def test_oneflite_from_dlpack_of_a_oneflite_tensor_shares_memory():
    t = oneflite.tensor([[1, 2], [3, 4]])
    u = oneflite.from_dlpack(t)
    assert u.data_ptr() == t.data_ptr()
    assert u.dtype == oneflite.int64


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_torch_interop_through_dlpack(dtype):
    torch = pytest.importorskip("torch")
    t = oneflite.tensor(sample_array(dtype))
    tt = torch.from_dlpack(t)
    assert tt.data_ptr() == t.data_ptr()
    assert str(tt.dtype) == f"torch.{dtype.name}"
    back = oneflite.from_dlpack(tt)
    assert back.data_ptr() == tt.data_ptr()
    assert back.dtype == dtype
    np.testing.assert_array_equal(to_float64(back), to_float64(t))
    tt.zero_()
    assert not np.any(to_float64(t))


# ---- .to(): casts --------------------------------------------------------------------------

# Values every dtype holds exactly, so a cast between any two is exact (or truncates, for
# float -> int, which NumPy does too).
EXACT = {
    "float": [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.75, -0.75, 100.0, -7.0, 255.0, 1024.0],
    "int": [0, 1, -1, 2, -3, 100, -100, 255, 1024, -2048],
    "bool": [True, False, True, True, False],
}


def exact_values(dtype: oneflite.dtype) -> np.ndarray:
    kind = "float" if dtype.is_floating_point else ("bool" if dtype == oneflite.bool else "int")
    return np.array(EXACT[kind]).astype(NUMPY_DTYPE[dtype])


def on(device: str, array: np.ndarray) -> oneflite.Tensor:
    """``array`` as a tensor on ``device`` (on the CPU, sharing its memory)."""
    return oneflite.from_numpy(array).to(device)


@pytest.mark.parametrize(
    ("source", "target"),
    list(itertools.product(ALL_DTYPES, ALL_DTYPES)),
    ids=[f"{a.name}-to-{b.name}" for a, b in itertools.product(ALL_DTYPES, ALL_DTYPES)],
)
def test_cast_between_every_pair_of_dtypes_matches_numpy(source, target, device):
    array = exact_values(source)
    t = on(device, array)
    out = t.to(target)
    assert out.dtype == target
    assert out.shape == array.shape
    result = out.cpu().numpy()
    assert result.dtype == NUMPY_DTYPE[target]
    np.testing.assert_array_equal(result, array.astype(NUMPY_DTYPE[target]))
    if target.is_floating_point:
        np.testing.assert_array_equal(np.signbit(result), np.signbit(array.astype(np.float64)))


def test_cast_int64_to_int32_wraps_like_numpy(device):
    values = np.array([2**40 + 5, -(2**40) - 7, 2**31, -(2**31) - 1, 2**63 - 1], dtype=np.int64)
    out = on(device, values).to(oneflite.int32).cpu().numpy()
    np.testing.assert_array_equal(out, values.astype(np.int32))


@pytest.mark.parametrize("source", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("target", [oneflite.int32, oneflite.int64], ids=dtype_id)
def test_cast_float_to_int_truncates_toward_zero_saturates_and_maps_nan_to_zero(
    source, target, device
):
    info = np.iinfo(NUMPY_DTYPE[target])
    values = [2.75, -2.75, 0.5, -0.5, 0.0, -0.0, 1e20, -1e20, np.inf, -np.inf, np.nan, 100.0]
    expected = [2, -2, 0, 0, 0, 0, info.max, info.min, info.max, info.min, 0, 100]
    t = oneflite.tensor(np.array(values), dtype=source, device=device)
    assert t.to(target).tolist() == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (2147483647.0, 2147483647),
        (2147483647.5, 2147483647),
        (2147483648.0, 2147483647),
        (-2147483648.0, -2147483648),
        (-2147483648.75, -2147483648),
        (-2147483649.0, -2147483648),
    ],
)
def test_cast_float64_to_int32_saturates_exactly_at_the_limits(value, expected, device):
    assert on(device, np.array([value])).to(oneflite.int32).tolist() == [expected]


def test_cast_float64_to_int64_saturates_at_two_to_the_63(device):
    values = np.array([2.0**63, -(2.0**63), 2.0**62, -(2.0**62) - 2.0**40])
    out = on(device, values).to(oneflite.int64).tolist()
    assert out == [2**63 - 1, -(2**63), 2**62, -(2**62) - 2**40]


@pytest.mark.parametrize("source", [*FLOAT_DTYPES, oneflite.int32, oneflite.int64], ids=dtype_id)
def test_cast_to_bool_is_nonzero(source, device):
    values = [0.0, -0.0, 1.0, -3.0, 0.5, np.nan, np.inf]
    if not source.is_floating_point:
        values = [0, 0, 1, -3, 7, 2, -1]
    array = np.array(values).astype(NUMPY_DTYPE[source])
    out = on(device, array).to(oneflite.bool).cpu().numpy()
    np.testing.assert_array_equal(out, array != 0)


def _float16_bits(values: np.ndarray) -> list[int]:
    return values.astype(np.float16).view(np.uint16).tolist()


def _bfloat16_bits(values: np.ndarray) -> list[int]:
    return values.astype(ml_dtypes.bfloat16).view(np.uint16).tolist()


# float32 values on both sides of, and exactly at, ties between neighbouring 16-bit values.
FLOAT32_ROUNDING_CASES = np.array(
    [
        1.0,
        1 + 2.0**-11,  # float16 tie: to even (1.0)
        1 + 3 * 2.0**-11,  # float16 tie: to even (1 + 2^-9)
        1 + 2.0**-11 + 2.0**-20,  # just above the float16 tie: up
        1 + 2.0**-8,  # bfloat16 tie: to even (1.0)
        1 + 3 * 2.0**-8,  # bfloat16 tie: to even
        1 + 2.0**-8 + 2.0**-20,  # just above the bfloat16 tie: up
        65504.0,
        65519.0,  # rounds down to float16's max
        65520.0,  # float16 overflow to inf
        2.0**-24,  # smallest float16 subnormal
        2.0**-25,  # tie with zero: to even (0)
        3 * 2.0**-25,  # subnormal tie: to even
        1e-8,
        -1.0 / 3.0,
        3.3895313892515355e38,  # bfloat16's max
        3.4e38,  # past bfloat16's max: inf
        np.inf,
        -np.inf,
        -0.0,
    ],
    dtype=np.float32,
)


def test_cast_float32_to_float16_rounds_to_nearest_even_bit_exactly(device):
    with np.errstate(over="ignore"):
        expected = _float16_bits(FLOAT32_ROUNDING_CASES)
    out = on(device, FLOAT32_ROUNDING_CASES).to(oneflite.float16)
    assert out.cpu().numpy().view(np.uint16).tolist() == expected


def test_cast_float32_to_bfloat16_rounds_to_nearest_even_bit_exactly(device):
    expected = _bfloat16_bits(FLOAT32_ROUNDING_CASES)
    out = on(device, FLOAT32_ROUNDING_CASES).to(oneflite.bfloat16)
    assert out.cpu().numpy().view(np.uint16).tolist() == expected


def test_cast_of_nan_to_16_bits_stays_nan(device):
    nans = np.array([np.nan, -np.nan], dtype=np.float32)
    for dtype in (oneflite.float16, oneflite.bfloat16):
        assert np.all(np.isnan(to_float64(on(device, nans).to(dtype))))


def test_cast_float64_to_float16_rounds_once_to_nearest_even(device):
    # These lie just off a float16 tie by less than float32 can hold: rounding through float32
    # first lands on the tie and then rounds the wrong way.
    values = np.array([1 + 2.0**-11 + 2.0**-40, 1 + 3 * 2.0**-11 - 2.0**-40, 2.0**-25 + 2.0**-50])
    out = on(device, values).to(oneflite.float16)
    assert out.cpu().numpy().view(np.uint16).tolist() == _float16_bits(values)


def test_cast_float64_to_bfloat16_rounds_once_to_nearest_even(device):
    # 1 + 2^-8 + 2^-40 is nearer 1 + 2^-7 (0x3f81) than 1.0 (0x3f80); through float32 it
    # becomes the tie 1 + 2^-8 and rounds to even, 1.0. Likewise below 1 + 3 * 2^-8.
    values = np.array([1 + 2.0**-8 + 2.0**-40, 1 + 3 * 2.0**-8 - 2.0**-40])
    out = on(device, values).to(oneflite.bfloat16)
    assert out.cpu().numpy().view(np.uint16).tolist() == [0x3F81, 0x3F81]


def test_cast_int64_to_bfloat16_rounds_once_to_nearest_even(device):
    # 2^24 + 2^16 + 1 is nearer 2^24 + 2^17 than 2^24; through float32 it becomes the tie
    # 2^24 + 2^16 and rounds to even, 2^24.
    values = np.array([2**24 + 2**16 + 1, -(2**24) - 2**16 - 1], dtype=np.int64)
    out = to_float64(on(device, values).to(oneflite.bfloat16))
    assert out.tolist() == [2.0**24 + 2.0**17, -(2.0**24) - 2.0**17]


@pytest.mark.parametrize("dtype", [oneflite.float16, oneflite.bfloat16], ids=dtype_id)
def test_16_bit_values_widen_exactly(dtype, device):
    bits = np.arange(0, 2**16, dtype=np.uint16)
    array = bits.view(NUMPY_DTYPE[dtype])
    for target in (oneflite.float32, oneflite.float64):
        out = on(device, array).to(target).cpu().numpy()
        with np.errstate(invalid="ignore"):  # ml_dtypes warns when it widens NaNs
            expected = array.astype(NUMPY_DTYPE[target])
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [oneflite.float16, oneflite.bfloat16], ids=dtype_id)
def test_every_16_bit_value_survives_a_round_trip_through_float32(dtype, device):
    bits = np.arange(0, 2**16, dtype=np.uint16)
    array = bits.view(NUMPY_DTYPE[dtype])
    back = on(device, array).to(oneflite.float32).to(dtype).cpu().numpy().view(np.uint16)
    with np.errstate(invalid="ignore"):  # ml_dtypes warns when it widens NaNs
        widened = array.astype(np.float32)
        back_widened = back.view(NUMPY_DTYPE[dtype]).astype(np.float32)
    nan = np.isnan(widened)
    np.testing.assert_array_equal(back[~nan], bits[~nan])
    assert np.all(np.isnan(back_widened[nan]))


# ---- .to(): identity and copies ------------------------------------------------------------


def test_to_returns_self_when_nothing_changes():
    t = oneflite.tensor([1.0, 2.0])
    assert t.to(oneflite.float32) is t
    assert t.to("cpu") is t
    assert t.to(oneflite.device("cpu")) is t
    assert t.to("cpu", oneflite.float32) is t
    assert t.to(t) is t
    assert t.to() is t


def test_to_without_change_shares_memory():
    t = oneflite.tensor([1.0, 2.0])
    for same in (t.to(oneflite.float32), t.to("cpu"), t.to(dtype=oneflite.float32), t.to()):
        assert same.data_ptr() == t.data_ptr()


def test_to_with_copy_true_returns_a_distinct_copy():
    t = oneflite.tensor([1.0, 2.0])
    c = t.to(oneflite.float32, copy=True)
    assert c is not t
    assert c.data_ptr() != t.data_ptr()
    assert c.dtype == t.dtype and c.tolist() == [1.0, 2.0]
    c.numpy()[0] = 7.0
    assert t.tolist() == [1.0, 2.0]
    assert t.to(copy=True).data_ptr() != t.data_ptr()


def test_to_accepts_dtype_device_and_tensor_arguments():
    t = oneflite.tensor([1.5, -2.5])
    assert t.to(oneflite.float64).dtype == oneflite.float64
    assert t.to(dtype=oneflite.int32).tolist() == [1, -2]
    assert t.to("cpu", oneflite.float16).dtype == oneflite.float16
    assert t.to(device="cpu", dtype=oneflite.bfloat16).dtype == oneflite.bfloat16
    assert t.to(oneflite.tensor([1], dtype=oneflite.int64)).dtype == oneflite.int64


@pytest.mark.parametrize("bad", [3, 1.5, None, [oneflite.float32]], ids=repr)
def test_to_with_an_argument_of_wrong_type_raises_type_error(bad):
    with pytest.raises(TypeError):
        oneflite.tensor([1.0]).to(bad)


def test_to_with_dtype_keyword_of_wrong_type_raises_type_error():
    with pytest.raises(TypeError, match="dtype"):
        oneflite.tensor([1.0]).to(dtype="float64")


def test_dtype_shortcut_methods():
    t = oneflite.tensor([1, 2])
    assert t.float().dtype == oneflite.float32
    assert t.double().dtype == oneflite.float64
    assert t.half().dtype == oneflite.float16
    assert t.bfloat16().dtype == oneflite.bfloat16
    assert t.half().tolist() == [1.0, 2.0]


def test_cast_of_a_strided_view_casts_the_view():
    base = np.arange(20.0).reshape(4, 5) + 0.5
    t = oneflite.from_numpy(base).transpose(0, 1)[1:, ::2]
    out = t.to(oneflite.int64)
    assert out.is_contiguous()
    np.testing.assert_array_equal(out.numpy(), base.T[1:, ::2].astype(np.int64))


def test_cast_of_an_empty_tensor_is_empty():
    e = oneflite.tensor(np.zeros((0, 4)))
    for dtype in ALL_DTYPES:
        out = e.to(dtype)
        assert out.shape == (0, 4) and out.dtype == dtype


# ---- devices: copies -----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_every_dtype_round_trips_through_each_device(device, dtype):
    array = sample_array(dtype, (5, 7))
    t = oneflite.tensor(array, device=device)
    assert t.device == oneflite.device(device)
    assert t.is_cuda == (device == "cuda")
    back = t.cpu()
    assert back.device == oneflite.device("cpu")
    np.testing.assert_array_equal(back.numpy(), array)
    assert t.to(device).data_ptr() == t.data_ptr()


def test_cuda_tensor_methods_and_interop():
    if not oneflite.cuda.is_available():
        pytest.skip("no CUDA GPU")
    t = oneflite.tensor([[1.0, 2.0], [3.0, 4.0]]).cuda()
    assert t.is_cuda and t.device == oneflite.device("cuda:0")
    assert "device='cuda:0'" in repr(t)
    assert "dtype=oneflite.float32" in repr(t)
    assert t.__dlpack_device__() == (2, 0)
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert t[1, 0].item() == 3.0
    with pytest.raises(TypeError, match="cpu"):
        t.numpy()
    on_gpu_again = t.cuda(0)
    assert on_gpu_again.data_ptr() == t.data_ptr()
    transposed = t.transpose(0, 1).contiguous().cpu()
    assert transposed.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert t.to("cpu", oneflite.float64).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    oneflite.cuda.synchronize()
    assert oneflite.cuda.device_count() >= 1
    assert oneflite.cuda.is_compiled()


def test_cuda_casts_match_cpu_casts():
    if not oneflite.cuda.is_available():
        pytest.skip("no CUDA GPU")
    rng = np.random.default_rng(5)
    special = [np.nan, np.inf, -np.inf, 0.5, -0.5, 1e10, -1e10, 3e9, -3e9, 1e20, -1e20, 0.0]
    values = np.concatenate([rng.standard_normal(1000) * 1e3, special])
    mismatches = []
    for source, target in itertools.product(ALL_DTYPES, ALL_DTYPES):
        cpu = oneflite.tensor(values, dtype=source)
        gpu = to_float64(cpu.cuda().to(target))
        expected = to_float64(cpu.to(target))
        differ = ~((gpu == expected) | (np.isnan(gpu) & np.isnan(expected)))
        if np.any(differ):
            source_values = to_float64(cpu)[differ][:3].tolist()
            mismatches.append(
                f"{source.name}->{target.name}: {source_values} gives {gpu[differ][:3].tolist()}"
                f" on cuda, {expected[differ][:3].tolist()} on cpu"
            )
    assert not mismatches, "\n".join(mismatches)


# ---- views ---------------------------------------------------------------------------------


def test_contiguous_of_a_contiguous_tensor_is_that_tensor():
    t = oneflite.tensor(np.arange(6.0).reshape(2, 3))
    c = t.contiguous()
    assert c.data_ptr() == t.data_ptr()
    assert c is t


def test_contiguous_of_a_strided_tensor_is_a_contiguous_copy(device):
    t = make_tensor(np.arange(12.0).reshape(3, 4), oneflite.float64, device)
    view = t.transpose(0, 1)
    assert not view.is_contiguous()
    c = view.contiguous()
    assert c.is_contiguous()
    assert c.stride() == (3, 1)
    assert c.data_ptr() != t.data_ptr()
    np.testing.assert_array_equal(to_float64(c), np.arange(12.0).reshape(3, 4).T)


def _misaligned(values: np.ndarray) -> np.ndarray:
    """``values`` in a C-contiguous array whose data starts one byte past an aligned address."""
    buffer = np.zeros(values.nbytes + 64, dtype=np.uint8)
    start = (-buffer.ctypes.data) % 64 + 1
    array = buffer[start : start + values.nbytes].view(values.dtype).reshape(values.shape)
    array[...] = values
    return array


@pytest.mark.parametrize("np_dtype", [np.float16, np.float32, np.float64, np.int32, np.int64])
def test_contiguous_of_a_misaligned_view_is_an_aligned_copy_and_ops_read_it(np_dtype):
    # Primitives load whole elements, so they get aligned memory: contiguous() copies a view of
    # an unaligned buffer, and softmax and the dtype= cast see the copy.
    values = (np.arange(24.0).reshape(4, 6) - 11) / 3
    array = _misaligned(values.astype(np_dtype))
    t = oneflite.from_numpy(array)
    itemsize = array.itemsize
    assert t.is_contiguous() and t.data_ptr() % itemsize != 0
    c = t.contiguous()
    assert c.data_ptr() % itemsize == 0 and c.data_ptr() != t.data_ptr()
    np.testing.assert_array_equal(c.numpy(), array)
    x64 = array.astype(np.float64)
    y = oneflite.nn.functional.softmax(t, 1, dtype=oneflite.float64)
    np.testing.assert_allclose(y.numpy(), softmax_ref(x64, 1), rtol=1e-12, atol=0)
    if array.dtype.kind == "f":
        for dim in (0, 1):
            y = oneflite.nn.functional.log_softmax(t, dim)
            np.testing.assert_allclose(
                y.numpy().astype(np.float64), log_softmax_ref(x64, dim),
                rtol=1e-2 if np_dtype == np.float16 else 1e-5, atol=1e-2,
            )
        scalar = oneflite.from_numpy(_misaligned(np.array(2.5, dtype=np_dtype)))
        assert oneflite.nn.functional.softmax(scalar).item() == 1.0
    np.testing.assert_array_equal(array, values.astype(np_dtype))  # the input is untouched


@pytest.mark.parametrize(("a", "b"), [(0, 1), (1, 0), (-1, 0), (0, -1), (-2, -1), (1, 1)])
def test_transpose_is_a_view_with_swapped_strides(a, b):
    array = np.arange(24.0).reshape(4, 6)
    t = oneflite.tensor(array)
    v = t.transpose(a, b)
    assert v.data_ptr() == t.data_ptr()
    expected = np.swapaxes(array, a, b)
    assert v.shape == expected.shape
    assert v.stride() == tuple(s // 8 for s in expected.strides)
    np.testing.assert_array_equal(v.numpy(), expected)
    assert v.is_contiguous() == (a % 2 == b % 2)


def test_transpose_of_3d_tensor_and_its_keywords():
    array = np.arange(60.0).reshape(3, 4, 5)
    t = oneflite.tensor(array)
    v = t.transpose(dim0=0, dim1=2)
    np.testing.assert_array_equal(v.numpy(), np.swapaxes(array, 0, 2))
    assert v.stride() == (1, 5, 20)


@pytest.mark.parametrize(
    "perm", [(0, 1, 2), (2, 0, 1), (1, 2, 0), (2, 1, 0), (-1, 0, 1), (0, -1, -2)], ids=str
)
def test_permute_is_a_view_with_reordered_strides(perm):
    array = np.arange(60.0).reshape(3, 4, 5)
    t = oneflite.tensor(array)
    for v in (t.permute(*perm), t.permute(perm), t.permute(list(perm))):
        expected = np.transpose(array, [p % 3 for p in perm])
        assert v.data_ptr() == t.data_ptr()
        assert v.shape == expected.shape
        assert v.stride() == tuple(s // 8 for s in expected.strides)
        np.testing.assert_array_equal(v.numpy(), expected)


@pytest.mark.parametrize(("a", "b"), [(0, 2), (-3, 0), (5, 1), (0, -3)])
def test_transpose_with_a_dim_out_of_range_raises_index_error(a, b):
    t = oneflite.tensor(np.zeros((2, 3)))
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.transpose(a, b)


@pytest.mark.parametrize("perm", [(0, 0, 1), (0, 1), (0, 1, 2, 3), (0, 1, 3)], ids=str)
def test_permute_with_bad_dims_raises(perm):
    t = oneflite.tensor(np.zeros((2, 3, 4)))
    with pytest.raises((IndexError, ValueError)):
        t.permute(*perm)


def test_transpose_of_a_0d_tensor_is_itself():
    # Like softmax's dim, a 0-d tensor takes dims -1 and 0.
    t = oneflite.tensor(3.0)
    for a, b in ((0, 0), (0, -1), (-1, -1)):
        v = t.transpose(a, b)
        assert v.shape == ()
        assert v.item() == 3.0
    assert t.permute().shape == ()


# ---- __getitem__ ---------------------------------------------------------------------------

ARRAY_3D = np.arange(4 * 5 * 6, dtype=np.float64).reshape(4, 5, 6)

INDICES = [
    0,
    -1,
    3,
    (1, 2),
    (-1, -2, -3),
    (1, 2, 3),
    slice(None),
    slice(1, None),
    slice(None, None, 2),
    slice(1, 4, 2),
    slice(-3, -1),
    slice(2, 100),
    slice(10, 20),
    slice(3, 1),
    (slice(None), 2),
    (slice(None), slice(1, None, 3), 4),
    (Ellipsis, 1),
    (1, Ellipsis),
    (Ellipsis, slice(None, None, 4)),
    (0, Ellipsis, 0),
    Ellipsis,
    None,
    (None, 1),
    (slice(None), None, 2),
    (1, None, Ellipsis, None),
    (slice(1, None), slice(None, None, 2), slice(3, None)),
    (np.int64(2), np.int32(-1)),
    (),
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_basic_indexing_matches_numpy_as_a_view(index):
    base = oneflite.tensor(ARRAY_3D)
    view = base[index]
    expected = ARRAY_3D[index]
    if not isinstance(expected, np.ndarray):  # an element: take it as a 0-d view instead
        expected = ARRAY_3D[(*index, Ellipsis)]
    assert view.shape == expected.shape
    np.testing.assert_array_equal(view.numpy(), expected)
    if expected.size:
        assert view.data_ptr() == base.data_ptr() + (expected.ctypes.data - ARRAY_3D.ctypes.data)
        assert view.storage_offset() == (expected.ctypes.data - ARRAY_3D.ctypes.data) // 8
        dims = [d for d in range(expected.ndim) if expected.shape[d] > 1]
        assert [view.stride(d) for d in dims] == [expected.strides[d] // 8 for d in dims]


def test_indexing_a_view_composes_offsets():
    base = oneflite.tensor(ARRAY_3D)
    view = base[1:][:, 2:][..., 3]
    assert view.storage_offset() == 30 + 12 + 3
    np.testing.assert_array_equal(view.numpy(), ARRAY_3D[1:][:, 2:][..., 3])
    writable = view.numpy()
    writable[0, 0] = -1.0
    assert base.numpy()[1, 2, 3] == -1.0


@pytest.mark.parametrize("index", [4, -5, (0, 5), (0, 0, 6), (0, -6), (0, 0, -7)], ids=repr)
def test_index_out_of_range_raises_index_error(index):
    with pytest.raises(IndexError, match="out of bounds"):
        oneflite.tensor(ARRAY_3D)[index]


def test_too_many_indices_or_ellipses_raise_index_error():
    t = oneflite.tensor(ARRAY_3D)
    with pytest.raises(IndexError):
        t[0, 0, 0, 0]
    with pytest.raises(IndexError):
        t[..., 0, ...]
    with pytest.raises(IndexError):
        oneflite.tensor(1.0)[0]


@pytest.mark.parametrize("index", [slice(None, None, -1), slice(None, None, 0)], ids=repr)
def test_non_positive_slice_steps_raise_value_error(index):
    with pytest.raises(ValueError, match="step"):
        oneflite.tensor(ARRAY_3D)[index]


@pytest.mark.parametrize("index", [1.0, True, "a", [0, 1]], ids=repr)
def test_unsupported_index_types_raise_type_error(index):
    with pytest.raises(TypeError):
        oneflite.tensor(ARRAY_3D)[index]


# ---- repr ----------------------------------------------------------------------------------


def test_repr_shows_values_and_dtype():
    assert repr(oneflite.tensor([[1.0, 2.0], [3.0, 4.0]])) == (
        "tensor([[1., 2.],\n        [3., 4.]], dtype=oneflite.float32)"
    )
    assert repr(oneflite.tensor([1, 2])) == "tensor([1, 2], dtype=oneflite.int64)"
    assert repr(oneflite.tensor(True)) == "tensor(True, dtype=oneflite.bool)"
    assert repr(oneflite.tensor([0.5], dtype=oneflite.bfloat16)) == (
        "tensor([0.5], dtype=oneflite.bfloat16)"
    )
    assert repr(oneflite.tensor(np.zeros((2, 0)))) == "tensor([], dtype=oneflite.float64)"
    assert "device" not in repr(oneflite.tensor([1.0]))


def test_repr_of_a_view_shows_the_view():
    t = oneflite.tensor(np.arange(6).reshape(2, 3))
    assert repr(t.transpose(0, 1)[1:]) == (
        "tensor([[1, 4],\n        [2, 5]], dtype=oneflite.int64)"
    )


def test_repr_shows_the_device_for_cuda(device):
    t = oneflite.tensor([1.5], device=device)
    if device == "cuda":
        assert repr(t) == "tensor([1.5], device='cuda:0', dtype=oneflite.float32)"
    else:
        assert repr(t) == "tensor([1.5], dtype=oneflite.float32)"


# ---- metadata ------------------------------------------------------------------------------


def test_shape_stride_size_ndim_numel_and_element_size():
    t = oneflite.tensor(np.zeros((2, 3, 4), dtype=np.int32))
    assert t.shape == (2, 3, 4)
    assert isinstance(t.shape, tuple)
    assert t.size() == (2, 3, 4)
    assert [t.size(d) for d in (0, 1, 2, -1, -3)] == [2, 3, 4, 4, 2]
    assert t.stride() == (12, 4, 1)
    assert [t.stride(d) for d in (0, 1, 2, -1)] == [12, 4, 1, 1]
    assert t.ndim == 3 and t.dim() == 3
    assert t.numel() == 24
    assert t.element_size() == 4
    assert len(t) == 2
    assert t.storage_offset() == 0
    assert t.is_contiguous()
    assert not t.is_cuda


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_element_size_is_the_dtype_itemsize(dtype):
    t = oneflite.tensor([1], dtype=dtype)
    assert t.element_size() == dtype.itemsize == NUMPY_DTYPE[dtype].itemsize


def test_size_and_stride_with_a_dim_out_of_range_raise_index_error():
    t = oneflite.tensor(np.zeros((2, 3)))
    for d in (2, -3):
        with pytest.raises(IndexError, match="Dimension out of range"):
            t.size(d)
        with pytest.raises(IndexError, match="Dimension out of range"):
            t.stride(d)


def test_size_and_stride_of_a_0d_tensor_with_a_dim_raise_a_clear_index_error():
    t = oneflite.tensor(1.0)
    with pytest.raises(IndexError, match=r"[Dd]imension"):
        t.size(0)
    with pytest.raises(IndexError, match=r"[Dd]imension"):
        t.stride(-1)


def test_0d_tensor_metadata():
    t = oneflite.tensor(2.5)
    assert t.shape == () and t.stride() == () and t.size() == ()
    assert t.ndim == 0 and t.dim() == 0 and t.numel() == 1
    with pytest.raises(TypeError, match="0-d"):
        len(t)


def test_empty_tensor_metadata():
    t = oneflite.tensor(np.zeros((2, 0, 3)))
    assert t.shape == (2, 0, 3) and t.numel() == 0 and len(t) == 2
    assert t.is_contiguous()
    assert t.tolist() == [[], []]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
def test_tolist_matches_numpy(dtype):
    array = exact_values(dtype).reshape(-1, 1)[:4].reshape(2, 2)
    t = oneflite.tensor(array)
    expected = array.astype(np.float64).tolist() if dtype.is_floating_point else array.tolist()
    assert t.tolist() == expected
    assert type(t.tolist()[0][0]) is type(expected[0][0])


@pytest.mark.parametrize(
    ("data", "dtype", "value", "type_"),
    [
        (2.5, oneflite.float32, 2.5, float),
        ([[7]], oneflite.int64, 7, int),
        ([True], oneflite.bool, True, bool),
        ([[[0.25]]], oneflite.bfloat16, 0.25, float),
        (-3, oneflite.int32, -3, int),
        (1.5, oneflite.float16, 1.5, float),
    ],
)
def test_item_returns_a_python_number(data, dtype, value, type_):
    v = oneflite.tensor(data, dtype=dtype).item()
    assert v == value and type(v) is type_


def test_item_of_several_or_no_elements_raises_value_error():
    with pytest.raises(ValueError, match="one element"):
        oneflite.tensor([1.0, 2.0]).item()
    with pytest.raises(ValueError, match="one element"):
        oneflite.tensor([]).item()


def test_item_of_a_view():
    t = oneflite.tensor(np.arange(12.0).reshape(3, 4))
    assert t[2, 1].item() == 9.0
    assert t.transpose(0, 1)[3, 2].item() == 11.0
