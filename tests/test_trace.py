"""oneflite.trace(): the layers a call passes through, in order, and nothing when off."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import make_tensor

import oneflite
import oneflite.nn.functional as F

LAYERS = ["functional", "functor", "op", "kernel", "primitive"]


def _top_backend(kind: str, device: str) -> str:
    for p in oneflite.registry.primitives():
        if p["kind"] == kind and p["device"] == device and "float32" in p["dtypes"]:
            return p["name"]
    raise LookupError((kind, device))


def _ops(trace: oneflite.Trace) -> list[str]:
    return [e.text.split(":")[0] for e in trace.events if e.layer == "op"]


@pytest.fixture
def x(device: str) -> oneflite.Tensor:
    return make_tensor(np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 5.0]]), oneflite.float32, device)


@pytest.mark.parametrize(
    ("name", "kernel"), [("softmax", "SoftmaxKernel"), ("log_softmax", "LogSoftmaxKernel")]
)
def test_last_dim_records_every_layer_in_order(x, name, kernel):
    with oneflite.trace() as t:
        getattr(F, name)(x, dim=1)
    layers = t.layers()
    assert layers[:2] == ["functional", "functor"]
    assert layers[-3:] == ["op", "kernel", "primitive"]
    assert set(layers) == set(LAYERS)
    # Each layer first appears after the one above it.
    firsts = [layers.index(layer) for layer in LAYERS]
    assert firsts == sorted(firsts)
    assert _ops(t) == [name]
    by_layer = {e.layer: e for e in t.events}
    assert f"oneflite.nn.functional.{name}(" in t.events[0].text
    assert "dim=1" in t.events[0].text
    assert kernel in by_layer["kernel"].text
    backend = _top_backend(name, x.device.type)
    assert f"backend '{backend}'" in by_layer["primitive"].text
    assert "rows=2 cols=3" in by_layer["primitive"].text


def test_other_dim_records_a_transpose_around_the_softmax_op(x):
    with oneflite.trace() as t:
        F.softmax(x, dim=0)
    assert _ops(t) == ["transpose", "softmax", "transpose"]
    assert any("is not the last dim" in e.text for e in t.events if e.layer == "functor")
    ops = [e for e in t.events if e.layer == "op"]
    assert "(2, 3)" in ops[0].text and "-> out (3, 2)" in ops[0].text
    assert "in (3, 2)" in ops[1].text
    assert "-> out (2, 3)" in ops[2].text
    # Every op is followed by its kernel and primitive.
    layers = t.layers()
    for i, layer in enumerate(layers):
        if layer == "op":
            assert layers[i + 1 : i + 3] == ["kernel", "primitive"]


def test_implicit_dim_is_described(x):
    with oneflite.trace() as t:
        F.softmax(x)
    assert any("dim=None -> 1 by the implicit rule" in e.text for e in t.events)


def test_negative_dim_is_described_as_wrapped(x):
    with oneflite.trace() as t:
        F.softmax(x, -2)
    assert any("dim=-2 -> 0" in e.text for e in t.events)
    assert _ops(t) == ["transpose", "softmax", "transpose"]


def test_events_nest_one_level_at_a_time(x):
    with oneflite.trace() as t:
        F.log_softmax(x, 0)
    assert t.events[0].depth == 0
    for before, after in zip(t.events, t.events[1:]):
        assert after.depth <= before.depth + 1
    functional = [e for e in t.events if e.layer == "functional"]
    assert len(functional) == 1 and functional[0].depth == 0


@pytest.mark.usefixtures("unforce_softmax_primitives")
def test_str_names_every_layer_and_the_reference_backend():
    x = oneflite.tensor([[1.0, 2.0, 3.0]])
    oneflite._C._force_primitive("softmax", "reference")
    with oneflite.trace() as t:
        F.softmax(x, 0)
    text = str(t)
    for layer in LAYERS:
        assert layer in text
    assert "backend 'reference'" in text
    assert "Softmax" in text and "Transpose" in text
    assert len(text.splitlines()) == len(t)
    assert repr(t) == f"<oneflite.Trace with {len(t)} events>"


def test_modules_and_methods_are_traced(x):
    with oneflite.trace() as t:
        oneflite.nn.Softmax(dim=1)(x)
        x.log_softmax(1)
    assert [e.layer for e in t.events if e.depth == 0] == ["functional", "functional"]
    assert _ops(t) == ["softmax", "log_softmax"]


def test_dtype_argument_shows_a_cast_before_the_op(device):
    x = make_tensor(np.array([[1.0, 2.0]]), oneflite.int64, device)
    with oneflite.trace() as t:
        F.softmax(x, 1, dtype=oneflite.float32)
    assert _ops(t) == ["cast", "softmax"]
    assert "dtype=oneflite.float32" in t.events[0].text


def test_nothing_is_recorded_when_tracing_is_off(x):
    F.softmax(x, 0)  # before any trace
    with oneflite.trace() as t:
        pass
    assert len(t) == 0
    assert t.layers() == []
    assert str(t) == ""
    with oneflite.trace() as t:
        F.softmax(x, 1)
    recorded = list(t.events)
    F.softmax(x, 0)  # after the block
    F.log_softmax(x, 1)
    assert t.events == recorded
    with oneflite.trace() as empty:
        pass
    assert len(empty) == 0


def test_nested_trace_raises_runtime_error_and_leaves_the_outer_one_recording(x):
    with oneflite.trace() as outer:
        F.softmax(x, 1)
        with pytest.raises(RuntimeError, match="already recording"):
            with oneflite.trace():
                pass
        F.log_softmax(x, 1)
    assert _ops(outer) == ["softmax", "log_softmax"]
    with oneflite.trace() as again:
        F.softmax(x, 1)
    assert _ops(again) == ["softmax"]


def test_trace_stops_when_the_block_raises(x):
    with pytest.raises(IndexError):
        with oneflite.trace() as t:
            F.softmax(x, 1)
            F.softmax(x, 5)
    assert _ops(t) == ["softmax"]
    with oneflite.trace() as again:
        F.softmax(x, 1)
    assert _ops(again) == ["softmax"]
    assert oneflite._trace.active == 0


def test_recording_is_per_thread(x):
    done = threading.Event()

    def work():
        F.softmax(x, 0)
        done.set()

    with oneflite.trace() as t:
        worker = threading.Thread(target=work)
        worker.start()
        worker.join(timeout=60)
        F.log_softmax(x, 1)
    assert done.is_set()
    assert _ops(t) == ["log_softmax"]
    assert len([e for e in t.events if e.layer == "functional"]) == 1
