"""Sphinx configuration: pydata-sphinx-theme, MyST-NB (executed pages), numpydoc, autosummary.

``./run docs`` builds it with warnings as errors; the executed pages (getting started, the
guide, the gallery) run in fresh kernels that import the package from this checkout.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# the notebooks' kernels inherit this: they import this checkout, not an installed copy
_paths = (str(ROOT), os.environ.get("PYTHONPATH"))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in _paths if p)
os.environ.setdefault("MPLBACKEND", "agg")

project = "pymc_tempering"
author = "pymc_tempering developers"
copyright = "the pymc_tempering developers"
release = version = "0.1.0"

extensions = [
    "myst_nb",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx_design",
]
templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints", "**/_output"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}

# API reference: one stub page per public name, numpydoc sections
autosummary_generate = True
autodoc_typehints = "none"  # the numpydoc Parameters section states the types
autodoc_default_options = {"member-order": "bysource"}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()  # docstrings are checked by review, not by the build

# MyST and executed pages
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = os.environ.get("PMT_DOCS_EXECUTE", "cache")  # "off" for a text-only build
nb_execution_timeout = 600
nb_execution_raise_on_error = True  # a broken snippet or example fails the build
nb_execution_show_tb = True
nb_merge_streams = True
# the decision records are written by hand in plain Markdown, some from level-2 headings
suppress_warnings = ["myst.header"]

html_theme = "pydata_sphinx_theme"
html_title = "pymc_tempering"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_static_path = []
html_show_sourcelink = False


def _drop_type_docstring(app, what, name, obj, options, lines):
    """A constant without a ``#:`` comment would show its type's docstring (dict, ndarray)."""
    own = (type(obj).__doc__ or "").split()[:1]
    if what in ("data", "attribute") and own and " ".join(lines).split()[:1] == own:
        lines.clear()


def setup(app):
    app.connect("autodoc-process-docstring", _drop_type_docstring, priority=100)
