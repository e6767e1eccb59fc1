"""The documentation's examples run, its diagrams are current, and it builds without warnings.

Every ``python`` and ``{runpython}`` fence of every page in docs/ runs here, page by page, in a
fresh interpreter with one namespace per page: the same runner the Sphinx build uses to insert
their output (docs/_ext/docexec.py), so a broken example fails this test without the docs
extra installed. The HTML build itself (``sphinx-build -W``) runs when Sphinx, MyST and furo are
importable, and is skipped otherwise.
"""

from __future__ import annotations

import filecmp
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


docexec = _load("oneflite_docs_docexec", DOCS / "_ext" / "docexec.py")

PAGES = sorted(p for p in DOCS.rglob("*.md")
               if not ({"_build", "_static", "_tools", "_ext"} & set(p.relative_to(DOCS).parts)))
PAGES_WITH_CODE = [p for p in PAGES if docexec.parse(p.read_text(encoding="utf-8")).blocks]


def _id(page: Path) -> str:
    return str(page.relative_to(DOCS))


@pytest.fixture(scope="session")
def custom_primitive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/custom_primitive, built once against the installed oneflite."""
    target = tmp_path_factory.mktemp("docs-custom-primitive")
    docexec.build_custom_primitive(target)
    return target


def test_pages_have_examples() -> None:
    assert len(PAGES_WITH_CODE) >= 10, [_id(p) for p in PAGES_WITH_CODE]


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_no_python_escapes_execution(page: Path) -> None:
    parsed = docexec.parse(page.read_text(encoding="utf-8"), page)
    assert parsed.unrun == [], (
        f"{_id(page)}: Python fences at lines {parsed.unrun} would never run; use a `python` "
        "or `{runpython}` fence")


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=_id)
def test_page_examples_run(page: Path, request: pytest.FixtureRequest,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = docexec.parse(page.read_text(encoding="utf-8"), page)
    if "custom_primitive" in parsed.needs:
        built = request.getfixturevalue("custom_primitive")
        monkeypatch.setenv(docexec.CUSTOM_PRIMITIVE_ENV, str(built))
    results = docexec.run(parsed)
    failure = docexec.first_error(parsed, results)
    assert failure is None, f"{_id(page)}, line {failure[0]}:\n{failure[1]}"


def test_runpython_output_is_inserted_after_its_code() -> None:
    text = "# T\n\n```{runpython}\nprint(6 * 7)\n```\n\n```python\nx = 1\n```\n"
    page = docexec.parse(text)
    assert [b.shows_output for b in page.blocks] == [True, False]
    rendered = docexec.render(text, page, docexec.run(page))
    assert "```{code-block} python\n:class: docexec-source\n\nprint(6 * 7)\n```" in rendered
    assert "```{code-block} text\n:class: docexec-output\n\n42\n```" in rendered
    assert rendered.endswith("```python\nx = 1\n```\n")


def test_a_failing_example_is_reported_with_its_page_line(tmp_path: Path) -> None:
    page_file = tmp_path / "broken.md"
    page_file.write_text("# Broken\n\n```python\nx = 1\n```\n\n```python\n\nraise "
                         "ValueError('nope')\n```\n")
    page = docexec.parse(page_file.read_text(), page_file)
    failure = docexec.first_error(page, docexec.run(page))
    assert failure is not None
    line, trace = failure
    assert line == 8
    assert "ValueError: nope" in trace and "line 9" in trace


def test_python_inside_containers_is_found_and_other_fences_are_not() -> None:
    text = ("````{note}\n```python\na = 1\n```\n````\n\n```text\n```python\nnot code\n```\n\n"
            "```bash\necho hi\n```\n\n```pycon\n>>> 1\n```\n")
    page = docexec.parse(text)
    assert [b.code for b in page.blocks] == ["a = 1"]
    assert page.unrun == [16]


def test_diagrams_match_their_source(tmp_path: Path) -> None:
    drawn = subprocess.run([sys.executable, str(DOCS / "_tools" / "diagrams.py"), "--out",
                            str(tmp_path)], capture_output=True, text=True, check=False)
    assert drawn.returncode == 0, drawn.stderr
    committed = DOCS / "_static" / "diagrams"
    names = sorted(p.name for p in tmp_path.glob("*.svg"))
    assert names == sorted(p.name for p in committed.glob("*.svg"))
    stale = [n for n in names if not filecmp.cmp(tmp_path / n, committed / n, shallow=False)]
    assert stale == [], f"run `python docs/_tools/diagrams.py` to redraw {stale}"


def test_html_build_is_warning_free(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    for module in ("sphinx", "myst_parser", "furo", "latex2mathml"):
        pytest.importorskip(module)
    environment = {**os.environ,
                   docexec.CUSTOM_PRIMITIVE_ENV: str(request.getfixturevalue("custom_primitive"))}
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")],
        capture_output=True, text=True, check=False, env=environment, timeout=900,
        cwd=tmp_path,  # not the repository root, whose oneflite/ is the uninstalled source
    )
    assert build.returncode == 0, build.stdout + build.stderr
    assert (tmp_path / "html" / "callchain" / "index.html").exists()


LITERALINCLUDE = re.compile(
    r"```\{literalinclude\} (?P<path>\S+)\n(?P<options>(?::[\w-]+:.*\n)*)```")


def _first_line(lines: list[str], marker: str, after: int, where: str) -> int:
    hits = [i for i, line in enumerate(lines) if i >= after and marker in line]
    assert hits, f"{where}: {marker!r} is not there (from line {after + 1})"
    return hits[0]


def _included_lines(page: Path) -> list[tuple[Path, range, str]]:
    """(source file, 0-based line range, markers) of each of a page's literalincludes, resolved as
    Sphinx does: from the first line holding start-at (or after start-after) up to the next one
    holding end-before (or through end-at)."""
    found = []
    for m in LITERALINCLUDE.finditer(page.read_text(encoding="utf-8")):
        source = (page.parent / m.group("path")).resolve()
        options = {k: v.strip().strip("\"'")
                   for k, v in re.findall(r"^:([\w-]+):(.*)$", m.group("options"), re.M)}
        lines = source.read_text(encoding="utf-8").split("\n")
        where = f"{_id(page)}, {m.group('path')}"
        start, end = 0, len(lines)
        if "start-at" in options:
            start = _first_line(lines, options["start-at"], 0, where)
        if "start-after" in options:
            start = _first_line(lines, options["start-after"], 0, where) + 1
        if "end-before" in options:
            end = _first_line(lines, options["end-before"], start + 1, where)
        if "end-at" in options:
            end = _first_line(lines, options["end-at"], start, where) + 1
        markers = (f"{options.get('start-at', options.get('start-after', ''))!r} .. "
                   f"{options.get('end-before', options.get('end-at', ''))!r}")
        found.append((source, range(start, end), markers))
    return found


def _overlap_in_part(a: range, b: range) -> bool:
    shared = max(a.start, b.start) < min(a.stop, b.stop)
    nested = (a.start <= b.start and b.stop <= a.stop) or (b.start <= a.start and a.stop <= b.stop)
    return shared and not nested


def test_excerpts_of_a_source_file_nest_or_stay_apart() -> None:
    # An excerpt whose end marker moved, or was first written wrong, runs on into the code
    # another page shows: the warp_tile page once showed 580 lines of block_registers' planner
    # after its own 80. One page may show a part of what another shows whole (block_online the
    # end of the decision function), but two excerpts that share lines and each run past the
    # other's end are one of them overrunning.
    excerpts = [(page, *found) for page in PAGES for found in _included_lines(page)]
    assert len(excerpts) > 20, "the literalinclude blocks were not found"
    clashes = [
        f"{_id(a)} {ma} and {_id(b)} {mb} share lines of {sa.name} "
        f"({max(ra.start, rb.start) + 1}-{min(ra.stop, rb.stop)})"
        for i, (a, sa, ra, ma) in enumerate(excerpts) for (b, sb, rb, mb) in excerpts[i + 1:]
        if sa == sb and _overlap_in_part(ra, rb)
    ]
    assert not clashes, "\n".join(clashes)


def test_overlap_in_part_tells_an_overrun_from_a_nested_excerpt() -> None:
    assert _overlap_in_part(range(10, 50), range(30, 90))  # the second starts inside, ends past
    assert not _overlap_in_part(range(10, 90), range(30, 50))  # one inside the other
    assert not _overlap_in_part(range(10, 30), range(30, 50))  # adjacent


def test_the_rules_table_reads_every_rule_and_bound() -> None:
    # docs/cuda/block_registers.md's table of block_registers' rules is read from the source at
    # build time; a rule it cannot read fails the build instead of dropping out of the table.
    # The reader is a Sphinx extension: it imports Sphinx and docutils (the docs extra). A
    # Sphinx that imports without docutils beside it (seen on a GPU host) skips too.
    pytest.importorskip("sphinx.util.docutils", reason="the table's reader is a Sphinx extension")
    tables = _load("oneflite_docs_sourcetables", DOCS / "_ext" / "sourcetables.py")
    text = "\n".join(path.read_text(encoding="utf-8") for path in tables.KERNELS)
    rules = tables.read_rules(text)
    assert rules["k16BitRules"] and rules["kFloatRules"]
    # A rule of another form is not skipped: the build fails.
    misread = text.replace("{Dram::kWide, true, kWideDramFloat64x3LeastPacks",
                           "{Dram::kWide, /*whole rows*/ true, kWideDramFloat64x3LeastPacks")
    assert misread != text
    with pytest.raises(ValueError, match="not of a form"):
        tables.read_rules(misread)
    # float's 224 x 2 starts at another window for log_softmax (kWideDramFloat224x2LeastPacks).
    (pairs,) = [r for r in rules["kFloatRules"] if r[5:] == (224, 2)]
    assert pairs[2][0] < pairs[2][1] and pairs[3][0] == pairs[3][1]
    assert tables._span((368, 400), (448, 448), 4, whole=False) == \
        "1469-1792 (log_softmax 1597-1792)"
    assert tables._span((128, 128), (128, 128), 4) == "512"
    broken = text.replace("kFloat128x1MinRowsPerSm, 128, 1}", "kNoSuchConstant, 128, 1}")
    with pytest.raises(ValueError, match="kNoSuchConstant"):
        tables.read_rules(broken)
