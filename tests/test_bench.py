"""The benchmark runs end to end on the CPU and writes what it promises."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import run_python

import oneflite


def test_quick_cpu_benchmark_writes_a_checked_table_and_json(tmp_path: Path) -> None:
    result = run_python("-m", "oneflite.bench", "--quick", "--device", "cpu", "--dtypes",
                        "float32", "bfloat16", "--cols", "32", "1025", "--repeats", "2",
                        "--threads", "1", "--out", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    payload = json.loads((tmp_path / "results.json").read_text())
    providers = {r["provider"] for r in payload["results"]}
    assert {"oneflite", "copy", "numpy"} <= providers
    mine = [r for r in payload["results"] if r["provider"] == "oneflite"]
    # 2 dtypes x 2 ops x 2 shapes, each checked against float64 before it was timed.
    assert len(mine) == 8
    assert all(r["gbps"] > 0 and not r["note"] for r in mine)
    assert any(line.startswith("cpu float32 softmax:") for line in payload["summary"])
    assert "oneflite/copy" in result.stdout
    # --threads sets oneflite's count and torch's alike.
    assert payload["environment"]["oneflite_cpu_threads"] == 1
    assert payload["environment"].get("torch_threads", 1) == 1
    assert "CPU threads: oneflite 1" in result.stdout
    # Every peer timed beside oneflite carries oneflite's speed-up over it and its interval.
    peers = [r for r in payload["results"] if r["provider"] in ("torch", "numpy")]
    assert peers
    for r in peers:
        ms = next(m["ms"] for m in mine if (m["dtype"], m["op"], m["cols"]) ==
                  (r["dtype"], r["op"], r["cols"]))
        assert r["speedup"] == pytest.approx(r["ms"] / ms)
        low, high = r["speedup_ci"]
        assert low <= r["speedup"] <= high
    assert all(r["speedup"] is None and r["speedup_ci"] is None for r in payload["results"]
               if r["provider"] in ("oneflite", "copy"))
    assert all(line.endswith("; no peer ahead beyond noise") or
               re.search(r"; a peer ahead beyond noise at cols=\d+ \(\w+ [\d.]+x, 95% CI "
                         r"[\d.]+-[\d.]+\)", line) for line in payload["summary"])
    assert ("No peer was ahead of oneflite at any shape." in result.stdout or
            "Where a peer was ahead of oneflite" in result.stdout)


def test_min_statistic_is_accepted(tmp_path: Path) -> None:
    result = run_python("-m", "oneflite.bench", "--quick", "--device", "cpu", "--dtypes",
                        "float32", "--ops", "softmax", "--cols", "32", "--repeats", "3",
                        "--statistic", "min", "--out", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    mine = [r for r in json.loads((tmp_path / "results.json").read_text())["results"]
            if r["provider"] == "oneflite"]
    assert len(mine) == 1 and mine[0]["ms"] > 0


def test_overhead_mode_reports_per_call_times(tmp_path: Path) -> None:
    result = run_python("-m", "oneflite.bench", "--overhead", "--quick", "--out", str(tmp_path),
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "oneflite.nn.functional.softmax" in result.stdout
    assert "us/call" in result.stdout
    payload = json.loads((tmp_path / "overhead.json").read_text())
    per_call = payload["us_per_call"]
    assert per_call["oneflite.nn.functional.softmax"] > 0
    assert "date" in payload["environment"]

    # docs/_tools/record.py turns it into the page's table, beside no results.json.
    dest = tmp_path / "pages"
    record = Path(__file__).resolve().parent.parent / "docs" / "_tools" / "record.py"
    result = run_python(str(record), "--dest", str(dest), "bench", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    page = (dest / "overhead.md").read_text()
    assert "`oneflite.nn.functional.softmax`" in page and "Measured on the CPU" in page
    assert not (dest / "results.md").exists()  # no sweep in the folder: nothing else written


def test_gpu_timer_flushes_l2_before_every_timed_call_and_not_inside_it() -> None:
    """The order of what the GPU timer queues, with a stand-in for torch's CUDA events."""
    from oneflite.bench import Timer, WithOutput

    queued: list[str] = []

    class Event:
        def __init__(self, enable_timing: bool) -> None:
            assert enable_timing

        def record(self) -> None:
            queued.append("record")

        def synchronize(self) -> None:
            pass

        def elapsed_time(self, end: Event) -> float:
            return 1.0

    fake_torch = SimpleNamespace(cuda=SimpleNamespace(Event=Event))
    timer = Timer("cuda", fake_torch, warmup=2, repeats=3,
                  flush=lambda: queued.append("flush"))
    assert timer(lambda: queued.append("call")) == 1.0
    assert queued == ["call"] * 2 + ["flush", "record", "call", "record"] * 3

    # A peer's output is made before the flush, outside the timed region, and handed to the call.
    queued.clear()
    made = iter(range(100))

    def make() -> int:
        queued.append("make")
        return next(made)

    call = WithOutput(make, lambda output: queued.append(f"call {output}"))
    assert timer(call) == 1.0
    assert queued == ["make", "call 0", "make", "call 1"] + [
        item for n in (2, 3, 4)
        for item in ("make", "flush", "record", f"call {n}", "record")]


