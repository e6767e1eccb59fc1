"""Draws the documentation's diagrams as plain SVG files in docs/_static/diagrams/.

The SVGs are committed, so building the docs needs nothing but Sphinx; this script is their
source. Edit it and run ``python docs/_tools/diagrams.py``; tests/test_docs.py checks that the
committed files match what it draws.
"""

from __future__ import annotations

import argparse
import sys
from html import escape
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "_static" / "diagrams"

SANS = "DejaVu Sans, Verdana, Helvetica, Arial, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"
INK = "#1f2328"
MUTED = "#57606a"
LINE = "#8c959f"
PY = ("#e7f0fb", "#3b6fb6")  # Python layer: fill, stroke
CXX = ("#e9f5ec", "#2f8a4c")  # C++ layers
PRIM = ("#fff3e0", "#c76a00")  # primitives
PAD = ("#ffebe9", "#cf222e")  # out-of-row, -inf
SMEM = ("#f3ecfb", "#8250df")  # shared memory
GLOBAL = ("#eef2f6", "#57606a")  # global memory
# Thread / lane colours, light enough for dark text.
LANES = ["#cfe2ff", "#ffe2b8", "#d3f0d8", "#f6d1f0", "#fff2a8", "#d7d2ff", "#c9f0ef", "#ffd6cc"]


class Svg:
    def __init__(self, width: int, height: int, title: str) -> None:
        self.width, self.height = width, height
        self.parts: list[str] = [f"<title>{escape(title)}</title>"]
        self.parts.append(
            "<defs>"
            f'<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
            f'fill="{MUTED}"/></marker>'
            "</defs>"
        )
        self.rect(0, 0, width, height, fill="#ffffff", stroke="none", rx=0)

    def rect(self, x: float, y: float, w: float, h: float, fill: str = "#ffffff",
             stroke: str = LINE, rx: float = 6, width: float = 1.2, dash: str = "") -> None:
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" rx="{rx:g}" '
                          f'fill="{fill}" stroke="{stroke}" stroke-width="{width:g}"{extra}/>')

    def text(self, x: float, y: float, content: str, size: float = 13, anchor: str = "start",
             weight: str = "normal", mono: bool = False, fill: str = INK,
             italic: bool = False) -> None:
        family = MONO if mono else SANS
        style = ' font-style="italic"' if italic else ""
        self.parts.append(
            f'<text x="{x:g}" y="{y:g}" font-family="{family}" font-size="{size:g}" '
            f'font-weight="{weight}" text-anchor="{anchor}" fill="{fill}"{style}>'
            f"{escape(content)}</text>")

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = MUTED,
             width: float = 1.4, arrow: bool = False, dash: str = "",
             both: bool = False) -> None:
        extra = ' marker-end="url(#arrow)"' if arrow else ""
        extra += ' marker-start="url(#arrow)"' if both else ""
        extra += f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<line x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" '
                          f'stroke="{stroke}" stroke-width="{width:g}"{extra}/>')

    def path(self, d: str, stroke: str = MUTED, width: float = 1.4, arrow: bool = False,
             fill: str = "none") -> None:
        extra = ' marker-end="url(#arrow)"' if arrow else ""
        self.parts.append(f'<path d="{d}" fill="{fill}" stroke="{stroke}" '
                          f'stroke-width="{width:g}"{extra}/>')

    def brace(self, x1: float, x2: float, y: float, label: str, size: float = 12,
              up: bool = False) -> None:
        """A square bracket under (or over) [x1, x2] with a centred label."""
        d = -6 if up else 6
        self.path(f"M{x1:g},{y:g} L{x1:g},{y + d:g} L{x2:g},{y + d:g} L{x2:g},{y:g}",
                  stroke=MUTED, width=1.1)
        self.text((x1 + x2) / 2, y + d + (-5 if up else 14), label, size=size, anchor="middle",
                  fill=MUTED)

    def render(self) -> str:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" '
                f'height="{self.height}" viewBox="0 0 {self.width} {self.height}" '
                f'role="img">\n' + "\n".join(self.parts) + "\n</svg>\n")


# ---- The five layers -----------------------------------------------------------------------

