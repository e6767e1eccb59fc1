"""Tables read from the source at build time, so that they cannot drift from it.

``{warp-ladder}`` tabulates the rungs of the CUDA warp path (``ForEachWarpShape`` in
cuda/ep/primitive/softmax_plan.cuh) and, per dtype, the longest row each rung takes and how
many rows a thread group handles at once. It fails the build when it no longer finds the
ladder, the register rule (``kWarpShapeFits`` and ``kWarpLaneBytes``), the rungs dtypes skip
(``kWarpShapeSkipped``) or the rows rules (``kWarpRows``, ``kWarpWholeRowAlone``) it reads.
A rung listed twice (two rows per group for shorter rows, one for fuller) gets a line each.

``{registers-rules}`` tabulates the rules that give block_registers windows another shape than
their range's (``k16BitRules`` and ``kFloatRules`` in the same header), each bound evaluated
from the constants it names. It fails the build when a table, a rule or a constant is not of a
form it reads.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

# The headers the ladder and its rules are read from (the rows rule is the warp path's, the rest
# the planner's), read as one text.
KERNELS = [Path(__file__).resolve().parents[2] / "cuda" / "ep" / "primitive" / name
           for name in ("softmax_common.cuh", "softmax_warp.cuh", "softmax_plan.cuh")]
SOURCE = "cuda/ep/primitive/softmax_{common,warp,plan}.cuh"
PACK_BYTES = re.compile(r"constexpr int kPackBytes = (\d+);")
LADDER = re.compile(r"void ForEachWarpShape\(Fn&& fn\) \{(?P<body>.*?)\n\}", re.S)
# A rung: WarpShape<lanes, packs> of 16-byte packs (rows per group from kWarpRows), or
# WarpShape<lanes, packs, kPackBytes, rows, most packs, most packs of rows with edge columns>
# (rows 0: from kWarpRows; the bounds numbers or constants' names, the last two optional).
RUNG = re.compile(r"fn\(WarpShape<(\d+),\s*(\d+)(?:,\s*kPackBytes(?:,\s*(\d+)"
                  r"(?:,\s*(\w+)(?:,\s*(\w+))?)?)?)?>\{\}\);")
# Rows per group: `kPacks * PackSize<T, kBytes>::value <= N ? A : B` (a lane's share of the row).
ROWS = re.compile(r"kWarpRows\s*=\s*kPacks\s*\*\s*PackSize<T(?:,\s*kBytes)?>::value\s*<=\s*(\d+)"
                  r"\s*\?\s*(\d+)\s*:\s*(\d+);")
# The rungs on which one dtype's rows of whole packs take one row a group all the same:
# `std::is_same_v<T, X> && !kRagged && kWidth == W && (kPacks == A || kPacks == B)`.
WHOLE_ALONE = re.compile(r"kWarpWholeRowAlone\s*=\s*std::is_same_v<T,\s*([\w:]+)>\s*&&\s*"
                         r"!kRagged\s*&&\s*kWidth\s*==\s*(\d+)\s*&&\s*\((?P<packs>[^)]*)\)\s*;")
# The register budget of a lane's row, in bytes: `kWarpShapeFits` compares the row's share with
# `kWarpLaneBytes<T>`, which is `std::is_same_v<T, X> ? N : ... : DEFAULT`.
FITS = re.compile(r"kWarpShapeFits\s*=\s*Shape::packs\s*\*\s*PackSize<T>::value\s*\*\s*"
                  r"sizeof\(ComputeType<T>\)\s*<=\s*kWarpLaneBytes<T>;")
# The rungs each dtype skips: `std::is_same_v<T, X> ? kIsRung<Shape, A, B> || ... : ... :
# kIsRung<Shape, C, D> || ...;` (X skips A x B, ..., a type no case names C x D, ...).
SKIPPED = re.compile(r"kWarpShapeSkipped\s*=(?P<rule>[^;]+);")
SKIP_CASE = re.compile(r"std::is_same_v<T,\s*([\w:]+)>\s*\?\s*(?P<rungs>[^?:]+)")
IS_RUNG = re.compile(r"kIsRung<Shape,\s*(\d+),\s*(\d+)>")
LANE_BYTES = re.compile(r"kWarpLaneBytes\s*=\s*(?P<rule>[^;]+);")
CASE = re.compile(r"std::is_same_v<T,\s*([\w:]+)>\s*\?\s*(\d+)\s*:")
DEFAULT = re.compile(r":\s*(\d+)\s*$")
# (name, bytes per element, bytes per element of its compute type, C++ type)
DTYPES = [("float32", 4, 4, "float"), ("float16", 2, 4, "__half"),
          ("bfloat16", 2, 4, "__nv_bfloat16"), ("float64", 8, 8, "double")]


def read_budgets(text: str) -> dict[str, int] | None:
    """{dtype name: register budget in bytes}, or None where the rule is not found."""
    lane = LANE_BYTES.search(text)
    if not (FITS.search(text) and lane):
        return None
    rule = " ".join(lane.group("rule").split())
    cases = dict(CASE.findall(rule))
    default = DEFAULT.search(rule)
    if default is None:
        return None
    return {name: int(cases.get(cxx, default.group(1))) for name, _, _, cxx in DTYPES}


def read_skipped(text: str) -> dict[str, set[tuple[int, int]]] | None:
    """{dtype name: the (lanes, packs) rungs it skips}, or None where the rule is not found."""
    m = SKIPPED.search(text)
    if m is None:
        return None
    rule = " ".join(m.group("rule").split())

    def rungs(part: str) -> set[tuple[int, int]]:
        return {(int(a), int(b)) for a, b in IS_RUNG.findall(part)}

    cases = {cxx: rungs(m.group("rungs")) for m in SKIP_CASE.finditer(rule) for cxx in [m.group(1)]}
    default = rungs(rule.rsplit(":", 1)[-1])
    if not cases or not default:
        return None
    return {name: cases.get(cxx, default) for name, _, _, cxx in DTYPES}


def read_whole_alone(text: str) -> tuple[str, int, set[int]] | None:
    """(C++ type, lanes, {packs}) of the rungs whose rows of whole packs take one row a group
    (kWarpWholeRowAlone), or None where the rule is not found."""
    m = WHOLE_ALONE.search(text)
    if m is None:
        return None
    packs = {int(p) for p in re.findall(r"kPacks\s*==\s*(\d+)", m.group("packs"))}
    return (m.group(1), int(m.group(2)), packs) if packs else None


# A constant: `constexpr int NAME = 123;` or `constexpr int64_t NAME = 123;`.
CONSTANT = re.compile(r"constexpr int(?:64_t)? (\w+) =\s*(\d+);")


def _constant(text: str, value: str) -> int:
    """A number, or the value of the constant of that name (CONSTANT)."""
    if value.isdigit():
        return int(value)
    found = dict(CONSTANT.findall(text)).get(value)
    if found is None:
        raise ValueError(f"{SOURCE}: can't read {value}")
    return int(found)


def read_ladder(
    text: str,
) -> tuple[int, list[tuple[int, int, Any, int, int]], dict[str, int],
           dict[str, set[tuple[int, int]]], tuple[str, int, set[int]]]:
    """(pack bytes, [(lanes, packs, rows per group, most whole packs, most whole packs of rows
    with edge columns)], {dtype name: register budget in bytes}, {dtype name: the rungs it
    skips}, the rungs whose rows of whole packs take one row a group as (C++ type, lanes,
    {packs})).

    rows per group is a number, or a function of the values a lane holds.
    """
    pack, ladder, budgets = PACK_BYTES.search(text), LADDER.search(text), read_budgets(text)
    skipped, whole_alone = read_skipped(text), read_whole_alone(text)
    if not (pack and ladder and budgets and skipped and whole_alone):
        missing = [n for n, m in (("kPackBytes", pack), ("ForEachWarpShape", ladder),
                                  ("kWarpShapeFits / kWarpLaneBytes", budgets),
                                  ("kWarpShapeSkipped", skipped),
                                  ("kWarpWholeRowAlone", whole_alone)) if not m]
        raise ValueError(f"{SOURCE}: can't read {', '.join(missing)}")
    rows_rule = ROWS.search(text)
    if rows_rule is None:
        raise ValueError(f"{SOURCE}: can't read kWarpRows")
    limit, few, many = (int(v) for v in rows_rule.groups())
    rungs: list[tuple[int, int, Any, int, int]] = []
    body = ladder.group("body")
    matches = list(RUNG.finditer(body))
    if len(matches) != body.count("fn(WarpShape<"):
        raise ValueError(f"{SOURCE}: a ForEachWarpShape rung is not of a form the table reads")
    for m in matches:
        lanes, packs = int(m.group(1)), int(m.group(2))
        rows = int(m.group(3) or 0)
        most = _constant(text, m.group(4) or "0") or lanes * packs
        most_ragged = _constant(text, m.group(5) or "0") or most
        rungs.append((lanes, packs, rows or (lambda values, most=limit, a=few, b=many:
                                             a if values <= most else b), most, most_ragged))
    if not rungs:
        raise ValueError(f"{SOURCE}: ForEachWarpShape lists no WarpShape")
    return int(pack.group(1)), rungs, budgets, skipped, whole_alone


def _row(cells: list[str]) -> nodes.row:
    row = nodes.row()
    for cell in cells:
        entry = nodes.entry()
        entry += nodes.paragraph(text=cell)
        row += entry
    return row


def _table(css_class: str, header: list[str], body: list[list[str]]) -> nodes.table:
    table = nodes.table(classes=[css_class])
    group = nodes.tgroup(cols=len(header))
    table += group
    for _ in header:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    head += _row(header)
    group += head
    tbody = nodes.tbody()
    for cells in body:
        tbody += _row(cells)
    group += tbody
    return table


def _read_kernels(directive: SphinxDirective, reader: Any) -> Any:
    """What `reader` reads from the kernel headers, which the page then depends on; a header
    it cannot read fails the build, named by the directive."""
    for path in KERNELS:
        directive.env.note_dependency(str(path))
    try:
        return reader("\n".join(path.read_text() for path in KERNELS))
    except (OSError, ValueError) as error:
        raise directive.error(f"{directive.name}: {error}") from None


class WarpLadder(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        pack_bytes, rungs, budgets, skipped, whole_alone = _read_kernels(self, read_ladder)
        header = ["lanes per row", "packs per lane",
                  *(f"{name}: longest row (rows per group)" for name, *_ in DTYPES)]
        body = []
        for lanes, packs, rows, most, most_ragged in rungs:
            cells = [str(lanes), str(packs)]
            for name, size, compute, cxx in DTYPES:
                per_pack = pack_bytes // size
                too_big = packs * per_pack * compute > budgets[name]
                if too_big or (lanes, packs) in skipped[name]:
                    cells.append("\u2013")
                    continue
                group_rows = str(rows(packs * per_pack) if callable(rows) else rows)
                alone_type, alone_lanes, alone_packs = whole_alone
                if callable(rows) and (cxx, lanes) == (alone_type, alone_lanes) \
                        and packs in alone_packs:
                    group_rows += "; rows of whole packs 1"
                # Whole packs, and up to a pack less one element of edge columns; where rows with
                # edge columns have a bound of their own, the longest row of whole packs too.
                cell = f"{(most_ragged + 1) * per_pack - 1} ({group_rows})"
                if most_ragged != most:
                    cell += f"; rows of whole packs {most * per_pack}"
                cells.append(cell)
            body.append(cells)
        return [_table("warp-ladder", header, body)]


# A rules table: `constexpr RegistersRule NAME[] = { ... };` (kFloatRules after a template line).
RULES_TABLE = re.compile(r"constexpr RegistersRule (k16BitRules|kFloatRules)\[\] = \{(?P<body>.*?)"
                         r"\n\};", re.S)
# A rule: {Dram::kNarrow or kWide, whole rows only, least, most, rows an SM, block, packs}.
RULE = re.compile(r"\{Dram::(kNarrow|kWide),\s*(true|false),\s*([^,{}]+),\s*([^,{}]+),"
                  r"\s*([^,{}]+),\s*(\d+),\s*(\d+)\}")
# A bound, one per op: `constexpr int64_t NAME = kAlgorithm == Algorithm::kSoftmax ? A : B;`
# (softmax A, log_softmax B); or a constant (CONSTANT).
PER_OP = re.compile(r"constexpr int(?:64_t)? (\w+) =\s*kAlgorithm == Algorithm::kSoftmax\s*\?\s*"
                    r"(\d+)\s*:\s*(\d+);")

Rule = tuple[str, bool, tuple[int, int], tuple[int, int], tuple[int, int], int, int]


def _bound(constants: dict[str, tuple[int, int]], expr: str) -> tuple[int, int]:
    """(softmax, log_softmax) values of a rule's bound: numbers and constants joined by + - *."""
    def value(op: int) -> int:
        def name(m: re.Match[str]) -> str:
            if m.group(1) not in constants:
                raise ValueError(f"{SOURCE}: can't read the constant {m.group(1)}")
            return str(constants[m.group(1)][op])
        arithmetic = re.sub(r"([A-Za-z_]\w*)(?:<kAlgorithm>)?", name, expr.strip())
        if not re.fullmatch(r"[\d\s+*-]+", arithmetic):
            raise ValueError(f"{SOURCE}: can't read the bound {expr.strip()!r}")
        return eval(arithmetic, {"__builtins__": {}})  # digits, spaces and + - * only
    return value(0), value(1)


