"""Large tensors on the GPU: more than 2**31 and 2**32 elements, and rows longer than 65536.

These need a CUDA GPU and tens of GB of its memory, so they run only when asked:

    ONEFLITE_LARGE_TESTS=1 python -m pytest tests/test_large.py

Each test skips when the GPU's free memory (plus what oneflite's pool holds unused) is short of
what it needs. Inputs are built on the GPU from a small random block of rows repeated with a
stride-0 view, so the host never holds a big array and the GPU time stays small; the
materializing copy goes through the permute kernel's 64-bit index path on the way. Results are
checked on sampled rows (first, last, those straddling element 2**31 and 2**32, and random
ones) against the float64 NumPy reference.
"""

from __future__ import annotations

import ctypes
import gc
import os

import numpy as np
import pytest
from conftest import assert_close, to_float64
from reference import log_softmax_ref, softmax_ref

import oneflite
import oneflite.nn.functional as F

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("ONEFLITE_LARGE_TESTS", "") != "1",
        reason="large-tensor GPU tests run only with ONEFLITE_LARGE_TESTS=1",
    ),
    pytest.mark.skipif(not oneflite.cuda.is_available(), reason="no CUDA GPU"),
]

GiB = 1 << 30
DEVICE = "cuda"
OPS = {"softmax": (F.softmax, softmax_ref), "log_softmax": (F.log_softmax, log_softmax_ref)}


class _Driver:
    """The few CUDA driver calls the tests need, through ctypes (oneflite links the runtime
    statically, so there is no shared libcudart to ask)."""

    USED, RESERVED = 7, 5  # CU_MEMPOOL_ATTR_USED_MEM_CURRENT, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT

    def __init__(self, index: int = 0) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.device = ctypes.c_int()
        self._check(self.lib.cuInit(0))
        self._check(self.lib.cuDeviceGet(ctypes.byref(self.device), index))
        self.pool = ctypes.c_void_p()
        self._check(self.lib.cuDeviceGetDefaultMemPool(ctypes.byref(self.pool), self.device))

    @staticmethod
    def _check(status: int) -> None:
        if status != 0:
            raise OSError(f"CUDA driver call failed with status {status}")

    def pool_bytes(self, attribute: int) -> int:
        value = ctypes.c_uint64()
        self._check(self.lib.cuMemPoolGetAttribute(self.pool, attribute, ctypes.byref(value)))
        return value.value

    def trim_pool(self) -> None:
        self._check(self.lib.cuMemPoolTrimTo(self.pool, ctypes.c_size_t(0)))

    def free_bytes(self) -> int:
        context = ctypes.c_void_p()
        self._check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), self.device))
        try:
            self._check(self.lib.cuCtxPushCurrent_v2(context))
            free, total = ctypes.c_size_t(), ctypes.c_size_t()
            try:
                self._check(self.lib.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)))
            finally:
                self.lib.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
        finally:
            self.lib.cuDevicePrimaryCtxRelease_v2(self.device)
        return free.value


def _driver() -> _Driver | None:
    try:
        return _Driver()
    except OSError:
        return None


@pytest.fixture(autouse=True)
def gpu_memory():
    """Returns the memory oneflite's pool keeps cached to the driver around each test, and
    gives the test a function telling whether ``n`` bytes are available."""
    driver = _driver()

    def release() -> None:
        gc.collect()
        oneflite.cuda.synchronize()
        if driver is not None:
            driver.trim_pool()

    def require(n: int) -> None:
        release()
        if driver is None:
            pytest.skip("can't query GPU memory through libcuda")
        try:
            unused_in_pool = driver.pool_bytes(driver.RESERVED) - driver.pool_bytes(driver.USED)
            available = driver.free_bytes() + unused_in_pool
        except OSError as error:
            pytest.skip(f"can't query GPU memory through libcuda: {error}")
        if available < n + GiB:
            pytest.skip(
                f"needs {(n + GiB) / GiB:.1f} GiB of GPU memory, "
                f"{available / GiB:.1f} GiB available"
            )

    release()
    yield require
    release()


