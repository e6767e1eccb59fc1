"""The examples in oneflite's docstrings run and print what they show, and the members of
oneflite.Tensor that the API reference lists all have a docstring."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from conftest import run_python

import oneflite

TENSOR_PAGE = Path(__file__).resolve().parent.parent / "docs" / "api" / "tensor.md"

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


def _own_doc(member: object, name: str) -> str:
    """The docstring without the signature line pybind11 puts first for a C++ method."""
    lines = (inspect.getdoc(member) or "").splitlines()
    if lines and lines[0].startswith(f"{name}("):
        lines = lines[1:]
    return "\n".join(lines).strip()


def test_tensor_members_have_docstrings():
    # The page documents the public members and the special members it names.
    special = re.search(r":special-members:\s*(.+)", TENSOR_PAGE.read_text(encoding="utf-8"))
    assert special is not None, f"{TENSOR_PAGE} no longer lists :special-members:"
    names = [n for n in dir(oneflite.Tensor) if not n.startswith("_")]
    names += [n.strip() for n in special.group(1).split(",")]
    missing = [n for n in names if not _own_doc(getattr(oneflite.Tensor, n), n)]
    assert missing == [], f"oneflite.Tensor members without a docstring: {missing}"