def test_timer_takes_the_calls_in_turns_and_reduces_each_to_its_median(monkeypatch) -> None:
    """A burst of other work lands on every provider's repeats alike, not on one provider's; on
    the CPU each timed call follows an untimed call of its own. A fake clock that each call
    advances by its own amount shows which call (and round) each time belongs to."""
    import oneflite.bench as bench

    now = [0.0]
    monkeypatch.setattr(bench, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    calls: list[str] = []

    def call(name: str, seconds: float):
        def run() -> None:
            calls.append(name)
            now[0] += seconds
        return run

    timer = bench.Timer("cpu", warmup=1, repeats=3)
    times = timer.interleaved({"a": call("a", 0.001), "b": call("b", 0.004)})
    assert calls == ["a", "b"] + ["a", "a", "b", "b"] * 3  # an untimed call before each timed one
    assert times == {"a": pytest.approx(1.0), "b": pytest.approx(4.0)}

    # samples keeps every round's time of each call, in round order: the k-th call of "a" takes
    # k ms (of "b" 10k ms), and each round makes an untimed and a timed call of each after one
    # warm-up call, so the timed calls are the 3rd, 5th and 7th.
    def slowing(ms: float):
        count = [0]

        def run() -> None:
            count[0] += 1
            now[0] += ms * count[0] / 1e3
        return run

    samples = timer.samples({"a": slowing(1.0), "b": slowing(10.0)})
    assert list(samples) == ["a", "b"]
    assert samples["a"] == pytest.approx([3.0, 5.0, 7.0])
    assert samples["b"] == pytest.approx([30.0, 50.0, 70.0])


def test_cpu_rounds_leave_numpy_to_rounds_of_its_own(monkeypatch) -> None:
    """NumPy's single-threaded calls, tens of milliseconds each, would leave the other cores idle
    right before whichever provider follows; its repeats come after the others' rounds."""
    import oneflite.bench as bench

    rounds: list[list[str]] = []
    timed = bench.Timer.samples

    def samples(self, fns, places=None):
        rounds.append(list(fns))
        return timed(self, fns, places)

    monkeypatch.setattr(bench.Timer, "samples", samples)
    results = bench.Bench("cpu", repeats=2).run("float32", "softmax", 8, 32, seed=0)
    assert rounds[-1] == ["numpy"] and len(rounds) == 2
    assert "numpy" not in rounds[0] and rounds[0][:2] == ["oneflite", "copy"]
    numpy_row = next(r for r in results if r.provider == "numpy")
    assert numpy_row.ms > 0 and len(numpy_row.speedup_ci) == 2


def test_speedup_interval_lies_above_one_when_the_peer_is_clearly_slower() -> None:
    from oneflite.bench import speedup_interval

    rng = np.random.default_rng(1)
    mine = rng.normal(100, 1, 100)
    peer = rng.normal(103, 1, 100)
    low, high = speedup_interval(list(peer), list(mine))
    assert 1 < low <= np.median(peer) / np.median(mine) <= high
    assert speedup_interval(peer, mine) == (low, high)  # seeded: the same run, the same interval


def test_speedup_interval_contains_one_when_both_come_from_one_distribution() -> None:
    from oneflite.bench import speedup_interval

    rng = np.random.default_rng(2)
    low, high = speedup_interval(rng.normal(100, 1, 100), rng.normal(100, 1, 100))
    assert low < 1 < high


def test_speedup_interval_pairs_the_rounds() -> None:
    """A disturbance of up to +-20% that hits both calls of a round alike hides a 1% deficit
    from a comparison of the two lists as wholes, but not from one round by round."""
    from oneflite.bench import speedup_interval

    rng = np.random.default_rng(3)
    rounds = 100 + rng.uniform(-20, 20, 100)
    mine = rounds + rng.normal(0, 0.1, 100)
    peer = 1.01 * rounds + rng.normal(0, 0.1, 100)
    low, high = speedup_interval(peer, mine)
    assert 1 < low <= high < 1.02


def test_speedup_interval_of_one_round_and_of_the_minimum() -> None:
    from oneflite.bench import speedup_interval

    assert speedup_interval([3.0], [2.0]) == (1.5, 1.5)
    assert speedup_interval([3.0], [2.0], statistic="min") == (1.5, 1.5)
    rng = np.random.default_rng(4)
    mine = rng.normal(100, 1, 50)
    peer = rng.normal(103, 1, 50)
    low, high = speedup_interval(peer, mine, statistic="min")
    assert 1 < low <= peer.min() / mine.min() <= high
    with pytest.raises(ValueError, match="equal"):
        speedup_interval([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="statistic"):
        speedup_interval([1.0], [1.0], statistic="mean")


def test_record_lists_the_shapes_where_a_peer_was_ahead(tmp_path: Path) -> None:
    """docs/_tools/record.py's summary.md: a table of the shapes where a peer took less time than
    oneflite, with the interval's verdict; older results, without intervals, still render."""
    def row(provider: str, cols: int, ms: float, **fields: object) -> dict[str, object]:
        return {"device": "cpu", "dtype": "float32", "op": "softmax", "rows": 64, "cols": cols,
                "provider": provider, "ms": ms, "gbps": 1.0, "fraction_of_copy": 0.5,
                "note": "", **fields}

    def record(results: list[dict[str, object]]) -> str:
        folder = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        environment = {"date": "2026-01-01T00:00:00+00:00", "cpu": "x86_64", "confidence": 0.95}
        (folder / "results.json").write_text(
            json.dumps({"environment": environment, "summary": [], "results": results}))
        dest = folder / "pages"
        record = Path(__file__).resolve().parent.parent / "docs" / "_tools" / "record.py"
        result = run_python(str(record), "--dest", str(dest), "bench", str(folder), cwd=folder)
        assert result.returncode == 0, result.stdout + result.stderr
        return (dest / "summary.md").read_text()

    page = record([
        row("oneflite", 32, 1.0), row("torch", 32, 0.99, speedup=0.99, speedup_ci=[0.98, 0.995]),
        row("numpy", 32, 9.0, speedup=9.0, speedup_ci=[8.0, 10.0]),
        row("oneflite", 64, 1.0), row("torch", 64, 0.999, speedup=0.999, speedup_ci=[0.99, 1.01]),
        row("oneflite", 128, 1.0), row("torch", 128, 0.98),  # recorded before the intervals
    ])
    assert "### Where a peer was ahead" in page
    assert "| cpu | float32 | softmax | 32 | torch | 0.9900 | 0.9800\u20130.9950 | beyond noise |" \
        in page
    assert "| cpu | float32 | softmax | 64 | torch | 0.9990 | 0.9900\u20131.0100 | within noise |" \
        in page
    assert "| cpu | float32 | softmax | 128 | torch | 0.9800 | \u2013 | no interval recorded |" \
        in page
    assert "numpy" not in page.split("### Where a peer was ahead")[1]

    page = record([row("oneflite", 32, 1.0),
                   row("torch", 32, 1.2, speedup=1.2, speedup_ci=[1.1, 1.3])])
    assert "No peer was ahead at any shape." in page


def test_gpu_rounds_take_turns_over_placements_and_share_each_one() -> None:
    """Every call of a round reads the round's input and writes into the round's output block,
    and the rounds cycle over the placements. The allocator is a stand-in with the contract of
    oneflite's: a freed block goes to the next allocation (the last freed first)."""
    from oneflite.bench import Input, Placements, Timer, WithOutput

    free: list[int] = []
    fresh = iter(range(1000, 2000))

    class Block:
        def __init__(self, address: int) -> None:
            self.address = address

        def data_ptr(self) -> int:
            return self.address

        def __del__(self) -> None:
            free.append(self.address)

    timing = [False]  # set by the first timed call's event

    def allocate() -> Block:
        # Every placement's block is made by the untimed warm-up: no timed call allocates one.
        assert free or not timing[0], "a timed call allocated a fresh block"
        return Block(free.pop() if free else next(fresh))

    class Event:
        def __init__(self, enable_timing: bool) -> None:
            pass

        def record(self) -> None:
            timing[0] = True

        def synchronize(self) -> None:
            pass

        def elapsed_time(self, end: Event) -> float:
            return 1.0

    places = Placements([Input(x, None) for x in ("x0", "x1", "x2")])
    read: dict[str, list[str]] = {"own": [], "lent": []}

    def own() -> Block:  # allocates its own output, like oneflite's softmax
        read["own"].append(places.input.x)
        return allocate()

    def lent(y: Block) -> Block:  # writes into a block made for it, like a peer
        read["lent"].append(places.input.x)
        return y

    free.append(7)  # a block of this size some earlier call left behind
    timer = Timer("cuda", SimpleNamespace(cuda=SimpleNamespace(Event=Event)), warmup=1,
                  repeats=7)
    timer.interleaved({"own": own, "lent": WithOutput(allocate, lent)}, places)
    rounds = ["x0", "x1", "x2"] * 2 + ["x0"]
    # [0]: the warm-up call; [1:4]: the warm-up's pass over the placements
    warm = ["x0", "x1", "x2"]
    assert read["own"][1:4] == warm and read["lent"][1:4] == warm
    assert read["own"][4:] == rounds and read["lent"][4:] == rounds
    assert places.used["own"] == places.used["lent"]
    blocks = places.used["own"]
    assert len(set(blocks[:3])) == 3 and blocks[3:] == blocks[:3] + blocks[:1]


needs_gpu_and_torch = pytest.mark.skipif(
    not oneflite.cuda.is_available() or importlib.util.find_spec("torch") is None,
    reason="needs a CUDA GPU and torch",
)


@needs_gpu_and_torch
def test_gpu_peers_write_into_the_block_oneflite_writes() -> None:
    """Where an output lies moves a copy's bandwidth by up to 0.9%, so the GPU peers are given
    the memory oneflite's own output took, not memory of their own."""
    import torch

    from oneflite.bench import Bench

    bench = Bench("cuda", repeats=1)
    x = oneflite.from_dlpack(torch.randn(64, 1000, device="cuda"))
    address = oneflite.nn.functional.softmax(x, dim=1).data_ptr()  # the output is dropped
    out = bench._output_like(x)
    first = out()
    assert first.shape == (64, 1000) and first.dtype == torch.float32
    assert first.data_ptr() == address
    del first
    assert out().data_ptr() == address
    held = out()
    assert out().data_ptr() != held.data_ptr()  # a live buffer is never lent twice


@needs_gpu_and_torch
def test_gpu_rounds_take_turns_over_placements_in_oneflites_allocator() -> None:
    """With oneflite's real allocator: every provider of a round writes the round's block, and
    the rounds cycle over as many blocks as there are placements, each with its own input."""
    from oneflite.bench import Bench

    bench = Bench("cuda", repeats=9, placements=3)
    results = bench.run("float32", "softmax", 64, 1000, seed=0)
    assert all(r.ms is not None and not r.note for r in results)
    places = bench.last_placements
    assert len({t.data_ptr() for t in (i.tx for i in places.inputs)}) == 3
    blocks = places.used["oneflite"]
    assert len(blocks) == 9 and len(set(blocks)) == 3
    assert blocks[3:] == blocks[:6]
    for name in ("copy", "torch"):
        assert places.used[name] == blocks, name


@needs_gpu_and_torch
def test_quick_gpu_benchmark_checks_every_provider(tmp_path: Path) -> None:
    result = run_python("-m", "oneflite.bench", "--quick", "--device", "cuda", "--dtypes",
                        "float32", "bfloat16", "--cols", "100", "1025", "--repeats", "2",
                        "--out", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    results = json.loads((tmp_path / "results.json").read_text())["results"]
    timed = {r["provider"] for r in results if r["gbps"]}
    assert {"oneflite", "copy", "torch"} <= timed
    # Every provider's output passed the float64 check (a WRONG note otherwise).
    assert not [r for r in results if r["note"]]


@pytest.mark.parametrize(("cols", "config"), [
    (1, (1, 4)), (32, (32, 4)), (33, (64, 4)), (1000, (1024, 4)), (1024, (1024, 4)),
    (1025, (2048, 8)), (2048, (2048, 8)), (2049, (4096, 16)), (3072, (4096, 16)),
    (65536, (65536, 16)),
])
def test_triton_kernel_takes_the_row_in_the_next_power_of_two(cols, config) -> None:
    """The tutorial's launch: BLOCK the least power of two that holds the row, on 4 warps below
    2048, 8 below 4096 and 16 from there."""
    from oneflite.bench import triton_launch_config

    assert triton_launch_config(cols) == config


def test_triton_cubins_compile_for_an_architecture_without_a_gpu(tmp_path: Path) -> None:
    """tools/triton_cubins.py --arch compiles the benchmark's Triton kernel for sm_90 on any
    machine, specialized as the benchmark's launch on contiguous rows: 16-byte loads where the
    columns are a multiple of 16 (float 3072: two a thread on 512 threads), element loads
    otherwise (1000 columns: four to each 16-byte stretch)."""
    pytest.importorskip("triton")
    tool = Path(__file__).resolve().parents[1] / "tools" / "triton_cubins.py"
    result = run_python(str(tool), str(tmp_path), "--arch", "90", "--dtypes", "float32",
                        "--cols", "1000", "3072", "--ptx", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "float_3072.cubin").read_bytes()[:4] == b"\x7fELF"
    assert (tmp_path / "float_3072.txt").read_text().split()[:2] == ["512", "64"]
    assert (tmp_path / "float_1000.txt").read_text().split()[0] == "128"
    wide = tmp_path.joinpath("float_3072.ptx").read_text()
    assert "sm_90" in wide
    assert len(re.findall(r"ld\.global\.v4\.b32", wide)) == 2
    assert "ld.global.b32" not in wide
    narrow = tmp_path.joinpath("float_1000.ptx").read_text()
    assert "ld.global.v4" not in narrow and len(re.findall(r"ld\.global\.b32", narrow)) == 8
