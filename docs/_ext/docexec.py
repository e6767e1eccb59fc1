"""Executable documentation: the Python examples of every page run, and what they print is real.

A page may hold two kinds of Python fences:

* a ``python`` fence runs and is shown as written;
* a ``{runpython}`` fence runs and is shown as written, followed by everything it printed,
  captured at build time.

All Python fences of one page run in order, top to bottom, in one namespace, in a fresh
interpreter per page, so a page is a script a reader could paste. The first block that raises
stops the page and fails the build (and ``tests/test_docs.py``, which runs the same pages with
the same code, without Sphinx). Any other way of writing Python in a page (``py``, ``pycon``,
``{code-block} python``, ...) is reported as an error, so no example can escape being run.

A page whose MyST front matter says ``docexec: {needs: custom_primitive}`` runs with the
example extension ``examples/custom_primitive`` built and importable, and with oneflite's
``oneflite.backends`` entry points enabled.

This module imports nothing from Sphinx at import time, so the test suite can use it without
the docs extra installed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent.parent
REPO = DOCS.parent
CUSTOM_PRIMITIVE = REPO / "examples" / "custom_primitive"
#: Set to a folder that already holds the built example (pip's --target layout) to reuse it.
CUSTOM_PRIMITIVE_ENV = "ONEFLITE_DOCS_CUSTOM_PRIMITIVE"

RUN_FENCE = "python"
OUTPUT_FENCE = "{runpython}"
# Info strings that hold Python but would not be run: forbidden in pages.
_UNRUN_PYTHON = re.compile(
    r"^(py|python3|pycon|ipython|\{(code-block|code|sourcecode|code-cell)\}\s+(python|py|python3|pycon))\s*$"
)
# Directives whose body is markup that may contain further fences (admonitions, tabs, ...).
_LITERAL_DIRECTIVES = {"code-block", "code", "sourcecode", "literalinclude", "math", "raw",
                       "code-cell", "include", "csv-table", "graphviz", "mermaid", "runpython"}
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_FRONT_MATTER = re.compile(r"\A---\n(?P<body>.*?)\n---\n", re.S)

# Every page runs on the CPU with only the built-in backends, so its output is the same on
# every machine that builds the docs.
BASE_ENVIRONMENT = {
    "ONEFLITE_DISABLE_CUDA": "1",
    "ONEFLITE_DISABLE_ENTRY_POINTS": "1",
    "ONEFLITE_FORCE_PRIMITIVE": "",
    "PYTHONHASHSEED": "0",
}


@dataclass
class Block:
    """One Python fence of a page: its code and where it sits."""

    code: str
    line: int  # 1-based line of the first code line in the page
    shows_output: bool
    fence_start: int  # 0-based index of the opening fence line
    fence_end: int  # 0-based index of the closing fence line
    fence: str  # the opening fence's backticks or tildes


@dataclass
class Page:
    path: Path
    blocks: list[Block]
    unrun: list[int]  # 1-based lines of Python fences that would not run
    needs: list[str]


@dataclass
class Result:
    """What running one block did."""

    output: str
    error: str | None = None  # the traceback, when the block raised


def needs_of(text: str) -> list[str]:
    """The ``docexec: {needs: ...}`` requirements of a page's MyST front matter."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return []
    found = re.search(r"needs:\s*\[?([\w\s,-]+)\]?", match.group("body"))
    return [n.strip() for n in found.group(1).split(",") if n.strip()] if found else []


def parse(text: str, path: Path = Path("<page>")) -> Page:
    """Finds the Python fences of a MyST page, looking inside container directives."""
    lines = text.split("\n")
    blocks: list[Block] = []
    unrun: list[int] = []
    open_containers: list[tuple[str, int]] = []  # (fence char, fence length)
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, info = match.group("fence"), match.group("info").strip()
        if open_containers and not info:
            char, length = open_containers[-1]
            if fence[0] == char and len(fence) >= length:
                open_containers.pop()
                i += 1
                continue
        directive = re.match(r"^\{([\w:-]+)\}", info)
        if directive and directive.group(1) not in _LITERAL_DIRECTIVES:
            open_containers.append((fence[0], len(fence)))
            i += 1
            continue
        # A literal fence: its body runs to the first closing fence of the same kind.
        end = i + 1
        while end < len(lines):
            closing = _FENCE.match(lines[end])
            if (closing and not closing.group("info").strip()
                    and closing.group("fence")[0] == fence[0]
                    and len(closing.group("fence")) >= len(fence)):
                break
            end += 1
        body = lines[i + 1:end]
        if info in (RUN_FENCE, OUTPUT_FENCE):
            blocks.append(Block(code="\n".join(body), line=i + 2,
                                shows_output=info == OUTPUT_FENCE, fence_start=i,
                                fence_end=end, fence=fence))
        elif _UNRUN_PYTHON.match(info):
            unrun.append(i + 1)
        i = end + 1
    return Page(path=path, blocks=blocks, unrun=unrun, needs=needs_of(text))


# The child process: runs each block in one namespace, records what it printed, stops at the
# first error. Compiling each block with blank lines in front makes tracebacks name the page's
# own line numbers.
_DRIVER = r"""
import contextlib, io, json, sys, traceback
spec = json.load(open(sys.argv[1]))
namespace = {"__name__": "__main__"}
results = []
for block in spec["blocks"]:
    buffer = io.StringIO()
    error = None
    try:
        code = compile("\n" * (block["line"] - 1) + block["code"], spec["page"], "exec")
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            exec(code, namespace)
    except BaseException:
        error = traceback.format_exc()
    results.append({"output": buffer.getvalue(), "error": error})
    if error is not None:
        break
json.dump(results, open(sys.argv[2], "w"))
"""


