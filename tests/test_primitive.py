"""oneflite.primitive: registering Python backends, forcing one with use(), listing them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import assert_close, make_tensor, run_cpp_check, run_python, to_float64
from reference import log_softmax_ref, softmax_ref

import oneflite
import oneflite.nn.functional as F

P = oneflite.primitive


def numpy_softmax(x: oneflite.Tensor, y: oneflite.Tensor) -> None:
    a = x.numpy().astype(np.float64)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    y.numpy()[...] = e / e.sum(axis=1, keepdims=True)


def numpy_log_softmax(x: oneflite.Tensor, y: oneflite.Tensor) -> None:
    a = x.numpy().astype(np.float64)
    shifted = a - a.max(axis=1, keepdims=True)
    y.numpy()[...] = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


@pytest.fixture
def registered():
    """Registers backends for the test and removes them (and any forcing) afterwards."""
    names: list[tuple[str, str]] = []
    before = {k: oneflite._C._forced_primitive(k) for k in ("softmax", "log_softmax")}

    def register(kind: str, fn, name: str, **kwargs) -> str:
        P.register(kind, fn, name=name, **kwargs)
        names.append((kind, name))
        return name

    try:
        yield register
    finally:
        for kind, value in before.items():
            oneflite._C._force_primitive(kind, value)
        for kind, name in names:
            if any(p["name"] == name for p in P.backends(kind)):
                P.unregister(kind, name)


def _backend_used(fn, *args) -> str:
    with oneflite.trace() as t:
        fn(*args)
    # The softmax kernels describe their launch as "backend 'name' rows=.. cols=..".
    primitive = [e.text for e in t.events if e.layer == "primitive" and "rows=" in e.text]
    assert len(primitive) == 1, primitive
    return primitive[0].split("'")[1]


@pytest.mark.parametrize(
    ("kind", "fn", "ref"),
    [("softmax", numpy_softmax, softmax_ref), ("log_softmax", numpy_log_softmax, log_softmax_ref)],
    ids=["softmax", "log_softmax"],
)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_python_backend_is_used_and_matches_the_reference(registered, kind, fn, ref, dim):
    registered(kind, fn, f"numpy_{kind}", dtypes=[oneflite.float32, oneflite.float64])
    values = np.random.default_rng(dim + 10).standard_normal((7, 13)) * 3
    for dtype in (oneflite.float32, oneflite.float64):
        x = make_tensor(values, dtype)
        op = getattr(F, kind)
        assert _backend_used(op, x, dim) == f"numpy_{kind}"
        assert_close(to_float64(op(x, dim)), ref(to_float64(x), dim), dtype, log=kind != "softmax")


def test_python_backend_serves_only_its_dtypes(registered):
    registered("softmax", numpy_softmax, "numpy32", dtypes=[oneflite.float32])
    x = oneflite.tensor([[1.0, 2.0]])
    assert _backend_used(F.softmax, x, 1) == "numpy32"
    assert _backend_used(F.softmax, x.to(oneflite.float64), 1) != "numpy32"


def test_higher_priority_wins_and_unregister_restores(registered):
    x = oneflite.tensor([[1.0, 2.0]])
    before = _backend_used(F.softmax, x, 1)
    registered("softmax", numpy_softmax, "low", priority=-5)
    assert _backend_used(F.softmax, x, 1) == before
    registered("softmax", numpy_softmax, "high")
    assert _backend_used(F.softmax, x, 1) == "high"
    assert next(p["name"] for p in P.backends("softmax")) == "high"
    P.unregister("softmax", "high")
    assert _backend_used(F.softmax, x, 1) == before


def test_use_forces_a_backend_and_restores_on_exit(registered):
    registered("softmax", numpy_softmax, "numpy_forced", priority=-100)
    x = oneflite.tensor([[1.0, 2.0]])
    with P.use("softmax", "numpy_forced"):
        assert _backend_used(F.softmax, x, 1) == "numpy_forced"
        with P.use("softmax", "reference"):
            assert _backend_used(F.softmax, x, 1) == "reference"
        assert _backend_used(F.softmax, x, 1) == "numpy_forced"
        with P.use("softmax", None):
            assert _backend_used(F.softmax, x, 1) != "numpy_forced"
    assert _backend_used(F.softmax, x, 1) != "numpy_forced"


def test_use_restores_when_the_block_raises(registered):
    before = oneflite._C._forced_primitive("softmax")
    with pytest.raises(KeyError):
        with P.use("softmax", "reference"):
            raise KeyError("x")
    assert oneflite._C._forced_primitive("softmax") == before


def test_use_of_an_unknown_backend_raises_value_error():
    with pytest.raises(ValueError, match="no_such_backend"):
        with P.use("softmax", "no_such_backend"):
            pass


def test_forced_python_backend_that_cannot_serve_a_dtype_raises_not_implemented(registered):
    registered("softmax", numpy_softmax, "numpy_f32_only", dtypes=[oneflite.float32])
    with P.use("softmax", "numpy_f32_only"):
        with pytest.raises(NotImplementedError, match="float64"):
            F.softmax(oneflite.tensor(np.array([[1.0, 2.0]])), 1)


def test_python_backend_handles_0d_and_empty_inputs(registered):
    registered("softmax", numpy_softmax, "numpy_edge")
    assert F.softmax(oneflite.tensor(5.0)).item() == 1.0
    assert F.softmax(oneflite.tensor(np.zeros((0, 3))), 1).shape == (0, 3)
    assert F.softmax(oneflite.tensor(np.zeros((3, 0))), 0).shape == (3, 0)


def test_exception_in_a_python_backend_propagates(registered):
    def failing(x, y):
        raise ZeroDivisionError("from the backend")

    registered("log_softmax", failing, "failing")
    with pytest.raises(ZeroDivisionError, match="from the backend") as info:
        F.log_softmax(oneflite.tensor([[1.0, 2.0]]), 1)
    # The same exception, with its traceback down into the backend.
    assert info.traceback[-1].name == "failing"
    P.unregister("log_softmax", "failing")
    result = F.log_softmax(oneflite.tensor([[0.0, 0.0]]), 1).tolist()[0]
    assert result == pytest.approx([-np.log(2), -np.log(2)])


def test_python_backend_returning_a_value_raises_type_error(registered):
    registered("softmax", lambda x, y: 0, "returns_value")
    with pytest.raises(TypeError, match="return None"):
        F.softmax(oneflite.tensor([[1.0, 2.0]]), 1)


def test_python_backend_keeping_its_tensors_raises_runtime_error(registered):
    kept = []
    registered("softmax", lambda x, y: kept.append(y), "keeps_y")
    with pytest.raises(RuntimeError, match="kept a reference"):
        F.softmax(oneflite.tensor([[1.0, 2.0]]), 1)
    kept.clear()


def test_python_backend_may_call_oneflite(registered):
    def via_float64(x, y):
        y.numpy()[...] = F.softmax(x.to(oneflite.float64), 1).to(oneflite.float32).numpy()

    registered("softmax", via_float64, "via_float64", dtypes=[oneflite.float32])
    values = np.array([[1.0, 2.0, 3.0]])
    assert_close(
        to_float64(F.softmax(make_tensor(values, oneflite.float32), 1)),
        softmax_ref(values, 1),
        oneflite.float32,
    )


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"kind": "gelu"}, ValueError),
        ({"kind": "permute"}, ValueError),
        ({"dtypes": ["float32"]}, TypeError),
        ({"dtypes": [oneflite.int32]}, ValueError),
        ({"dtypes": []}, ValueError),
        ({"name": "reference"}, ValueError),
        ({"fn": 3}, TypeError),
        ({"fn": lambda x: None}, TypeError),
        ({"fn": lambda x, y, z: None}, TypeError),
        ({"device": "tpu"}, ValueError),
    ],
    ids=[
        "gelu",
        "permute",
        "str-dtype",
        "int-dtype",
        "no-dtype",
        "duplicate",
        "not-callable",
        "one-arg",
        "three-args",
        "bad-device",
    ],
)
def test_register_rejects_bad_arguments(kwargs, error):
    arguments = {"kind": "softmax", "fn": numpy_softmax, "name": "rejected", **kwargs}
    kind, fn = arguments.pop("kind"), arguments.pop("fn")
    with pytest.raises(error):
        P.register(kind, fn, **arguments)
    assert "rejected" not in [p["name"] for p in P.backends()]


def test_register_as_a_decorator_returns_the_function(registered):
    @P.register("softmax", name="decorated")
    def decorated(x, y):
        numpy_softmax(x, y)

    try:
        assert callable(decorated)
        assert "decorated" in [p["name"] for p in P.backends("softmax")]
    finally:
        P.unregister("softmax", "decorated")


def test_unregister_of_an_unknown_backend_raises_value_error():
    with pytest.raises(ValueError, match="no_such_backend"):
        P.unregister("softmax", "no_such_backend")


def test_backends_lists_one_kind_or_all():
    assert {p["kind"] for p in P.backends("softmax")} == {"softmax"}
    assert P.backends() == oneflite.registry.primitives()


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("softmax=reference", "reference"),
        (" softmax = reference , log_softmax=reference", "reference"),
        ("softmax=no_such_backend", "no_such_backend"),
    ],
)
def test_environment_variable_forces_backends_at_import(tmp_path, spec, expected):
    code = "import oneflite; print(oneflite._C._forced_primitive('softmax'))"
    result = run_python("-c", code, cwd=tmp_path, env={"ONEFLITE_FORCE_PRIMITIVE": spec})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected


def test_malformed_environment_variable_raises_value_error_at_import(tmp_path):
    result = run_python(
        "-c", "import oneflite", cwd=tmp_path, env={"ONEFLITE_FORCE_PRIMITIVE": "softmax"}
    )
    assert result.returncode != 0
    assert "ValueError" in result.stderr and "kind=name" in result.stderr


def test_data_type_dispatch_header_compiled_standalone(tmp_path) -> None:
    """oneflite/common/data_type_dispatch.h, the dtype switch every factory (and extension) uses:
    each dtype reaches its element type, the floating-only visit and the width visit return
    nullptr where they have no type, and an unknown dtype code raises ValueError."""
    output = run_cpp_check(Path(__file__).resolve().parent / "cpp" / "data_type_dispatch_check.cpp",
                           tmp_path)
    assert output.strip() == "ok"
