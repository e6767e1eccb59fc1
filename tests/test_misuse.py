"""Misusing backend registration: every misuse gives a clean Python error, and afterwards the
framework works as before (a normal softmax matches the reference and the registry is as it
was)."""

from __future__ import annotations

import contextlib
import functools
import gc
import textwrap
import threading
from collections.abc import Iterator

import numpy as np
import pytest
from conftest import assert_close, make_tensor, run_python, to_float64
from reference import log_softmax_ref, softmax_ref

import oneflite
import oneflite.nn.functional as F

P = oneflite.primitive
KINDS = ["softmax", "log_softmax"]
REFERENCES = {"softmax": softmax_ref, "log_softmax": log_softmax_ref}
VALUES = np.random.default_rng(11).standard_normal((5, 7)) * 3


def numpy_backend(kind: str):
    def compute(x: oneflite.Tensor, y: oneflite.Tensor) -> None:
        y.numpy()[...] = REFERENCES[kind](x.numpy().astype(np.float64), 1)

    return compute


def assert_framework_works() -> None:
    """Normal calls right after a misuse: correct results on every float dtype, both kinds."""
    for kind in KINDS:
        for dtype in (oneflite.float16, oneflite.bfloat16, oneflite.float32, oneflite.float64):
            x = make_tensor(VALUES, dtype)
            for dim in (1, 0):
                y = getattr(F, kind)(x, dim)
                assert_close(
                    to_float64(y),
                    REFERENCES[kind](to_float64(x), dim),
                    dtype,
                    log=kind == "log_softmax",
                    err_msg=f"{kind} {dtype.name} dim={dim}",
                )


@pytest.fixture
def clean_registry():
    """Checks the test leaves the registry and the forcing as it found them (removing what it
    left behind), and that the framework works afterwards."""
    listing = P.backends()
    forced = {kind: oneflite._C._forced_primitive(kind) for kind in KINDS}
    names = {(p["kind"], p["device"], p["name"]) for p in listing}
    yield
    leftovers = [p for p in P.backends() if (p["kind"], p["device"], p["name"]) not in names]
    for kind, value in forced.items():
        oneflite._C._force_primitive(kind, value)
    for p in leftovers:
        P.unregister(p["kind"], p["name"], p["device"])
    assert not leftovers, f"the test left backends registered: {leftovers}"
    assert P.backends() == listing
    assert_framework_works()


pytestmark = pytest.mark.usefixtures("clean_registry")


def registered(kind: str, fn, name: str, **kwargs):
    P.register(kind, fn, name=name, **kwargs)
    return name


@contextlib.contextmanager
def registration(kind: str, fn, name: str, **kwargs) -> Iterator[str]:
    """`fn` registered as backend `name` of `kind` for the block, unregistered after it."""
    P.register(kind, fn, name=name, **kwargs)
    try:
        yield name
    finally:
        P.unregister(kind, name, kwargs.get("device", "cpu"))


# ---- a backend that raises ---------------------------------------------------------------


class BackendError(Exception):
    def __init__(self, message: str, payload: object) -> None:
        super().__init__(message)
        self.payload = payload


