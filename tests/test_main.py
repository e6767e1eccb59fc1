"""``python -m oneflite`` describes the build, every registry, and traces one softmax."""

from __future__ import annotations

import re

import pytest
from conftest import run_python

import oneflite

HEADINGS = [
    "Devices",
    "Functors",
    "Ops",
    "Kernels",
    "Primitives",
    "Worked example",
]


@pytest.fixture(scope="module")
def output(tmp_path_factory: pytest.TempPathFactory) -> str:
    result = run_python("-m", "oneflite", cwd=tmp_path_factory.mktemp("main"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    return result.stdout


def test_prints_the_version_first(output):
    assert output.splitlines()[0] == f"oneflite {oneflite.__version__}"


def test_prints_every_section_heading_in_order(output):
    lines = output.splitlines()
    positions = []
    for heading in HEADINGS:
        found = [i for i, line in enumerate(lines) if line.startswith(heading)]
        assert found, f"no section {heading!r}"
        positions.append(found[0])
        # Each heading is underlined.
        assert set(lines[found[0] + 1]) == {"-"}
    assert positions == sorted(positions)


def _section(output: str, heading: str) -> str:
    start = output.index(f"\n{heading}")
    following = [output.find(f"\n{h}", start + 1) for h in HEADINGS]
    end = min([p for p in following if p > start] or [len(output)])
    return output[start:end]


def test_devices_section_lists_cpu_and_cuda_availability(output):
    devices = _section(output, "Devices")
    assert re.search(r"^\s+cpu\b", devices, re.MULTILINE)
    assert f"cuda available: {oneflite.cuda.is_available()}" in devices
    assert f"({oneflite.cuda.device_count()} device(s))" in devices


def test_registry_sections_list_every_registered_entry(output):
    functors = _section(output, "Functors")
    for f in oneflite.registry.functors():
        assert f["signature"] in functors
    ops = _section(output, "Ops")
    for o in oneflite.registry.ops():
        assert re.search(rf"^\s+{o['name']}\s", ops, re.MULTILINE)
    kernels = _section(output, "Kernels")
    for k in oneflite.registry.kernels():
        assert re.search(rf"^\s+{k['op']}\s+{k['name']}\s", kernels, re.MULTILINE)
    primitives = _section(output, "Primitives")
    for p in oneflite.registry.primitives():
        assert re.search(
            rf"^\s+{p['kind']}\s+{p['device']}\s+{p['name']}\s", primitives, re.MULTILINE
        )


def test_worked_example_traces_softmax_to_a_primitive_and_matches_numpy(output):
    example = _section(output, "Worked example")
    assert "softmax" in example
    for layer in ("functional", "functor", "op", "kernel", "primitive"):
        assert layer in example
    match = re.search(r"max \|y - numpy\| = ([0-9.e+-]+)", example)
    assert match, example
    assert float(match.group(1)) < 1e-6
