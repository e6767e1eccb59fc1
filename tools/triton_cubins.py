"""Compiles the benchmark's Triton softmax for each dtype and row length and writes the cubins,
for tools/softmax_lab.cu's variant ``triton``, which runs them on the same buffers as oneflite's
kernels. Needs torch, triton and a GPU.

    python tools/triton_cubins.py DIR [--dtypes float16 bfloat16 float32] [--cols 768 1024 ...]
                                      [--maxnreg N] [--ptx]

Writes DIR/<dtype>_<cols>.cubin and DIR/<dtype>_<cols>.txt ("threads smem params"), with the
lab's dtype names (half, bfloat16, float); with --ptx also the PTX Triton assembled the cubin
from (DIR/<dtype>_<cols>.ptx), to assemble with another ptxas.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import torch

from oneflite import bench

LAB_NAMES = {"float16": "half", "bfloat16": "bfloat16", "float32": "float"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--dtypes", nargs="+", default=list(LAB_NAMES), choices=list(LAB_NAMES))
    parser.add_argument("--cols", nargs="+", type=int, default=bench.SWEEP_COLS)
    parser.add_argument("--maxnreg", type=int, default=None,
                        help="cap the kernel's registers (Triton's maxnreg), for experiments")
    parser.add_argument("--ptx", action="store_true", help="also write each kernel's PTX")
    args = parser.parse_args()
    softmax = bench._triton_softmax()
    if softmax is None:
        raise SystemExit("triton is not importable")
    args.dir.mkdir(parents=True, exist_ok=True)
    for dtype in args.dtypes:
        for cols in args.cols:
            x = torch.randn(2, cols, device="cuda", dtype=getattr(torch, dtype))
            options = {} if args.maxnreg is None else {"maxnreg": args.maxnreg}
            kernel = softmax.launch(x, torch.empty_like(x), **options)
            entry = re.search(r"\.entry\s+\w+\(([^)]*)\)", kernel.asm["ptx"])
            params = entry.group(1).count(".param") if entry else 5
            threads = kernel.metadata.num_warps * 32
            stem = args.dir / f"{LAB_NAMES[dtype]}_{cols}"
            stem.with_suffix(".cubin").write_bytes(kernel.asm["cubin"])
            if args.ptx:
                stem.with_suffix(".ptx").write_text(kernel.asm["ptx"])
            stem.with_suffix(".txt").write_text(
                f"{threads} {kernel.metadata.shared} {params}\n")
            print(f"{stem}: {threads} threads, {kernel.metadata.shared} B shared, "
                  f"{params} parameters, {kernel.n_regs} registers")


if __name__ == "__main__":
    main()
