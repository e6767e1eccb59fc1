"""Math as MathML, converted at build time: no JavaScript and no CDN, so formulas render offline.

Registers the ``mathml`` HTML math renderer; conf.py selects it with
``html_math_renderer = "mathml"``. Every current browser draws MathML natively.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from latex2mathml.converter import convert


def _inline(self: Any, node: nodes.Element) -> None:
    self.body.append(convert(node.astext(), display="inline"))
    raise nodes.SkipNode


def _block(self: Any, node: nodes.Element) -> None:
    self.body.append('<div class="math-block">' + convert(node.astext(), display="block") +
                     "</div>")
    raise nodes.SkipNode


def setup(app: Any) -> dict[str, Any]:
    app.add_html_math_renderer("mathml", (_inline, None), (_block, None))
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
