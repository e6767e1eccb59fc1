"""Compiles the benchmark's Triton softmax for each dtype and row length and writes the cubins,
for tools/softmax_lab.cu's variant ``triton``, which runs them on the same buffers as oneflite's
kernels. Needs triton; with a GPU (and torch) it compiles for that GPU by launching the kernel,
and with ``--arch`` it compiles for that architecture on any machine, GPU or not.

    python tools/triton_cubins.py DIR [--dtypes float16 bfloat16 float32] [--cols 768 1024 ...]
                                      [--maxnreg N] [--ptx] [--sass] [--arch 90]

Writes DIR/<dtype>_<cols>.cubin and DIR/<dtype>_<cols>.txt ("threads smem params"), with the
lab's dtype names (half, bfloat16, float); with --ptx also the PTX Triton assembled the cubin
from (DIR/<dtype>_<cols>.ptx), to assemble with another ptxas; with --sass also the cubin's SASS
(DIR/<dtype>_<cols>.sass, by the cuobjdump that comes with triton).

``--arch`` compiles the kernel as a launch on contiguous rows would specialize it: the pointers on
16-byte boundaries, and each integer argument (the strides and the columns, all ``cols``) marked
a multiple of 16 where it is one. So the cubin is the launch's, built without a GPU: the
kernel's SASS can be read on this machine, and the cubins carried to a lent GPU.
"""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path
from typing import Any

from oneflite import bench

LAB_NAMES = {"float16": "half", "bfloat16": "bfloat16", "float32": "float"}
TRITON_TYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}


def compile_on_gpu(dtype: str, cols: int, options: dict[str, Any]) -> Any:
    """The kernel as the benchmark launches it, on this machine's GPU."""
    import torch

    softmax = bench._triton_softmax()
    if softmax is None:
        raise SystemExit("torch or triton is not importable")
    x = torch.randn(2, cols, device="cuda", dtype=getattr(torch, dtype))
    return softmax.launch(x, torch.empty_like(x), **options)


def compile_for_arch(dtype: str, cols: int, arch: int, options: dict[str, Any]) -> Any:
    """The kernel for sm_<arch>, specialized as a launch on contiguous rows of `cols` columns."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernel = bench._triton_row_softmax()
    if kernel is None:
        raise SystemExit("triton is not importable")
    block, num_warps = bench.triton_launch_config(cols)
    pointer = "*" + TRITON_TYPES[dtype]
    signature = {"out_ptr": pointer, "in_ptr": pointer, "in_stride": "i32", "out_stride": "i32",
                 "n_cols": "i32", "BLOCK": "constexpr"}
    # Arguments 0-4: the two pointers (on 16-byte boundaries), then in_stride, out_stride and
    # n_cols, each `cols` for contiguous rows.
    multiples_of_16 = [0, 1] + ([2, 3, 4] if cols % 16 == 0 else [])
    attrs = {(i,): [["tt.divisibility", 16]] for i in multiples_of_16}
    source = ASTSource(fn=kernel, signature=signature, constexprs={"BLOCK": block}, attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": num_warps, **options})


def cuobjdump() -> Path:
    """The cuobjdump that comes with triton's NVIDIA backend."""
    import triton

    return Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--dtypes", nargs="+", default=list(LAB_NAMES), choices=list(LAB_NAMES))
    parser.add_argument("--cols", nargs="+", type=int, default=bench.SWEEP_COLS)
    parser.add_argument("--maxnreg", type=int, default=None,
                        help="cap the kernel's registers (Triton's maxnreg), for experiments")
    parser.add_argument("--ptx", action="store_true", help="also write each kernel's PTX")
    parser.add_argument("--sass", action="store_true", help="also write each cubin's SASS")
    parser.add_argument("--arch", type=int, default=None,
                        help="compile for sm_ARCH (say 90) without a GPU, instead of for this "
                             "machine's GPU")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    options = {} if args.maxnreg is None else {"maxnreg": args.maxnreg}
    for dtype in args.dtypes:
        for cols in args.cols:
            kernel = (compile_on_gpu(dtype, cols, options) if args.arch is None
                      else compile_for_arch(dtype, cols, args.arch, options))
            entry = re.search(r"\.entry\s+\w+\(([^)]*)\)", kernel.asm["ptx"])
            params = entry.group(1).count(".param") if entry else 5
            threads = kernel.metadata.num_warps * 32
            stem = args.dir / f"{LAB_NAMES[dtype]}_{cols}"
            stem.with_suffix(".cubin").write_bytes(kernel.asm["cubin"])
            if args.ptx:
                stem.with_suffix(".ptx").write_text(kernel.asm["ptx"])
            if args.sass:
                sass = subprocess.run([str(cuobjdump()), "-sass", str(stem.with_suffix(".cubin"))],
                                      check=True, capture_output=True, text=True).stdout
                stem.with_suffix(".sass").write_text(sass)
            stem.with_suffix(".txt").write_text(
                f"{threads} {kernel.metadata.shared} {params}\n")
            registers = getattr(kernel, "n_regs", None)
            print(f"{stem}: {threads} threads, {kernel.metadata.shared} B shared, "
                  f"{params} parameters"
                  + ("" if registers is None else f", {registers} registers"))


if __name__ == "__main__":
    main()
