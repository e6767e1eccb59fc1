"""oneflite.trace(): the layers a call passes through, in order, and nothing when off."""

from __future__ import annotations

import sys
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


def _functional_calls(trace: oneflite.Trace) -> list[str]:
    # "oneflite.nn.functional.softmax(...)" -> "softmax"
    texts = [e.text for e in trace.events if e.layer == "functional"]
    return [text.split("(")[0].rsplit(".", 1)[-1] for text in texts]


def test_nested_traces_each_record_the_calls_made_while_they_are_open(x):
    with oneflite.trace() as outer:
        F.softmax(x, 1)
        with oneflite.trace() as inner:
            F.log_softmax(x, 0)
        F.softmax(x, 0)
    assert _ops(inner) == ["transpose", "log_softmax", "transpose"]
    assert _functional_calls(inner) == ["log_softmax"]
    assert inner.events[0].depth == 0
    assert _ops(outer) == ["softmax", "transpose", "log_softmax", "transpose", "transpose",
                           "softmax", "transpose"]
    # The inner block's events in the outer trace are the same events at the same depths.
    start = outer.events.index(inner.events[0])
    assert outer.events[start : start + len(inner)] == inner.events
    with oneflite.trace() as again:  # nothing is left open
        F.softmax(x, 1)
    assert _ops(again) == ["softmax"]


def test_trace_inside_a_python_backend_counts_depth_from_its_own_start(x):
    if x.is_cuda:
        pytest.skip("the backend computes with NumPy")
    inner: list[oneflite.Trace] = []

    def backend(xb: oneflite.Tensor, yb: oneflite.Tensor) -> None:
        x64 = oneflite.from_numpy(xb.numpy().astype(np.float64))
        with oneflite.trace() as t:
            y = F.softmax(x64, 1)
        yb.numpy()[...] = y.numpy()
        inner.append(t)

    oneflite.primitive.register("softmax", backend, name="tracing_backend",
                                dtypes=[oneflite.float32])
    try:
        with oneflite.trace() as outer:
            F.softmax(x, 1)
    finally:
        oneflite.primitive.unregister("softmax", "tracing_backend")
    (t,) = inner
    assert _ops(t) == ["softmax"] and _functional_calls(t) == ["softmax"]
    assert t.events[0].depth == 0
    # The outer trace holds the backend's call too, inside the op that launched the backend.
    assert _ops(outer) == ["softmax", "softmax"]
    at = next(i for i, e in enumerate(outer.events) if "tracing_backend" in e.text)
    start = next(i for i in range(at, len(outer.events)) if outer.events[i].layer == "functional")
    offset = outer.events[at].depth
    assert offset > 0
    assert [(e.depth - offset, e.layer, e.text) for e in outer.events[start : start + len(t)]] == [
        (e.depth, e.layer, e.text) for e in t.events
    ]


def test_traces_may_end_in_another_order_than_they_began(x):
    # Interleaved generators (or coroutines) on one thread.
    def traced(name: str):
        with oneflite.trace() as t:
            yield
            getattr(F, name)(x, 1)
            yield
        yield t

    first, second = traced("softmax"), traced("log_softmax")
    next(first)
    next(second)
    next(first)  # softmax while both are open
    next(second)  # log_softmax while both are open
    t_first = next(first)  # first ends while second is still open
    F.softmax(x, 0)
    t_second = next(second)
    assert _ops(t_first) == ["softmax", "log_softmax"]
    assert _ops(t_second) == ["softmax", "log_softmax", "transpose", "softmax", "transpose"]
    with oneflite.trace() as again:
        F.softmax(x, 1)
    assert _ops(again) == ["softmax"]


def test_one_trace_object_records_one_block_at_a_time(x):
    recording = oneflite.trace()
    with recording as t:
        with pytest.raises(RuntimeError, match="already recording"):
            with recording:
                pass
        F.softmax(x, 1)
    assert _ops(t) == ["softmax"]
    with recording as t2:  # reusable once it has ended, with a fresh Trace
        F.log_softmax(x, 1)
    assert _ops(t2) == ["log_softmax"] and _ops(t) == ["softmax"]


def test_ending_a_trace_that_is_not_recording_raises_and_leaves_tracing_intact(x):
    recording = oneflite.trace()
    with pytest.raises(RuntimeError, match="not recording"):
        recording.__exit__(None, None, None)
    with recording:
        pass
    with pytest.raises(RuntimeError, match="not recording"):
        recording.__exit__(None, None, None)
    with oneflite.trace() as t:
        F.softmax(x, 1)
    assert t.layers()[0] == "functional"
    assert oneflite._trace.active == 0 and oneflite._trace.local.open == 0


def test_ending_a_trace_on_another_thread_raises_and_it_keeps_recording(x):
    recording = oneflite.trace()
    t = recording.__enter__()
    errors: list[BaseException] = []

    def end_elsewhere():
        try:
            recording.__exit__(None, None, None)
        except RuntimeError as e:
            errors.append(e)

    worker = threading.Thread(target=end_elsewhere)
    worker.start()
    worker.join(timeout=60)
    assert len(errors) == 1 and "thread that started it" in str(errors[0])
    F.softmax(x, 1)  # still recording here
    recording.__exit__(None, None, None)
    assert _ops(t) == ["softmax"] and t.layers()[0] == "functional"
    with oneflite.trace() as again:
        F.log_softmax(x, 1)
    assert _ops(again) == ["log_softmax"]


def test_tracing_in_one_thread_does_not_make_other_threads_describe_their_calls(x, monkeypatch):
    described: list[str] = []
    describe = oneflite._trace.describe

    def counting(t):
        described.append(threading.current_thread().name)
        return describe(t)

    monkeypatch.setattr(oneflite._trace, "describe", counting)
    worker = threading.Thread(target=F.softmax, args=(x, 1), name="untraced")
    with oneflite.trace() as t:
        worker.start()
        worker.join(timeout=60)
        F.softmax(x, 1)
    assert "untraced" not in described
    assert _functional_calls(t) == ["softmax"]


def test_threads_tracing_at_once_each_record_exactly_their_own_calls(x):
    # Many short traces racing to open and close in many threads: each holds its own calls and
    # nothing else, and no state is left behind.
    n_threads, rounds = 8, 50
    results: list[tuple[int, list[str], list[str]]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(n_threads)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    def work(index: int) -> None:
        try:
            barrier.wait()
            name = "softmax" if index % 2 else "log_softmax"
            for _ in range(rounds):
                with oneflite.trace() as t:
                    getattr(F, name)(x, 1)
                results.append((index, _functional_calls(t), _ops(t)))
        except BaseException as e:
            errors.append(e)

    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    finally:
        sys.setswitchinterval(switch)
    assert not errors, errors
    assert len(results) == n_threads * rounds
    for index, functional, ops in results:
        name = "softmax" if index % 2 else "log_softmax"
        assert functional == [name] and ops == [name]
    assert oneflite._trace.active == 0 and oneflite._trace.local.open == 0


def test_trace_stops_when_the_block_raises(x):
    with pytest.raises(IndexError):
        with oneflite.trace() as t:
            F.softmax(x, 1)
            F.softmax(x, 5)
    assert _ops(t) == ["softmax"]
    with oneflite.trace() as again:
        F.softmax(x, 1)
    assert _ops(again) == ["softmax"]
    assert oneflite._trace.active == 0 and oneflite._trace.local.open == 0


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
