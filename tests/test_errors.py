"""Every misuse raises the Python exception the architecture promises, never a crash."""

from __future__ import annotations

import importlib.util
import re
import textwrap

import numpy as np
import pytest
from conftest import make_tensor, run_python

import oneflite
import oneflite.nn.functional as F

FUNCTIONS = [
    pytest.param(F.softmax, id="softmax"),
    pytest.param(F.log_softmax, id="log_softmax"),
]


@pytest.fixture(params=FUNCTIONS)
def fn(request: pytest.FixtureRequest):
    return request.param


def out_of_range(n: int, d: int) -> str:
    return re.escape(
        f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})"
    )


# ---- input dtype ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype", [oneflite.int32, oneflite.int64, oneflite.bool], ids=lambda d: d.name
)
def test_integer_or_bool_input_without_dtype_raises_type_error_naming_the_dtype(fn, device, dtype):
    x = make_tensor(np.array([[1.0, 0.0, 1.0]]), dtype, device)
    with pytest.raises(TypeError, match=rf"\b{dtype.name}\b"):
        fn(x, 1)
    with pytest.raises(TypeError, match=rf"\b{dtype.name}\b"):
        fn(x)


@pytest.mark.parametrize(
    "dtype", [oneflite.int32, oneflite.int64, oneflite.bool], ids=lambda d: d.name
)
def test_dtype_argument_of_integer_type_raises_type_error(fn, device, dtype):
    x = make_tensor(np.array([[1.0, 2.0]]), oneflite.float32, device)
    with pytest.raises(TypeError, match=rf"\b{dtype.name}\b"):
        fn(x, 1, dtype=dtype)


# ---- dim -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "dim"),
    [
        ((3,), 1),
        ((3,), -2),
        ((2, 3), 2),
        ((2, 3), -3),
        ((2, 3, 4), 3),
        ((2, 3, 4), -4),
        ((2, 3, 4, 5), 100),
        ((2, 3, 4, 5), -5),
        ((0, 3), 2),
    ],
)
def test_dim_out_of_range_raises_index_error_with_pytorch_message(fn, device, shape, dim):
    x = make_tensor(np.zeros(shape), oneflite.float32, device)
    n = len(shape)
    with pytest.raises(IndexError, match=f"^{out_of_range(n, dim)}$"):
        fn(x, dim)


@pytest.mark.parametrize("dim", [1, -2, 5])
def test_dim_out_of_range_for_0d_uses_range_minus_1_to_0(fn, device, dim):
    x = make_tensor(np.float64(1.0), oneflite.float32, device)
    with pytest.raises(IndexError, match=f"^{out_of_range(1, dim)}$"):
        fn(x, dim)


def test_dim_out_of_range_is_checked_after_dtype_cast(fn, device):
    x = make_tensor(np.array([[1.0, 2.0]]), oneflite.int64, device)
    with pytest.raises(IndexError, match=f"^{out_of_range(2, 2)}$"):
        fn(x, 2, dtype=oneflite.float32)


@pytest.mark.parametrize("dim", [1.0, 0.5, "1", "x", True, False, [1], (0,), 1j], ids=repr)
def test_non_integer_dim_raises_type_error(fn, device, dim):
    x = make_tensor(np.array([[1.0, 2.0]]), oneflite.float32, device)
    with pytest.raises(TypeError, match="dim"):
        fn(x, dim)


def test_integer_like_dim_is_accepted(fn, device):
    x = make_tensor(np.array([[1.0, 2.0], [3.0, 5.0]]), oneflite.float64, device)
    for dim in (np.int64(0), np.int32(-1)):
        plain = fn(x, int(dim))
        assert fn(x, dim).tolist() == plain.tolist()


def test_module_with_bad_dim_raises_on_call(device):
    x = make_tensor(np.array([[1.0, 2.0]]), oneflite.float32, device)
    with pytest.raises(IndexError, match=out_of_range(2, 2)):
        oneflite.nn.Softmax(2)(x)
    with pytest.raises(TypeError, match="dim"):
        oneflite.nn.LogSoftmax("0")(x)


# ---- input and dtype= types ----------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [[1.0, 2.0], (1.0, 2.0), np.array([1.0, 2.0]), None, 1.0, "x"],
    ids=["list", "tuple", "ndarray", "None", "float", "str"],
)
def test_non_tensor_input_raises_type_error(fn, value):
    with pytest.raises(TypeError, match="Tensor"):
        fn(value, 0)


@pytest.mark.parametrize(
    "dtype",
    ["float32", np.float32, np.dtype("float32"), float, 1, oneflite.device("cpu")],
    ids=["str", "np-type", "np-dtype", "py-float", "int", "device"],
)
def test_dtype_argument_of_wrong_type_raises_type_error(fn, device, dtype):
    x = make_tensor(np.array([1.0, 2.0]), oneflite.float32, device)
    with pytest.raises(TypeError, match="dtype"):
        fn(x, 0, dtype=dtype)