def layers() -> Svg:
    rows = [
        ("Functional", "Python", PY, "oneflite.nn.functional.softmax(x, dim, dtype)",
         "a Python module: oneflite/nn/functional.py",
         ["F.softmax(x, dim=0)", "x: (2, 3) float32, cpu", "checks argument types"]),
        ("Functor", "C++", CXX, "functional::Softmax(x, dim, dtype)",
         "ONEFLITE_FUNCTION_LIBRARY: by name",
         ["dim 0 is not the last dim:", "Transpose(x, [1, 0]) → (3, 2)",
          "run the op on it"]),
        ("Op", "C++", CXX, 'OpExpr "softmax": in → out',
         "ONEFLITE_REGISTER_OP: by name",
         ["infer out: (3, 2) float32", "allocate out", "kernel for (cpu, float32)"]),
        ("Kernel", "C++", CXX, "SoftmaxKernel::Compute",
         "ONEFLITE_REGISTER_KERNEL: match + priority",
         ["rows = 3, cols = 2", "primitive->Launch(stream, 3, 2, x, y)"]),
        ("Primitive", "C++", PRIM, "Softmax::Launch(stream, rows, cols, x, y)",
         "ONEFLITE_REGISTER_PRIMITIVE: named backends",
         ["cpu: backend 'fast', 3 rows of 2", "cuda: the warp path", "writes y: (3, 2)"]),
    ]
    width, top, box_h, gap, boundary = 760, 56, 84, 30, 58
    svg = Svg(width, top + len(rows) * box_h + (len(rows) - 1) * gap + boundary - gap + 58,
              "The five layers of oneflite.nn.functional.softmax")
    left_x, left_w = 12, 400
    right_x, right_w = 440, 308
    svg.text(left_x, 24, "layer: what runs, and how it is registered", size=14, weight="bold")
    svg.text(right_x, 24, "one call: softmax over dim 0", size=14, weight="bold")
    svg.text(right_x, 42, "of x with shape (2, 3), float32", size=12.5, fill=MUTED)
    y = top
    for i, (name, lang, (fill, stroke), call, reg, example) in enumerate(rows):
        svg.rect(left_x, y, left_w, box_h, fill=fill, stroke=stroke, width=1.6)
        svg.text(left_x + 14, y + 24, name, size=16, weight="bold")
        svg.text(left_x + left_w - 12, y + 22, lang, size=12, anchor="end", fill=stroke,
                 weight="bold")
        svg.text(left_x + 14, y + 48, call, size=12.5, mono=True)
        svg.text(left_x + 14, y + 70, reg, size=12, fill=MUTED)
        svg.rect(right_x, y, right_w, box_h, fill="#fafbfc", stroke="#d0d7de")
        for k, line in enumerate(example):
            svg.text(right_x + 12, y + 23 + k * 21, line, size=12.5, mono=True)
        svg.line(left_x + left_w + 4, y + box_h / 2, right_x - 4, y + box_h / 2,
                 stroke="#d0d7de", dash="3 3")
        step = boundary if i == 0 else gap
        if i + 1 < len(rows):
            svg.line(left_x + 60, y + box_h + 2, left_x + 60, y + box_h + step - 2, arrow=True)
        if i == 0:
            by = y + box_h + step / 2
            svg.line(4, by, width - 4, by, stroke=PY[1], dash="6 4", width=1.2)
            svg.text(left_x + 76, by - 7, "pybind11 boundary: oneflite._C.functional.softmax",
                     size=11.5, fill=PY[1])
            svg.text(left_x + 76, by + 16, "the GIL is released from here down", size=11.5,
                     fill=PY[1])
        y += box_h + step
    y_end = y - gap
    svg.text(left_x, y_end + 26, "Each layer knows only the one below it, and finds it in a "
             "registry at run time.", size=12.5, fill=MUTED)
    svg.text(left_x, y_end + 46, "The functor transposes the (3, 2) result back to (2, 3) "
             "before it returns.", size=12.5, fill=MUTED)
    return svg


# ---- A row seen through its window of 16-byte packs -----------------------------------------

