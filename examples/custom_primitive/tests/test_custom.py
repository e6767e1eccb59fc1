"""Tests of the example extension, run against an installed oneflite_custom."""

import math

import numpy as np
import pytest

import oneflite
import oneflite_custom


def test_online_backend_is_registered_for_cpu_softmax() -> None:
    names = [b["name"] for b in oneflite.primitive.backends("softmax") if b["device"] == "cpu"]
    assert "custom_online" in names


@pytest.mark.parametrize("dtype", [oneflite.float32, oneflite.float64])
def test_online_backend_is_selected_and_matches_numpy(dtype: oneflite.dtype) -> None:
    a = np.random.default_rng(0).standard_normal((33, 1025))
    x = oneflite.tensor(a, dtype=dtype)
    with oneflite.trace() as t:
        y = oneflite.softmax(x, dim=1)
    assert "custom_online" in str(t)
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(y.to(oneflite.float64).numpy(), e / e.sum(1, keepdims=True),
                               rtol=1e-5, atol=1e-7)


def test_float16_falls_through_to_a_builtin_backend() -> None:
    x = oneflite.tensor([[0.0, 0.0]], dtype=oneflite.float16)
    with oneflite.trace() as t:
        oneflite.softmax(x, dim=1)
    assert "custom_online" not in str(t)
    assert "backend 'fast'" in str(t)


def test_gelu_runs_through_all_layers_and_matches_erf() -> None:
    values = np.linspace(-5, 5, 101)
    x = oneflite.tensor(values, dtype=oneflite.float64)
    with oneflite.trace() as t:
        y = oneflite_custom.gelu(x)
    assert t.events[0].layer == "functor" and t.events[0].text == "Gelu"
    assert {"op", "kernel", "primitive"} <= set(t.layers())
    assert "backend 'custom_reference'" in str(t)
    expected = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in values]
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-12, atol=1e-15)


def test_gelu_is_listed_in_every_registry() -> None:
    assert any(f["name"] == "Gelu" for f in oneflite.registry.functors())
    assert any(o["name"] == "gelu" for o in oneflite.registry.ops())
    assert any(k["op"] == "gelu" for k in oneflite.registry.kernels())
    assert any(p["kind"] == "gelu" for p in oneflite.registry.primitives())


def test_gelu_rejects_integer_input() -> None:
    with pytest.raises(TypeError, match="floating-point"):
        oneflite_custom.gelu(oneflite.tensor([1, 2]))