def test_tensor_methods_check_their_arguments():
    x = oneflite.tensor([[1.0, 2.0]])
    with pytest.raises(TypeError, match="dim"):
        x.softmax(1.5)
    with pytest.raises(IndexError, match=out_of_range(2, -3)):
        x.log_softmax(-3)
    with pytest.raises(TypeError, match="dtype"):
        x.softmax(0, dtype="float64")


# ---- no primitive --------------------------------------------------------------------------


@pytest.mark.usefixtures("unforce_softmax_primitives")
@pytest.mark.parametrize("kind", ["softmax", "log_softmax"])
def test_missing_primitive_raises_not_implemented_naming_op_device_and_dtype(
    device, float_dtype, kind
):
    x = make_tensor(np.array([[1.0, 2.0]]), float_dtype, device)
    fn = getattr(F, kind)
    oneflite._C._force_primitive(kind, "no_such_backend")
    with pytest.raises(NotImplementedError) as info:
        fn(x, 1)
    message = str(info.value)
    assert re.search(rf"'{kind}'", message), message
    assert f"'{x.device.type}'" in message, message
    assert re.search(rf"\b{float_dtype.name}\b", message), message


@pytest.mark.usefixtures("unforce_softmax_primitives")
def test_forcing_a_missing_softmax_backend_leaves_log_softmax_working(device):
    x = make_tensor(np.array([[1.0, 2.0]]), oneflite.float32, device)
    oneflite._C._force_primitive("softmax", "no_such_backend")
    with pytest.raises(NotImplementedError):
        F.softmax(x, 1)
    y = F.log_softmax(x, 1).cpu().numpy()
    np.testing.assert_allclose(y, [[-1.3132616, -0.3132616]], rtol=1e-6)


@pytest.mark.usefixtures("unforce_softmax_primitives")
def test_undoing_a_forced_backend_restores_softmax(device):
    x = make_tensor(np.array([[0.0, 0.0]]), oneflite.float32, device)
    F.softmax(x, 1)  # fill the kernel cache first
    oneflite._C._force_primitive("softmax", "no_such_backend")
    with pytest.raises(NotImplementedError):
        F.softmax(x, 1)
    oneflite._C._force_primitive("softmax", None)
    assert F.softmax(x, 1).cpu().numpy().tolist() == [[0.5, 0.5]]


@pytest.mark.usefixtures("unforce_softmax_primitives")
def test_missing_primitive_raises_for_empty_tensors_too(device):
    # An empty input launches nothing, but the op still needs a kernel that can serve it.
    x = make_tensor(np.zeros((0, 3)), oneflite.float32, device)
    oneflite._C._force_primitive("softmax", "no_such_backend")
    with pytest.raises(NotImplementedError):
        F.softmax(x, 1)


# ---- devices -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec", ["gpu", "CPU", "cuda:", "cuda:x", "cuda:-1", "cpu:1", "", "cuda0", "tpu:0", "cuda:1:2"]
)
def test_unknown_device_string_raises_value_error(spec):
    with pytest.raises(ValueError):
        oneflite.device(spec)
    with pytest.raises(ValueError):
        oneflite.tensor([1.0], device=spec)


def test_device_of_wrong_type_raises_type_error():
    with pytest.raises(TypeError):
        oneflite.tensor([1.0], device=0)
    with pytest.raises(TypeError):
        oneflite.tensor([1.0]).to(3.5)


@pytest.mark.skipif(oneflite.cuda.is_available(), reason="CUDA is available")
@pytest.mark.parametrize("spec", ["cuda", "cuda:0", "cuda:3"])
def test_cuda_without_a_gpu_raises_runtime_error(spec):
    x = oneflite.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="cuda"):
        oneflite.tensor([1.0], device=spec)
    with pytest.raises(RuntimeError, match="cuda"):
        x.to(spec)
    with pytest.raises(RuntimeError, match="cuda"):
        x.cuda()
    assert oneflite.cuda.device_count() == 0
    assert not oneflite.cuda.is_available()
    for query in (oneflite.cuda.memory_allocated, oneflite.cuda.memory_cached,
                  oneflite.cuda.empty_cache):
        with pytest.raises(RuntimeError, match="cuda"):
            query(spec)


@pytest.mark.parametrize(
    "query", ["memory_allocated", "memory_cached", "empty_cache", "synchronize"]
)
def test_cuda_memory_queries_of_a_cpu_device_raise_value_error(query):
    with pytest.raises(ValueError, match="expected a CUDA device, got 'cpu'"):
        getattr(oneflite.cuda, query)("cpu")


@pytest.mark.skipif(not oneflite.cuda.is_available(), reason="no CUDA GPU")
def test_cuda_device_index_past_the_last_gpu_raises_runtime_error():
    spec = f"cuda:{oneflite.cuda.device_count()}"
    with pytest.raises(RuntimeError):
        oneflite.tensor([1.0], device=spec)


