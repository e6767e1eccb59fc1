"""The benchmark runs end to end on the CPU and writes what it promises."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import oneflite
from conftest import run_python


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


def test_min_statistic_is_accepted(tmp_path: Path) -> None:
    result = run_python("-m", "oneflite.bench", "--quick", "--device", "cpu", "--dtypes",
                        "float32", "--ops", "softmax", "--cols", "32", "--repeats", "3",
                        "--statistic", "min", "--out", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    mine = [r for r in json.loads((tmp_path / "results.json").read_text())["results"]
            if r["provider"] == "oneflite"]
    assert len(mine) == 1 and mine[0]["ms"] > 0


def test_overhead_mode_reports_per_call_times(tmp_path: Path) -> None:
    result = run_python("-m", "oneflite.bench", "--overhead", "--quick", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "oneflite.nn.functional.softmax" in result.stdout
    assert "us/call" in result.stdout


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

        def elapsed_time(self, end: "Event") -> float:
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
    advances by its own amount shows which call each time belongs to."""
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
