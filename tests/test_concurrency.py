"""Threads: correct results when many threads compute at once, the GIL released while a
primitive computes, and backends registered, unregistered and forced while other threads
dispatch.

No assertion here depends on timing: threads join under generous timeouts (a deadlock fails
the test rather than hanging it), and the GIL test asserts only that another thread made
progress *during* a call, which a held GIL makes impossible however loaded the machine is.
"""

from __future__ import annotations

import sys
import textwrap
import threading
import time
import traceback
from typing import Callable

import numpy as np
import pytest
from conftest import assert_close, make_tensor, run_python, to_float64
from reference import log_softmax_ref, softmax_ref

import oneflite
import oneflite.nn.functional as F

P = oneflite.primitive
N_THREADS = 8
JOIN_TIMEOUT_S = 120.0
OPS = {"softmax": (F.softmax, softmax_ref), "log_softmax": (F.log_softmax, log_softmax_ref)}


def run_in_threads(target: Callable[[int], None], n: int = N_THREADS) -> None:
    """Runs target(0..n-1) in n threads released together; re-raises the first failure."""
    barrier = threading.Barrier(n)
    failures: list[str] = []

    def body(index: int) -> None:
        try:
            barrier.wait(timeout=JOIN_TIMEOUT_S)
            target(index)
        except BaseException:
            failures.append(f"thread {index}:\n{traceback.format_exc()}")

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + JOIN_TIMEOUT_S
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    stuck = [t.name for t in threads if t.is_alive()]
    assert not stuck, f"threads still running after {JOIN_TIMEOUT_S} s (deadlock?): {stuck}"
    assert not failures, failures[0]


# ---- many threads, one op --------------------------------------------------------------------

# Shapes both below and above the size where the CPU backend splits rows across its own threads.
THREAD_SHAPES = [(3, 7), (64, 33), (17, 1025), (40, 2049), (5, 4, 6)]
THREAD_DTYPES = [oneflite.float16, oneflite.bfloat16, oneflite.float32, oneflite.float64]


def _thread_work(device: str, index: int):
    """This thread's (op name, tensor, dim, expected) list, each input different."""
    rng = np.random.default_rng(index)
    work = []
    for k, shape in enumerate(THREAD_SHAPES):
        dtype = THREAD_DTYPES[(index + k) % len(THREAD_DTYPES)]
        x = make_tensor(rng.standard_normal(shape) * 4, dtype, device)
        for name, (_, ref) in OPS.items():
            dim = (-1, 0)[(index + k) % 2]
            work.append((name, x, dim, ref(to_float64(x), dim)))
    return work


def test_eight_threads_computing_at_once_all_get_correct_results(device):
    work = [_thread_work(device, i) for i in range(N_THREADS)]  # oracle computed up front
    rounds = 6

    def compute(index: int) -> None:
        for _ in range(rounds):
            for name, x, dim, expected in work[index]:
                y = OPS[name][0](x, dim)
                assert_close(
                    to_float64(y),
                    expected,
                    x.dtype,
                    log=name == "log_softmax",
                    err_msg=f"{name} {x.dtype.name} {tuple(x.shape)} dim={dim}",
                )

    run_in_threads(compute)


def test_threads_sharing_one_input_tensor_all_get_the_same_correct_result(device):
    x = make_tensor(np.random.default_rng(7).standard_normal((33, 4097)), oneflite.float32, device)
    expected = softmax_ref(to_float64(x), 1)
    before = to_float64(x)
    results: dict[int, np.ndarray] = {}

    def compute(index: int) -> None:
        for _ in range(4):
            results[index] = to_float64(F.softmax(x.transpose(0, 1), 0).transpose(0, 1))

    run_in_threads(compute)
    for index in range(N_THREADS):
        assert_close(results[index], expected, oneflite.float32, err_msg=f"thread {index}")
    np.testing.assert_array_equal(to_float64(x), before)


# ---- the GIL -------------------------------------------------------------------------------


class _Counter:
    """A thread that counts while it holds the GIL, yielding it at every count."""

    def __init__(self) -> None:
        self.count = 0
        self._stop = threading.Event()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.count += 1
            self._started.set()
            time.sleep(0.0002)  # releases the GIL long enough for the main thread to take it

    def __enter__(self) -> _Counter:
        self._thread.start()
        assert self._started.wait(JOIN_TIMEOUT_S)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(JOIN_TIMEOUT_S)


