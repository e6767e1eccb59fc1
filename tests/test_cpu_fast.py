"""The CPU ``fast`` backend's variants: each instruction-set build, and its 16-bit conversions.

The rest of the suite runs the variant this machine picks. Here each variant is forced in a
child process with ``ONEFLITE_CPU_ISA`` and checked against NumPy in float64, including exact
rounding to float16 and bfloat16; and the kernel source is compiled into a small C++ program
that checks every variant's conversions bit for bit (variants the CPU cannot run are skipped
there, but the 16-lane code also runs under AVX2).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import run_cpp_check, run_python

import oneflite
import oneflite.nn.functional as F

CHECK_SOURCE = Path(__file__).resolve().parent / "cpp" / "simd_softmax_check.cpp"

# What each variant's trace says, as Describe() words it.
DESCRIPTIONS = {"portable": "portable 128-bit", "avx2": "AVX2+FMA+F16C", "avx512": "AVX-512"}


def _launch_text(fn, x: oneflite.Tensor) -> str:
    with oneflite.trace() as t:
        fn(x, dim=-1)
    texts = [e.text for e in t.events if e.layer == "primitive" and "rows=" in e.text]
    assert len(texts) == 1, texts
    return texts[0]


def test_trace_names_the_instruction_set_variant() -> None:
    x = oneflite.tensor(np.zeros((4, 64), dtype=np.float32))
    text = _launch_text(F.softmax, x)
    assert "backend 'fast'" in text
    assert any(d in text for d in DESCRIPTIONS.values()), text


# A child process forces one variant and checks it end to end. It prints the variant it got,
# then SKIP (the CPU lacks it) or OK; any mismatch raises.
CHILD = r"""
import sys
import numpy as np
import ml_dtypes
import oneflite
import oneflite.nn.functional as F

want = sys.argv[1]
with oneflite.trace() as t:
    F.softmax(oneflite.tensor(np.zeros((2, 64), dtype=np.float32)), dim=1)
text = [e.text for e in t.events if e.layer == "primitive" and "rows=" in e.text][0]
print(text)
if DESCRIPTIONS[want] not in text:
    print("SKIP")
    sys.exit(0)

NP = {oneflite.float16: np.float16, oneflite.bfloat16: ml_dtypes.bfloat16,
      oneflite.float32: np.float32, oneflite.float64: np.float64}
TOL = {oneflite.float16: (1e-3, 5e-3), oneflite.bfloat16: (8e-3, 2e-2),
       oneflite.float32: (1e-6, 1e-5), oneflite.float64: (1e-12, 1e-10)}

