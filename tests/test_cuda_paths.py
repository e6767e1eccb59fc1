"""Every CUDA kernel path on small shapes: the selection tools/compute_sanitizer.sh runs under
memcheck, racecheck, initcheck and synccheck (so it keeps launches few and small), and a
quick check in the normal suite.

Row lengths are picked to reach each rung of the warp ladder (every thread-group width, one and
two rows per access, each packs-per-lane count) for every dtype, each rung of the warp_tile
ladder (lanes a row x words a lane) for float and the 16-bit types, then the block paths:
block_registers at each of its shapes (float's eight, the 16-bit types' five; 128 threads of
one pack, for float rows of 512 columns and 16-bit rows of 960-1024, need many rows and have
tests of their own) and with a cached tail, the shared-memory path (16-bit rows at three of its
block sizes) and the online path for rows past shared memory. Each shape runs from an aligned
start and from one row in (off a 16-byte boundary for most lengths), for softmax and
log_softmax; the last test checks from oneflite's own trace that every path was reached.
Transposes (the permute kernel) and dtype= casts (the cast kernel) are covered too. Skips
without a CUDA GPU.
"""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np
import pytest
from conftest import assert_close, make_tensor, to_float64
from reference import log_softmax_ref, softmax_ref

import oneflite
import oneflite.nn.functional as F

pytestmark = pytest.mark.skipif(not oneflite.cuda.is_available(), reason="no CUDA GPU")
DEVICE = "cuda"

FLOATS = [oneflite.float16, oneflite.bfloat16, oneflite.float32, oneflite.float64]
ALL = [*FLOATS, oneflite.int32, oneflite.int64, oneflite.bool]
OPS = {"softmax": (F.softmax, softmax_ref), "log_softmax": (F.log_softmax, log_softmax_ref)}

# Row lengths reaching every warp rung of every dtype (16-byte packs: 8 halves, 4 floats, 2 doubles;
# the rung is the first whose lanes x packs cover the row's whole packs, cols // pack, its edge
# columns held beside them, up to the rung's bound: the 16-bit types' 8 x 4 and 16 x 4 take 17-20
# and 33-48 packs, 16 x 4 33-51 where rows have edge columns), every warp_tile rung (a row of W * K
# 32-bit words, K odd, takes W lanes of the first of 9, 13, 17 and 25 words at or above K, if
# K >= 7: 16-bit rows of 2 * W * K columns, float rows of W * K, for W = 1, 2, 4, 8; 14 columns
# reach the 7-word end), each block_registers shape, float's (1000, 1025, 1534, 2100, 3072, 8192,
# 12345 and 32768 columns; 5800 and 10000 on 512 threads where the DRAM is wide, a shared-memory
# path elsewhere) and the 16-bit types' (3072, 3300, 4000, 5000 and 7500 columns; 8192 too),
# block_registers with a cached tail in shared memory (16-bit 12345 columns, and 16384 where the
# DRAM is wide, on 256 threads and 65536 on 512, float 40001 and 81920 on 1024), the shared-memory
# path (double from 258, float from 4097, half from 2049 and bfloat16 from 3073 where no register
# path takes the row: 16-bit rows on 64 threads up to 5120 columns, as half's 2100, 128 at 9000, 256
# at 20000) and the online path (float 65536 and past 90112 columns, 16-bit past 65536, double
# ~29k).
COLS = [1, 2, 3, 5, 6, 9, 10, 12, 13, 14, 17, 18, 20, 25, 26, 31, 33, 34, 36, 50, 52, 64, 65, 68,
        72, 96, 100, 104, 129, 136, 144, 150, 200, 208, 254, 257, 272, 300, 400, 506, 513, 1000,
        1025, 1534, 2100, 2500, 3072, 3300, 4000, 4097, 5000, 5800, 7500, 8192, 9000, 10000, 12345,
        16384, 20000, 32768, 40001, 65536, 81920, 100003, 262144]  # fmt: skip
TILE_WIDTHS = (1, 2, 4, 8)
TILE_WORDS = (9, 13, 17, 25)

# What each aligned launch's plan said, per dtype: filled by the tests, read by the last one.
PLANS: dict[str, set[str]] = defaultdict(set)
EXPECTED_LAUNCHES = len(COLS) * len(FLOATS) * len(OPS)
LAUNCHES: set[tuple] = set()


def _rows(cols: int) -> int:
    # Short rows: many of them, so several blocks run and a row pair is left half-full (odd);
    # long rows: few, to keep the sanitizers quick.
    return 301 if cols <= 64 else 5 if cols <= 16384 else 3