def row_window() -> Svg:
    cell, x0, y0 = 46, 60, 100
    svg = Svg(760, 450, "A row of 10 floats seen through 16-byte packs: one whole pack, six "
              "edge columns")
    svg.text(20, 26, "float32 row, cols = 10, starting 4 bytes past a 16-byte boundary (head = 1)",
             size=14, weight="bold")
    svg.text(20, 46, "P = 4 floats per 16-byte pack; the row's window is the 3 aligned packs "
             "that cover it,", size=12.5, fill=MUTED)
    svg.text(20, 64, "and only the middle one lies wholly inside the row", size=12.5, fill=MUTED)
    edge = (LANES[1], PRIM[1])
    for c in range(12):
        inside = 1 <= c <= 10
        fill, stroke = ((LANES[0], PY[1]) if 4 <= c <= 7 else edge) if inside else PAD
        svg.rect(x0 + c * cell, y0, cell, 44, fill=fill, stroke=stroke, rx=0, width=1)
        label = f"x[{c - 1}]" if inside else "-inf"
        svg.text(x0 + c * cell + cell / 2, y0 + 27, label, size=12, anchor="middle",
                 mono=True, fill=INK if inside else PAD[1])
    for p in range(4):
        x = x0 + p * 4 * cell
        svg.line(x, y0 - 14, x, y0 + 58, stroke=INK, width=2.2)
    svg.text(x0, y0 - 20, "16-byte boundary", size=11.5, fill=MUTED)
    svg.brace(x0 + cell, x0 + 11 * cell, y0 - 8, "the row (10 elements)", up=True)
    labels = [(2.5, "3 edge columns", "before the first whole pack", PRIM[1]),
              (6.0, "pack 1: a whole pack", "one 16-byte vector", PY[1]),
              (9.5, "3 edge columns", "after the last whole pack", PRIM[1])]
    for centre, a, b, color in labels:
        cx = x0 + centre * cell
        svg.text(cx, y0 + 66, a, size=12.5, anchor="middle", weight="bold", fill=color)
        svg.text(cx, y0 + 84, b, size=12, anchor="middle", fill=MUTED)

    y2 = y0 + 124
    svg.text(20, y2, "Warp path (a group of 32 lanes)", size=13, weight="bold")
    svg.text(20, y2 + 18, "Lane 1 loads pack 1 as one vector. The 6 edge columns are spread "
             "over the lanes, one scalar each,", size=12.5, fill=MUTED)
    svg.text(20, y2 + 36, "so no lane waits on another's element-by-element work.", size=12.5,
             fill=MUTED)
    columns = [0, 1, 2, 7, 8, 9]
    bw, by = 78, y2 + 50
    for lane, column in enumerate(columns):
        x = x0 + lane * (bw + 6)
        svg.rect(x, by, bw, 44, fill=edge[0], stroke=edge[1], rx=4)
        svg.text(x + bw / 2, by + 18, f"lane {lane}", size=12, anchor="middle")
        svg.text(x + bw / 2, by + 36, f"x[{column}]", size=12, anchor="middle", mono=True)
    x = x0 + 6 * (bw + 6)
    svg.rect(x, by, 160, 44, fill=PAD[0], stroke=PAD[1], rx=4)
    svg.text(x + 80, by + 18, "lanes 6\u201331", size=12, anchor="middle")
    svg.text(x + 80, by + 36, "-inf (no edge)", size=12, anchor="middle", mono=True,
             fill=PAD[1])

    y3 = by + 80
    svg.text(20, y3, "Block paths (a block per row)", size=13, weight="bold")
    svg.text(20, y3 + 18, "The thread that owns an edge pack (here packs 0 and 2) handles it "
             "alone: copied whole into shared memory,", size=12.5, fill=MUTED)
    svg.text(20, y3 + 36, "its outside elements set to -inf, written element by element. Two "
             "packs among the hundreds of such a row.", size=12.5, fill=MUTED)
    notes = ["Out-of-row slots read as -inf: they never win the max and add exp(-inf) = 0 "
             "to the sum.",
             "Nothing outside the tensor is ever read or written."]
    for k, note in enumerate(notes):
        svg.text(20, y3 + 70 + 20 * k, note, size=12.5, fill=MUTED)
    return svg


# ---- The warp path ---------------------------------------------------------------------------

