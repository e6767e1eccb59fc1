"""The out-of-tree extension example builds against the installed oneflite and works.

Builds examples/custom_primitive with the installed oneflite's headers and CMake package into
a scratch folder, then runs the example's own tests in a fresh interpreter that sees it (and so
exercises loading through the ``oneflite.backends`` entry point)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_python

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "custom_primitive"


@pytest.fixture(scope="module")
def installed_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("oneflite_custom")
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-build-isolation",
            "--no-deps",
            "--quiet",
            "--target",
            str(target),
            str(EXAMPLE),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, f"building the example failed:\n{build.stdout}\n{build.stderr}"
    return target


def _run(target: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_python(*args, cwd=target, env={"PYTHONPATH": str(target), **env})


def test_example_extension_tests_pass(installed_example: Path) -> None:
    result = _run(
        installed_example, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE / "tests")
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout


def test_entry_point_registers_backends_at_import(installed_example: Path) -> None:
    code = (
        "import oneflite; print(sorted(p['name'] for p in "
        "oneflite.primitive.backends('softmax') if p['device'] == 'cpu'))"
    )
    loaded = _run(installed_example, "-c", code)
    assert loaded.returncode == 0, loaded.stderr
    assert "custom_online" in loaded.stdout

    skipped = _run(installed_example, "-c", code, ONEFLITE_DISABLE_ENTRY_POINTS="1")
    assert skipped.returncode == 0, skipped.stderr
    assert "custom_online" not in skipped.stdout
