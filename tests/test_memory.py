"""Memory: many calls leave memory flat, CUDA memory in use returns to its baseline,
and storage is released exactly when the last owner (tensor, view, NumPy array, DLPack consumer)
lets go of it.

Counts are bounded for CI; ONEFLITE_MEMORY_CALLS scales them (default 10,000 calls for the
costlier workloads, ten times that for plain softmax calls; a leak of 64 bytes a call fails).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import sys
import textwrap
import threading
import weakref
from collections.abc import Iterator
from typing import Callable

import numpy as np
import pytest
from conftest import assert_close, forcing, make_tensor, run_python, to_float64
from reference import log_softmax_ref, softmax_ref

import oneflite
import oneflite.nn.functional as F

P = oneflite.primitive
CALLS = int(os.environ.get("ONEFLITE_MEMORY_CALLS", "10000"))
MiB = 1 << 20
PAGE = os.sysconf("SC_PAGE_SIZE")


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


def _asan_allocated_bytes() -> Callable[[], int] | None:
    """Under AddressSanitizer (tools/sanitize.sh), its allocator's bytes in use. ASan serves
    every malloc, so glibc's counters stay still, and it keeps freed memory resident for a
    while (its quarantine) to catch use after free: resident memory no longer shows a free."""
    function = getattr(ctypes.CDLL(None), "__sanitizer_get_current_allocated_bytes", None)
    if function is None:
        return None
    function.restype = ctypes.c_size_t
    return function


ASAN_ALLOCATED_BYTES = _asan_allocated_bytes()


def settle() -> int:
    """Memory in use after a collection and oneflite.cpu.empty_cache(): resident memory, or under
    AddressSanitizer the bytes its allocator has handed out and not had back."""
    gc.collect()
    oneflite.cpu.empty_cache()  # blocks kept for reuse are memory in use, not returned
    if ASAN_ALLOCATED_BYTES is not None:
        return ASAN_ALLOCATED_BYTES()
    return resident_bytes()


# ---- many calls, flat resident memory --------------------------------------------------------


def _numpy_softmax(x: oneflite.Tensor, y: oneflite.Tensor) -> None:
    y.numpy()[...] = softmax_ref(x.numpy().astype(np.float64), 1)


def _raising(x: oneflite.Tensor, y: oneflite.Tensor) -> None:
    raise KeyError("from the backend")


@contextlib.contextmanager
def _python_backend(fn: Callable, name: str) -> Iterator[None]:
    P.register("softmax", fn, name=name, dtypes=[oneflite.float32])
    try:
        yield
    finally:
        P.unregister("softmax", name)


def _expect(error: type, call: Callable[[], object]) -> None:
    try:
        call()
    except error:
        return
    raise AssertionError(f"expected {error.__name__}")


def _workloads() -> dict[str, tuple[Callable[[], contextlib.AbstractContextManager], Callable]]:
    """name -> (context to run in, one call). Small tensors, so per-call costs dominate."""
    x = oneflite.tensor(np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32))
    x16 = x.to(oneflite.float16)
    xi = oneflite.tensor(np.arange(12).reshape(3, 4))
    array = np.arange(12.0).reshape(3, 4)
    none = contextlib.nullcontext

    def interop() -> None:
        t = oneflite.from_numpy(array[:, 1:])
        t.numpy()
        np.from_dlpack(t)
        oneflite.from_dlpack(array)
        oneflite.from_dlpack(t.__dlpack__())
        t.__dlpack__()  # never consumed

    def forced_missing() -> contextlib.AbstractContextManager:
        return forcing("softmax", "no_such_backend")

    return {
        "softmax": (none, lambda: F.softmax(x, 1)),
        "log_softmax over dim 0": (none, lambda: F.log_softmax(x, 0)),
        "float16": (none, lambda: F.softmax(x16, -1)),
        "dtype cast of int input": (none, lambda: F.softmax(xi, 1, dtype=oneflite.float32)),
        "view with offset": (none, lambda: F.softmax(x[1:, ::2], 0)),
        "IndexError": (none, lambda: _expect(IndexError, lambda: F.softmax(x, 5))),
        "TypeError for int input": (none, lambda: _expect(TypeError, lambda: F.softmax(xi, 1))),
        "NotImplementedError": (
            forced_missing,
            lambda: _expect(NotImplementedError, lambda: F.softmax(x, 1)),
        ),
        "Python backend": (
            lambda: _python_backend(_numpy_softmax, "memory_numpy"),
            lambda: F.softmax(x, 1),
        ),
        "Python backend raising": (
            lambda: _python_backend(_raising, "memory_raising"),
            lambda: _expect(KeyError, lambda: F.softmax(x, 1)),
        ),
        "numpy and DLPack interop": (none, interop),
    }




WORKLOADS = list(_workloads())
# Cheap calls run ten times as often: 100,000 small softmaxes at the default count.
HEAVY = {
    "Python backend",
    "Python backend raising",
    "numpy and DLPack interop",
    "IndexError",
    "TypeError for int input",
    "NotImplementedError",
}


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _mallinfo2() -> Callable[[], _MallInfo2] | None:
    try:
        function = ctypes.CDLL(None).mallinfo2  # glibc >= 2.33
    except (OSError, AttributeError):
        return None
    function.restype = _MallInfo2
    return function


MALLINFO2 = _mallinfo2()


def footprint() -> dict[str, int]:
    """After a collection: resident memory; Python's allocated blocks (every live object);
    and, with glibc, the C heap's bytes in use (oneflite's C++ allocations land there). The
    last two are exact, where resident memory can hide a small leak in pages an earlier test
    freed. Under AddressSanitizer the C heap is its allocator's, and resident memory, which
    its quarantine and shadow memory inflate, is left out."""
    gc.collect()
    if ASAN_ALLOCATED_BYTES is not None:
        return {"Python blocks": sys.getallocatedblocks(), "C heap bytes": ASAN_ALLOCATED_BYTES()}
    result = {"resident bytes": resident_bytes(), "Python blocks": sys.getallocatedblocks()}
    if MALLINFO2 is not None:
        info = MALLINFO2()
        result["C heap bytes"] = info.uordblks + info.hblkhd
    return result


def growth(call: Callable[[], object], calls: int) -> dict[str, int]:
    """How much each footprint() figure grew over ``calls`` calls, after a warm-up of a quarter
    as many (caches, pools and arenas reach their steady state)."""
    for _ in range(calls // 4):
        call()
    start = footprint()
    for _ in range(calls):
        call()
    end = footprint()
    return {key: end[key] - start[key] for key in start}


def leak_limits(calls: int) -> dict[str, int]:
    # Resident memory is coarse (pages, and pages freed earlier are reused unseen); the other
    # two are exact: one block or 8 bytes a call would be a leak; a few are caches settling.
    return {"resident bytes": 2 * MiB, "Python blocks": calls // 100, "C heap bytes": 8 * calls}


def leaks(grown: dict[str, int], calls: int) -> dict[str, int]:
    limits = leak_limits(calls)
    return {key: value for key, value in grown.items() if value >= limits[key]}


@pytest.mark.parametrize("workload", WORKLOADS)
def test_many_calls_leave_memory_flat(workload):
    context, call = _workloads()[workload]
    calls = CALLS if workload in HEAVY else 10 * CALLS
    with context():
        grown = growth(call, calls)
    print(f"{workload}: {calls} calls grew {grown}")
    assert not leaks(grown, calls), f"{workload}: over {calls} calls memory grew by {grown}"


def test_the_leak_check_sees_64_bytes_a_call_kept_by_python():
    kept: list[bytes] = []
    grown = growth(lambda: kept.append(bytes(64)), CALLS)
    assert "Python blocks" in leaks(grown, CALLS), grown


@pytest.mark.skipif(
    MALLINFO2 is None and ASAN_ALLOCATED_BYTES is None, reason="needs glibc's mallinfo2 or ASan"
)
def test_the_leak_check_sees_64_bytes_a_call_leaked_by_c():
    malloc = ctypes.CDLL(None).malloc
    malloc.restype = ctypes.c_void_p
    pointers: list[int] = []  # kept only to free them afterwards
    try:
        grown = growth(lambda: pointers.append(malloc(64)), CALLS)
    finally:
        free = ctypes.CDLL(None).free
        for pointer in pointers:
            free(ctypes.c_void_p(pointer))
    assert "C heap bytes" in leaks(grown, CALLS), grown


# ---- storage freed when its last owner drops it -------------------------------------------------


def _collected(ref: weakref.ref) -> bool:
    gc.collect()
    return ref() is None


def test_from_numpy_keeps_the_array_alive_exactly_as_long_as_a_tensor_or_view_needs_it():
    array = np.arange(24.0).reshape(4, 6)
    ref = weakref.ref(array)
    t = oneflite.from_numpy(array)
    view = t.transpose(0, 1)[1:, ::2]
    del array
    assert not _collected(ref)
    y = F.softmax(view, 0)  # a new tensor: it must not keep the input's array alive
    del t
    assert not _collected(ref), "a view lost its memory when the tensor it came from was dropped"
    np.testing.assert_array_equal(to_float64(view), np.arange(24.0).reshape(4, 6).T[1:, ::2])
    del view
    assert _collected(ref), "the array outlived every tensor sharing it"
    assert_close(
        to_float64(y), softmax_ref(np.arange(24.0).reshape(4, 6).T[1:, ::2], 0), oneflite.float64
    )


def test_numpy_view_of_a_tensor_keeps_its_storage_alive_after_the_tensor_is_dropped():
    array = np.arange(12.0)
    ref = weakref.ref(array)
    t = oneflite.from_numpy(array)
    exported = t[2:].numpy()
    del t, array
    assert not _collected(ref)
    np.testing.assert_array_equal(exported, np.arange(2.0, 12.0))
    del exported
    assert _collected(ref)


def test_numpy_from_dlpack_keeps_memory_alive_until_both_sides_drop_it():
    array = np.arange(10.0)
    ref = weakref.ref(array)
    t = oneflite.from_numpy(array)
    consumer = np.from_dlpack(t)
    del array
    del t
    assert not _collected(ref), "the DLPack consumer lost its memory when the tensor was dropped"
    np.testing.assert_array_equal(consumer, np.arange(10.0))
    del consumer
    assert _collected(ref)


def test_numpy_from_dlpack_then_dropping_the_consumer_first_also_frees():
    array = np.arange(10.0)
    ref = weakref.ref(array)
    t = oneflite.from_numpy(array)
    consumer = np.from_dlpack(t)
    del array, consumer
    assert not _collected(ref)
    assert t.tolist() == list(np.arange(10.0))
    del t
    assert _collected(ref)


def test_oneflite_from_dlpack_of_a_numpy_array_keeps_it_alive_while_the_tensor_lives():
    array = np.arange(6.0).reshape(2, 3)
    ref = weakref.ref(array)
    t = oneflite.from_dlpack(array)
    del array
    assert not _collected(ref)
    assert_close(
        to_float64(F.softmax(t, 1)), softmax_ref(np.arange(6.0).reshape(2, 3), 1), oneflite.float64
    )
    del t
    assert _collected(ref)


def test_unconsumed_dlpack_capsule_releases_its_tensor():
    array = np.arange(5.0)
    ref = weakref.ref(array)
    capsule = oneflite.from_numpy(array).__dlpack__()
    del array
    assert not _collected(ref)
    del capsule
    assert _collected(ref), "an unconsumed capsule leaked its tensor"


@pytest.mark.parametrize("versioned", [False, True])
def test_consumed_dlpack_capsule_hands_ownership_to_the_new_tensor(versioned):
    array = np.arange(5.0)
    ref = weakref.ref(array)
    t = oneflite.from_numpy(array)
    capsule = t.__dlpack__(max_version=(1, 0) if versioned else None)
    del t, array
    imported = oneflite.from_dlpack(capsule)
    del capsule
    assert not _collected(ref)
    assert imported.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    del imported
    assert _collected(ref)


def test_torch_interop_keeps_memory_alive_until_both_sides_drop_it():
    torch = pytest.importorskip("torch")
    array = np.arange(8.0)
    ref = weakref.ref(array)
    t = oneflite.from_numpy(array)
    consumer = torch.from_dlpack(t)
    del t, array
    assert not _collected(ref)
    assert consumer.tolist() == list(np.arange(8.0))
    del consumer
    assert _collected(ref)

    source = torch.arange(6.0, dtype=torch.float64)
    source_ref = weakref.ref(source)
    imported = oneflite.from_dlpack(source)
    del source
    assert not _collected(source_ref)
    assert imported.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    del imported
    assert _collected(source_ref)


# ---- oneflite-owned memory goes back -----------------------------------------------------------

BIG = 1 << 24  # float32 elements: 64 MiB, above glibc's largest mmap threshold (32 MiB), so its
# memory is mapped on allocation and unmapped on free, and shows in resident memory exactly.


def _big_output() -> oneflite.Tensor:
    """A 64 MiB oneflite-owned tensor, every page written, made from a few bytes of input."""
    x = oneflite.from_numpy(np.broadcast_to(np.float32(0.0), (BIG,)))
    return F.softmax(x, 0)


def test_dropping_the_last_reference_to_a_big_output_returns_its_memory():
    start = settle()
    y = _big_output()
    assert settle() - start > 48 * MiB
    assert float(y[BIG - 1].item()) == pytest.approx(1.0 / BIG)
    del y
    assert settle() - start < 16 * MiB, "a dropped 64 MiB tensor kept its memory"


@pytest.mark.parametrize("holder", ["numpy()", "np.from_dlpack", "view", "capsule"])
def test_big_output_memory_lives_exactly_as_long_as_its_last_holder(holder):
    start = settle()
    y = _big_output()
    if holder == "numpy()":
        kept = y.numpy()
    elif holder == "np.from_dlpack":
        kept = np.from_dlpack(y)
    elif holder == "view":
        kept = y[BIG // 2 :]
    else:
        kept = y.__dlpack__()
    del y
    assert settle() - start > 48 * MiB, f"{holder} lost the memory it holds"
    if holder in ("numpy()", "np.from_dlpack"):
        assert float(kept[-1]) == pytest.approx(1.0 / BIG)
    del kept
    assert settle() - start < 16 * MiB, f"memory held by {holder} was not returned"


def test_kept_tensor_from_a_python_backend_is_readable_and_freed_when_dropped():
    kept: list[oneflite.Tensor] = []

    def keeper(x: oneflite.Tensor, y: oneflite.Tensor) -> None:
        _numpy_softmax(x, y)
        kept.append(x)

    values = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    with _python_backend(keeper, "memory_keeper"):
        with pytest.raises(RuntimeError, match="kept a reference"):
            F.softmax(oneflite.tensor(values), 1)
    (x,) = kept
    np.testing.assert_array_equal(x.numpy(), values)
    ref = weakref.ref(x)
    kept.clear()
    del x
    assert _collected(ref)
    y = F.softmax(oneflite.tensor(values), 1)  # and the framework works as before
    assert_close(to_float64(y), softmax_ref(values.astype(np.float64), 1), oneflite.float32)


def test_unregistered_python_backend_is_released_by_the_call_that_drops_it():
    # After unregister, the next call drops the cached kernel that holds the backend, with the GIL
    # released and here on another thread; the function must be released by the time it returns.
    def backend(x: oneflite.Tensor, y: oneflite.Tensor) -> None:
        _numpy_softmax(x, y)

    ref = weakref.ref(backend)
    x = oneflite.tensor(np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32))
    with _python_backend(backend, "memory_released"):
        F.softmax(x, 1)  # caches a kernel whose primitive holds the function
    del backend
    assert not _collected(ref)
    worker = threading.Thread(target=F.softmax, args=(x, 1))
    worker.start()
    worker.join(timeout=60)
    assert _collected(ref)


# ---- memory safety: read-only memory, and sizes past what memory can hold --------------------


def test_numpy_of_a_tensor_from_a_read_only_array_is_read_only():
    # NumPy marks views of read-only memory read-only; a round trip through oneflite must too,
    # or a write through the new array changes immutable data (bytes, broadcast views) or, for a
    # read-only mapping, crashes (see the next test).
    for array in [
        np.frombuffer(bytes(64), dtype=np.float64),
        np.broadcast_to(np.arange(3.0), (4, 3)),
        np.arange(6.0).reshape(2, 3)[::-1].copy()[:, ::2],
    ]:
        if array.flags.writeable:  # the last one: made read-only by hand
            array.flags.writeable = False
        t = oneflite.from_numpy(array)
        assert not t.numpy().flags.writeable, f"{array!r} came back writeable"
        assert not t[1:].numpy().flags.writeable


def test_dlpack_export_of_a_tensor_from_a_read_only_array_is_read_only():
    array = np.frombuffer(bytes(64), dtype=np.float64)
    consumer = np.from_dlpack(oneflite.from_numpy(array))
    assert not consumer.flags.writeable


_READ_ONLY_MAPPING = """
import mmap, os, sys, tempfile
import numpy as np
import oneflite

