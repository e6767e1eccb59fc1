"""``python -m oneflite``: what this build is, what each layer has registered, and one softmax
traced from Python down to its primitive."""

from __future__ import annotations

import platform
import sys

import numpy as np

import oneflite
from oneflite import _C


def _section(title: str) -> None:
    print(f"\n{title}\n{'-' * len(title)}")


def _table(rows: list[list[str]]) -> None:
    if not rows:
        print("  (none)")
        return
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths)] + [row[-1]]
        print("  " + "  ".join(cells).rstrip())


def main() -> int:
    build = _C._build_info()
    print(f"oneflite {oneflite.__version__}")
    print(f"  python {platform.python_version()}, numpy {np.__version__}, "
          f"{build['compiler']}, C++ {build['cxx_standard']}, {build['build_type']} build")
    print(f"  CUDA backend: {'compiled' if oneflite.cuda.is_compiled() else 'not compiled'}")

    _section("Devices")
    backends = _C._device_backends()
    for name, text in backends.items():
        lines = text.splitlines()
        print(f"  {name:<5} {lines[0]}")
        for line in lines[1:]:
            print(f"        {line}")
    print(f"  cuda available: {oneflite.cuda.is_available()} "
          f"({oneflite.cuda.device_count()} device(s))")

    _section("Functors (C++ function library)")
    _table([[f["name"], f["signature"]] for f in oneflite.registry.functors()])

    _section("Ops (registered op definitions)")
    _table([[o["name"], f"{', '.join(o['inputs'])} -> {', '.join(o['outputs'])}",
             f"attrs: {', '.join(o['attrs']) or '-'}", o["doc"]]
            for o in oneflite.registry.ops()])

    _section("Kernels (per op, highest priority first)")
    _table([[k["op"], k["name"], f"priority {k['priority']}", f"match: {k['match']}"]
            for k in oneflite.registry.kernels()])

    _section("Primitives (backends per kind and device, highest priority first)")
    _table([[p["kind"], p["device"], p["name"], f"priority {p['priority']}",
             ", ".join(p["dtypes"])] for p in oneflite.registry.primitives()])

    device = "cuda" if oneflite.cuda.is_available() else "cpu"
    _section(f"Worked example: softmax over dim 0 of a (2, 3) float32 tensor on {device}")
    values = np.array([[1.0, 2.0, 3.0], [1.0, 0.0, -1.0]], dtype=np.float32)
    x = oneflite.tensor(values, device=device)
    print(f"x = {x!r}\n")
    with oneflite.trace() as t:
        y = oneflite.nn.functional.softmax(x, dim=0)
    print(t)
    print(f"\ny = {y!r}")
    expected = np.exp(values - values.max(0)) / np.exp(values - values.max(0)).sum(0)
    error = float(np.abs(y.cpu().numpy() - expected).max())
    print(f"max |y - numpy| = {error:.2e}")
    return 0 if error < 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