def warp_path() -> Svg:
    svg = Svg(760, 600, "The warp path: thread groups, interleaved packs, butterfly reduction")
    svg.text(20, 26, "1. A warp of 32 lanes, split into thread groups", size=14, weight="bold")
    svg.text(20, 46, "float16, cols = 128 (16 packs): thread_group_width = 16, 1 pack per lane, "
             "2 rows per access", size=12.5, fill=MUTED)
    lane_w, lx, ly = 21, 26, 62
    for lane in range(32):
        group = lane // 16
        svg.rect(lx + lane * lane_w, ly, lane_w - 2, 26, fill=LANES[group * 3], rx=2,
                 stroke="#b6bec8", width=0.8)
        if lane % 4 == 0 or lane == 31:
            svg.text(lx + lane * lane_w + (lane_w - 2) / 2, ly + 17, str(lane), size=10,
                     anchor="middle", mono=True)
    svg.text(lx + 32 * lane_w + 8, ly + 17, "lanes", size=12, fill=MUTED)
    svg.brace(lx, lx + 16 * lane_w - 2, ly + 30, "group 0: rows 0 and 2")
    svg.brace(lx + 16 * lane_w, lx + 32 * lane_w - 2, ly + 30, "group 1: rows 1 and 3")

    svg.text(20, 160, "2. Lane l holds window packs l, l + W, l + 2W, ... of its row",
             size=14, weight="bold")
    svg.text(20, 180, "W = 32 lanes, 2 packs per lane (float32, cols up to 256): load n of "
             "the warp reads packs 32n to 32n + 31,", size=12.5, fill=MUTED)
    svg.text(20, 198, "512 contiguous bytes, so every load is fully coalesced",
             size=12.5, fill=MUTED)
    px, py, pw = 70, 214, 19
    for n in range(2):
        y = py + n * 30
        svg.text(px - 10, y + 16, f"load {n}", size=12, anchor="end", fill=MUTED)
        for lane in range(32):
            svg.rect(px + lane * pw, y, pw - 2, 24, fill=LANES[n * 4], rx=2, stroke="#b6bec8",
                     width=0.8)
            svg.text(px + lane * pw + (pw - 2) / 2, y + 16, str(32 * n + lane), size=9.5,
                     anchor="middle", mono=True)
    for lane in range(0, 32, 4):
        svg.text(px + lane * pw + (pw - 2) / 2, py + 72, str(lane), size=10, anchor="middle",
                 mono=True, fill=MUTED)
    svg.text(px + 32 * pw + 6, py + 16, "pack", size=12, fill=MUTED)
    svg.text(px + 32 * pw + 6, py + 46, "pack", size=12, fill=MUTED)
    svg.text(px + 32 * pw + 6, py + 72, "lane", size=12, fill=MUTED)

    svg.text(20, 338, "3. Max and sum: a butterfly all-reduce within the group "
             "(__shfl_xor_sync)", size=14, weight="bold")
    svg.text(20, 358, "W = 8: three steps, XOR 4, 2, 1; afterwards every lane holds the "
             "group's result", size=12.5, fill=MUTED)
    bx, by, step_h, col_w = 90, 390, 52, 78
    for s in range(4):
        y = by + s * step_h
        label = "values" if s == 0 else f"xor {8 >> s}"
        svg.text(20, y + 5, label, size=12, fill=MUTED, mono=True)
        for lane in range(8):
            x = bx + lane * col_w
            svg.rect(x - 14, y - 11, 28, 20, fill=LANES[lane], rx=10, stroke="#8c959f",
                     width=0.9)
            svg.text(x, y + 4, str(lane), size=11, anchor="middle", mono=True)
        if s < 3:
            mask = 4 >> s
            for lane in range(8):
                partner = lane ^ mask
                svg.line(bx + partner * col_w, y + 10, bx + lane * col_w, y + step_h - 12,
                         stroke="#8c959f", width=1)
    svg.text(bx + 8 * col_w - 30, by + 3 * step_h + 4, "all equal", size=12, fill=CXX[1],
             weight="bold")
    svg.text(20, by + 3 * step_h + 42, "Every lane takes part in every shuffle: lanes whose "
             "row is past the end carry dummy values.", size=12.5, fill=MUTED)
    return svg


# ---- The shared-memory path ------------------------------------------------------------------