path = os.path.join(tempfile.mkdtemp(), "values.bin")
np.arange(16.0).tofile(path)
array = np.memmap(path, dtype=np.float64, mode="r")  # mapped read-only by the OS
for label, view in [("numpy()", lambda t: t.numpy()), ("np.from_dlpack", np.from_dlpack)]:
    out = view(oneflite.from_numpy(array))
    try:
        out[0] = 5.0
        print(label, "wrote through a read-only mapping")
    except ValueError:
        print(label, "refused")
print("survived")
"""


def test_writing_through_a_read_only_mapping_does_not_crash(tmp_path):
    result = run_python("-c", _READ_ONLY_MAPPING, cwd=tmp_path)
    assert result.returncode == 0, f"exit status {result.returncode}: {result.stderr[-2000:]}"
    assert result.stdout.split() == "numpy() refused np.from_dlpack refused survived".split()


# A DLPack capsule built by hand, as any producer (torch's expand(), say) may hand one over.
_DLPACK_CAPSULE = """
import ctypes
import oneflite
import oneflite.nn.functional as F


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor)))]
KEEP = []  # the capsule borrows these: keep them for the life of the process


def capsule(shape, strides):
    # A float32 CPU tensor of `shape` and `strides` over 16 bytes of memory.
    data = (ctypes.c_float * 4)(1.0, 2.0, 3.0, 4.0)
    sizes = (ctypes.c_int64 * len(shape))(*shape)
    steps = (ctypes.c_int64 * len(strides))(*strides)
    managed = DLManagedTensor()
    managed.dl_tensor = DLTensor(ctypes.cast(data, ctypes.c_void_p), DLDevice(1, 0), len(shape),
                                 DLDataType(2, 32, 1), sizes, steps, 0)
    KEEP.extend([data, sizes, steps, managed])
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new(ctypes.addressof(managed), b"dltensor", None)
"""


def _run_with_capsules(tmp_path, body: str):
    script = _DLPACK_CAPSULE + textwrap.dedent(body)
    return run_python("-c", script, cwd=tmp_path)


def test_capsule_helper_builds_a_working_tensor(tmp_path):
    result = _run_with_capsules(
        tmp_path,
        """
        t = oneflite.from_dlpack(capsule((2, 2), (0, 1)))  # one row, broadcast twice
        print(F.softmax(t, 1).tolist())
        """,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    expected = softmax_ref(np.array([[1.0, 2.0], [1.0, 2.0]]), 1)
    np.testing.assert_allclose(eval(result.stdout), expected, rtol=1e-6)


def test_softmax_of_a_broadcast_view_too_big_for_memory_raises_instead_of_crashing(tmp_path):
    # 2**31 x 2**31 float32 is 2**64 bytes once materialized: the byte count wraps to 0 in
    # size_t unless checked, and the copy then writes far past a tiny allocation.
    result = _run_with_capsules(
        tmp_path,
        """
        t = oneflite.from_dlpack(capsule((2**31, 2**31), (0, 0)))
        for dim in (1, 0):
            try:
                F.softmax(t, dim)
                print("no error")
            except (RuntimeError, MemoryError, ValueError, OverflowError) as error:
                print(type(error).__name__)
        print("survived")
        """,
    )
    assert result.returncode == 0, f"exit status {result.returncode}: {result.stderr[-2000:]}"
    assert result.stdout.split()[-1] == "survived" and "no error" not in result.stdout


@pytest.mark.parametrize(
    "shape",
    [(2**62, 4), (2**32, 2**32), (-5, 2), (3, -1)],
    ids=["numel-past-int64", "numel-2**64", "negative-size", "negative-last-size"],
)
def test_dlpack_tensor_with_an_impossible_shape_is_rejected(tmp_path, shape):
    # 2**62 * 4 elements wrap an int64 element count to 0: softmax then "succeeds" on an empty
    # tensor whose shape claims 2**64 elements. Negative sizes make negative element counts.
    result = _run_with_capsules(
        tmp_path,
        f"""
        try:
            t = oneflite.from_dlpack(capsule({shape!r}, {(0,) * len(shape)!r}))
            print("accepted", t.shape, t.numel())
        except (ValueError, TypeError, RuntimeError, OverflowError) as error:
            print("rejected", type(error).__name__)
        """,
    )
    assert result.returncode == 0, f"exit status {result.returncode}: {result.stderr[-2000:]}"
    assert result.stdout.startswith("rejected"), result.stdout


# ---- CPU blocks kept for reuse ----------------------------------------------------------------


def test_a_dropped_cpu_block_of_1_mib_or_more_goes_to_the_next_tensor_of_its_size():
    values = np.random.default_rng(7).standard_normal((1000, 999))
    x = make_tensor(values, oneflite.float32, "cpu")
    oneflite.cpu.empty_cache()
    y = F.softmax(x, 1)
    address = y.data_ptr()
    assert oneflite.cpu.memory_cached() == 0
    del y
    gc.collect()
    assert oneflite.cpu.memory_cached() == _rounded(1000 * 999 * 4)
    z = F.log_softmax(x, 1)
    assert z.data_ptr() == address
    assert oneflite.cpu.memory_cached() == 0
    assert_close(to_float64(z), log_softmax_ref(values.astype(np.float32), 1), oneflite.float32,
                 log=True)


def test_cpu_blocks_under_1_mib_are_freed_not_kept():
    oneflite.cpu.empty_cache()
    y = F.softmax(make_tensor(np.ones((255, 1024)), oneflite.float32, "cpu"), 1)  # 1020 KiB
    del y
    gc.collect()
    assert oneflite.cpu.memory_cached() == 0


def test_cpu_empty_cache_frees_the_kept_blocks():
    x = make_tensor(np.zeros((256, 65536)), oneflite.float32, "cpu")
    start = settle()
    y = F.softmax(x, 1)
    del y
    gc.collect()
    assert oneflite.cpu.memory_cached() == 64 * MiB
    if ASAN_ALLOCATED_BYTES is None:
        assert resident_bytes() - start >= 48 * MiB  # kept: still resident
    oneflite.cpu.empty_cache()
    assert oneflite.cpu.memory_cached() == 0
    assert settle() - start < 16 * MiB


def _minor_faults() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts Linux page faults")
def test_repeated_big_cpu_softmax_writes_into_pages_already_mapped():
    # Between the calls NumPy allocates and frees big temporaries, which moves the C library's
    # heap about; a 16 MiB output that came from it afresh each call took a page fault on every
    # 4 KiB it wrote (4096 a call). A kept block is mapped already.
    x = make_tensor(np.random.default_rng(8).standard_normal((32768, 128)), oneflite.float32,
                    "cpu")
    values = x.numpy()
    faults = []
    for _ in range(8):
        shifted = values - values.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        e / e.sum(axis=1, keepdims=True)
        del shifted, e
        before = _minor_faults()
        y = F.softmax(x, 1)
        faults.append(_minor_faults() - before)
        del y
    assert max(faults[1:]) < 64, f"page faults a call: {faults}"


# ---- CUDA memory -------------------------------------------------------------------------------


class _CudaPool:
    """Bytes in use in a device's default stream-ordered memory pool, where oneflite allocates
    (cudaMallocAsync), read through the driver API with ctypes; None where that is impossible.
    The pool counts blocks oneflite keeps for reuse (oneflite.cuda.memory_cached) as in use, so
    used() empties that cache first, unless asked not to: then used memory is oneflite's live
    tensors (and anything else allocated from the pool, such as torch's, which has its own)."""

    CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7

    def __init__(self, index: int = 0) -> None:
        self.pool = None
        try:
            self.cuda = ctypes.CDLL("libcuda.so.1")
        except OSError:
            return
        device = ctypes.c_int()
        pool = ctypes.c_void_p()
        if self.cuda.cuInit(0) != 0 or self.cuda.cuDeviceGet(ctypes.byref(device), index) != 0:
            return
        if self.cuda.cuDeviceGetDefaultMemPool(ctypes.byref(pool), device) != 0:
            return
        self.pool = pool

    def used(self, empty_cache: bool = True) -> int | None:
        if self.pool is None:
            return None
        oneflite.cuda.synchronize()  # frees are stream-ordered: let them happen
        gc.collect()
        if empty_cache:
            oneflite.cuda.empty_cache()
        oneflite.cuda.synchronize()
        value = ctypes.c_uint64()
        status = self.cuda.cuMemPoolGetAttribute(
            self.pool, self.CU_MEMPOOL_ATTR_USED_MEM_CURRENT, ctypes.byref(value)
        )
        return value.value if status == 0 else None

    def total(self) -> int:
        """The device's memory in bytes."""
        device = ctypes.c_int()
        total = ctypes.c_size_t()
        assert self.cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
        assert self.cuda.cuDeviceTotalMem_v2(ctypes.byref(total), device) == 0
        return total.value


needs_cuda = pytest.mark.skipif(not oneflite.cuda.is_available(), reason="no CUDA GPU")


@pytest.fixture
def cuda_pool() -> _CudaPool:
    pool = _CudaPool()
    if pool.used() is None:
        pytest.skip("can't read the CUDA memory pool's counters through libcuda")
    probe = oneflite.tensor(np.zeros(16 * MiB, dtype=np.uint8).view(np.float32), device="cuda")
    seen = pool.used()
    del probe
    if seen is None or pool.used() is None or seen - pool.used() < 16 * MiB:
        pytest.skip("oneflite's CUDA allocations don't show in the default pool's counters")
    return pool


@needs_cuda
def test_cuda_memory_in_use_returns_to_its_baseline_after_many_calls(cuda_pool):
    rng = np.random.default_rng(2)
    inputs = [
        make_tensor(rng.standard_normal(shape), dtype, "cuda")
        for shape in [(3, 7), (64, 1025), (2, 3, 4099), (1, 100003)]
        for dtype in (oneflite.float16, oneflite.float32)
    ]

    def calls() -> None:
        for x in inputs:
            F.softmax(x, -1)
            F.log_softmax(x, 0)
            F.softmax(x[..., 1:], -1, dtype=oneflite.float64)
            _expect(IndexError, lambda: F.softmax(x, 7))  # noqa: B023

    calls()  # warm up: whatever oneflite keeps after a first call of each kind
    baseline = cuda_pool.used()
    for _ in range(max(1, CALLS // 200)):
        calls()
    assert cuda_pool.used() == baseline, "CUDA memory in use grew over many calls"


@needs_cuda
def test_dropped_cuda_tensors_return_their_memory(cuda_pool):
    baseline = cuda_pool.used()
    x = make_tensor(
        np.random.default_rng(4).standard_normal((256, 65536)), oneflite.float32, "cuda"
    )
    y = F.softmax(x, 1)
    z = F.log_softmax(x.transpose(0, 1), 1)
    assert cuda_pool.used() - baseline >= 3 * 64 * MiB
    expected = softmax_ref(to_float64(x[:4]), 1)
    del x
    assert_close(to_float64(y[:4]), expected, oneflite.float32)
    del y, z
    assert cuda_pool.used() == baseline


@needs_cuda
def test_cuda_dlpack_consumer_keeps_memory_alive_until_both_sides_drop_it(cuda_pool):
    torch = pytest.importorskip("torch")
    baseline = cuda_pool.used()
    y = F.softmax(make_tensor(np.zeros((1024, 16384)), oneflite.float32, "cuda"), 1)
    consumer = torch.from_dlpack(y)
    del y
    assert cuda_pool.used() - baseline >= 64 * MiB
    assert float(consumer[-1, -1]) == pytest.approx(1 / 16384)
    del consumer
    assert cuda_pool.used() == baseline


@needs_cuda
def test_cuda_log_softmax_of_a_view_is_correct_after_the_base_is_dropped(cuda_pool):
    values = np.random.default_rng(5).standard_normal((8, 300))
    base = make_tensor(values, oneflite.float32, "cuda")
    view = base[2:, 10:]
    del base
    y = F.log_softmax(view, 1)
    assert_close(
        to_float64(y),
        log_softmax_ref(values.astype(np.float32)[2:, 10:], 1),
        oneflite.float32,
        log=True,
    )


# ---- CUDA: the blocks oneflite keeps for reuse -------------------------------------------------


def _rounded(nbytes: int) -> int:
    return (nbytes + 511) // 512 * 512


@needs_cuda
def test_a_dropped_cuda_tensors_block_goes_to_the_next_tensor_of_its_size():
    values = np.random.default_rng(6).standard_normal((1000, 999))
    x = make_tensor(values, oneflite.float32, "cuda")
    y = F.softmax(x, 1)
    block = _rounded(1000 * 999 * 4)
    address = y.data_ptr()
    allocated = oneflite.cuda.memory_allocated()
    cached = oneflite.cuda.memory_cached()
    del y
    gc.collect()
    assert oneflite.cuda.memory_allocated() == allocated - block
    assert oneflite.cuda.memory_cached() == cached + block
    z = F.log_softmax(x, 1)  # queued behind the softmax that wrote the block before
    assert z.data_ptr() == address
    assert oneflite.cuda.memory_allocated() == allocated
    assert oneflite.cuda.memory_cached() == cached
    assert_close(to_float64(z), log_softmax_ref(values.astype(np.float32), 1), oneflite.float32,
                 log=True)


@needs_cuda
def test_empty_cache_hands_the_kept_blocks_back_to_the_pool(cuda_pool):
    baseline = cuda_pool.used()
    y = F.softmax(make_tensor(np.zeros((256, 65536)), oneflite.float32, "cuda"), 1)
    del y
    assert oneflite.cuda.memory_cached() >= 64 * MiB
    assert cuda_pool.used(empty_cache=False) - baseline >= 64 * MiB  # kept: still the pool's
    oneflite.cuda.empty_cache()
    assert oneflite.cuda.memory_cached() == 0
    assert cuda_pool.used(empty_cache=False) == baseline


@needs_cuda
def test_the_kept_blocks_never_pass_an_eighth_of_the_device(cuda_pool):
    # Blocks of a fiftieth of the device, each of another size, dropped one after another: the
    # cache evicts the older sizes rather than growing past its limit.
    limit = cuda_pool.total() // 8
    step = cuda_pool.total() // 50 // 512 * 512
    for k in range(20):
        t = oneflite._C._empty([(step + 512 * k) // 4], oneflite.float32, oneflite.device("cuda"))
        del t
        assert oneflite.cuda.memory_cached() <= limit
    assert oneflite.cuda.memory_cached() >= step
    oneflite.cuda.empty_cache()


@needs_cuda
@pytest.mark.parametrize("device", ["cuda", "cuda:0", 0, None])
def test_memory_counters_take_any_cuda_device_spelling(device):
    x = oneflite._C._empty([1000], oneflite.float32, oneflite.device("cuda"))
    assert oneflite.cuda.memory_allocated(device) >= _rounded(4000)
    assert oneflite.cuda.memory_cached(device) >= 0
    del x
    oneflite.cuda.empty_cache(device)
    assert oneflite.cuda.memory_cached(device) == 0