# ---- bad tensor() data ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        [[1.0, 2.0], [3.0]],
        [1.0, [2.0]],
        "abc",
        ["a", "b"],
        np.array([object(), 1], dtype=object),
        np.array([1, 2], dtype=np.uint64),
        np.array([1 + 2j]),
        np.array(["2020-01-01"], dtype="datetime64[D]"),
        {"a": 1},
        object(),
        [None],
        2**70,
    ],
    ids=[
        "ragged",
        "ragged-scalar",
        "str",
        "list-of-str",
        "object-array",
        "uint64",
        "complex",
        "datetime",
        "dict",
        "object",
        "none-list",
        "int-too-big",
    ],
)
def test_bad_tensor_data_raises_type_or_value_error(data):
    with pytest.raises((TypeError, ValueError)):
        oneflite.tensor(data)


def test_tensor_with_dtype_of_wrong_type_raises_type_error():
    with pytest.raises(TypeError, match="dtype"):
        oneflite.tensor([1.0], dtype="float32")
    with pytest.raises(TypeError, match="dtype"):
        oneflite.tensor([1.0], dtype=np.float32)


@pytest.mark.parametrize("value", [[1.0], None, 3, "x"], ids=["list", "None", "int", "str"])
def test_from_numpy_of_non_array_raises_type_error(value):
    with pytest.raises(TypeError):
        oneflite.from_numpy(value)


@pytest.mark.parametrize("value", [[1.0], None, 3, "x"], ids=["list", "None", "int", "str"])
def test_from_dlpack_of_non_producer_raises_type_error(value):
    with pytest.raises(TypeError):
        oneflite.from_dlpack(value)


# ---- nothing crashes -----------------------------------------------------------------------


def test_malformed_calls_do_not_crash_the_process(tmp_path):
    # Run in a child so that a crash shows as a failed test rather than a dead test run.
    script = textwrap.dedent(
        """
        import gc
        import numpy as np
        import oneflite
        import oneflite.nn.functional as F

        def expect_error(call):
            try:
                call()
            except Exception:
                return
            raise SystemExit(f"no error from {call}")

        x = oneflite.tensor([[1.0, 2.0], [3.0, 4.0]])
        capsule = x.__dlpack__()
        oneflite.from_dlpack(capsule)
        expect_error(lambda: oneflite.from_dlpack(capsule))
        expect_error(lambda: x._as_strided([3, 3], [1, 1], 0))
        expect_error(lambda: x._as_strided([1], [1], -1))
        expect_error(lambda: x._as_strided([2], [-1], 1))
        expect_error(lambda: x._as_strided([2, 2], [1], 0))
        expect_error(lambda: oneflite._C._empty([-1], oneflite.float32, "cpu"))
        expect_error(lambda: F.softmax(x, 2**62))
        expect_error(lambda: F.softmax(x, -(2**62)))
        expect_error(lambda: x.transpose(0, 7))
        expect_error(lambda: x.permute(0, 0))
        expect_error(lambda: x.permute(0, 1, 2))
        expect_error(lambda: x[0, 0, 0])
        expect_error(lambda: x[5])
        expect_error(lambda: x.size(9))
        expect_error(lambda: x.stride(-9))
        expect_error(lambda: len(x[0, 0]))
        expect_error(lambda: oneflite._C.functional.transpose(x, [0, 0]))
        expect_error(lambda: oneflite._C.functional.transpose(x, [0, 5]))
        expect_error(lambda: oneflite._C.functional.transpose(x, [0]))
        expect_error(lambda: oneflite.tensor([[1.0], [2.0, 3.0]]))
        a = np.arange(6.0).reshape(2, 3)
        t = oneflite.from_numpy(a)
        del a
        gc.collect()
        assert t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        for shape in [(0,), (0, 3), (3, 0), (2, 0, 3)]:
            e = oneflite.tensor(np.zeros(shape))
            for d in range(len(shape)):
                F.softmax(e, d)
                F.log_softmax(e, d)
            e.numpy()
            e.tolist()
            repr(e)
            np.from_dlpack(e)
        print("survived")
        """
    )
    result = run_python("-c", script, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "survived" in result.stdout


@pytest.mark.parametrize("first", ["numpy", "ml_dtypes", "torch"])
def test_errors_raised_after_other_cxx_extensions_were_imported_do_not_crash(first, tmp_path):
    # Exceptions thrown in oneflite's C++ core cross into _C; that must hold whatever C++
    # runtime other extension modules, imported first, have brought into the process.
    if importlib.util.find_spec(first) is None:
        pytest.skip(f"{first} is not installed")
    script = textwrap.dedent(
        f"""
        import {first}
        import numpy as np
        import oneflite

        x = oneflite.tensor(np.ones((2, 3)))
        for call, error in [
            (lambda: oneflite.softmax(x, 5), IndexError),
            (lambda: oneflite.softmax(oneflite.tensor([1, 2]), 0), TypeError),
            (lambda: oneflite.device("gpu"), ValueError),
            (lambda: x.permute(0, 0), ValueError),
        ]:
            try:
                call()
            except error:
                pass
        print("survived")
        """
    )
    result = run_python("-c", script, cwd=tmp_path)
    assert result.returncode == 0, f"exit status {result.returncode}\n{result.stderr}"
    assert "survived" in result.stdout