def _values(rows: int, cols: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((rows, cols)) * 4
    values[0, :: max(1, cols // 3)] = -np.inf  # -inf entries, and some finite ones
    if cols > 1:
        values[0, -1] = 1.0
    values[-1, rng.integers(cols)] = 1e4  # one dominant value
    if rows > 3:
        values[2, :] = -np.inf  # a row of -inf only: NaN
    return values


def _plan(trace: oneflite.Trace) -> list[str]:
    return [e.text for e in trace.events if e.layer == "primitive" and "rows=" in e.text]


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("cols", COLS)
def test_softmax_kernel_path_matches_the_reference(cols, dtype, kind):
    op, ref = OPS[kind]
    values = _values(_rows(cols), cols, seed=cols)
    x = make_tensor(values, dtype, DEVICE)
    with oneflite.trace() as t:
        y = op(x, -1)
    plans = _plan(t)
    assert len(plans) == 1, plans
    PLANS[dtype.name].add(plans[0])
    LAUNCHES.add((cols, dtype.name, kind))
    assert_close(
        to_float64(y), ref(to_float64(x), 1), dtype, log=kind == "log_softmax", err_msg=plans[0]
    )
    # From one row in: x no longer starts on a 16-byte boundary unless a row is a multiple of
    # 16 bytes, and y's alignment differs from x's.
    offset = x[1:]
    assert_close(
        to_float64(op(offset, -1)),
        ref(to_float64(offset), 1),
        dtype,
        log=kind == "log_softmax",
        err_msg=f"offset: {plans[0]}",
    )


@pytest.mark.parametrize(
    ("dtype", "cols", "rows"),
    [
        (oneflite.float32, 8192, 300),  # 32 KiB rows: not staggered
        (oneflite.float32, 12345, 300),  # block_registers, two blocks an SM
        (oneflite.float32, 65536, 140),  # block_online, one block an SM
        (oneflite.float16, 32768, 600),  # block_smem
        (oneflite.bfloat16, 65536, 300),  # block_registers with a tail
        (oneflite.float64, 8000, 300),  # block_smem
    ],
    ids=lambda v: getattr(v, "name", v),
)
def test_first_wave_stagger_leaves_results_unchanged(dtype, cols, rows):
    # Block paths start their first wave's blocks in groups a few microseconds apart when a row
    # has 48 KiB or more (StaggerFirstWave); more rows than the first wave, so later blocks
    # start at once behind the staggered ones.
    values = np.random.default_rng(cols).standard_normal((rows, cols)) * 4
    x = make_tensor(values, dtype, DEVICE)
    with oneflite.trace() as t:
        y = F.softmax(x, -1)
    plans = _plan(t)
    assert len(plans) == 1, plans
    staggered = re.search(r" stagger=4x(\d+)clk", plans[0])
    assert (staggered is not None) == (cols * dtype.itemsize >= 48 * 1024), plans[0]
    if staggered:
        assert int(staggered.group(1)) > 0, plans[0]
    assert_close(to_float64(y), softmax_ref(to_float64(x), 1), dtype, err_msg=plans[0])


def _sm_count() -> int:
    text = oneflite._C._device_backends()["cuda"]
    return int(re.search(r"cuda:0 .*?, (\d+) SMs", text).group(1))


def _narrow_dram() -> bool:
    # cuda:0's DRAM is narrow for its SMs (an H100's 25 GB/s an SM, not an H200's 36): under the
    # planner's kNarrowDramGBpsPerSm, 30 GB/s an SM, which several of its rules depend on.
    text = oneflite._C._device_backends()["cuda"]
    gbps = int(re.search(r"cuda:0 .*?, (\d+) GB/s peak DRAM", text).group(1))
    return gbps / _sm_count() < 30


# block_registers' kernel of a block a row (kFloatOneRowShapes): float rows of whole packs that
# fill one of these shapes exactly, where the DRAM is narrow, on launches of at most 2.5 MiB of
# x an SM (kOneRowMostBytesPerSm).
ONE_ROW_SHAPES = {
    768: "cols_per_thread=12 block=64",
    1024: "cols_per_thread=8 block=128",
    1536: "cols_per_thread=12 block=128",
    2048: "cols_per_thread=16 block=128",
    4096: "cols_per_thread=16 block=256",
}
ONE_ROW_MOST_BYTES_PER_SM = 5 * 2**20 // 2


# The warp path's kernel of a group a row (kWarpOneRowRules), where the DRAM is narrow: rows of
# exactly 32 lanes times 1-4 packs, or 16 lanes times 1 or 2 (two rows a warp), from a 16-byte
# boundary, by (float32?, cols): the rung's words, its lanes, whether log_softmax alone takes
# it, and the rows an SM from which block_registers' 128 x 1 takes the rows instead (None: no
# bound).
WARP_ONE_ROW = {
    (True, 128): ("pack=4 cols_per_thread=8", 16, False, None),
    (True, 256): ("pack=4 cols_per_thread=8", 32, False, None),
    (True, 384): ("pack=4 cols_per_thread=12", 32, False, None),
    (True, 512): ("pack=4 cols_per_thread=16", 32, False, 512),  # kFloat128x1MinRowsPerSm
    (False, 128): ("pack=8 cols_per_thread=8", 16, False, None),
    (False, 256): ("pack=8 cols_per_thread=8", 32, True, None),
    (False, 512): ("pack=8 cols_per_thread=16", 32, False, None),
    (False, 1024): ("pack=8 cols_per_thread=32", 32, False, 1024),  # k16BitOneRowMostRowsPerSm
}
WARP_ONE_ROW_CASES = [
    (dtype, cols)
    for dtype in (oneflite.float32, oneflite.float16, oneflite.bfloat16)
    for (is_float, cols) in WARP_ONE_ROW
    if is_float == (dtype == oneflite.float32)
]


def _warp_one_row(kind: str, dtype: oneflite.dtype, cols: int, rows: int) -> str | None:
    """The start of the plan of `rows` aligned rows of `cols` on the warp path's one-row kernel,
    up to its grid, or None where they do not take it."""
    entry = WARP_ONE_ROW.get((dtype == oneflite.float32, cols))
    if entry is None or dtype == oneflite.float64 or not _narrow_dram():
        return None
    words, width, log_only, most_per_sm = entry
    if (log_only and kind != "log_softmax") or (
        most_per_sm is not None and rows >= most_per_sm * _sm_count()
    ):
        return None
    return f"warp: {words} thread_group_width={width} rows_per_access=1 block=128 one_row"


def _one_row(cols: int, rows: int) -> str | None:
    """The shape `rows` float rows of `cols` from a 16-byte boundary run on by the one-row
    kernel, or None where they do not take it."""
    if cols not in ONE_ROW_SHAPES or not _narrow_dram():
        return None
    fits = rows * cols * 4 <= ONE_ROW_MOST_BYTES_PER_SM * _sm_count()
    return ONE_ROW_SHAPES[cols] if fits else None


def _bulk_copies() -> bool:
    # cuda:0 has the copy engine's bulk copies (sm_90 on), and this build compiled oneflite's
    # kernels for them: an architecture of 90 or later in "built for 80-real,90", or one CMake
    # names by a keyword ("native", "all", "all-major"), which covers the device.
    text = oneflite._C._device_backends()["cuda"]
    built_for = re.search(r"built for ([\w,-]+)", text).group(1)
    archs = [int(number) for number in re.findall(r"\d+", built_for)]
    device_sm = int(re.search(r"cuda:0 .*?, sm_(\d+)", text).group(1))
    return device_sm >= 90 and (not archs or max(archs) >= 90)


def _reads_ahead() -> bool:
    # cuda:0 can read x ahead into L2 (ReadAheadRunsOn): bulk copies in the device and the build,
    # a DRAM wide for its SMs, and an L2 of at least 10 x 4 MiB.
    text = oneflite._C._device_backends()["cuda"]
    l2_mib = int(re.search(r"cuda:0 .*?, (\d+) MiB L2", text).group(1))
    return _bulk_copies() and not _narrow_dram() and l2_mib >= 40


def _x_of_at_least(kind: str, dtype: oneflite.dtype, cols: int, nbytes: int):
    """Runs `kind` over rows of `cols` that start on a 16-byte boundary and one element past
    one, enough of them that x holds `nbytes` or more, so that a block's read-ahead reaches rows
    of x and is clipped at its end. Checks every row's result against the reference and yields
    (offset, the plan the trace reports: the one for rows on a 16-byte boundary)."""
    rows = max(5, -(-nbytes // (cols * dtype.itemsize)))
    yield from _aligned_and_off_a_boundary(kind, dtype, rows, cols)


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("cols", [1536, 2044, 2048, 2049, 3072, 4096, 8192, 12345, 32768, 65536])
def test_float_rows_of_512_packs_and_more_read_x_ahead_where_dram_is_wide(cols, kind):
    # float rows whose block_registers window is 512 packs or more (kReadAheadLeastPacks) run
    # the kernels' copies that ask L2 for x's bytes 4 MiB past their own (ReadAhead), where the
    # device can (ReadAheadRunsOn: an H200, not an H100), but on 1024 threads (32768 columns);
    # shorter windows (1536, and 2044 columns on a boundary: 511 packs) and the other paths
    # (65536: block_online) do not. x of 6 MiB and more, so that the read-ahead of its last 4 MiB
    # is clipped at its end.
    # The trace reports the plan for rows on a 16-byte boundary (Describe) at either offset.
    ahead = _reads_ahead()
    window = cols // 4 if cols % 4 == 0 else (cols + 6) // 4
    for _, plan in _x_of_at_least(kind, oneflite.float32, cols, 6 << 20):
        registers = "block_registers:" in plan
        expect = ahead and registers and window >= 512 and " block=1024 " not in plan
        assert (" read_ahead" in plan) == expect, plan
        if cols in (2048, 4096, 8192, 32768):
            assert registers, plan


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("dtype", [oneflite.float16, oneflite.bfloat16], ids=lambda d: d.name)
@pytest.mark.parametrize("cols", [1024, 1025, 1032, 1272, 1280, 1281, 1536, 2000, 2047, 2048])
def test_16bit_warp_rows_of_6_and_8_packs_a_lane_read_x_ahead_where_dram_is_wide(cols, dtype, kind):
    # 16-bit rows of whole packs on the warp rungs of 32 lanes of 6 and 8 packs run their
    # kernels' copies that read x ahead (kWarpReadAheadShape) where the device can, from 160 packs
    # (kWarpReadAheadLeastPacks: 1280-2048 columns); shorter rows on the same rung (1032, 1272),
    # rows with edge columns (off a 16-byte boundary, or of 1025, 1281 and 2047 columns) and the
    # rungs below do not. Every row's result is checked, x of 6 MiB and more.
    # The trace reports the plan for rows on a 16-byte boundary (Describe) at either offset; the
    # rows one element past one run the ragged kernel, which does not read ahead.
    ahead = _reads_ahead()
    for _, plan in _x_of_at_least(kind, dtype, cols, 6 << 20):
        rung = re.search(r"warp: pack=8 cols_per_thread=(\d+) thread_group_width=32 ", plan)
        expect = ahead and cols % 8 == 0 and cols >= 1280 and rung is not None
        assert rung is not None or cols <= 1025, plan
        if rung is not None:
            assert int(rung.group(1)) == (32 if cols <= 1025 else 48 if cols <= 1536 else 64), plan
        assert (" read_ahead" in plan) == expect, plan


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("dtype", [oneflite.float16, oneflite.bfloat16], ids=lambda d: d.name)
@pytest.mark.parametrize("cols", [29704, 30720, 32768, 33001, 36864, 37632, 37696, 40960])
def test_16bit_softmax_rows_of_whole_lines_on_block_smem_read_x_ahead_up_to_37632_columns(
    cols, dtype, kind
):
    # 16-bit softmax rows on block_smem's 512 threads of up to 4704 packs (37632 columns) run the
    # kernel's copy that reads x ahead where the device can (PlanBlockSmemReadAhead) if their rows
    # are whole 128-byte lines (64 columns): not 29704 or 33001, not log_softmax, and not 37696
    # or 40960 columns. bfloat16 softmax rows up to 36864 columns take the cached tail instead.
    # Every row's result is checked, x of 6 MiB and more, from a 16-byte boundary and one element
    # past one (the trace reports the plan for the first at both), and from 16 bytes past a
    # 128-byte line, where LaunchBlock runs the plain copy.
    ahead = _reads_ahead()
    for _, plan in _x_of_at_least(kind, dtype, cols, 6 << 20):
        on_512 = "block_smem: pack=8 block=512 " in plan
        if ahead:
            tail = "block_registers:" in plan and " tail_cols=" in plan
            bfloat16_tail = dtype == oneflite.bfloat16 and kind == "softmax" and cols <= 36864
            assert (tail if bfloat16_tail else on_512), plan
        expect = ahead and kind == "softmax" and on_512 and cols % 64 == 0 and cols <= 37632
        assert (" read_ahead" in plan) == expect, plan
    op, ref = OPS[kind]
    values = _values(64, cols, seed=cols + 1)
    flat = make_tensor(np.concatenate([np.zeros(8), values.ravel()]), dtype, DEVICE)
    x = flat._as_strided([64, cols], [cols, 1], 8)
    assert_close(to_float64(op(x, -1)), ref(to_float64(x), 1), dtype, log=kind == "log_softmax",
                 err_msg="x 16 bytes past a line")


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("dtype", [oneflite.float16, oneflite.bfloat16], ids=lambda d: d.name)
@pytest.mark.parametrize("cols", [13000, 14336, 16000, 16384])
def test_16bit_rows_of_1792_to_2048_packs_take_512_threads_where_dram_is_narrow(cols, dtype, kind):
    # 16-bit rows whose window is 1792-2048 packs take block_registers' 512 threads of 4 packs
    # on a device whose DRAM gives each SM under 30 GB/s (an H100), and keep the cached tail's
    # 256 threads of 2 register packs on a wider one (an H200) (kNarrowDramGBpsPerSm); rows of
    # 13000 columns (1625 packs) keep the tail on both. The trace reports the plan for rows on a
    # 16-byte boundary, whose window is the row's packs (MaxWindowPacks); the same rows one
    # element off a boundary (16384 columns: 2049 packs, the tail) are checked for their results.
    narrow = _narrow_dram()
    window = cols // 8 if cols % 8 == 0 else (cols + 2 * 8 - 2) // 8
    for _, plan in _aligned_and_off_a_boundary(kind, dtype, 5, cols):
        if narrow and 1792 <= window <= 2048:
            assert "block_registers: pack=8 cols_per_thread=32 block=512 " in plan, plan
        else:
            assert "block_registers: pack=8 cols_per_thread=16 block=256 smem=" in plan, plan


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("cols", [2812, 2816, 3072, 4000, 4096])
def test_float_rows_take_512_threads_once_there_are_enough_waves(cols, kind):
    # float rows of 3968-4096 columns take block_registers on 512 threads of 2 packs rather than
    # 256 of 4 when there are rows for 16 waves of its blocks (4 an SM) or more; on a device
    # whose DRAM is narrow for its SMs (an H100), so do rows from 2816 columns (704 packs)
    # rather than 256 of 3 or 4, from 48 waves (PlanBlockRegisters,
    # kNarrowDramFloat512x2LeastPacks). There rows of 4096 columns take 256 x 4 by the one-row
    # kernel at these row counts (kFloatOneRowShapes).
    op, ref = OPS[kind]
    narrow = _narrow_dram()
    waves = 16 if cols >= 3968 else 48
    many = waves * 4 * _sm_count()
    packs_of_256 = 4 if cols > 3068 else 3  # kFloatShapes: 256 x 3 up to 767 packs
    block = np.random.default_rng(cols).standard_normal((64, cols)) * 4
    takes_512 = cols >= 3968 or (narrow and cols >= 2816)
    for rows in (many, many // 4):
        x = make_tensor(np.tile(block, (rows // 64 + 1, 1))[:rows], oneflite.float32, DEVICE)
        with oneflite.trace() as t:
            y = op(x, -1)
        plans = _plan(t)
        one = _one_row(cols, rows)
        shape = (f"{one} one_row " if one is not None
                 else "cols_per_thread=8 block=512 " if rows == many and takes_512
                 else f"cols_per_thread={4 * packs_of_256} block=256 ")
        assert len(plans) == 1 and shape in plans[0], plans
        for row in (0, rows // 2, rows - 1):
            want_row = ref(to_float64(x[row : row + 1]), 1)
            assert_close(to_float64(y[row : row + 1]), want_row, oneflite.float32,
                         log=kind == "log_softmax", err_msg=plans[0])


def _aligned_and_off_a_boundary(kind: str, dtype: oneflite.dtype, rows: int, cols: int):
    """Runs `kind` over rows of `cols` that start on a 16-byte boundary (storage offset 0) and
    one element past one (offset 1), checks each result against the reference, and yields
    (offset, the launch's plan) for the caller's checks of the plan."""
    op, ref = OPS[kind]
    values = _values(rows, cols, seed=cols)
    flat = make_tensor(np.concatenate([[7.0], values.ravel()]), dtype, DEVICE)
    for offset in (0, 1):
        x = flat._as_strided([rows, cols], [cols, 1], offset)
        with oneflite.trace() as t:
            y = op(x, -1)
        plans = _plan(t)
        assert len(plans) == 1, plans
        assert_close(to_float64(y), ref(to_float64(x), 1), dtype, log=kind == "log_softmax",
                     err_msg=f"storage offset {offset}: {plans[0]}")
        yield offset, plans[0]


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize(("cols", "held"), [(6200, True), (8192, True), (7001, None)])
def test_float_rows_of_8192_run_3_blocks_an_sm_once_there_are_24_waves(cols, held, kind):
    # float rows on block_registers' 512 threads of 4 packs (6145-8192 columns) are held to 3
    # blocks an SM by shared memory they do not use, when there are rows for 24 waves of 3
    # blocks or more and registers would allow 4 (HoldFloat512x4); fewer rows are never held.
    # Rows off a 16-byte boundary (7001) run the ragged kernel, whose registers may hold it to 3
    # blocks already (34 for softmax with nvcc 12-13): held or not, the results must match. Rows
    # with -inf entries, one of -inf only (NaN) and a dominant value among them.
    op, ref = OPS[kind]
    waves = 24 * 3 * _sm_count()
    block = _values(64, cols, seed=cols)
    for rows, expect_held in ((waves, held), (waves // 2, False)):
        x = make_tensor(np.tile(block, (rows // 64 + 1, 1))[:rows], oneflite.float32, DEVICE)
        with oneflite.trace() as t:
            y = op(x, -1)
        plans = _plan(t)
        assert len(plans) == 1 and "cols_per_thread=16 block=512 " in plans[0], plans
        if expect_held is not None:
            assert ("held_per_sm=3" in plans[0]) == expect_held, plans[0]
        for first, last in ((0, 64), (rows // 2, rows // 2 + 3), (rows - 3, rows)):
            assert_close(to_float64(y[first:last]), ref(to_float64(x[first:last]), 1),
                         oneflite.float32, log=kind == "log_softmax",
                         err_msg=f"rows {first}-{last}: {plans[0]}")


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize(("cols", "held"), [(2048, True), (1885, True), (1884, False)])
def test_float_rows_of_2048_run_fewer_blocks_an_sm_once_there_are_24_waves(cols, held, kind):
    # float rows on block_registers' 128 threads of 4 packs that fill 472 of its 512 packs or
    # more (1885-2048 columns, the ragged kernel) run on the kernel's copy that prefers the
    # smallest carve-out, which holds it to fewer blocks an SM (7 on an H100 or H200) than its
    # registers allow, when there are rows for 24 waves of those (HoldFloat128x4); fewer rows,
    # and rows that fill less (1884 columns: 471 packs), are not held; where the DRAM is narrow
    # rows of 2048 columns take the one-row kernel at these rows (kFloatOneRowShapes), unheld.
    # (With rows for 24 waves
    # of the unheld blocks, rows on 128-byte lines take the largest carve-out instead where the
    # DRAM is narrow: the test above.) Sampled rows, among them
    # rows with -inf entries, one of -inf only (NaN) and a dominant value, match the reference.
    op, ref = OPS[kind]
    block = _values(64, cols, seed=cols)

    def run(rows: int) -> str:
        x = make_tensor(np.tile(block, (rows // 64 + 1, 1))[:rows], oneflite.float32, DEVICE)
        with oneflite.trace() as t:
            y = op(x, -1)
        plans = _plan(t)
        assert len(plans) == 1 and "cols_per_thread=16 block=128 " in plans[0], plans
        for first, last in ((0, 64), (rows // 2, rows // 2 + 3), (rows - 3, rows)):
            assert_close(to_float64(y[first:last]), ref(to_float64(x[first:last]), 1),
                         oneflite.float32, log=kind == "log_softmax",
                         err_msg=f"rows {first}-{last}: {plans[0]}")
        return plans[0]

    rows = 24 * 8 * _sm_count()  # 24 waves of 8 blocks an SM: held, if it is to be
    plan = run(rows)
    if _one_row(cols, rows) is not None:  # where the DRAM is narrow, the one-row kernel instead
        assert " one_row " in plan and "carveout" not in plan, plan
        return
    assert ("carveout=max_l1" in plan) == held, plan
    if held:
        per_sm = int(re.search(r"held_per_sm=(\d+) carveout=max_l1", plan).group(1))
        assert 1 <= per_sm < 12, plan  # below what registers allow (12 for softmax, 16 for log)
        plan = run(24 * per_sm * _sm_count() - 1)  # a row short of 24 waves of them
        assert "held_per_sm" not in plan, plan


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize(
    ("dtype", "cols", "shape", "whole"),
    [
        (oneflite.float32, 1536, "cols_per_thread=16 block=128", True),
        (oneflite.float32, 2048, "cols_per_thread=16 block=128", False),
        (oneflite.float32, 8192, "cols_per_thread=16 block=512", True),
        (oneflite.float32, 16384, "cols_per_thread=32 block=512", True),  # no store fallback
        (oneflite.float32, 12345, "cols_per_thread=32 block=512", False),
        (oneflite.float32, 32768, "cols_per_thread=32 block=1024", True),
        (oneflite.float32, 1024, "cols_per_thread=8 block=128", False),
        (oneflite.float16, 4096, "cols_per_thread=16 block=256", True),
        (oneflite.bfloat16, 4096, "cols_per_thread=16 block=256", True),
        (oneflite.float16, 8192, "cols_per_thread=16 block=512", True),  # few rows: the test below
        (oneflite.bfloat16, 8192, "cols_per_thread=16 block=512", True),  # few rows: the test below
        (oneflite.float16, 3072, "cols_per_thread=24 block=128", False),
        (oneflite.bfloat16, 3072, "cols_per_thread=24 block=128", False),
        (oneflite.float16, 3300, "cols_per_thread=32 block=128", False),  # not whole packs
        # 16-bit windows that are not a multiple of the block (WholeRowsFallback's kPack)
        (oneflite.float16, 2560, "cols_per_thread=24 block=128", True),  # 320 packs
        (oneflite.bfloat16, 3336, "cols_per_thread=32 block=128", True),  # 417
        (oneflite.float16, 3800, "cols_per_thread=16 block=256", True),  # 475
        (oneflite.bfloat16, 5000, "cols_per_thread=24 block=256", True),  # 625
        (oneflite.float16, 6144, "cols_per_thread=24 block=256", False),  # 768: a multiple
        (oneflite.bfloat16, 7504, "cols_per_thread=16 block=512", True),  # 938
    ],
    ids=lambda v: getattr(v, "name", v),
)
def test_block_registers_rows_of_whole_packs_and_ragged_rows(dtype, cols, shape, whole, kind):
    # Where PlansWholeRowsKernel says so, rows of whole 16-byte packs take the kernel with no
    # edge packs (the trace's plan, which describes aligned tensors, has no "ragged"; elsewhere
    # it has), and the same rows one element off a 16-byte boundary (a contiguous view at
    # storage offset 1) take the ragged kernel (a vector load there would fault); all give the
    # reference's results. The 16-bit shapes take it for windows that are not a multiple of
    # their block, and 256 x 2 for its full window too; 512 x 2 for its full window as well,
    # for these few rows on any device.
    # Where the DRAM is narrow, float rows that fill a one-row shape take it instead.
    one = _one_row(cols, 5) if dtype == oneflite.float32 else None
    for _, plan in _aligned_and_off_a_boundary(kind, dtype, 5, cols):
        if one is not None:
            assert f"block_registers: pack=4 {one} one_row " in plan, plan
            continue
        assert "block_registers: pack=" in plan, plan
        assert shape in plan and (" ragged" in plan) != whole, plan


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("dtype", [oneflite.float16, oneflite.bfloat16], ids=lambda d: d.name)
def test_16bit_rows_of_8192_take_the_whole_rows_kernel_up_to_64_rows_an_sm(dtype, kind):
    # 16-bit rows of 8192 columns on 16-byte boundaries (block_registers' 512 threads of 2 full
    # packs) take the kernel for rows of whole packs where the DRAM is narrow for the SMs (an
    # H100) at any row count, and on a wider one (an H200) up to 64 rows an SM
    # (Plans512x2WholeRows): a row more takes the ragged kernel. So do the same rows one element
    # off a boundary (the trace reports the plan of aligned rows); sampled rows of each match
    # the reference.
    many = 64 * _sm_count() + 1
    for rows, offset, plan in _many_rows(kind, dtype, 8192, many):
        assert "block_registers: pack=8 cols_per_thread=16 block=512 " in plan, plan
        if offset == 0:
            whole = _narrow_dram() or rows < many
            assert (" ragged" in plan) != whole, (rows, plan)


def _check_block_registers_shape(dtype: oneflite.dtype, cols: int, shape: str | None) -> None:
    """Runs both ops on five rows of `cols` and checks the plan's block_registers shape (None: a
    path other than block_registers) and the results against the reference."""
    pack = 16 // dtype.itemsize
    for kind, (op, ref) in OPS.items():
        x = make_tensor(_values(5, cols, seed=cols), dtype, DEVICE)
        with oneflite.trace() as t:
            y = op(x, -1)
        plans = _plan(t)
        assert len(plans) == 1, plans
        if shape is None:
            assert "block_registers" not in plans[0], plans[0]
        else:
            assert f"block_registers: pack={pack} {shape} " in plans[0], plans[0]
        assert_close(to_float64(y), ref(to_float64(x), 1), dtype, log=kind == "log_softmax",
                     err_msg=plans[0])


@pytest.mark.parametrize(
    ("dtype", "cols", "shape"),
    [
        (oneflite.float16, 2296, None),  # 287 packs: block_smem
        (oneflite.float16, 2297, "cols_per_thread=24 block=128"),
        (oneflite.bfloat16, 2872, None),  # 359 packs: the warp path
        (oneflite.bfloat16, 2873, "cols_per_thread=24 block=128"),
        (oneflite.float16, 3073, "cols_per_thread=32 block=128"),
        (oneflite.bfloat16, 3073, None),  # 385 packs: still the warp path
        (oneflite.bfloat16, 3192, None),
        (oneflite.bfloat16, 3193, "cols_per_thread=32 block=128"),
        (oneflite.float16, 3584, "cols_per_thread=32 block=128"),
        (oneflite.float16, 3585, "cols_per_thread=16 block=256"),
        (oneflite.bfloat16, 4984, None),
        (oneflite.bfloat16, 4985, "cols_per_thread=24 block=256"),
        (oneflite.float16, 6144, "cols_per_thread=24 block=256"),
        (oneflite.float16, 6145, None),
    ],
    ids=lambda v: getattr(v, "name", v),
)
def test_16bit_block_registers_shapes_take_their_ranges_of_columns(dtype, cols, shape):
    # Each 16-bit block_registers shape takes aligned rows of its own range of window packs
    # (k16BitShapes): 128 x 3 packs from 288 (half) or 360 (bfloat16), 128 x 4 from 385 or 400
    # to 448, 256 x 2 to 512, 256 x 3 from 624 to 768. Just outside a range the row goes to
    # another path (shape None). Both ops match the reference either way.
    _check_block_registers_shape(dtype, cols, shape)


@pytest.mark.parametrize(
    ("cols", "shape"),
    [
        (761, None),  # a window of 191 packs: the warp path's 32 x 6 rung
        (762, "cols_per_thread=8 block=128"),  # 192 (MaxWindowPacks: a pack more off a boundary)
        (1024, "cols_per_thread=8 block=128"),
        (1025, "cols_per_thread=12 block=128"),  # 257 packs
        (1532, "cols_per_thread=12 block=128"),  # 383
        (1533, "cols_per_thread=16 block=128"),  # 384
        (2048, "cols_per_thread=16 block=128"),
        (2049, "cols_per_thread=12 block=256"),  # 513
        (3068, "cols_per_thread=12 block=256"),  # 767
        (3072, "cols_per_thread=16 block=256"),
        (4100, None),  # 1025 packs: block_smem
    ],
)
def test_float_block_registers_shapes_take_their_ranges_of_columns(cols, shape):
    # Each float block_registers shape takes the rows whose window is in its range
    # (kFloatShapes): 128 x 2 from 192 packs, 128 x 3 from 257, 128 x 4 from 384 to 512, 256 x 3
    # from 513, 256 x 4 from 768 to 1024. Below them rows take the warp path, whose last float
    # rung is 32 x 6 (192 packs), and past 256 x 4 block_smem (shape None). Five rows: too few
    # for 512 x 2. Both ops match the reference either way.
    _check_block_registers_shape(oneflite.float32, cols, shape)


@pytest.mark.parametrize(
    ("cols", "wide_shape"),
    [
        (5596, None),  # 1399 packs: block_smem
        (5600, "cols_per_thread=16 block=512"),  # 1400
        (6140, "cols_per_thread=16 block=512"),  # 1535
        (9996, None),  # 2499
        (10000, "cols_per_thread=32 block=512"),  # 2500
        (12284, "cols_per_thread=32 block=512"),  # 3071
    ],
)
def test_float_rows_of_1400_and_2500_packs_take_512_threads_where_dram_is_wide(cols, wide_shape):
    # Where the DRAM is wide for the SMs (an H200), float rows of 1400-1535 window packs take
    # block_registers' 512 threads of 4 packs and rows of 2500-3071 its 512 threads of 8, below
    # kFloatShapes' three quarters full (kWideDramFloat512x4LeastPacks,
    # kWideDramFloat512x8LeastPacks); elsewhere, and just below those bounds, a shared-memory
    # path. Both ops match the reference either way.
    _check_block_registers_shape(oneflite.float32, cols, None if _narrow_dram() else wide_shape)


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize(
    ("cols", "rung", "rows"),
    [
        (220, "cols_per_thread=8 ", 2),  # 55 packs: 32 x 2, two rows a group
        (256, "cols_per_thread=8 ", 1),  # 64: 32 x 2's twin for fuller rows, one row
        (260, "cols_per_thread=12 ", 1),  # 65: 32 x 3
        (384, "cols_per_thread=12 ", 1),
        (388, "cols_per_thread=16 ", 1),  # 97: 32 x 4
        (449, "cols_per_thread=16 ", 2),  # edge columns
        (512, "cols_per_thread=16 ", 1),
    ],
)
def test_float_rows_of_whole_packs_on_3_or_4_packs_a_lane_take_one_row_a_group(
    cols, rung, rows, kind
):
    # float rows of whole packs on 32 lanes of 3 or 4 packs take one row a group
    # (kWarpWholeRowAlone); rows with edge columns keep two (kWarpRows), and the rungs of 2 packs
    # keep their rule (one row from 56 packs). The trace reports the plan for aligned rows; the
    # same rows one element off a 16-byte boundary (two rows a group, edges) are checked for
    # their results. 301 rows: the last block's last group has rows past the end.
    for offset, plan in _aligned_and_off_a_boundary(kind, oneflite.float32, 301, cols):
        if offset == 0:
            assert f"warp: pack=4 {rung}thread_group_width=32 rows_per_access={rows} " in plan, \
                plan


# The 16-bit warp rungs a plan names, by lanes x packs a lane (and one row a group).
WARP_16_BIT_RUNGS = {
    "16x1": "cols_per_thread=8 thread_group_width=16 rows_per_access=2",
    "8x4": "cols_per_thread=32 thread_group_width=8 rows_per_access=1",
    "16x2": "cols_per_thread=16 thread_group_width=16 rows_per_access=2",
    "16x4": "cols_per_thread=32 thread_group_width=16 rows_per_access=1",
    "32x2": "cols_per_thread=16 thread_group_width=32 rows_per_access=2",
    "32x2_one_row": "cols_per_thread=16 thread_group_width=32 rows_per_access=1",
}


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("dtype", [oneflite.float16, oneflite.bfloat16], ids=lambda d: d.name)
@pytest.mark.parametrize(
    ("cols", "rung"),
    [
        (128, "16x1"),  # 16 packs
        (137, "8x4"),  # 17 and an edge column
        (160, "8x4"),  # 20
        (167, "8x4"),  # 20 and edge columns
        (169, "16x2"),  # 21 and an edge column
        (256, "16x2"),  # 32
        (264, "16x4"),  # 33
        (300, "16x4"),  # 37 and edge columns
        (384, "16x4"),  # 48
        (385, "16x4"),  # 48 and an edge column
        (392, "32x2"),  # 49 (one element off a boundary: 16 x 4, 49 and edge columns)
        (393, "16x4"),  # 49 and an edge column
        (415, "16x4"),  # 51 and edge columns
        (416, "32x2"),  # 52
        (417, "32x2"),  # 52 and an edge column
        (448, "32x2_one_row"),  # 56
    ],
)
def test_16_bit_rows_take_the_4_pack_rungs_below_16_and_32_lanes(cols, rung, dtype, kind):
    # The 16-bit types' warp ladder gives rows of 17-20 whole packs (136-167 columns, their edge
    # columns beside them) 8 lanes of 4 packs, one row a group of 8 (k16BitWarp8x4MostPacks),
    # and rows of 33-48 (264-391 columns) 16 lanes of 4 packs, one row a group of 16
    # (k16BitWarp16x4MostPacks), 33-51 if the rows have edge columns (393-415 columns,
    # k16BitWarp16x4RaggedMostPacks); rows of 21-32 packs keep 16 x 2, the rest of 49-64 32 x 2.
    # The trace reports the plan for aligned rows; the same rows one element off a 16-byte
    # boundary are checked for their results. 301 rows: the last warp's second group has no row.
    # Where the DRAM is narrow, rows of 128 columns run the 16 x 1 rung by its one-row kernel
    # instead, and log_softmax rows of 256 the rung of 32 lanes of a pack (_warp_one_row).
    one = _warp_one_row(kind, dtype, cols, 301)
    for offset, plan in _aligned_and_off_a_boundary(kind, dtype, 301, cols):
        if offset == 0:
            assert (one or f"warp: pack=8 {WARP_16_BIT_RUNGS[rung]} ") in plan, plan


def _many_rows(kind: str, dtype: oneflite.dtype, cols: int, many: int):
    """Runs `kind` over `many` rows of `cols` from an aligned start and from one element past
    one, then over `many` - 1 aligned rows; checks five rows of each result against the
    reference, and yields (rows, offset, the launch's plan) for the caller's checks of the plan.
    The trace reports the plan for aligned rows, also for the launch off a boundary."""
    op, ref = OPS[kind]
    values = np.tile(_values(64, cols, seed=cols), (many // 64 + 1, 1))[:many]
    flat = make_tensor(np.concatenate([[7.0], values.ravel()]), dtype, DEVICE)
    for rows, offset in ((many, 0), (many, 1), (many - 1, 0)):
        x = flat._as_strided([rows, cols], [cols, 1], offset)
        with oneflite.trace() as t:
            y = op(x, -1)
        plans = _plan(t)
        assert len(plans) == 1, plans
        for row in (0, 2, 63, rows // 2, rows - 1):
            want_row = ref(to_float64(x[row : row + 1]), 1)
            assert_close(to_float64(y[row : row + 1]), want_row, dtype, log=kind == "log_softmax",
                         err_msg=f"row {row}, offset {offset}: {plans[0]}")
        yield rows, offset, plans[0]


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("dtype", [oneflite.float16, oneflite.bfloat16], ids=lambda d: d.name)
@pytest.mark.parametrize("cols", [952, 960, 1000, 1001, 1024, 1032])
def test_16bit_rows_of_960_to_1024_columns_take_a_block_of_128_or_64_threads(cols, dtype, kind):
    # 16-bit rows of whole packs with a window of 120-128 packs (960-1024 columns) take
    # block_registers once there are 384 rows an SM: 128 threads of one pack, by the kernel for
    # whole rows, where the DRAM is narrow for the SMs (an H100), else 64 threads of 2 packs
    # (k16BitSmallLeastPacks). Fewer rows, rows of 119 packs (952), rows that are not whole
    # packs (1001) and rows of 129 (1032) keep the warp path; where the DRAM is narrow, rows of
    # 1024 columns take its one-row kernel up to 1024 rows an SM (_warp_one_row). Rows one
    # element off a 16-byte boundary (the warp path's ragged rung) are checked for their results.
    narrow = _narrow_dram()
    many = 384 * _sm_count()
    takes_block = cols % 8 == 0 and 960 <= cols <= 1024
    for rows, offset, plan in _many_rows(kind, dtype, cols, many):
        if offset != 0:
            continue
        one = _warp_one_row(kind, dtype, cols, rows)
        if one is not None:  # 1024 columns below 1024 rows an SM, where the DRAM is narrow
            assert one in plan, plan
        elif not takes_block or rows < many:
            assert "warp: " in plan, plan
        elif narrow:
            assert "block_registers: pack=8 cols_per_thread=8 block=128 " in plan, plan
            assert " ragged" not in plan, plan
            assert (" bulk_load" in plan) == (cols == 1024 and _bulk_copies()), plan
        else:
            assert "block_registers: pack=8 cols_per_thread=16 block=64 ragged " in plan, plan


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("dtype", [oneflite.float16, oneflite.bfloat16], ids=lambda d: d.name)
@pytest.mark.parametrize("cols", [1528, 1536, 1700, 2048, 2056])
def test_16bit_rows_of_1536_to_2048_columns_take_128_threads_of_2_packs_where_dram_is_narrow(
    cols, dtype, kind
):
    # 16-bit rows of whole packs with a window of 192-256 packs (1536-2048 columns) take
    # block_registers' 128 threads of 2 packs, by the ragged kernel, where the DRAM is narrow for
    # the SMs (an H100), once there are 256 rows an SM (k16BitPairsLeastPacks). Fewer rows, wider
    # DRAM, rows of 191 packs (1528), rows that are not whole packs (1700) and rows of 257
    # (2056, past the warp path's longest rung) keep their paths. Rows one element off a 16-byte
    # boundary (the warp path's ragged rung) are checked for their results.
    many = 256 * _sm_count()
    takes_block = _narrow_dram() and cols % 8 == 0 and 1536 <= cols <= 2048
    pairs = "block_registers: pack=8 cols_per_thread=16 block=128 "
    for rows, offset, plan in _many_rows(kind, dtype, cols, many):
        if offset == 0 and takes_block and rows == many:
            assert pairs + "ragged " in plan, plan
            assert "carveout" not in plan, plan
        elif offset == 0:
            assert pairs not in plan, plan
            if cols <= 2048:
                assert "warp: " in plan, plan


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("cols", [480, 508, 512, 513, 516])
def test_float_rows_of_512_columns_take_128_threads_where_dram_is_narrow(cols, kind):
    # float rows of 512 aligned columns (128 whole packs) take block_registers' 128 threads of
    # one pack where the DRAM is narrow for the SMs (an H100), once there are 512 rows an SM
    # (kFloat128x1MinRowsPerSm). Fewer rows, wider DRAM, rows that leave a thread idle (480, 508),
    # rows that are not whole packs (513) and rows of 129 packs (516) keep the warp path, but
    # that where the DRAM is wide those of 129 packs take 64 x 3 (the 64 x 3 test). Rows one
    # element off a 16-byte boundary are checked for their results.
    many = 512 * _sm_count()
    narrow = _narrow_dram()
    for rows, offset, plan in _many_rows(kind, oneflite.float32, cols, many):
        if offset == 0 and narrow and cols == 512 and rows == many:
            assert "block_registers: pack=4 cols_per_thread=4 block=128 " in plan, plan
            assert (" bulk_load" in plan) == _bulk_copies(), plan
        elif offset == 0 and not narrow and cols == 516 and rows == many:
            assert "block_registers: pack=4 cols_per_thread=12 block=64 ragged " in plan, plan
        elif offset == 0:
            assert "warp: " in plan, plan


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("cols", sorted(ONE_ROW_SHAPES))
def test_float_rows_that_fill_a_shape_run_one_row_a_block_up_to_a_bound(cols, kind):
    # float rows of whole packs that fill one of block_registers' one-row shapes exactly
    # (kFloatOneRowShapes: 64 x 3 at 768 columns, 128 x 2, 3 and 4 at 1024-2048, 256 x 4 at
    # 4096) run its kernel of a block a row, with no row loop and no test of the row's end, where
    # the DRAM is narrow for the SMs (an H100), on launches of up to 2.5 MiB of x an SM
    # (kOneRowMostBytesPerSm); a row more keeps the planned shape and kernel, and so does a wider
    # DRAM. Rows one element off a 16-byte boundary take the ragged kernel (the trace reports
    # the aligned plan); sampled rows of every launch match the reference (_many_rows).
    most = ONE_ROW_MOST_BYTES_PER_SM * _sm_count() // (cols * 4)
    shape = ONE_ROW_SHAPES[cols]
    for rows, offset, plan in _many_rows(kind, oneflite.float32, cols, most + 1):
        if offset != 0:
            continue
        if _narrow_dram() and rows <= most:
            assert f"block_registers: pack=4 {shape} one_row grid={rows}" in plan, (rows, plan)
        else:
            assert " one_row" not in plan, (rows, plan)


def _case_id(value) -> str:
    return getattr(value, "name", str(value))


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize(("dtype", "cols"), WARP_ONE_ROW_CASES, ids=_case_id)
def test_rows_that_fill_a_32_or_16_lane_rung_run_a_group_a_row(dtype, cols, kind):
    # Rows of whole packs that fill the warp path's 32 lanes of 1 to 4 packs, or 16 lanes of 1
    # or 2, exactly run its kernel of a group a row (kWarpOneRowRules: float 128, 256, 384 and
    # 512 columns, 16-bit 128, 256 for log_softmax, 512 and 1024), a block a tile of four rows
    # (eight on 16 lanes), with no row loop and no test of the row's end, where the DRAM is
    # narrow for the SMs (an H100): here on 256 rows an SM, and one row fewer, whose last block
    # has warps with no row, and on 16 lanes a warp whose second group has none (float 512 from
    # 512 rows an SM and 16-bit 1024 from 1024 take block_registers' 128 x 1: the bulk-copy
    # tests). A wider DRAM, and 16-bit softmax at 256 columns, keep the rung's kernel of the row
    # loop. Rows one element off a 16-byte boundary take the ragged kernel (the trace reports the
    # aligned plan); sampled rows of every launch match the reference (_many_rows).
    words, width = WARP_ONE_ROW[(dtype == oneflite.float32, cols)][:2]
    rows_per_block = 128 // width
    for rows, offset, plan in _many_rows(kind, dtype, cols, 256 * _sm_count()):
        if offset != 0:
            continue
        one = _warp_one_row(kind, dtype, cols, rows)
        if one is not None:
            grid = (rows + rows_per_block - 1) // rows_per_block
            assert f"{one} grid={grid}" in plan, (rows, plan)
        else:
            assert "warp: " in plan and " one_row" not in plan, (rows, plan)
            if cols != 256 or dtype == oneflite.float32:  # 16-bit 256: the ladder's 16 x 2
                assert f"warp: {words} thread_group_width={width} " in plan, (rows, plan)


def _every_row_values(rows: int, cols: int, dtype: oneflite.dtype, seed: int) -> np.ndarray:
    # Rows of NaN, +inf, magnitudes near the dtype's largest, equal values and -inf only.
    values = _values(rows, cols, seed=seed)
    huge = 6e4 if dtype == oneflite.float16 else 3e38
    values[5, 17] = np.nan
    values[6, 100] = np.inf
    values[7, ::2], values[7, 1::2] = huge, -huge
    values[8] = 3.25
    values[9, :] = -np.inf
    values[10, 3] = -np.inf
    values[-1, -1] = np.inf
    return values


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize(
    ("dtype", "cols"),
    [(oneflite.float32, cols) for cols in sorted(ONE_ROW_SHAPES)] + WARP_ONE_ROW_CASES,
    ids=_case_id,
)
def test_one_row_kernel_matches_the_reference_in_every_row(dtype, cols, kind):
    # The one-row kernels (block_registers' and the warp path's: the tests above) on 301 rows,
    # every row checked (_every_row_values; the warp kernel's last block has one row and three
    # warps with none, or on 16 lanes five rows, its third warp's second group none); then the
    # same rows from one element past x's start (the ragged kernels), and a view of every other
    # row (rows 2 * cols apart: not contiguous, copied first).
    op, ref = OPS[kind]
    values = _every_row_values(301, cols, dtype, seed=cols + 3)
    x = make_tensor(values, dtype, DEVICE)
    with oneflite.trace() as t:
        y = op(x, -1)
    plans = _plan(t)
    assert len(plans) == 1, plans
    if _narrow_dram() and (cols in ONE_ROW_SHAPES or _warp_one_row(kind, dtype, cols, 301)):
        assert " one_row " in plans[0], plans
    log = kind == "log_softmax"
    assert_close(to_float64(y), ref(to_float64(x), 1), dtype, log=log, err_msg=plans[0])
    flat = make_tensor(np.concatenate([[7.0], values.ravel()]), dtype, DEVICE)
    shifted = flat._as_strided([301, cols], [cols, 1], 1)
    assert_close(to_float64(op(shifted, -1)), ref(to_float64(shifted), 1), dtype,
                 log=log, err_msg="storage offset 1")
    every_other = flat._as_strided([150, cols], [2 * cols, 1], 1)
    assert_close(to_float64(op(every_other, -1)), ref(to_float64(every_other), 1),
                 dtype, log=log, err_msg="every other row")


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize(
    ("dtype", "cols"),
    [(oneflite.float16, 1024), (oneflite.bfloat16, 1024), (oneflite.float32, 512)],
    ids=["float16-1024", "bfloat16-1024", "float32-512"],
)
def test_rows_brought_in_by_one_bulk_copy_match_the_reference_in_every_row(dtype, cols, kind):
    # Rows of exactly 128 whole packs on 128 threads of one pack (the two tests above) are brought
    # into shared memory by one bulk copy each (BulkLoadSoftmaxKernel), where the device and the
    # build have bulk copies (sm_90 on), from where the warp path's one-row kernel gives the rows
    # up (float 512 from 512 rows an SM, 16-bit 1024 from 1024: WARP_ONE_ROW). Every row of the
    # launch is checked, among them rows of NaN, +inf, magnitudes near the dtype's largest, equal
    # values and -inf only.
    op, ref = OPS[kind]
    if not (_narrow_dram() and _bulk_copies()):
        pytest.skip("rows are planned onto bulk copies only where the DRAM is narrow, on sm_90 on")
    many = WARP_ONE_ROW[(dtype == oneflite.float32, cols)][3] * _sm_count()
    assert _warp_one_row(kind, dtype, cols, many) is None
    assert _warp_one_row(kind, dtype, cols, many - 1) is not None
    values = np.tile(_values(64, cols, seed=cols + 1).astype(np.float32), (many // 64 + 1, 1))
    values = values[:many]
    huge = 6e4 if dtype == oneflite.float16 else 3e38
    values[5, 17] = np.nan
    values[6, 100] = np.inf
    values[7, ::2], values[7, 1::2] = huge, -huge
    values[8] = 3.25
    values[9, :] = -huge
    values[-2, -1] = np.inf
    x = make_tensor(values, dtype, DEVICE)
    with oneflite.trace() as t:
        y = op(x, -1)
    plans = _plan(t)
    assert len(plans) == 1 and " bulk_load" in plans[0], plans
    assert_close(to_float64(y), ref(to_float64(x), 1), dtype, log=kind == "log_softmax",
                 err_msg=plans[0])


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize(
    ("cols", "narrow_shape"),
    [
        (1024, None),  # 256 packs: 128 x 2
        (1025, "cols_per_thread=8 block=192 "),  # 257 packs (258 off a boundary)
        (1276, "cols_per_thread=8 block=192 "),  # 319
        (1280, "cols_per_thread=8 block=256 "),  # 320: 5/8 of 256 x 2
        (1536, "cols_per_thread=8 block=256 "),
        (1792, "cols_per_thread=8 block=256 "),  # 448: 7/8
        (1796, None),  # 449: 128 x 4
    ],
)
def test_float_rows_of_257_to_448_packs_take_2_packs_a_thread_where_dram_is_narrow(
    cols, narrow_shape, kind
):
    # float rows of 257-448 window packs take block_registers' 192 threads of 2 packs (257-319)
    # or 256 of 2 (320-448) where the DRAM is narrow for the SMs (an H100), once there are 512
    # rows an SM (kNarrowDramFloatPairsMinRowsPerSm); fewer rows and the rows past the range keep
    # kFloatShapes' 128 x 2, 128 x 3 or 128 x 4. Where the DRAM is wide (an H200), the rows of
    # 368-448 packs take 224 x 2 instead (the next test); the others keep kFloatShapes'. Rows one
    # element off a 16-byte boundary take the same rule by their window.
    many = 512 * _sm_count()
    narrow = _narrow_dram()
    for rows, offset, plan in _many_rows(kind, oneflite.float32, cols, many):
        if offset != 0:
            continue
        if narrow and narrow_shape is not None and rows == many:
            # Rows on 128-byte lines (1280, 1536, 1792) also take the largest carve-out.
            carveout = "carveout=max_shared " if cols * 4 % 128 == 0 else ""
            assert f"block_registers: pack=4 {narrow_shape}{carveout}ragged " in plan, plan
        elif not narrow and _takes_224x2(kind, cols // 4):
            assert "block_registers: pack=4 cols_per_thread=8 block=224 ragged " in plan, plan
        else:
            assert "block=128 " in plan, plan


def _takes_224x2(kind: str, window: int) -> bool:
    # Whether float rows of `window` packs take 224 x 2 where the DRAM is wide, given 360 rows an
    # SM (kWideDramFloat224x2LeastPacks, kWideDramFloat224x2MostPacks).
    return (368 if kind == "softmax" else 400) <= window <= 448


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("cols", [1408, 1468, 1472, 1536, 1596, 1600, 1792, 1796])
def test_float_rows_of_368_to_448_packs_take_224_threads_where_dram_is_wide(cols, kind):
    # float rows of 368-448 window packs (1469-1792 aligned columns; log_softmax from 400, 1597
    # columns) take block_registers' 224 threads of 2 packs, by the ragged kernel, where the DRAM
    # is wide for the SMs (an H200), once there are 360 rows an SM
    # (kWideDramFloat224x2MinRowsPerSm). Fewer rows, narrower DRAM and the rows outside the range
    # keep their shapes (128 threads, at these rows). Rows one element off a 16-byte boundary
    # take the same rule by their window; their results are checked.
    many = 360 * _sm_count()
    takes = not _narrow_dram() and _takes_224x2(kind, cols // 4)
    for rows, offset, plan in _many_rows(kind, oneflite.float32, cols, many):
        if offset != 0:
            continue
        if takes and rows == many:
            assert "block_registers: pack=4 cols_per_thread=8 block=224 ragged " in plan, plan
        else:
            assert "block=128 " in plan, plan


# A plan's shape for the next test: the words its text holds, and whether it says "ragged"
# (None: either). Words, not a substring, so that a carve-out the plan also names (PreferMaxShared,
# where the DRAM is narrow) leaves the check as it is.
WARP_6_PACKS = ("warp: pack=4 cols_per_thread=24", None)
REGISTERS_64X3 = ("block_registers: pack=4 cols_per_thread=12 block=64", True)
REGISTERS_128X2 = ("block_registers: pack=4 cols_per_thread=8 block=128", None)
REGISTERS_256X4 = ("block_registers: pack=4 cols_per_thread=16 block=256", None)
REGISTERS_512X2_WHOLE = ("block_registers: pack=4 cols_per_thread=8 block=512", False)
REGISTERS_512X2_RAGGED = ("block_registers: pack=4 cols_per_thread=8 block=512", True)


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize(
    ("cols", "rows_per_sm", "wide_shape", "kept"),
    [
        (516, 512, REGISTERS_64X3, WARP_6_PACKS),  # 129 packs
        (640, 512, REGISTERS_64X3, WARP_6_PACKS),
        (701, 512, None, WARP_6_PACKS),  # not whole packs
        (764, 512, REGISTERS_64X3, WARP_6_PACKS),  # 191
        (768, 512, None, REGISTERS_128X2),  # 192: kFloatShapes' first (narrow DRAM: one-row 64 x 3)
        (3644, 128, None, REGISTERS_256X4),  # 911
        (3648, 128, REGISTERS_512X2_WHOLE, REGISTERS_256X4),  # 912
        (3840, 128, REGISTERS_512X2_WHOLE, REGISTERS_256X4),
        (3841, 128, None, REGISTERS_256X4),  # not whole packs
        (3964, 128, REGISTERS_512X2_WHOLE, REGISTERS_256X4),  # 991
        (3968, 128, None, REGISTERS_512X2_RAGGED),  # 992: 16 waves of 512 x 2, any device
    ],
)
def test_float_rows_take_the_wide_drams_shapes_from_enough_rows(
    cols, rows_per_sm, wide_shape, kept, kind
):
    # Where the DRAM is wide for the SMs (an H200), float rows of whole packs take two block
    # shapes once there are enough rows an SM: 129-191 packs (516-764 columns), which the warp
    # path gives one warp of 6 packs a lane, block_registers' 64 threads of 3 packs by the
    # ragged kernel from 512 rows an SM (kWideDramFloat64x3LeastPacks); 912-991 packs
    # (3648-3964 columns) 512 threads of 2 packs by the kernel for whole rows, instead of 256 x
    # 4, from 128 (kWideDramFloat512x2LeastPacks). Fewer rows, narrower DRAM, rows that are not
    # whole packs and the rows outside the ranges keep their shapes (`kept`); rows of 992 packs
    # take 512 x 2 by the ragged kernel on any device at these rows. (Rows of 128 packs, 512
    # columns, are the 512-columns test's.) Rows one element off a 16-byte boundary are
    # checked for their results.
    many = rows_per_sm * _sm_count()
    wide = not _narrow_dram()
    for rows, offset, plan in _many_rows(kind, oneflite.float32, cols, many):
        if offset != 0:
            continue
        words, ragged = wide_shape if wide_shape and wide and rows == many else kept
        one = _one_row(cols, rows)
        if one is not None:  # rows that fill a one-row shape, where the DRAM is narrow
            words, ragged = f"block_registers: pack=4 {one} one_row", False
        plan_words = plan.split()
        assert all(word in plan_words for word in words.split()), (rows, plan)
        if ragged is not None:
            assert ("ragged" in plan_words) == ragged, (rows, plan)


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize(
    ("dtype", "cols", "block", "takes"),
    [
        (oneflite.float32, 1024, 128, True),  # 128 x 2, rows of 4096 bytes
        (oneflite.float32, 1000, 128, False),  # 4000 bytes: rows off the lines
        (oneflite.float32, 1536, 128, True),  # 128 x 4 at these rows (256 x 2 from more)
        (oneflite.float32, 2048, 128, True),  # 128 x 4, in place of the hold to 7 an SM
        (oneflite.float16, 3072, 128, True),  # 128 x 3
        (oneflite.float16, 3000, 128, False),
        (oneflite.bfloat16, 3072, 128, True),
        (oneflite.float16, 1024, 128, False),  # 128 x 1 (narrow DRAM: the one-row warp kernel)
    ],
    ids=lambda v: getattr(v, "name", v),
)
def test_rows_on_128_byte_lines_take_the_largest_carveout_where_dram_is_narrow(
    dtype, cols, block, takes, kind
):
    # block_registers rows whose bytes are a multiple of 128, on the shapes of kMaxSharedShape,
    # run the kernel's copy that prefers the largest shared-memory carve-out where the DRAM is
    # narrow for the SMs (an H100), once there are rows for 24 waves of its blocks
    # (PreferMaxShared); five rows, rows off the lines and other shapes keep the default copy, and
    # so does the one-row kernel, which float rows of 1024 and 1536 columns take there at these
    # rows (kFloatOneRowShapes).
    # The launch takes the copy only where x and y start on a line: results are checked for
    # rows from an aligned start and from one element past it.
    many = 24 * (2048 // block) * _sm_count()  # 24 waves of as many blocks as fit an SM
    one_row = dtype == oneflite.float32 and _one_row(cols, many) is not None
    warp_one_row = _warp_one_row(kind, dtype, cols, many)
    expect = takes and _narrow_dram() and not one_row
    for rows, offset, plan in _many_rows(kind, dtype, cols, many):
        if offset == 0 and rows == many:
            assert (warp_one_row or "block_registers: ") in plan, plan
            assert ("carveout=max_shared" in plan) == expect, plan
            assert "held_per_sm" not in plan or not expect, plan
    for _, plan in _aligned_and_off_a_boundary(kind, dtype, 5, cols):
        assert "carveout=max_shared" not in plan, plan


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize(("cols", "takes"), [(2816, False), (3072, False), (3328, True)])
def test_float_512x2_takes_the_largest_carveout_only_for_rows_that_fill_it(cols, takes, kind):
    # float 512 x 2 takes the largest carve-out only for rows of more than 3/4 of its 1024 packs
    # (kMaxSharedLeastWindow): 2816 and 3072 columns (704 and 768 packs) keep the default copy,
    # 3328 (832) takes it where the DRAM is narrow. The benchmark's rows, where these lengths run
    # on 512 x 2.
    rows = 2**27 // cols
    narrow = _narrow_dram()
    for r, offset, plan in _many_rows(kind, oneflite.float32, cols, rows):
        if offset == 0 and r == rows:
            if narrow:
                assert "block_registers: pack=4 cols_per_thread=8 block=512 " in plan, plan
            assert ("carveout=max_shared" in plan) == (takes and narrow), plan


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("cols", [15360, 15872, 16384])
def test_float_rows_of_3968_to_4096_packs_take_1024_threads_where_dram_is_narrow(cols, kind):
    # float rows of 3968-4096 window packs take block_registers' 1024 threads of 4 packs rather
    # than 512 of 8 where the DRAM is narrow for the SMs (an H100), from 16 rows an SM
    # (kNarrowDramFloat1024x4LeastPacks); fewer rows, wider DRAM and rows of 3840 packs (15360
    # columns) keep 512 x 8.
    many = 16 * _sm_count()
    takes_1024 = _narrow_dram() and cols >= 15872
    for rows, offset, plan in _many_rows(kind, oneflite.float32, cols, many):
        if offset != 0:
            continue
        if takes_1024 and rows == many:
            assert "block_registers: pack=4 cols_per_thread=16 block=1024 ragged " in plan, plan
        else:
            assert "block_registers: pack=4 cols_per_thread=32 block=512 " in plan, plan


@pytest.mark.parametrize(
    "dtype, cols, kind, tail",
    [
        (oneflite.bfloat16, 27648, "softmax", False),  # 3456 packs: block_smem's 256 threads
        (oneflite.bfloat16, 28672, "softmax", True),
        (oneflite.float16, 28672, "softmax", True),
        (oneflite.float16, 29696, "softmax", True),  # 3712 packs, half's last
        (oneflite.float16, 29704, "softmax", False),
        (oneflite.bfloat16, 36864, "softmax", True),  # 4608 packs, bfloat16's last
        (oneflite.bfloat16, 36872, "softmax", False),
        (oneflite.bfloat16, 28672, "log_softmax", False),
        (oneflite.float16, 28672, "log_softmax", False),
    ],
    ids=lambda v: getattr(v, "name", v),
)
def test_16bit_softmax_rows_past_block_smems_256_threads_take_a_cached_tail(dtype, cols, kind,
                                                                             tail):
    # 16-bit softmax rows that block_smem would give 512 threads take 256 threads of 2 register
    # packs and the rest of the row in shared memory, up to 29696 columns (bfloat16: 36864);
    # log_softmax rows stay on block_smem. Aligned and one element off a 16-byte boundary (a
    # pack more), all match the reference.
    for offset, plan in _aligned_and_off_a_boundary(kind, dtype, 3, cols):
        if offset == 0:  # the trace describes the plan for aligned rows
            if tail:
                assert "block_registers: pack=8 cols_per_thread=16 block=256 " in plan, plan
                assert "tail_cols=" in plan, plan
            else:
                assert "block_smem: " in plan, plan


def _ordered_16bit(values: np.ndarray, dtype: oneflite.dtype) -> np.ndarray:
    """float64 values rounded to a 16-bit dtype, as integers that count ulps: neighbours in the
    dtype differ by 1 (and +0 and -0 are both 0)."""
    if dtype == oneflite.float16:
        bits = values.astype(np.float16).view(np.uint16).astype(np.int64)
    else:  # bfloat16: the top half of a float32, rounded to nearest even
        word = values.astype(np.float32).view(np.uint32).astype(np.int64)
        bits = (word + 0x7FFF + ((word >> 16) & 1)) >> 16
    return np.where(bits & 0x8000, -(bits & 0x7FFF), bits & 0x7FFF)


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("dtype", [oneflite.float16, oneflite.bfloat16], ids=lambda d: d.name)
@pytest.mark.parametrize("cols", [32, 100, 200, 1025, 4096, 16384, 65536])
def test_16bit_results_are_the_rounded_reference_or_a_neighbour(cols, dtype, kind):
    # The 16-bit kernels compute in float with the hardware's exp2, reciprocal and log2
    # (MUFU.EX2, MUFU.RCP, MUFU.LG2): their errors must stay far below 16-bit rounding, so every
    # result is the float64 reference rounded to the dtype, or one ulp from it (assert_close's
    # tolerances are several ulps wide).
    # 4096-65536 columns cover the block paths (64 to 512 threads, and two blocks an SM with held
    # packs).
    op, ref = OPS[kind]
    values = np.random.default_rng(cols).standard_normal((64, cols)) * 3
    # Rows one value dominates by a gap g: sums just above 1 (1 + (cols - 1) * e^-g), whose log
    # takes the series on one side of 1 + 2^-10 and MUFU.LG2 on the other (RowLog). Not wider
    # gaps: once the sum's tail nears float's rounding of 1 (2^-24 an addition), the float sum
    # itself leaves -log(sum), the max's output, several 16-bit ulps from the float64 one,
    # whatever computes the log (gap 14: 3-5 ulps on every path).
    for row, gap in enumerate((5.0, 7.0, 9.0, 10.0, 11.0, 12.0)):
        values[row] = -gap + np.random.default_rng(row).uniform(-0.01, 0.0, cols)
        values[row, row % cols] = 0.0
    x = make_tensor(values, dtype, DEVICE)
    expected = _ordered_16bit(ref(to_float64(x), 1), dtype)
    got = _ordered_16bit(to_float64(op(x, -1)), dtype)
    ulps = np.abs(got - expected)
    where = np.unravel_index(ulps.argmax(), ulps.shape)
    assert ulps.max() <= 1, f"{int(ulps.max())} ulps at {where}"


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
def test_transposes_go_through_the_permute_kernel_correctly(dtype):
    rng = np.random.default_rng(5)
    values = rng.standard_normal((3, 5, 7)) * 3
    if dtype == oneflite.bool:
        values = values > 0
    elif dtype in (oneflite.int32, oneflite.int64):
        values = np.round(values * 10)
    x = make_tensor(values, dtype, DEVICE)
    stored = to_float64(x)
    for perm in [(2, 0, 1), (1, 0, 2), (0, 2, 1), (2, 1, 0)]:
        np.testing.assert_array_equal(
            to_float64(x.permute(perm).contiguous()), stored.transpose(perm)
        )
    view = x[1:, ::2, 3:]
    np.testing.assert_array_equal(to_float64(view.contiguous()), stored[1:, ::2, 3:])
    if dtype in FLOATS:
        for dim in range(3):
            for kind, (op, ref) in OPS.items():
                assert_close(
                    to_float64(op(x, dim)), ref(stored, dim), dtype, log=kind == "log_softmax"
                )
                assert_close(
                    to_float64(op(view, dim)),
                    ref(stored[1:, ::2, 3:], dim),
                    dtype,
                    log=kind == "log_softmax",
                )


@pytest.mark.parametrize("source", ALL, ids=lambda d: d.name)
def test_casts_between_every_pair_of_dtypes(source):
    values = np.array([[0.0, 1.0, -2.0, 3.5, 100.0, -7.25, 60000.0, 1e-3]])
    if source == oneflite.bool:
        values = values != 0
    elif source in (oneflite.int32, oneflite.int64):
        values = np.trunc(values)
    x = make_tensor(values, source, DEVICE)
    stored = to_float64(x)
    for target in ALL:
        y = x.to(target)
        assert y.dtype == target and y.device.type == DEVICE
        expected = stored != 0 if target == oneflite.bool else stored
        host = to_float64(y)
        if target in (oneflite.int32, oneflite.int64):
            expected = np.trunc(expected)
        tolerance = {oneflite.float16: 1e-3, oneflite.bfloat16: 8e-3, oneflite.float32: 1e-7}.get(
            target, 0
        )
        np.testing.assert_allclose(
            host,
            expected.astype(np.float64),
            rtol=tolerance,
            err_msg=f"{source.name} -> {target.name}",
        )


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize(
    "source",
    [oneflite.int32, oneflite.int64, oneflite.bool, oneflite.float16, oneflite.float32],
    ids=lambda d: d.name,
)
def test_dtype_argument_casts_on_the_gpu(source, kind):
    op, ref = OPS[kind]
    values = np.round(np.random.default_rng(6).standard_normal((7, 33)) * 5)
    if source == oneflite.bool:
        values = values > 0
    x = make_tensor(values, source, DEVICE)
    for target in FLOATS:
        y = op(x, 1, dtype=target)
        assert y.dtype == target
        assert_close(
            to_float64(y),
            ref(to_float64(x).astype(np.float64), 1),
            target,
            log=kind == "log_softmax",
        )


def test_empty_and_0d_tensors_launch_nothing_harmful():
    for shape in [(0,), (0, 5), (5, 0), (2, 0, 3)]:
        x = make_tensor(np.zeros(shape), oneflite.float32, DEVICE)
        for dim in range(len(shape)):
            for op, _ in OPS.values():
                assert op(x, dim).shape == shape
    scalar = make_tensor(np.float64(3.0), oneflite.float16, DEVICE)
    assert to_float64(F.softmax(scalar)).item() == 1.0
    assert to_float64(F.log_softmax(scalar)).item() == 0.0


@pytest.mark.parametrize("ndim", [16, 17, 20])
def test_permutes_of_many_unmergeable_dims_are_correct_or_not_implemented(ndim):
    # The CUDA permute kernel holds up to 16 dims once neighbours are merged; a reversed order
    # merges none. Past that it must raise NotImplementedError, never write out of bounds.
    values = np.random.default_rng(ndim).standard_normal((2,) * ndim)
    x = make_tensor(values, oneflite.float32, DEVICE)
    order = tuple(reversed(range(ndim)))
    try:
        y = x.permute(order).contiguous()
    except NotImplementedError as error:
        assert ndim > 16 and "16" in str(error), error
    else:
        np.testing.assert_array_equal(to_float64(y), to_float64(x).transpose(order))
    try:
        y = F.softmax(x.permute(order), 0)
    except NotImplementedError:
        assert ndim > 16
    else:
        stored = to_float64(x).transpose(order)
        assert_close(to_float64(y), softmax_ref(stored, 0), oneflite.float32)


# The warp rungs test_every_kernel_path_was_reached expects of some dtypes only: (lanes, values
# a lane).
WARP_RUNGS_OF_SOME = {
    oneflite.float32: ((8, 8), (16, 8)),
    oneflite.float16: ((16, 16), (8, 32), (16, 32)),
    oneflite.bfloat16: ((16, 16), (8, 32), (16, 32)),
}


def test_every_kernel_path_was_reached():
    if len(LAUNCHES) < EXPECTED_LAUNCHES:
        pytest.skip("runs after the whole of test_softmax_kernel_path_matches_the_reference")
    missing = []
    for dtype in FLOATS:
        plans = PLANS[dtype.name]
        paths = {p.split(": ", 1)[1].split(":")[0] for p in plans}
        warp_plans = [p for p in plans if p.split(": ", 1)[1].startswith("warp:")]
        widths = {int(w) for p in warp_plans for w in re.findall(r"thread_group_width=(\d+)", p)}
        rows_per_access = {int(r) for p in plans for r in re.findall(r"rows_per_access=(\d+)", p)}
        tile_re = r"warp_tile: .*cols_per_thread=(\d+) thread_group_width=(\d+)"
        tiles = {(int(w), int(c)) for p in plans for c, w in re.findall(tile_re, p)}
        blocks = defaultdict(set)  # block sizes each block path was launched with
        for p in plans:
            path = p.split(": ", 1)[1].split(":")[0]
            blocks[path].update(int(b) for b in re.findall(r" block=(\d+)", p))
        if dtype != oneflite.float64:
            expected = ("warp", "block_registers", "block_smem", "block_online")
            shape_re = r"block_registers: .*cols_per_thread=(\d+) block=(\d+)"
            shapes = {(int(b), int(c)) for p in plans for c, b in re.findall(shape_re, p)}
            expected_shapes = (
                ((128, 8), (128, 12), (128, 16), (256, 12), (256, 16), (512, 16), (512, 32),
                 (1024, 32))
                if dtype == oneflite.float32
                else ((128, 24), (128, 32), (256, 16), (256, 24), (512, 16))
            )
            for shape in expected_shapes:
                if shape not in shapes:
                    missing.append(f"{dtype.name}: block_registers block={shape[0]} "
                                   f"cols_per_thread={shape[1]}")
            tail_re = r"block_registers: .* block=(\d+) smem=\d+ tail_cols="
            tail_blocks = {int(b) for p in plans for b in re.findall(tail_re, p)}
            for block in (1024,) if dtype == oneflite.float32 else (256, 512):
                if block not in tail_blocks:
                    missing.append(f"{dtype.name}: block_registers block={block} with a tail")
        else:
            expected = ("warp", "block_smem", "block_online")
        if dtype != oneflite.float64:
            expected = (*expected, "warp_tile")
            per_word = 1 if dtype == oneflite.float32 else 2
            for width in TILE_WIDTHS:
                for words in TILE_WORDS:
                    if (width, words * per_word) not in tiles:
                        missing.append(f"{dtype.name}: warp_tile {width} lanes x {words} words")
        if dtype in (oneflite.float16, oneflite.bfloat16):
            for block in (64, 128, 256):
                if block not in blocks["block_smem"]:
                    missing.append(f"{dtype.name}: block_smem block={block}")
        for path in expected:
            if path not in paths:
                missing.append(f"{dtype.name}: {path}")
        for width in (1, 2, 4, 8, 16, 32):
            if width not in widths:
                missing.append(f"{dtype.name}: warp thread_group_width={width}")
        # The rungs only some dtypes take, as (lanes, values a lane): float 8 x 2 where the others
        # take 16 x 1; all but double 16 x 2 where double takes 32 x 1; the 16-bit types 8 x 4
        # and 16 x 4 below 16 x 2 and 32 x 2 (150 and 300 columns).
        for lanes, values in WARP_RUNGS_OF_SOME.get(dtype, ()):
            if not any(f"cols_per_thread={values} thread_group_width={lanes} " in p for p in plans):
                missing.append(f"{dtype.name}: warp cols_per_thread={values} "
                               f"thread_group_width={lanes}")
        # A double warp row holds at most 256 columns, 8 values a lane: always two rows a step.
        for rows in (2,) if dtype == oneflite.float64 else (1, 2):
            if rows not in rows_per_access:
                missing.append(f"{dtype.name}: warp rows_per_access={rows}")
    assert not missing, "kernel paths no shape here reaches (update COLS): " + ", ".join(missing)
