"""Writes measured results into the docs: the files under docs/_static/bench/ that pages include.

    python -m oneflite.bench --out /tmp/bench          # on the GPU machine
    python -m oneflite.bench --overhead --out /tmp/bench   # the per-call cost, same folder
    python docs/_tools/record.py bench /tmp/bench      # same machine: tables, plot, paths
    python docs/_tools/record.py cuda                  # same machine: launch plans, a CUDA trace
    python docs/_tools/record.py reset                 # back to the "no results" placeholders

``bench`` reads results.json (and results.png, if the benchmark drew one) and writes
results.md, summary.md and one table per CUDA path; and overhead.md from overhead.json, where
``--overhead`` left one. When a GPU is usable it also asks oneflite
which path served each CUDA shape (by tracing a one-row call of that shape), so the tables are
split by path without guessing. ``cuda`` records the launch plan PlanSoftmax makes for a range
of row lengths and the running example traced on the GPU. Every file names the device and the
date it was measured on.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

DEST = Path(__file__).resolve().parent.parent / "_static" / "bench"
NO_GPU = "No GPU results recorded yet."
PATHS = ("warp", "warp_tile", "block_registers", "block_smem", "block_online")

# departures.md is not among these: it quotes tools/softmax_lab.sh's ablations (lab_h200.txt
# beside it), which this script neither runs nor reads, so `reset` leaves it alone.
PLACEHOLDERS = {
    "summary.md": f"{NO_GPU} The summary of `python -m oneflite.bench` appears here once a "
                  "run is recorded with `docs/_tools/record.py`.\n",
    "results.md": f"{NO_GPU} The plot and the full table of `python -m oneflite.bench` appear "
                  "here once a run is recorded with `docs/_tools/record.py`.\n",
    "cuda_plans.md": f"{NO_GPU} The launch plans recorded on a GPU appear here once "
                     "`docs/_tools/record.py cuda` has run on one.\n",
    "cuda_trace.md": f"{NO_GPU} The running example, traced on a GPU, appears here once "
                     "`docs/_tools/record.py cuda` has run on one.\n",
    "overhead.md": "No per-call cost recorded yet. It appears here once a run of `python -m "
                   "oneflite.bench --overhead` is recorded with `docs/_tools/record.py`.\n",
    **{f"path_{path}.md": f"{NO_GPU} Measurements of the `{path}` path appear here once a "
                          "GPU benchmark run is recorded with `docs/_tools/record.py`.\n"
       for path in PATHS},
}


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _measured_on(env: dict[str, Any], device: str) -> str:
    where = env.get("gpu", "a GPU") if device == "cuda" else f"the CPU ({env.get('cpu', '?')}, " \
        f"{env.get('oneflite_cpu_threads', '?')} threads)"
    versions = ", ".join(f"{k} {env[k]}" for k in ("oneflite", "torch", "triton", "numpy")
                         if k in env)
    # A results.json joined from two runs of the same code names the other run's date per
    # device ("cpu_date", "cuda_date") and why (`joined`).
    date = env.get(f"{device}_date", env.get("date", "date unknown"))
    joined = f" {env['joined'][device]}" if device in env.get("joined", {}) else ""
    repeats = (env.get("repeats") or {}).get(device)  # absent from results before it was kept
    times = f" Each time is the {env.get('statistic', 'median')} of {repeats} calls." \
        if repeats else ""
    placements = env.get("gpu_placements") if device == "cuda" else None
    if placements and placements > 1:  # absent from results before the rounds took turns
        times += f" The calls' rounds took {placements} places in memory in turn."
    return f"Measured on {where}, {date} ({versions}).{joined}{times}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |",
             "| " + " | ".join("---:" if h in ("rows", "cols") or "GB/s" in h or "copy" in h
                               else "---" for h in header) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _fmt(value: float | None, digits: int = 1) -> str:
    return "\u2013" if value is None else f"{value:.{digits}f}"


def _cuda_paths(shapes: set[tuple[str, str, int, int]]) -> dict[tuple[str, str, int], str]:
    """(dtype, op, cols) -> the plan oneflite's trace reports for each CUDA shape (dtype, op,
    rows, cols), planned for the rows the benchmark ran: the grid, and some choices, depend on
    them."""
    import numpy as np

    import oneflite

    if not oneflite.cuda.is_available():
        return {}
    plans = {}
    x = None
    # Both ops of a (dtype, rows, cols) in turn, so that they share one input tensor.
    for dtype, op, rows, cols in sorted(shapes, key=lambda s: (s[0], s[2], s[3], s[1])):
        if x is None or x.shape != (rows, cols) or x.dtype != getattr(oneflite, dtype):
            x = None  # the last shape's tensor goes before the next one is made
            x = oneflite.tensor(np.zeros((rows, cols), dtype=np.float32),
                                dtype=getattr(oneflite, dtype), device="cuda")
        fn = oneflite.nn.functional.softmax if op == "softmax" else \
            oneflite.nn.functional.log_softmax
        with oneflite.trace() as t:
            fn(x, dim=-1)
        line = next(e.text for e in t.events if e.layer == "primitive")
        plans[(dtype, op, cols)] = re.sub(r"^.*?cols=\d+: ", "", line)
    return plans


def _peers_ahead(cells: dict[tuple[str, str, str, int], dict[str, dict[str, Any]]],
                 env: dict[str, Any]) -> str:
    """summary.md's second table: every shape where a peer took less time than oneflite, with
    oneflite's speed-up over it, its interval, and whether the peer is ahead beyond noise (the
    whole interval below 1), to four places as the benchmark prints them. Results recorded
    before the benchmark kept intervals have only the times, so the speed-up is taken from
    those and the verdict says no interval exists."""
    confidence = f"{env.get('confidence', 0.95):.0%} CI"
    rows = []
    for key in sorted(cells, key=lambda k: (k[0] != "cuda", k)):
        mine = cells[key].get("oneflite", {}).get("ms")
        if not mine:
            continue
        for peer in ("torch", "triton", "numpy"):
            r = cells[key].get(peer, {})
            if not r.get("ms"):
                continue
            speedup = r.get("speedup") or r["ms"] / mine
            if speedup >= 1:
                continue
            interval = r.get("speedup_ci")
            if interval is None:
                shown, verdict = "\u2013", "no interval recorded"
            else:
                shown = f"{interval[0]:.4f}\u2013{interval[1]:.4f}"
                verdict = "beyond noise" if interval[1] < 1 else "within noise"
            rows.append([*key[:3], str(key[3]), peer, f"{speedup:.4f}", shown, verdict])
    text = "### Where a peer was ahead\n\n"
    if not rows:
        return text + "No peer was ahead at any shape.\n"
    return text + (
        "oneflite's speed-up is the peer's time over oneflite's, below 1 on these rows. The "
        f"{confidence} comes from a paired bootstrap over the rounds of calls: it covers the "
        "noise of this run on this machine, not the spread between runs or machines. A peer is "
        "ahead beyond noise where the whole interval lies below 1.\n\n" +
        _table(["device", "dtype", "op", "cols", "peer", "oneflite's speed-up", confidence,
                "verdict"], rows))


def record_bench(folder: Path, dest: Path) -> None:
    payload = json.loads((folder / "results.json").read_text())
    env = payload["environment"]
    results = payload["results"]
    cells: dict[tuple[str, str, str, int], dict[str, dict[str, Any]]] = defaultdict(dict)
    rows_of: dict[tuple[str, str, str, int], int] = {}
    for r in results:
        key = (r["device"], r["dtype"], r["op"], r["cols"])
        cells[key][r["provider"]] = r
        rows_of[key] = r["rows"]
    providers = [p for p in ("oneflite", "copy", "torch", "triton", "numpy")
                 if any(p in c for c in cells.values())]
    cuda_shapes = {(d, o, rows_of[(dev, d, o, c)], c) for (dev, d, o, c) in cells if dev == "cuda"}
    plans = _cuda_paths(cuda_shapes)

    def gbps(key: tuple[str, str, str, int], provider: str) -> str:
        r = cells[key].get(provider)
        if r is None:
            return "\u2013"
        return "wrong" if r["gbps"] is None else _fmt(r["gbps"])

    # results.md: where and when, the plot, every measurement.
    parts = []
    for device in ("cuda", "cpu"):
        keys = sorted(k for k in cells if k[0] == device)
        if not keys:
            continue
        parts.append(f"### {'GPU' if device == 'cuda' else 'CPU'}\n\n"
                     f"{_measured_on(env, device)}\n")
        header = ["dtype", "op", "rows", "cols", *(f"{p} GB/s" for p in providers),
                  "oneflite / copy"]
        if device == "cuda" and plans:
            header.append("path")
        table_rows = []
        for key in keys:
            mine = cells[key].get("oneflite", {})
            row = [key[1], key[2], str(rows_of[key]), str(key[3]),
                   *(gbps(key, p) for p in providers),
                   _fmt(mine.get("fraction_of_copy"), 3)]
            if device == "cuda" and plans:
                row.append(plans.get((key[1], key[2], key[3]), "?").split(":")[0])
            table_rows.append(row)
        parts.append(_table(header, table_rows))
    text = "" if any(k[0] == "cuda" for k in cells) else f"{NO_GPU}\n\n"
    if (folder / "results.png").exists():
        shutil.copyfile(folder / "results.png", dest / "results.png")
        text += "![GB/s of each provider against row length](results.png)\n\n"
    (dest / "results.md").write_text(text + "\n".join(parts))

    # summary.md: one line per (device, dtype, op).
    summary_rows = []
    for device, dtype, op in sorted({k[:3] for k in cells}, key=lambda k: (k[0] != "cuda", k)):
        keys = [k for k in cells if k[:3] == (device, dtype, op)]
        fractions = [cells[k]["oneflite"]["fraction_of_copy"] for k in keys
                     if cells[k].get("oneflite", {}).get("fraction_of_copy")]
        if not fractions:
            continue
        worst = min(keys, key=lambda k: cells[k].get("oneflite", {}).get("fraction_of_copy")
                    or math.inf)
        peers = []
        for peer in ("torch", "triton", "numpy"):
            ratios = [cells[k][peer]["ms"] / cells[k]["oneflite"]["ms"] for k in keys
                      if cells[k].get(peer, {}).get("ms")
                      and cells[k].get("oneflite", {}).get("ms")]
            if ratios:
                peers.append(f"{_geomean(ratios):.2f}\u00d7 {peer}")
        summary_rows.append([device, dtype, op, f"{_geomean(fractions):.3f}",
                             f"{cells[worst]['oneflite']['fraction_of_copy']:.3f} "
                             f"(cols {worst[3]})", ", ".join(peers) or "\u2013"])
    text = "" if cuda_shapes else f"{NO_GPU}\n\n"
    devices = sorted({k[0] for k in cells}, key=lambda d: d != "cuda")
    text += " ".join(_measured_on(env, d) for d in devices) + "\n\n"
    text += _table(["device", "dtype", "op", "oneflite / copy (geomean)", "worst",
                    "speed-up over peers (geomean)"], summary_rows)
    text += "\n" + _peers_ahead(cells, env)
    (dest / "summary.md").write_text(text)

    # path_<path>.md: the CUDA measurements each path served.
    for path in PATHS:
        keys = sorted(k for k in cells if k[0] == "cuda" and
                      plans.get((k[1], k[2], k[3]), "").startswith(path + ":"))
        if not keys:
            (dest / f"path_{path}.md").write_text(PLACEHOLDERS[f"path_{path}.md"])
            continue
        table_rows = [[k[1], k[2], str(k[3]), gbps(k, "oneflite"), gbps(k, "copy"),
                       _fmt(cells[k].get("oneflite", {}).get("fraction_of_copy"), 3),
                       gbps(k, "torch"), plans[(k[1], k[2], k[3])].split(": ", 1)[-1]]
                      for k in keys]
        (dest / f"path_{path}.md").write_text(
            _measured_on(env, "cuda") + "\n\n" +
            _table(["dtype", "op", "cols", "oneflite GB/s", "copy GB/s", "oneflite / copy",
                    "torch GB/s", "plan"], table_rows))


def record_overhead(folder: Path, dest: Path) -> bool:
    """overhead.md from the benchmark's overhead.json, if the folder has one: each call's cost in
    microseconds, and over torch's where torch was measured."""
    path = folder / "overhead.json"
    if not path.exists():
        return False
    payload = json.loads(path.read_text())
    env, per_call = payload["environment"], payload["us_per_call"]
    torch_us = per_call.get("torch.nn.functional.softmax")
    rows = [[f"`{name}`", f"{us:.2f}", f"{us / torch_us:.2f}" if torch_us else "\u2013"]
            for name, us in per_call.items()]
    (dest / "overhead.md").write_text(
        _measured_on(env, "cpu") + " Each time is the median of 20 batches of calls made back to "
        "back.\n\n" + _table(["a 1x8 float32 softmax on the CPU", "\u00b5s a call",
                               "over torch's"], rows))
    return True


