"""Sphinx configuration for the oneflite documentation.

Build (warnings are errors; the examples of every page run during the build):

    pip install ".[docs]"
    sphinx-build -W -b html docs docs/_build/html
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

# The API reference describes a plain build: no plug-in backends loaded by entry points.
os.environ.setdefault("ONEFLITE_DISABLE_ENTRY_POINTS", "1")
os.environ.setdefault("ONEFLITE_DISABLE_CUDA", "1")

import oneflite  # noqa: E402

project = "oneflite"
author = "the oneflite authors"
copyright = "the oneflite authors"
release = oneflite.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "docexec",
    "mathml",
    "sourcetables",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_static", "_tools", "_ext", "**/README.md"]
templates_path: list[str] = []

myst_enable_extensions = ["colon_fence", "deflist", "dollarmath", "attrs_block"]
myst_heading_anchors = 3

# Python fences are highlighted as Python; C++ as C++.
highlight_language = "python"
pygments_style = "friendly"
pygments_dark_style = "monokai"

autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
python_use_unqualified_type_names = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False

html_theme = "furo"
html_title = f"oneflite {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_math_renderer = "mathml"
html_show_sourcelink = False
html_theme_options = {"navigation_with_keys": True}


def _drop_enum_member_list(app, what, name, obj, options, lines):
    """pybind11 appends a "Members:" list to an enum's docstring; the page lists the dtypes."""
    if name == "oneflite.dtype" and "Members:" in lines:
        del lines[lines.index("Members:"):]


def setup(app):
    app.connect("autodoc-process-docstring", _drop_enum_member_list)

