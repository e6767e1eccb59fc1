"""What each layer has registered, as listed by oneflite.registry, and forcing a backend."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FLOAT_DTYPES, assert_close, make_tensor, to_float64
from reference import softmax_ref

import oneflite
import oneflite.nn.functional as F

FLOAT_NAMES = ["float16", "bfloat16", "float32", "float64"]
ALL_NAMES = [*FLOAT_NAMES, "int32", "int64", "bool"]


def test_functors_list_the_softmax_and_data_movement_functors():
    functors = {f["name"]: f["signature"] for f in oneflite.registry.functors()}
    for name in ("Softmax", "LogSoftmax", "Transpose", "Contiguous", "Cast", "Copy"):
        assert name in functors
        assert functors[name].startswith(f"{name}(")
        assert functors[name].endswith("-> Tensor")
    assert "int? dim" in functors["Softmax"]
    assert "DataType? dtype" in functors["LogSoftmax"]


def test_ops_list_their_inputs_outputs_attrs_and_doc():
    ops = {o["name"]: o for o in oneflite.registry.ops()}
    for name in ("softmax", "log_softmax", "transpose", "cast", "copy"):
        assert ops[name]["inputs"] == ["in"]
        assert ops[name]["outputs"] == ["out"]
        assert ops[name]["doc"]
    assert ops["softmax"]["attrs"] == []
    assert ops["log_softmax"]["attrs"] == []
    assert ops["transpose"]["attrs"] == ["perm"]
    assert ops["cast"]["attrs"] == ["dtype"]
    assert ops["copy"]["attrs"] == ["device"]


def test_every_op_has_a_kernel():
    kernels = oneflite.registry.kernels()
    by_op: dict[str, list[dict]] = {}
    for k in kernels:
        by_op.setdefault(k["op"], []).append(k)
        assert set(k) == {"op", "name", "priority", "match"}
        assert k["name"] and k["match"]
    for op in ("softmax", "log_softmax", "transpose", "cast", "copy"):
        assert by_op.get(op), f"no kernel for op {op}"
    assert {o["name"] for o in oneflite.registry.ops()} <= set(by_op)
    assert "SoftmaxKernel" in [k["name"] for k in by_op["softmax"]]
    assert "LogSoftmaxKernel" in [k["name"] for k in by_op["log_softmax"]]


def test_kernels_are_listed_highest_priority_first_per_op():
    seen: dict[str, int] = {}
    for k in oneflite.registry.kernels():
        if k["op"] in seen:
            assert k["priority"] <= seen[k["op"]]
        seen[k["op"]] = k["priority"]


@pytest.mark.parametrize(
    ("kind", "dtypes"),
    [
        ("softmax", FLOAT_NAMES),
        ("log_softmax", FLOAT_NAMES),
        ("permute", ALL_NAMES),
        ("cast", ALL_NAMES),
    ],
)
def test_cpu_reference_backends_are_registered_with_their_dtypes(kind, dtypes):
    matches = [
        p
        for p in oneflite.registry.primitives()
        if p["kind"] == kind and p["device"] == "cpu" and p["name"] == "reference"
    ]
    assert len(matches) == 1
    assert sorted(matches[0]["dtypes"]) == sorted(dtypes)
    assert isinstance(matches[0]["priority"], int)


def test_primitives_are_listed_highest_priority_first_per_kind_and_device():
    seen: dict[tuple[str, str], int] = {}
    names: set[tuple[str, str, str]] = set()
    for p in oneflite.registry.primitives():
        key = (p["kind"], p["device"])
        if key in seen:
            assert p["priority"] <= seen[key]
        seen[key] = p["priority"]
        assert (p["kind"], p["device"], p["name"]) not in names  # names are unique
        names.add((p["kind"], p["device"], p["name"]))
        assert p["device"] in ("cpu", "cuda")
        assert set(p["dtypes"]) <= set(ALL_NAMES)


def test_cuda_backends_are_registered_when_cuda_is_compiled():
    cuda_kinds = {p["kind"] for p in oneflite.registry.primitives() if p["device"] == "cuda"}
    if oneflite.cuda.is_compiled():
        assert {"softmax", "log_softmax", "permute", "cast"} <= cuda_kinds
    else:
        assert cuda_kinds == set()


def test_registry_listings_are_fresh_copies():
    first = oneflite.registry.primitives()
    first.clear()
    assert oneflite.registry.primitives()


@pytest.mark.usefixtures("unforce_softmax_primitives")
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_forcing_the_reference_backend_still_computes_softmax(dtype):
    x = make_tensor(np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 4.0]]), dtype)
    expected = softmax_ref(to_float64(x), 1)
    oneflite._C._force_primitive("softmax", "reference")
    with oneflite.trace() as t:
        y = F.softmax(x, 1)
    assert "backend 'reference'" in str(t)
    assert_close(to_float64(y), expected, dtype)
    oneflite._C._force_primitive("softmax", None)
    assert_close(to_float64(F.softmax(x, 1)), expected, dtype)


def _top_backend(kind: str, device: str, dtype: oneflite.dtype) -> str:
    """The highest-priority backend registered for (kind, device) that serves dtype."""
    for p in oneflite.registry.primitives():
        if p["kind"] == kind and p["device"] == device and dtype.name in p["dtypes"]:
            return p["name"]
    raise LookupError((kind, device, dtype))


@pytest.mark.usefixtures("unforce_softmax_primitives")
def test_undoing_a_forced_backend_goes_back_to_priorities(device):
    x = make_tensor(np.array([[0.0, 1.0]]), oneflite.float32, device)
    top = _top_backend("softmax", x.device.type, oneflite.float32)
    oneflite._C._force_primitive("softmax", "no_such_backend")
    with pytest.raises(NotImplementedError, match="softmax"):
        F.softmax(x, 1)
    oneflite._C._force_primitive("softmax", None)
    with oneflite.trace() as t:
        y = F.softmax(x, 1)
    assert f"backend '{top}'" in str(t)
    np.testing.assert_allclose(y.cpu().numpy(), softmax_ref(np.array([[0.0, 1.0]]), 1), rtol=1e-6)


@pytest.mark.usefixtures("unforce_softmax_primitives")
def test_forcing_a_missing_backend_raises_not_implemented_error(device, float_dtype):
    x = make_tensor(np.array([[0.0, 1.0]]), float_dtype, device)
    oneflite._C._force_primitive("log_softmax", "no_such_backend")
    with pytest.raises(NotImplementedError) as info:
        F.log_softmax(x, 0)
    for word in ("log_softmax", x.device.type, float_dtype.name):
        assert word in str(info.value)
    F.softmax(x, 0)  # a different kind is unaffected