def _python_path(extra: list[str]) -> str:
    # The child imports the same oneflite as this process, wherever it was installed.
    paths = [*extra, *(p for p in sys.path if p and Path(p).is_dir())]
    return os.pathsep.join(dict.fromkeys(paths))


_built_custom_primitive: Path | None = None


def custom_primitive_target() -> Path:
    """A folder from which ``import oneflite_custom`` works: built once per process, or taken
    from $ONEFLITE_DOCS_CUSTOM_PRIMITIVE."""
    global _built_custom_primitive
    given = os.environ.get(CUSTOM_PRIMITIVE_ENV)
    if given and (Path(given) / "oneflite_custom").is_dir():
        return Path(given)
    if _built_custom_primitive is None:
        target = Path(tempfile.mkdtemp(prefix="oneflite-docs-custom-"))
        build_custom_primitive(target)
        _built_custom_primitive = target
    return _built_custom_primitive


def build_custom_primitive(target: Path) -> None:
    """Builds examples/custom_primitive against the installed oneflite into ``target``."""
    command = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
               "--quiet", "--target", str(target), str(CUSTOM_PRIMITIVE)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"building {CUSTOM_PRIMITIVE} failed:\n{done.stdout}\n{done.stderr}")


def run(page: Page, timeout: float = 600) -> list[Result]:
    """Runs the page's blocks in a fresh interpreter; one Result per block that ran."""
    if not page.blocks:
        return []
    extra_paths: list[str] = []
    environment = {**os.environ, **BASE_ENVIRONMENT}
    for need in page.needs:
        if need != "custom_primitive":
            raise ValueError(f"{page.path}: unknown docexec requirement {need!r}")
        extra_paths.append(str(custom_primitive_target()))
        environment["ONEFLITE_DISABLE_ENTRY_POINTS"] = "0"
    environment["PYTHONPATH"] = _python_path(extra_paths)
    try:
        shown = str(page.path.resolve().relative_to(REPO))
    except ValueError:
        shown = str(page.path)
    with tempfile.TemporaryDirectory(prefix="oneflite-docs-") as scratch:
        spec_file = Path(scratch) / "spec.json"
        result_file = Path(scratch) / "results.json"
        spec = {"page": shown,
                "blocks": [{"code": b.code, "line": b.line} for b in page.blocks]}
        spec_file.write_text(json.dumps(spec))
        done = subprocess.run(
            [sys.executable, "-W", "error", "-c", _DRIVER, str(spec_file), str(result_file)],
            capture_output=True, text=True, check=False, cwd=scratch, env=environment,
            timeout=timeout,
        )
        if not result_file.exists():
            raise RuntimeError(f"{shown}: the example runner died (exit {done.returncode}):\n"
                               f"{done.stdout}\n{done.stderr}")
        return [Result(**r) for r in json.loads(result_file.read_text())]


def first_error(page: Page, results: list[Result]) -> tuple[int, str] | None:
    """(line, traceback) of the first failing block, or None when every block ran."""
    for block, result in zip(page.blocks, results):
        if result.error is not None:
            return block.line, result.error
    if len(results) < len(page.blocks):
        return page.blocks[len(results)].line, "the block never ran"
    return None


def render(text: str, page: Page, results: list[Result]) -> str:
    """The page's text with each ``{runpython}`` fence replaced by its code and its output."""
    lines = text.split("\n")
    for block, result in reversed(list(zip(page.blocks, results))):
        if not block.shows_output:
            continue
        body = block.code.split("\n")
        output = result.output.rstrip("\n")
        fence = "`" * max(3, len(block.fence),
                          1 + max((len(r) for r in re.findall(r"`+", block.code + output)),
                                  default=0))
        replacement = [f"{fence}{{code-block}} python", ":class: docexec-source", "", *body,
                       fence]
        if output:
            replacement += ["", f"{fence}{{code-block}} text", ":class: docexec-output", "",
                            *output.split("\n"), fence]
        lines[block.fence_start:block.fence_end + 1] = replacement
    return "\n".join(lines)


# ---- Sphinx ----------------------------------------------------------------------------------


def _has_python(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return False
    return bool(parse(text).blocks)


def _source_read(app: Any, docname: str, source: list[str]) -> None:
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    path = Path(app.env.doc2path(docname))
    page = parse(source[0], path)
    for line in page.unrun:
        logger.warning("Python code in a fence that is never run; use a `python` or "
                       "`{runpython}` fence", location=(docname, line), type="docexec")
    if not page.blocks:
        return
    try:
        results = run(page)
    except (RuntimeError, ValueError, subprocess.TimeoutExpired) as error:
        logger.warning(f"examples could not be run: {error}", location=(docname, 1),
                       type="docexec")
        return
    failure = first_error(page, results)
    if failure is not None:
        line, trace = failure
        logger.warning(f"example failed:\n{trace}", location=(docname, line), type="docexec")
        return
    source[0] = render(source[0], page, results)


def _always_rerun(app: Any, env: Any, added: set[str], changed: set[str],
                  removed: set[str]) -> list[str]:
    # Output depends on oneflite, not only on the page: rerun every page with examples.
    return [doc for doc in env.found_docs
            if doc not in added and doc not in changed and _has_python(Path(env.doc2path(doc)))]


def setup(app: Any) -> dict[str, Any]:
    app.connect("source-read", _source_read)
    app.connect("env-get-outdated", _always_rerun)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
