"""The examples in oneflite's docstrings run and print what they show."""

from __future__ import annotations

import pytest
from conftest import run_python

MODULES = [
    "oneflite",
    "oneflite._tensor",
    "oneflite._trace",
    "oneflite.cuda",
    "oneflite.nn.functional",
    "oneflite.nn.modules",
    "oneflite.primitive",
    "oneflite.registry",
]

SCRIPT = """
import doctest, importlib, sys
module = importlib.import_module(sys.argv[1])
result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
print(f"attempted={result.attempted} failed={result.failed}")
sys.exit(1 if result.failed else 0)
"""


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_pass(module, tmp_path):
    # The examples describe a CPU-only build with nothing but the built-in backends.
    env = {
        "ONEFLITE_DISABLE_CUDA": "1",
        "ONEFLITE_DISABLE_ENTRY_POINTS": "1",
        "ONEFLITE_FORCE_PRIMITIVE": "",
    }
    result = run_python("-c", SCRIPT, module, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
