"""Sphinx configuration of IndGen's documentation (MyST Markdown).

`make docs` builds it with warnings as errors; rosdoc2 builds the same tree (rosdoc2.yaml
points it here). The reference pages under reference/ are generated from the code at every
build (_ext/indgen_reference.py) and are never edited by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent / "src"))

from indgen_core import __version__  # noqa: E402 (after the path above)

project = "IndGen"
version = release = __version__
author = "The IndGen authors"
copyright = "2026, The IndGen authors"

extensions = ["myst_parser", "sphinx_copybutton", "indgen_reference"]
# the copy button copies a command without its prompt or the output under it
copybutton_prompt_text = r"\$ |>>> "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = False
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]
html_theme = "furo"
html_title = f"IndGen {__version__}"  # the version on every page
html_favicon = "images/favicon.svg"
html_static_path: list[str] = []
# a link that leaves the site (a repository file, a public page) is not checked by the build;
# links between pages are, and a broken one fails `make docs`
nitpicky = False