def _progress_during(counter: _Counter, call: Callable[[], object]) -> int:
    """How far the counter thread got while ``call`` ran in this thread.

    With a switch interval of an hour, this thread never hands the GIL over on its own: the
    counter can advance between the two reads only if ``call`` releases the GIL."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(3600.0)
    try:
        # A hand-over the counter asked for under the old interval may still be pending; a
        # short sleep (which releases the GIL) lets it happen now rather than inside `call`.
        time.sleep(0.01)
        before = counter.count
        call()
        return counter.count - before
    finally:
        sys.setswitchinterval(interval)


@pytest.mark.usefixtures("unforce_softmax_primitives")
@pytest.mark.parametrize("backend", ["reference", "fast"])
def test_gil_is_released_while_a_cpu_primitive_computes(backend):
    x = oneflite.tensor(np.random.default_rng(0).standard_normal((2048, 2048)))
    with _Counter() as counter, P.use("softmax", backend), P.use("log_softmax", backend):
        # The control: a long call that holds the GIL lets the counter make no progress at all.
        assert _progress_during(counter, lambda: sum(range(2_000_000))) == 0
        # A long softmax does let it run. A loaded machine may not schedule the counter within
        # one call, so a few tries are allowed; a held GIL would fail every one of them.
        for op, dim in [(F.softmax, 1), (F.log_softmax, 0)]:
            progress = []
            while len(progress) < 10 and not any(progress):
                progress.append(_progress_during(counter, lambda op=op, dim=dim: op(x, dim)))
            assert any(progress), f"{op.__name__}: the counter never ran during a call"


# ---- registering, unregistering and forcing while others dispatch ---------------------------


class Window:
    """Marks a span of time in which something is in effect, for threads to check overlap."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._version = 0

    def __enter__(self) -> Window:
        with self._lock:
            self._active += 1
            self._version += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._active -= 1
            self._version += 1

    def snapshot(self) -> tuple[int, int]:
        with self._lock:
            return self._active, self._version

    @staticmethod
    def overlapped(before: tuple[int, int], after: tuple[int, int]) -> bool:
        """Whether the window was open at any time between two snapshots."""
        return bool(before[0] or after[0] or before[1] != after[1])


def _numpy_backend(kind: str):
    ref = OPS[kind][1]

    def compute(x: oneflite.Tensor, y: oneflite.Tensor) -> None:
        y.numpy()[...] = ref(x.numpy().astype(np.float64), 1)

    return compute


def _cuda_devices() -> list[str]:
    return ["cuda"] if oneflite.cuda.is_available() else []


@pytest.mark.usefixtures("unforce_softmax_primitives")
def test_registering_unregistering_and_forcing_backends_while_threads_dispatch():
    listing_before = P.backends()
    forced_before = {kind: oneflite._C._forced_primitive(kind) for kind in OPS}
    devices = ["cpu", *_cuda_devices()]
    # Forcing any backend (all of them CPU-only here) may make CUDA calls raise
    # NotImplementedError; forcing a backend and then unregistering it may make any call raise
    # it. Nothing else may happen: every other call returns the reference's answer.
    forced_any = {kind: Window() for kind in OPS}
    forced_missing = {kind: Window() for kind in OPS}
    # One churning thread per kind: use() saves and restores the forced backend of its kind, so
    # two threads forcing the same kind would restore each other's settings out of order.
    churners = {kind: threading.Event() for kind in OPS}
    counts = {"ok": [0] * N_THREADS, "not_implemented": [0] * N_THREADS}

    rng = np.random.default_rng(3)
    inputs = []
    for device in devices:
        for dtype in (oneflite.float32, oneflite.float64):
            for shape in [(5, 9), (2, 3, 70), (1, 1)]:
                x = make_tensor(rng.standard_normal(shape) * 3, dtype, device)
                for kind in OPS:
                    inputs.append((kind, x, OPS[kind][1](to_float64(x), -1)))

    def dispatch(index: int) -> None:
        k = index
        while not all(e.is_set() for e in churners.values()) or counts["ok"][index] < 20:
            kind, x, expected = inputs[k % len(inputs)]
            k += 1
            any0, missing0 = forced_any[kind].snapshot(), forced_missing[kind].snapshot()
            try:
                y = OPS[kind][0](x, -1)
            except NotImplementedError:
                any1, missing1 = forced_any[kind].snapshot(), forced_missing[kind].snapshot()
                allowed = Window.overlapped(missing0, missing1) or (
                    x.is_cuda and Window.overlapped(any0, any1)
                )
                assert allowed, (
                    f"NotImplementedError for {kind} on {x.device} with no backend "
                    "forced that could not serve it"
                )
                counts["not_implemented"][index] += 1
                continue
            assert_close(
                to_float64(y),
                expected,
                x.dtype,
                log=kind == "log_softmax",
                err_msg=f"{kind} on {x.device}",
            )
            counts["ok"][index] += 1

    def churn(kind: str) -> None:
        try:
            for i in range(100):
                name = f"churn_{kind}_{i}"
                priority = [2000, -2000, 1000][i % 3]  # sometimes the one every call uses
                P.register(
                    kind,
                    _numpy_backend(kind),
                    name=name,
                    priority=priority,
                    dtypes=[oneflite.float32, oneflite.float64],
                )
                time.sleep(0.0005)
                step = i % 4
                if step == 0:
                    with forced_any[kind], P.use(kind, ["reference", "fast"][i % 2]):
                        time.sleep(0.001)
                elif step == 1:
                    with forced_any[kind], forced_missing[kind], P.use(kind, name):
                        time.sleep(0.0005)
                        P.unregister(kind, name)  # forced and gone: nothing serves the kind
                        time.sleep(0.0005)
                    continue
                elif step == 2:
                    with forced_any[kind], P.use(kind, name):
                        time.sleep(0.001)
                P.unregister(kind, name)
        finally:
            churners[kind].set()

    n_churners = len(churners)

    def role(index: int) -> None:
        if index < n_churners:
            churn(list(churners)[index])
        else:
            dispatch(index)

    run_in_threads(role)
    print("calls per dispatching thread:", counts)
    assert all(n >= 20 for n in counts["ok"][n_churners:]), counts
    # Everything is back as it was: no leftover backend, nothing forced, results correct.
    assert P.backends() == listing_before
    assert {kind: oneflite._C._forced_primitive(kind) for kind in OPS} == forced_before
    for kind, x, expected in inputs:
        assert_close(to_float64(OPS[kind][0](x, -1)), expected, x.dtype, log=kind == "log_softmax")