def reference(a, op):
    m = a.max(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", over="ignore"):
        shifted = a - m
        s = np.exp(shifted).sum(axis=-1, keepdims=True)
        return np.exp(shifted) / s if op == "softmax" else shifted - np.log(s)

rng = np.random.default_rng(0)
oneflite.set_num_threads(2)
for dtype in NP:
    for cols in [*range(1, 40), 63, 64, 65, 100, 128, 129, 255, 512, 513, 1000, 1025, 4099, 20000]:
        rows = 3 if cols > 1000 else 37
        a = (rng.standard_normal((rows, cols)) * 5).astype(NP[dtype]).astype(np.float64)
        a[1, cols // 2] = 50.0                    # one dominant value
        a[2, 0] = -np.inf                         # some -inf
        if rows > 5:
            a[3, :] = -np.inf                     # a row of -inf: NaN
            a[4, cols - 1] = np.nan               # NaN poisons its row
            a[5, cols // 3] = np.inf              # +inf: NaN (inf - inf)
        x = oneflite.tensor(a, dtype=dtype)
        for op in ("softmax", "log_softmax"):
            got = getattr(F, op)(x, dim=1).to(oneflite.float64).numpy()
            atol, rtol = TOL[dtype]
            np.testing.assert_allclose(got, reference(a, op), atol=atol, rtol=rtol,
                                       equal_nan=True, err_msg=f"{dtype} {op} cols={cols}")

# Exact rounding of results to 16 bits. In log_softmax of a row [0.5, x1, x2, ...] with every
# xi <= -40, the sum is 1 + (under 1e-15), so y_i is the float xi - 0.5 (exact) rounded to the
# dtype: for the magnitudes below, often a tie, which must go to even.
for dtype, lo, hi in ((oneflite.float16, 40, 65504), (oneflite.bfloat16, 40, 2.0**20)):
    np_dtype = NP[dtype]
    values = rng.uniform(lo, hi, 4000).astype(np_dtype).astype(np.float64)
    values = np.concatenate([values, np.arange(1024, 2048, dtype=np.float64),
                             np.arange(128, 256, dtype=np.float64)])
    values = values.astype(np_dtype).astype(np.float64)  # as stored
    row = np.concatenate([[0.5], -values[values >= 40]])
    got = F.log_softmax(oneflite.tensor(row[None, :], dtype=dtype), dim=1).numpy()[0]
    want = (row.astype(np.float32) - np.float32(0.5)).astype(np_dtype)
    assert got.view(np.uint16)[1:].tolist() == want.view(np.uint16)[1:].tolist(), dtype
print("OK")
"""


@pytest.mark.parametrize("isa", ["portable", "avx2", "avx512"])
def test_each_variant_matches_numpy(isa: str, tmp_path: Path) -> None:
    code = f"DESCRIPTIONS = {DESCRIPTIONS!r}\n" + CHILD
    result = run_python("-c", code, isa, cwd=tmp_path, env={"ONEFLITE_CPU_ISA": isa})
    assert result.returncode == 0, result.stdout + result.stderr
    if result.stdout.strip().endswith("SKIP"):
        pytest.skip(f"this CPU has no {isa}")
    assert result.stdout.strip().endswith("OK"), result.stdout


def test_an_unknown_variant_name_is_a_value_error(tmp_path: Path) -> None:
    code = (
        "import numpy as np, oneflite, oneflite.nn.functional as F\n"
        "try:\n"
        "    F.softmax(oneflite.tensor(np.zeros((2, 3), dtype=np.float32)), dim=1)\n"
        "except ValueError as e:\n"
        "    print('ValueError:', e)\n"
    )
    result = run_python("-c", code, cwd=tmp_path, env={"ONEFLITE_CPU_ISA": "sse9"})
    assert result.returncode == 0, result.stderr
    assert "ValueError: ONEFLITE_CPU_ISA=sse9" in result.stdout


def test_kernel_variants_compiled_standalone_are_exact(tmp_path: Path) -> None:
    output = run_cpp_check(CHECK_SOURCE, tmp_path, "-Wno-psabi")
    assert "portable: ok" in output
    print(output)


def test_16_bit_edge_values_survive_a_softmax() -> None:
    """Values that only the 16-bit conversions can get wrong, through the default variant:
    subnormal inputs and outputs, the largest finite values, signed zeros and infinities."""
    for dtype, np_dtype, tiny, big in (
        (oneflite.float16, np.float16, 2.0**-24, 65504.0),
        (oneflite.bfloat16, None, 2.0**-133, 3.3895313892515355e38),
    ):
        row = np.array([0.0, -0.0, tiny, -tiny, 3 * tiny, big, -big, -np.inf, 1.0, -1.0] * 7)
        x = oneflite.tensor(row[None, :], dtype=dtype)
        stored = x.to(oneflite.float64).numpy()[0]
        for op in ("softmax", "log_softmax"):
            got = getattr(F, op)(x, dim=1).to(oneflite.float64).numpy()[0]
            shifted = stored - stored.max()
            with np.errstate(over="ignore", invalid="ignore"):
                want = np.exp(shifted) / np.exp(shifted).sum() if op == "softmax" else \
                    shifted - np.log(np.exp(shifted).sum())
                want = oneflite.tensor(want, dtype=dtype).to(oneflite.float64).numpy()  # rounded
            np.testing.assert_allclose(got, want, rtol=2e-2, atol=6e-8)
        # Subnormal softmax outputs: exp of about -16.6 rounds to half's subnormal range.
        if np_dtype is not None:
            row = np.array([0.0, -10.0, -12.0, -14.0, -15.0, -16.0, -17.0])
            got = F.softmax(oneflite.tensor(row[None, :], dtype=dtype), dim=1).numpy()[0]
            want = (np.exp(row) / np.exp(row).sum()).astype(np.float32).astype(np.float16)
            diff = np.abs(got.view(np.uint16).astype(int) - want.view(np.uint16).astype(int))
            assert diff.max() <= 1, (got, want)