def block_smem() -> Svg:
    svg = Svg(760, 690, "The shared-memory path: layout, banks, and blocks that overlap")
    svg.text(20, 26, "1. One block per row; thread t owns window packs t, t + B, t + 2B, ...",
             size=14, weight="bold")
    svg.text(20, 46, "illustrated with B = 4 threads and a row of 12 packs; real blocks have "
             "128 to 1024 threads", size=12.5, fill=MUTED)
    px, py, pw = 72, 74, 50
    svg.text(px - 10, py + 20, "x", size=13, anchor="end", mono=True, weight="bold")
    svg.text(px - 10, py + 96, "smem", size=12, anchor="end", mono=True, weight="bold")
    for k in range(12):
        t = k % 4
        svg.rect(px + k * pw, py, pw - 3, 30, fill=LANES[t], rx=2, stroke=GLOBAL[1], width=0.8)
        svg.text(px + k * pw + (pw - 3) / 2, py + 20, f"p{k}", size=12, anchor="middle",
                 mono=True)
        svg.rect(px + k * pw, py + 76, pw - 3, 30, fill=LANES[t], rx=2, stroke=SMEM[1],
                 width=1)
        svg.text(px + k * pw + (pw - 3) / 2, py + 96, f"t{t}", size=12, anchor="middle",
                 mono=True)
        svg.line(px + k * pw + (pw - 3) / 2, py + 32, px + k * pw + (pw - 3) / 2, py + 72,
                 arrow=True, stroke="#9aa4ae", width=1)
    svg.text(px + 12 * pw + 6, py + 50, "cp.async,", size=12, fill=MUTED)
    svg.text(px + 12 * pw + 6, py + 66, "16 B each", size=12, fill=MUTED)
    svg.text(20, py + 132, "Slot k holds pack k. A thread reads back only the slots it "
             "copied itself, so neither the copies", size=12.5, fill=MUTED)
    svg.text(20, py + 150, "nor the reads need a barrier.", size=12.5, fill=MUTED)

    y2 = 262
    svg.text(20, y2, "2. Why this layout has no bank conflicts", size=14, weight="bold")
    svg.text(20, y2 + 20, "32 banks of 4 bytes. A warp's 16-byte loads are served a quarter "
             "warp (8 threads, 128 bytes) at a time:", size=12.5, fill=MUTED)
    bx, by, bw = 70, y2 + 44, 20
    svg.text(bx - 8, by + 15, "banks", size=12, anchor="end", fill=MUTED)
    for b in range(32):
        svg.rect(bx + b * bw, by, bw - 1, 22, fill=LANES[b // 4], rx=1, stroke="#b6bec8",
                 width=0.6)
        if b % 4 == 0:
            svg.text(bx + b * bw + 2, by + 15, str(b), size=9.5, mono=True)
    for t in range(8):
        svg.text(bx + t * 4 * bw + 2 * bw, by + 40, f"t{t}", size=11.5, anchor="middle",
                 mono=True)
    svg.text(bx, by + 62, "threads 0\u20137 cover banks 0\u201331 once each; threads "
             "8\u201315, 16\u201323 and 24\u201331 likewise:", size=12.5)
    svg.text(bx, by + 80, "each phase is conflict-free, so the warp's 512 bytes take the "
             "minimum four phases.", size=12.5)
    svg.text(bx, by + 104, "OneFlow caches float elements and, with 2-element packs, stores "
             "each pack's elements", size=12.5, fill=MUTED)
    svg.text(bx, by + 122, "in separate planes to avoid a two-way conflict. Whole 16-byte "
             "slots need no such trick.", size=12.5, fill=MUTED)

    y3 = 470
    svg.text(20, y3, "3. One block per row: while one block waits on its copy, another computes",
             size=14, weight="bold")
    tx, tw, th, gap = 110, 118, 24, 6
    # (resident block, start in slots, label, colours): three blocks resident on one SM.
    plan = [(0, 0.0, "row 0: copy", GLOBAL), (0, 1.0, "row 0: passes", SMEM),
            (0, 2.0, "row 3: copy", GLOBAL), (0, 3.0, "row 3: passes", SMEM),
            (1, 0.4, "row 1: copy", GLOBAL), (1, 1.4, "row 1: passes", SMEM),
            (1, 2.4, "row 4: copy", GLOBAL), (1, 3.4, "row 4: passes", SMEM),
            (2, 0.8, "row 2: copy", GLOBAL), (2, 1.8, "row 2: passes", SMEM),
            (2, 2.8, "row 5: copy", GLOBAL)]
    svg.text(tx - 10, y3 + 71, "one SM", size=12, anchor="end", fill=MUTED)
    for slot, start, label, (fill, stroke) in plan:
        x = tx + start * (tw + gap)
        y = y3 + 22 + slot * 32
        svg.rect(x, y, tw, th, fill=fill, stroke=stroke, rx=4)
        svg.text(x + tw / 2, y + 16, label, size=11.5, anchor="middle")
    svg.line(tx, y3 + 124, tx + 4.8 * (tw + gap), y3 + 124, arrow=True)
    svg.text(tx + 4.8 * (tw + gap), y3 + 142, "time", size=12, anchor="end", fill=MUTED)
    svg.text(20, y3 + 166, "Three blocks resident on one SM, a row each. The grid has one "
             "block per row: when a block finishes,", size=12.5, fill=MUTED)
    svg.text(20, y3 + 184, "the SM starts the next row's block in its place. Grey: the row's "
             "cp.async copies in flight, holding no", size=12.5, fill=MUTED)
    svg.text(20, y3 + 202, "registers. Purple: pass 1, the reductions and pass 2, reading "
             "shared memory, then writing y.", size=12.5, fill=MUTED)
    return svg


# ---- The online path -------------------------------------------------------------------------

def block_online() -> Svg:
    svg = Svg(760, 580, "The online path: rows longer than shared memory")
    svg.text(20, 26, "1. A row longer than shared memory", size=14, weight="bold")
    rx, ry, rw = 30, 48, 700
    cached = 430
    svg.rect(rx, ry, cached, 34, fill=SMEM[0], stroke=SMEM[1], rx=3)
    svg.rect(rx + cached, ry, rw - cached, 34, fill=GLOBAL[0], stroke=GLOBAL[1], rx=3)
    svg.text(rx + cached / 2, ry + 22, "first cached_packs packs: copied to shared memory",
             size=12.5, anchor="middle")
    svg.text(rx + cached + (rw - cached) / 2, ry + 22, "the rest: read from x", size=12.5,
             anchor="middle")
    svg.brace(rx, rx + cached, ry + 38, "~112 KiB (two blocks per SM) or ~227 KiB (one)")
    svg.brace(rx + cached, rx + rw, ry + 38, "usually still in L2 on the second read")

    y2 = 150
    svg.text(20, y2, "2. Two passes; the first keeps a running (max, sum) per thread",
             size=14, weight="bold")
    steps = [
        ("pass 1", "each thread folds its packs into its (m, s):",
         "m' = max(m, v),  s' = s·e^(m \u2212 m') + e^(v \u2212 m')"),
        ("reduce", "block reductions: the row max, then the threads' sums rescaled to it:",
         "M = max over threads of m,   S = Σ over threads of s·e^(m \u2212 M)"),
        ("pass 2", "recompute e^(x \u2212 M) and write y = e^(x \u2212 M) / S",
         "cached packs from shared memory, the rest from x again"),
    ]
    for k, (tag, text, formula) in enumerate(steps):
        y = y2 + 18 + k * 62
        svg.rect(30, y, 84, 48, fill=CXX[0], stroke=CXX[1], rx=5)
        svg.text(72, y + 29, tag, size=13, anchor="middle", weight="bold")
        svg.text(130, y + 20, text, size=12.5)
        svg.text(130, y + 40, formula, size=12.5, mono=True)

    y3 = 394
    svg.text(20, y3, "3. Reads of x per element, against OneFlow's uncached kernel",
             size=14, weight="bold")
    bars = [
        ("OneFlow, uncached", [("pass: max", GLOBAL), ("pass: sum", GLOBAL),
                               ("pass: write y", GLOBAL)], "3 reads of x"),
        ("oneflite, cached part", [("copy in (cp.async)", GLOBAL), ("pass 1: smem", SMEM),
                                   ("pass 2: smem", SMEM)], "1 read of x"),
        ("oneflite, the rest", [("pass 1", GLOBAL), ("pass 2 (mostly L2)", GLOBAL)],
         "2 reads of x"),
    ]
    for k, (label, segments, total) in enumerate(bars):
        y = y3 + 20 + k * 44
        svg.text(190, y + 20, label, size=12.5, anchor="end")
        for s, (name, (fill, stroke)) in enumerate(segments):
            x = 200 + s * 140
            svg.rect(x, y, 132, 30, fill=fill, stroke=stroke, rx=4)
            svg.text(x + 66, y + 20, name, size=12, anchor="middle")
        svg.text(200 + 3 * 140 + 10, y + 20, total, size=12.5, weight="bold")
    svg.text(20, y3 + 168, "Grey: reads x from global memory (or L2). Purple: served from "
             "shared memory. Every path writes y once.", size=12, fill=MUTED)
    return svg


# ---- Choosing a path -------------------------------------------------------------------------

def dispatch() -> Svg:
    svg = Svg(760, 692, "How PlanSoftmax chooses a path")
    def box(x: float, y: float, w: float, h: float, lines: list[str], colors: tuple[str, str],
            bold_first: bool = True) -> None:
        svg.rect(x, y, w, h, fill=colors[0], stroke=colors[1], rx=6, width=1.5)
        for k, line in enumerate(lines):
            svg.text(x + w / 2, y + 22 + k * 18, line, size=12.5 if k else 13.5,
                     anchor="middle", weight="bold" if k == 0 and bold_first else "normal")

    box(250, 12, 260, 48, ["Launch(stream, rows, cols, x, y)", "window = 16-byte packs per row"],
        ("#f6f8fa", LINE))
    svg.line(380, 60, 380, 88, arrow=True)
    def decision(y: float, question: list[str], answer: list[str]) -> None:
        """A yes/no question at height y: yes leads right to a path, no leads down."""
        box(220, y, 320, 48, question, ("#ffffff", INK), bold_first=False)
        svg.line(540, y + 24, 598, y + 24, arrow=True)
        svg.text(568, y + 18, "yes", size=12, anchor="middle", fill=CXX[1], weight="bold")
        box(600, y - 10, 150, 68, answer, PRIM)
        svg.line(380, y + 48, 380, y + 80, arrow=True)
        svg.text(390, y + 68, "no", size=12, fill=PAD[1], weight="bold")

    decision(90, ["row fills a block_registers shape? (float",
                  "3/4: 768-32768; 16-bit 7/8: 4K, 8K)"],
             ["block_registers", "a block holds the row", "in registers"])
    decision(172, ["x, y aligned; a row is K x W 32-bit words,", "W ≤ 8 lanes, K odd, 7 ≤ K ≤ 25?"],
             ["warp_tile", "a warp stages two", "tiles of rows in smem"])
    decision(254, ["window ≤ the largest warp rung?", "(the row fits a lane's register budget)"],
             ["warp", "first rung that fits", "edge code if ragged"])
    decision(336, ["a block_registers shape plus a tail in smem?",
                   "(16-bit 10-16K, 58-64K; float 37-58K, 66-90K)"],
             ["block_registers", "registers, the rest", "cached in smem"])
    box(120, 418, 400, 66, ["16-bit, ≤ 640 packs: 64 threads. Else from 128 up:",
                            "row fits the opt-in shared memory? ask the occupancy API",
                            "128 if 4+ fit and < 16 packs a thread, else most threads"],
        ("#ffffff", INK), bold_first=False)
    svg.line(520, 451, 598, 451, arrow=True)
    svg.text(559, 444, "2+ per SM", size=11.5, anchor="middle", fill=CXX[1], weight="bold")
    box(600, 424, 150, 56, ["block_smem", "row cached whole"], SMEM)
    svg.line(230, 484, 230, 536, arrow=True)
    svg.text(240, 508, "none fits", size=12, fill=PAD[1], weight="bold")
    box(20, 538, 300, 68, ["block_online", "the largest block, one per SM:",
                           "cache what fits, read the rest twice"], GLOBAL)
    svg.line(440, 484, 440, 536, arrow=True)
    svg.text(450, 508, "only 1 per SM", size=12, fill=PAD[1], weight="bold")
    box(334, 538, 250, 68, ["two per SM, if two fit:", "half the largest size, each caching",
                            "half the SM's shared memory"], ("#ffffff", INK), bold_first=False)
    svg.line(584, 572, 598, 572, arrow=True)
    box(600, 544, 150, 56, ["block_online", "rest read twice"], GLOBAL)
    notes = ["Every path launches one block per tile of rows, up to 2^31 \u2212 1 blocks; the "
             "kernels stride over any rest.",
             "Launch and Describe call the same PlanSoftmax, so the trace shows exactly what "
             "ran."]
    for k, note in enumerate(notes):
        svg.text(20, 642 + 20 * k, note, size=12.5, fill=MUTED)
    return svg


DIAGRAMS = {
    "layers.svg": layers,
    "row_window.svg": row_window,
    "warp_path.svg": warp_path,
    "block_smem.svg": block_smem,
    "block_online.svg": block_online,
    "dispatch.svg": dispatch,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=OUT, help="folder to write the SVGs to")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, draw in DIAGRAMS.items():
        (args.out / name).write_text(draw().render(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