PLAN_COLS = [1, 2, 3, 8, 32, 33, 100, 512, 1000, 1024, 1025, 2048, 2049, 3072, 4096, 5000, 8192,
             12345, 16384, 32768, 65536, 131072, 262144]


def record_cuda(dest: Path, rows: int, device: str = "cuda") -> None:
    import datetime

    import numpy as np

    import oneflite
    from oneflite import _C

    if device == "cuda" and not oneflite.cuda.is_available():
        raise SystemExit("record.py cuda: no CUDA device is available")
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    described = _C._device_backends().get(device, device).strip()
    header = f"Recorded on {date}; the device, as `python -m oneflite` reports it:\n\n" \
             f"```text\n{described}\n```\n\n"

    text = header + f"`softmax` of a (rows, cols) tensor with rows = min({rows}, 2^26 / cols), " \
        "as the trace's primitive line reports the plan.\n"
    for dtype in (oneflite.float32, oneflite.float16, oneflite.float64):
        table_rows = []
        for cols in PLAN_COLS:
            n = max(1, min(rows, 2**26 // cols))
            x = oneflite.tensor(np.zeros((n, cols)), dtype=dtype, device=device)
            with oneflite.trace() as t:
                oneflite.softmax(x, dim=-1)
            line = next(e.text for e in t.events if e.layer == "primitive")
            table_rows.append([str(cols), str(n), "`" + re.sub(r"^.*?cols=\d+: ", "", line) + "`"])
        text += f"\n**{dtype.name}**\n\n" + _table(["cols", "rows", "plan"], table_rows)
    (dest / "cuda_plans.md").write_text(text)

    values = np.array([[1.0, 2.0, 3.0], [1.0, 0.0, -1.0]], dtype=np.float32)
    x = oneflite.tensor(values, device=device)
    with oneflite.trace() as t:
        y = oneflite.nn.functional.softmax(x, dim=0)
    (dest / "cuda_trace.md").write_text(
        header + "```text\n" + f"x = {x!r}\n\n{t}\n\ny = {y!r}\n" + "```\n")


def reset(dest: Path) -> None:
    for name, text in PLACEHOLDERS.items():
        (dest / name).write_text(text)
    (dest / "results.png").unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dest", type=Path, default=DEST, help="where the pages look")
    commands = parser.add_subparsers(dest="command", required=True)
    bench = commands.add_parser("bench", help="record a python -m oneflite.bench run")
    bench.add_argument("folder", type=Path, help="the benchmark's --out folder")
    cuda = commands.add_parser("cuda", help="record launch plans and a trace on this GPU")
    cuda.add_argument("--rows", type=int, default=65536)
    cuda.add_argument("--device", default="cuda", help="cpu: a dry run of the format")
    commands.add_parser("reset", help="restore the no-results placeholders")
    args = parser.parse_args(argv)
    args.dest.mkdir(parents=True, exist_ok=True)
    if args.command == "bench":
        swept = (args.folder / "results.json").exists()
        if swept:
            record_bench(args.folder, args.dest)
        if not record_overhead(args.folder, args.dest) and not swept:
            parser.error(f"{args.folder} holds neither results.json nor overhead.json")
    elif args.command == "cuda":
        record_cuda(args.dest, args.rows, args.device)
    else:
        reset(args.dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