def read_rules(text: str) -> dict[str, list[Rule]]:
    """{table name: [(DRAM, whole rows only, least, most, rows an SM, block, packs)]}, each of
    least, most and rows an SM as (softmax, log_softmax)."""
    constants = {name: (int(v), int(v)) for name, v in CONSTANT.findall(text)}
    constants.update({name: (int(a), int(b)) for name, a, b in PER_OP.findall(text)})
    tables = {m.group(1): m.group("body") for m in RULES_TABLE.finditer(text)}
    if set(tables) != {"k16BitRules", "kFloatRules"}:
        raise ValueError(f"{SOURCE}: can't read k16BitRules and kFloatRules")
    read = {}
    for table, body in tables.items():
        body = re.sub(r"//[^\n]*", "", body)
        rules = list(RULE.finditer(body))
        if not rules or len(rules) != body.count("{Dram::"):
            raise ValueError(f"{SOURCE}: a rule of {table} is not of a form the table reads")
        read[table] = [(m.group(1), m.group(2) == "true", _bound(constants, m.group(3)),
                        _bound(constants, m.group(4)), _bound(constants, m.group(5)),
                        int(m.group(6)), int(m.group(7))) for m in rules]
    return read


def _span(least: tuple[int, int], most: tuple[int, int], scale: int = 1, whole: bool = True) -> str:
    """The windows least-most (scale 1), or the columns of the aligned rows they hold: scale
    elements a pack, of whole packs only or any; and log_softmax's where they differ."""
    def one(lo: int, hi: int) -> str:
        lo = lo * scale if whole else (lo - 1) * scale + 1
        return str(lo) if lo == hi * scale else f"{lo}-{hi * scale}"
    softmax = one(least[0], most[0])
    if (least[0], most[0]) == (least[1], most[1]):
        return softmax
    return f"{softmax} (log_softmax {one(least[1], most[1])})"


class RegistersRules(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        rules = _read_kernels(self, read_rules)
        header = ["dtype", "DRAM", "rows", "window (16-byte packs)", "columns of aligned rows",
                  "from rows an SM", "block \u00d7 values a thread"]
        body = []
        for table, dtypes, per_pack in (("kFloatRules", "float32", 4),
                                        ("k16BitRules", "float16, bfloat16", 8)):
            for dram, whole, least, most, rows, block, packs in rules[table]:
                body.append([dtypes, "narrow" if dram == "kNarrow" else "wide",
                             "whole packs" if whole else "any", _span(least, most),
                             _span(least, most, per_pack, whole),
                             str(rows[0]) if rows[0] else "any",
                             f"{block} \u00d7 {packs * per_pack}"])
        return [_table("registers-rules", header, body)]


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("warp-ladder", WarpLadder)
    app.add_directive("registers-rules", RegistersRules)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