def test_only_one_of_many_threads_registering_the_same_name_succeeds():
    outcomes: list[str] = []
    lock = threading.Lock()

    def register(index: int) -> None:
        try:
            P.register("softmax", _numpy_backend("softmax"), name="raced", priority=-3000)
            outcome = "registered"
        except ValueError as error:
            assert "raced" in str(error)
            outcome = "duplicate"
        with lock:
            outcomes.append(outcome)

    try:
        run_in_threads(register)
    finally:
        if any(p["name"] == "raced" for p in P.backends("softmax")):
            P.unregister("softmax", "raced")
    assert sorted(outcomes) == ["duplicate"] * (N_THREADS - 1) + ["registered"]
    assert not any(p["name"] == "raced" for p in P.backends())


def test_python_backend_called_from_many_threads_at_once_is_correct(device):
    if device == "cuda":
        pytest.importorskip("torch")  # a CUDA Python backend needs a library to compute with
    calls = [0]
    lock = threading.Lock()

    def numpy_softmax(x: oneflite.Tensor, y: oneflite.Tensor) -> None:
        with lock:
            calls[0] += 1
        if x.is_cuda:
            import torch

            torch.from_dlpack(y).copy_(torch.softmax(torch.from_dlpack(x).double(), 1))
        else:
            y.numpy()[...] = softmax_ref(x.numpy().astype(np.float64), 1)

    P.register(
        "softmax", numpy_softmax, name="threaded_python", device=device, dtypes=[oneflite.float64]
    )
    try:
        work = [_thread_work(device, i) for i in range(N_THREADS)]

        def compute(index: int) -> None:
            for _ in range(3):
                for name, x, dim, _expected in work[index]:
                    x64 = x.to(oneflite.float64)
                    y = OPS[name][0](x64, dim)
                    expected64 = OPS[name][1](to_float64(x64), dim)
                    assert_close(
                        to_float64(y), expected64, oneflite.float64, log=name == "log_softmax"
                    )

        run_in_threads(compute)
    finally:
        P.unregister("softmax", "threaded_python", device=device)
    assert calls[0] >= N_THREADS * 3 * len(THREAD_SHAPES)


# ---- interpreter exit ------------------------------------------------------------------------

_EXIT_WITH_DAEMONS = """
import threading, time
import numpy as np
import oneflite
import oneflite.nn.functional as F

backend = {backend!r}
if backend != "built-in":
    def copy(x, y):
        y.numpy()[...] = x.numpy()

    def failing(x, y):
        raise ValueError("from the backend")

    oneflite.primitive.register("softmax", copy, name="copy", dtypes=[oneflite.float32])
    if backend == "python-backend-raising":
        oneflite.primitive.register(
            "log_softmax", failing, name="failing", dtypes=[oneflite.float32]
        )
x = oneflite.tensor(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32))


def loop():
    while True:
        F.softmax(x, 0)
        try:
            F.log_softmax(x, 1)
        except ValueError:
            pass


for _ in range(4):
    threading.Thread(target=loop, daemon=True).start()
time.sleep(0.2)
print("exiting", flush=True)
"""


@pytest.mark.parametrize("backend", ["built-in", "python-backend", "python-backend-raising"])
def test_interpreter_exit_while_daemon_threads_call_softmax_does_not_abort(tmp_path, backend):
    # At exit, CPython ends daemon threads that try to take the GIL back, by unwinding them. A
    # thread coming back from oneflite's C++ (which released the GIL) must not turn that into
    # std::terminate, and a thread ended inside a Python backend (in the function, or asking for
    # the GIL to call it) must not touch Python on its way out: no decref, no GIL release, no
    # Python exception object destroyed.
    script = textwrap.dedent(_EXIT_WITH_DAEMONS.format(backend=backend))
    for _ in range(2):
        result = run_python("-c", script, cwd=tmp_path)
        assert result.stdout.strip() == "exiting", result.stdout
        assert result.returncode == 0, (
            f"exit status {result.returncode}: {result.stderr.strip()[-500:]}"
        )