class NotAnException(BaseException):
    """Derives from BaseException only, like KeyboardInterrupt and SystemExit."""


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "error",
    [
        BackendError("custom failure with ünïcode", payload={"k": [1, 2]}),
        ValueError("value"),
        TypeError("type"),
        IndexError("index"),
        NotImplementedError("not implemented in the backend"),
        RuntimeError("runtime"),
        MemoryError("memory"),
        RecursionError("recursion"),
        ZeroDivisionError("zero"),
        NotAnException("base exception"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_exception_raised_in_a_backend_reaches_the_caller_intact(kind, error):
    def failing(x, y):
        raise error

    try:
        with registration(kind, failing, "failing"):
            with pytest.raises(type(error)) as info:
                getattr(F, kind)(make_tensor(VALUES, oneflite.float32), 1)
            assert info.value is error, "the caller got a different exception object"
            assert str(info.value) == str(error)
            assert getattr(info.value, "payload", None) == getattr(error, "payload", None)
            frames = [entry.name for entry in info.traceback]
            assert "failing" in frames, f"no backend frame in the traceback: {frames}"
            # The same backend fails the same way every time: nothing was left half-done.
            with pytest.raises(type(error)):
                getattr(F, kind)(make_tensor(VALUES[:2], oneflite.float64), 0)
    finally:
        error.__traceback__ = None  # the traceback holds this frame, and with it `error`


def test_tensors_a_failing_backends_traceback_holds_stay_readable():
    # The exception's traceback keeps the backend's frame, and with it x and y, alive after the
    # call: they must be memory of their own, not the caller's or a freed buffer.
    def failing(x, y):
        y.numpy()[...] = 7.0
        raise OSError("after writing y")

    with registration("softmax", failing, "failing_with_locals", dtypes=[oneflite.float32]):
        with pytest.raises(OSError) as info:
            F.softmax(oneflite.tensor(VALUES.astype(np.float32)), 1)
    frame = next(e for e in info.traceback if e.name == "failing").frame
    x, y = frame.f_locals["x"], frame.f_locals["y"]
    for _ in range(20):  # churn the allocator
        F.softmax(oneflite.tensor(np.random.default_rng(0).standard_normal((64, 64))), 1)
    np.testing.assert_array_equal(x.numpy(), VALUES.astype(np.float32))
    np.testing.assert_array_equal(y.numpy(), np.full(VALUES.shape, 7.0, np.float32))


def test_exception_chained_inside_a_backend_keeps_its_cause():
    def failing(x, y):
        try:
            {}["missing"]
        except KeyError as cause:
            raise RuntimeError("wrapped") from cause

    with registration("softmax", failing, "chaining"):
        with pytest.raises(RuntimeError, match="wrapped") as info:
            F.softmax(make_tensor(VALUES, oneflite.float32), 1)
        assert isinstance(info.value.__cause__, KeyError)


def test_backend_raising_after_writing_part_of_y_returns_no_partial_result():
    def half_done(x, y):
        y.numpy()[0] = 123.0
        raise ArithmeticError("half done")

    with registration("softmax", half_done, "half_done"):
        x = make_tensor(VALUES, oneflite.float32)
        with pytest.raises(ArithmeticError, match="half done"):
            F.softmax(x, 1)
        np.testing.assert_array_equal(to_float64(x), VALUES.astype(np.float32))


# ---- a backend that returns the wrong thing ------------------------------------------------


@pytest.mark.parametrize(
    "returned",
    [0, 1.0, "done", False, (), [], NotImplemented, Ellipsis, "x", "y", "numpy", "generator"],
    ids=repr,
)
def test_backend_returning_anything_but_none_raises_type_error(returned):
    def returning(x, y):
        numpy_backend("softmax")(x, y)
        if returned == "x":
            return x
        if returned == "y":
            return y
        if returned == "numpy":
            return y.numpy().copy()
        if returned == "generator":
            return (v for v in ())
        return returned

    with registration("softmax", returning, "returning"):
        with pytest.raises(TypeError, match="return None"):
            F.softmax(make_tensor(VALUES, oneflite.float32), 1)


def test_generator_function_as_a_backend_raises_type_error():
    def generator(x, y):
        numpy_backend("softmax")(x, y)
        yield

    with registration("softmax", generator, "generator"):
        with pytest.raises(TypeError, match="generator"):
            F.softmax(make_tensor(VALUES, oneflite.float32), 1)


# ---- a backend that keeps its x or y -----------------------------------------------------


KEEPERS = {
    "x": lambda x, y: x,
    "y": lambda x, y: y,
    "x.numpy()": lambda x, y: x.numpy(),
    "y.numpy()": lambda x, y: y.numpy(),
    "a view of x": lambda x, y: x[1:],
    "a transposed view of y": lambda x, y: y.transpose(0, 1),
    "x's DLPack capsule": lambda x, y: x.__dlpack__(),
    "np.from_dlpack(y)": lambda x, y: np.from_dlpack(y),
}


@pytest.mark.parametrize("kept", list(KEEPERS))
@pytest.mark.parametrize("kind", KINDS)
def test_backend_keeping_its_x_or_y_raises_runtime_error_and_what_it_kept_stays_readable(
    kind, kept
):
    store: list[object] = []

    def keeper(x, y):
        numpy_backend(kind)(x, y)
        store.append(KEEPERS[kept](x, y))

    x_values = VALUES.astype(np.float32)
    with registration(kind, keeper, "keeper", dtypes=[oneflite.float32]):
        with pytest.raises(RuntimeError, match="kept a reference"):
            getattr(F, kind)(oneflite.tensor(x_values), 1)
    (held,) = store
    # Whatever the backend kept is its own memory: allocate and compute a lot, then read it.
    for _ in range(20):
        F.softmax(oneflite.tensor(np.random.default_rng(0).standard_normal((64, 64))), 1)
    gc.collect()
    if kept.endswith("capsule"):
        held = oneflite.from_dlpack(held)
    values = np.asarray(held.numpy() if isinstance(held, oneflite.Tensor) else held)
    expected = {
        "x": x_values,
        "y": REFERENCES[kind](x_values.astype(np.float64), 1),
    }["x" if kept.startswith("x") or "of x" in kept else "y"]
    if "transposed" in kept:
        expected = expected.T
    elif "view of x" in kept:
        expected = expected[1:]
    assert_close(
        values.astype(np.float64),
        expected.astype(np.float64),
        oneflite.float32,
        log=kind == "log_softmax",
    )
    del held, values
    store.clear()


def test_backend_keeping_a_copy_is_fine():
    copies: list[np.ndarray] = []

    def copier(x, y):
        numpy_backend("softmax")(x, y)
        copies.append(x.numpy().copy())
        copies.append(np.array(y.numpy()))

    with registration("softmax", copier, "copier", dtypes=[oneflite.float32]):
        y = F.softmax(make_tensor(VALUES, oneflite.float32), 1)
    assert_close(
        to_float64(y),
        softmax_ref(VALUES.astype(np.float32).astype(np.float64), 1),
        oneflite.float32,
    )
    np.testing.assert_array_equal(copies[0], VALUES.astype(np.float32))


# ---- unregistered while in use ---------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_backend_unregistering_itself_during_its_call_still_returns_its_result(kind):
    calls = []

    def self_removing(x, y):
        calls.append(1)
        P.unregister(kind, "self_removing")
        numpy_backend(kind)(x, y)

    registered(kind, self_removing, "self_removing")
    x = make_tensor(VALUES, oneflite.float64)
    expected = REFERENCES[kind](VALUES, 1)
    assert_close(
        to_float64(getattr(F, kind)(x, 1)), expected, oneflite.float64, log=kind == "log_softmax"
    )
    assert "self_removing" not in [p["name"] for p in P.backends(kind)]
    # The next call goes to the next backend, and is right too.
    assert_close(
        to_float64(getattr(F, kind)(x, 1)), expected, oneflite.float64, log=kind == "log_softmax"
    )
    assert len(calls) == 1


def test_backend_unregistering_itself_then_raising_leaves_a_clean_registry():
    def remove_then_fail(x, y):
        P.unregister("softmax", "remove_then_fail")
        raise LookupError("gone")

    registered("softmax", remove_then_fail, "remove_then_fail")
    with pytest.raises(LookupError, match="gone"):
        F.softmax(make_tensor(VALUES, oneflite.float32), 1)


def test_backend_registering_another_backend_during_its_call():
    def registering(x, y):
        P.register("softmax", numpy_backend("softmax"), name="registered_inside", priority=5000)
        numpy_backend("softmax")(x, y)

    registered("softmax", registering, "registering")
    try:
        x = make_tensor(VALUES, oneflite.float64)
        assert_close(to_float64(F.softmax(x, 1)), softmax_ref(VALUES, 1), oneflite.float64)
        with oneflite.trace() as t:
            y = F.softmax(x, 1)
        assert "registered_inside" in str(t)
        assert_close(to_float64(y), softmax_ref(VALUES, 1), oneflite.float64)
    finally:
        P.unregister("softmax", "registering")
        P.unregister("softmax", "registered_inside")


def test_backend_unregistered_by_another_thread_while_it_runs_finishes_correctly():
    entered = threading.Event()
    release = threading.Event()

    def blocking(x, y):
        entered.set()
        assert release.wait(60), "never released"
        numpy_backend("softmax")(x, y)

    registered("softmax", blocking, "blocking")
    result: dict[str, object] = {}

    def call() -> None:
        try:
            result["y"] = F.softmax(make_tensor(VALUES, oneflite.float64), 1)
        except BaseException as error:
            result["error"] = error

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    assert entered.wait(60)
    P.unregister("softmax", "blocking")  # while the call is inside the backend
    gc.collect()
    release.set()
    thread.join(60)
    assert not thread.is_alive()
    assert "error" not in result, result.get("error")
    assert_close(to_float64(result["y"]), softmax_ref(VALUES, 1), oneflite.float64)


@pytest.mark.usefixtures("unforce_softmax_primitives")
def test_forced_backend_unregistered_inside_the_use_block_raises_not_implemented_error():
    registered("softmax", numpy_backend("softmax"), "forced_then_removed")
    x = make_tensor(VALUES, oneflite.float32)
    with P.use("softmax", "forced_then_removed"):
        assert_close(
            to_float64(F.softmax(x, 1)),
            softmax_ref(VALUES.astype(np.float32).astype(np.float64), 1),
            oneflite.float32,
        )
        P.unregister("softmax", "forced_then_removed")
        with pytest.raises(NotImplementedError, match="forced_then_removed"):
            F.softmax(x, 1)
        F.log_softmax(x, 1)  # another kind is unaffected
    assert oneflite._C._forced_primitive("softmax") is None


def test_backend_recursing_into_its_own_kind_raises_recursion_error_not_a_crash(tmp_path):
    # Run in a child: a crash here must show as a failed test, not a dead test run. Each level
    # of the recursion holds C++ frames that Python's recursion limit does not weigh, so
    # oneflite bounds the nesting itself: the last call runs on a thread with a small stack
    # (1 MiB; 4 MiB under AddressSanitizer, whose frames are larger), which Python's limit
    # alone would overflow.
    script = textwrap.dedent(
        """
        import ctypes
        import threading
        import oneflite
        import oneflite.nn.functional as F

        def recursive(x, y):
            y.numpy()[...] = F.softmax(x, 1).numpy()

        oneflite.primitive.register("softmax", recursive, name="recursive")
        x = oneflite.tensor([[1.0, 2.0]])
        outcomes = []

        def call():
            try:
                F.softmax(x, 1)
                outcomes.append("no error")
            except RecursionError:
                outcomes.append("RecursionError")

        call()
        thread = threading.Thread(target=call)
        thread.start()
        thread.join()
        asan = hasattr(ctypes.CDLL(None), "__sanitizer_get_current_allocated_bytes")
        threading.stack_size((4 if asan else 1) << 20)
        thread = threading.Thread(target=call)
        thread.start()
        thread.join()
        oneflite.primitive.unregister("softmax", "recursive")
        print(outcomes, F.softmax(x, 1).tolist())
        """
    )
    result = run_python("-c", script, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "['RecursionError', 'RecursionError', 'RecursionError']" in result.stdout, result.stdout


def test_unregistering_every_cpu_backend_makes_softmax_raise_not_implemented(tmp_path):
    script = textwrap.dedent(
        """
        import oneflite
        import oneflite.nn.functional as F

        x = oneflite.tensor([[1.0, 2.0]])
        for p in oneflite.primitive.backends("softmax"):
            if p["device"] == "cpu":
                oneflite.primitive.unregister("softmax", p["name"])
        try:
            F.softmax(x, 1)
            print("no error")
        except NotImplementedError as error:
            print("NotImplementedError", "'softmax'" in str(error), "'cpu'" in str(error))
        print(F.log_softmax(x, 1).tolist())
        """
    )
    result = run_python("-c", script, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "NotImplementedError True True", result.stdout
    assert np.allclose(eval(lines[1]), log_softmax_ref(np.array([[1.0, 2.0]]), 1))


# ---- bad registrations ---------------------------------------------------------------------


def _not_registered(name: str) -> None:
    assert name not in [p["name"] for p in P.backends()]


@pytest.mark.parametrize("name", ["fast", "reference", "mine"])
@pytest.mark.parametrize("kind", KINDS)
def test_duplicate_name_raises_value_error(kind, name):
    first = None
    if name == "mine":
        first = registered(kind, numpy_backend(kind), name)
    before = P.backends()
    try:
        with pytest.raises(ValueError, match=name):
            P.register(kind, numpy_backend(kind), name=name)
        assert P.backends() == before
    finally:
        if first:
            P.unregister(kind, first)


def test_same_name_for_another_kind_or_device_is_not_a_duplicate():
    registered("softmax", numpy_backend("softmax"), "shared_name")
    registered("log_softmax", numpy_backend("log_softmax"), "shared_name")
    registered("softmax", numpy_backend("softmax"), "shared_name", device="cuda")
    try:
        names = [(p["kind"], p["device"]) for p in P.backends() if p["name"] == "shared_name"]
        assert sorted(names) == [("log_softmax", "cpu"), ("softmax", "cpu"), ("softmax", "cuda")]
    finally:
        P.unregister("softmax", "shared_name")
        P.unregister("log_softmax", "shared_name")
        P.unregister("softmax", "shared_name", device="cuda")


@pytest.mark.parametrize(
    "kind", ["gelu", "permute", "cast", "Softmax", "softmax ", "", "softmax_grad", None, 3]
)
def test_unknown_kind_raises_value_error(kind):
    with pytest.raises(ValueError, match="kind"):
        P.register(kind, numpy_backend("softmax"), name="unknown_kind")
    _not_registered("unknown_kind")


@pytest.mark.parametrize(
    "fn",
    [
        lambda: None,
        lambda x: None,
        lambda x, y, z: None,
        lambda *, x, y: None,
        lambda x, *, y: None,
        3,
        "softmax",
    ],
    ids=["no-args", "one-arg", "three-args", "keyword-only", "one-keyword-only", "int", "str"],
)
def test_wrong_signature_or_not_callable_raises_type_error(fn):
    with pytest.raises(TypeError):
        P.register("softmax", fn, name="wrong_signature")
    with pytest.raises(TypeError):  # the same through the decorator form
        P.register("softmax", name="wrong_signature")(fn)
    _not_registered("wrong_signature")


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, y, z=None: numpy_backend("softmax")(x, y),
        lambda *args: numpy_backend("softmax")(*args),
        lambda x, *rest, **kw: numpy_backend("softmax")(x, *rest),
        functools.partial(lambda scale, x, y: numpy_backend("softmax")(x, y), 1.0),
    ],
    ids=["default-third", "varargs", "varargs-and-kwargs", "partial"],
)
def test_callables_that_accept_two_arguments_are_accepted(fn):
    with registration("softmax", fn, "accepts_two"):
        x = make_tensor(VALUES, oneflite.float64)
        assert_close(to_float64(F.softmax(x, 1)), softmax_ref(VALUES, 1), oneflite.float64)


def test_callable_without_a_name_needs_one():
    with pytest.raises(ValueError, match="name"):
        P.register("softmax", functools.partial(numpy_backend("softmax")))
    with pytest.raises(ValueError, match="name"):
        P.register("softmax", numpy_backend("softmax"), name="")


@pytest.mark.parametrize(
    ("dtypes", "error"),
    [
        ([oneflite.int32], ValueError),
        ([oneflite.int64], ValueError),
        ([oneflite.bool], ValueError),
        ([oneflite.float32, oneflite.int64], ValueError),
        ([], ValueError),
        (["float32"], TypeError),
        ([np.float32], TypeError),
        ([None], TypeError),
        (oneflite.float32, TypeError),
        (None, TypeError),
        (3, TypeError),
    ],
    ids=[
        "int32",
        "int64",
        "bool",
        "float-and-int",
        "empty",
        "str",
        "numpy-type",
        "None-item",
        "bare-dtype",
        "None",
        "int",
    ],
)
def test_bad_dtypes_raise_and_register_nothing(dtypes, error):
    with pytest.raises(error):
        P.register("softmax", numpy_backend("softmax"), name="bad_dtypes", dtypes=dtypes)
    _not_registered("bad_dtypes")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"priority": "high"}, TypeError),
        ({"priority": 1.5}, TypeError),
        ({"priority": 2**40}, TypeError),
        ({"priority": None}, TypeError),
        ({"name": 3}, TypeError),
        ({"device": "tpu"}, ValueError),
        ({"device": "cuda:x"}, ValueError),
        ({"device": 0}, TypeError),
    ],
    ids=[
        "str-priority",
        "float-priority",
        "huge-priority",
        "None-priority",
        "int-name",
        "tpu",
        "bad-cuda-index",
        "int-device",
    ],
)
def test_bad_priority_name_or_device_raise_and_register_nothing(kwargs, error):
    arguments = {"name": "bad_argument", **kwargs}
    with pytest.raises(error):
        P.register("softmax", numpy_backend("softmax"), **arguments)
    _not_registered("bad_argument")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("softmax", "no_such_backend"), ValueError),
        (("gelu", "fast"), ValueError),
        (("softmax", "fast", "cuda"), ValueError),
        (("softmax", "fast", "tpu"), ValueError),
        (("softmax", None), TypeError),
    ],
    ids=["unknown-name", "unknown-kind", "wrong-device", "bad-device", "None-name"],
)
def test_bad_unregister_raises_and_changes_nothing(args, error):
    with pytest.raises(error):
        P.unregister(*args)


@pytest.mark.parametrize(
    ("kind", "name"),
    [("softmax", "no_such_backend"), ("gelu", "fast"), ("log_softmax", "")],
)
def test_use_of_an_unknown_backend_raises_value_error_and_forces_nothing(kind, name):
    before = oneflite._C._forced_primitive("softmax")
    with pytest.raises(ValueError):
        with P.use(kind, name):
            pass
    assert oneflite._C._forced_primitive("softmax") == before


def test_python_backend_for_cuda_leaves_cpu_calls_alone():
    def never(x, y):
        raise AssertionError("a CUDA backend was called for a CPU tensor")

    registered("softmax", never, "cuda_only", device="cuda", dtypes=[oneflite.float32])
    try:
        x = make_tensor(VALUES, oneflite.float32)
        assert_close(
            to_float64(F.softmax(x, 1)),
            softmax_ref(VALUES.astype(np.float32).astype(np.float64), 1),
            oneflite.float32,
        )
    finally:
        P.unregister("softmax", "cuda_only", device="cuda")