def _base_rows(rows: int, cols: int, dtype: oneflite.dtype, seed: int) -> np.ndarray:
    """A (rows, cols) block with row-specific values, some -inf, one big value a row."""
    from strategies import numpy_dtype

    rng = np.random.default_rng(seed)
    values = rng.standard_normal((rows, cols)) * 3 + rng.standard_normal((rows, 1))
    values[::7, :: max(1, cols // 5)] = -np.inf
    values[:, -1] = np.where(np.arange(rows) % 3 == 0, 20.0, values[:, -1])
    values[1, rng.integers(cols)] = 1e4 if dtype != oneflite.float16 else 6e4
    return values.astype(numpy_dtype(dtype))


def _sample_rows(rows: int, cols: int, seed: int) -> list[int]:
    picks = {0, 1, rows // 2, rows - 2, rows - 1}
    for boundary in (2**31, 2**32):
        if boundary < rows * cols:
            r = boundary // cols  # the row holding element `boundary`
            picks |= {r - 1, r, r + 1}
    picks |= set(np.random.default_rng(seed).integers(0, rows, 24).tolist())
    return sorted(p for p in picks if 0 <= p < rows)


def _check_tiled(
    dtype: oneflite.dtype, block_rows: int, cols: int, repeats: int, seed: int, require,
    path: str | None = None,
) -> None:
    rows = block_rows * repeats
    require(2 * rows * cols * dtype_size(dtype))  # the materialized input and the output
    block = _base_rows(block_rows, cols, dtype, seed)
    block64 = block.astype(np.float64)
    base = oneflite.tensor(block, device=DEVICE)
    # (repeats, block_rows, cols) over the same block: stride 0 across repeats.
    x = base._as_strided([repeats, block_rows, cols], [0, cols, 1], 0)
    assert x.numel() == rows * cols
    for name, (op, ref) in OPS.items():
        with oneflite.trace() as t:
            y = op(x, -1)
        if path is not None:  # the CUDA plan the trace reports, for the softmax itself
            plans = [e.text for e in t.events if e.layer == "primitive" and "rows=" in e.text]
            assert any(f": {path}:" in p for p in plans), plans
        assert y.shape == (repeats, block_rows, cols) and y.is_contiguous()
        for r in _sample_rows(rows, cols, seed):
            i, j = divmod(r, block_rows)
            assert_close(
                to_float64(y[i, j]),
                ref(block64[j], 0),
                dtype,
                log=name == "log_softmax",
                err_msg=f"{name}: row {r} of {rows}",
            )
        del y


def dtype_size(dtype: oneflite.dtype) -> int:
    return {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}[dtype.name]


def test_float16_softmax_of_3_times_2_to_the_30_elements(gpu_memory):
    # 2048 x 1024 rows of 1536: 3 * 2**30 elements (> 2**31), rows short enough for the warp path.
    _check_tiled(oneflite.float16, 1024, 1536, 2048, seed=1, require=gpu_memory)


def test_float16_softmax_of_more_than_2_to_the_32_elements(gpu_memory):
    # 1024 x 1024 rows of 4099: 4,298,113,024 elements (> 2**32), the shared-memory path.
    _check_tiled(oneflite.float16, 1024, 4099, 1024, seed=2, require=gpu_memory)


def test_bfloat16_softmax_of_more_than_2_to_the_32_elements_on_the_warp_tile_path(gpu_memory):
    # 41944 x 1024 rows of 100: 4,295,065,600 elements (> 2**32; 2**31 words past the first),
    # the warp_tile path (50 words a row on 2 lanes), whose tiles are spans of whole rows.
    _check_tiled(oneflite.bfloat16, 1024, 100, 41944, seed=4, require=gpu_memory, path="warp_tile")


def test_bfloat16_softmax_of_more_than_2_to_the_32_elements_on_the_block_registers_path(
    gpu_memory,
):
    # 513 x 1024 rows of 8192: 4,303,355,904 elements (> 2**32), the 16-bit block_registers
    # path (512 threads of 16 values), whose rows start at 64-bit offsets.
    _check_tiled(oneflite.bfloat16, 1024, 8192, 513, seed=5, require=gpu_memory,
                 path="block_registers")


def test_float32_softmax_of_more_than_2_to_the_31_elements_with_rows_past_shared_memory(
    gpu_memory,
):
    # 513 x 64 rows of 65537 floats (256 KiB a row, more than a block's shared memory):
    # 2,151,710,784 elements (> 2**31), the online path.
    _check_tiled(oneflite.float32, 64, 65537, 513, seed=3, require=gpu_memory)


@pytest.mark.parametrize("cols", [65537, 100003, 262144, 1048576])
@pytest.mark.parametrize(
    "dtype",
    [oneflite.float16, oneflite.bfloat16, oneflite.float32, oneflite.float64],
    ids=lambda d: d.name,
)
def test_rows_longer_than_65536_match_the_reference(gpu_memory, dtype, cols):
    gpu_memory(4 * 5 * cols * 8)
    block = _base_rows(5, cols, dtype, seed=cols)
    x = oneflite.tensor(block, device=DEVICE)
    # x[1:] starts one row in: off a 16-byte boundary when cols is odd.
    for label, view, values in [("aligned", x, block), ("offset", x[1:], block[1:])]:
        for name, (op, ref) in OPS.items():
            y = op(view, 1)
            assert_close(
                to_float64(y),
                ref(values.astype(np.float64), 1),
                dtype,
                log=name == "log_softmax",
                err_msg=f"{name} {label}",
            )
    # And along dim 0, through the transposes.
    y = F.softmax(x.transpose(0, 1), 1)
    assert_close(to_float64(y), softmax_ref(block.astype(np.float64).T, 1), dtype)
