"""Sphinx configuration: pydata-sphinx-theme, MyST-NB (executed pages), numpydoc, autosummary.

``./run docs`` builds it with warnings as errors; the executed pages (getting started, the
guide, the gallery) run in fresh kernels that import the package from this checkout.
"""

import inspect
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# the notebooks' kernels inherit this: they import this checkout, not an installed copy
_paths = (str(ROOT), os.environ.get("PYTHONPATH"))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in _paths if p)
# This process (autodoc) draws nothing: Agg. The notebook kernels inherit the environment, and
# with MPLBACKEND=agg there a plotting cell ends with no figure and no error; they get the inline
# backend (ipykernel's own default) whatever the caller's shell exported.
import matplotlib  # noqa: E402

matplotlib.use("agg")
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"

# The kernels start IPython with a startup file of this build's own (IPYTHONDIR, under _build):
# a warning shows its category and message, not the path of the file that raised it, so no
# page names the machine that built it (tests/test_site.py greps the site for such paths).
_IPYTHONDIR = ROOT / "docs" / "_build" / ".ipython"
_STARTUP = _IPYTHONDIR / "profile_default" / "startup" / "00-pmt-docs.py"
_STARTUP.parent.mkdir(parents=True, exist_ok=True)
_STARTUP.write_text(
    "import warnings\n\n\n"
    "def _no_path(message, category, filename, lineno, line=None):\n"
    '    return f"{category.__name__}: {message}\\n"\n\n\n'
    "warnings.formatwarning = _no_path\n"
)
os.environ["IPYTHONDIR"] = str(_IPYTHONDIR)

import pymc_tempering  # noqa: E402  (from ROOT, inserted above)

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import execution_cache  # noqa: E402  (docs/_ext: the build's own helpers)
import read_order  # noqa: E402

project = "pymc_tempering"
author = "pymc_tempering developers"
copyright = "the pymc_tempering developers"
release = version = pymc_tempering.__version__  # one version source: pyproject reads it too

extensions = [
    "myst_nb",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx_copybutton",
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

# MathJax 3 from _static/mathjax, never from a CDN: the files of the sphinx-mathjax-offline
# package, copied by _copy_mathjax below (the package as an extension does not declare itself
# safe for parallel reading, which keeps `sphinx -j` to one process)
mathjax_path = "mathjax/tex-chtml.js"
# copy buttons leave out prompts and the outputs of doctest-style snippets
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_exclude = ".linenos, .gp, .go"

# Links to the libraries' own docs where their inventories can be fetched; offline (CI, a
# laptop on a train) the references stay plain code and the -W build passes.
_INVENTORIES = {
    "python": "https://docs.python.org/3",
    "numpy": "https://numpy.org/doc/stable",
    "xarray": "https://docs.xarray.dev/en/stable",
    "pymc": "https://www.pymc.io/projects/docs/en/stable",
    "arviz": "https://python.arviz.org/en/stable",
}


def _reachable(url: str, timeout: float = 3.0) -> bool:
    """Whether the inventory at ``url`` answers; ``PMT_DOCS_OFFLINE=1`` skips the probes."""
    if os.environ.get("PMT_DOCS_OFFLINE") == "1":
        return False
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/objects.inv", timeout=timeout) as response:
            return response.status == 200
    except Exception:
        return False


intersphinx_mapping = {k: (url, None) for k, url in _INVENTORIES.items() if _reachable(url)}
if intersphinx_mapping:
    extensions.append("sphinx.ext.intersphinx")

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
if nb_execution_mode == "off":  # unexecuted cells have no kernel language to highlight with
    suppress_warnings.append("myst-nb.lexer")

html_theme = "pydata_sphinx_theme"
html_title = "pymc_tempering"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_show_sourcelink = False


def _drop_type_docstring(app, what, name, obj, options, lines):
    """A constant without a ``#:`` comment would show its type's docstring (dict, ndarray)."""
    own = (type(obj).__doc__ or "").split()[:1]
    if what in ("data", "attribute") and own and " ".join(lines).split()[:1] == own:
        lines.clear()


def _init_signature(app, what, name, obj, options, signature, return_annotation):
    """A step method's real arguments: PyMC's ``BlockedStep.__new__(cls, *args, **kwargs)`` hides
    ``__init__`` from autodoc, which would show every sampler as ``(*args, **kwargs)``."""
    if what != "class" or signature not in ("(*args, **kwargs)", None):
        return None
    init = obj.__dict__.get("__init__") or getattr(obj, "__init__", None)
    try:
        params = list(inspect.signature(init).parameters.values())[1:]  # without self
    except (TypeError, ValueError):
        return None
    if not params:
        return None
    # without annotations, as autodoc_typehints = "none" shows every other signature
    plain = [p.replace(annotation=inspect.Parameter.empty) for p in params]
    return str(inspect.Signature(plain)), return_annotation


def _copy_mathjax(app, exc):
    """Copy MathJax 3 from the sphinx-mathjax-offline package into the site's _static/mathjax
    once the build has succeeded."""
    import importlib.util

    from sphinx.util.fileutil import copy_asset

    if exc is None:
        package = importlib.util.find_spec("sphinx-mathjax-offline").submodule_search_locations[0]
        copy_asset(
            os.path.join(package, "static", "mathjax"),
            os.path.join(app.outdir, "_static", "mathjax"),
        )


def _spread_executed_pages(app, env, docnames):
    """The executed pages dealt across Sphinx's parallel read chunks, in place
    (``docs/_ext/read_order.py``, docs/decisions/154-docs-build-order.md)."""
    from sphinx.util.parallel import make_chunks

    if app.parallel < 2:  # a serial read: one process, any order
        return
    executed = {d for d in docnames if "```{code-cell}" in Path(env.doc2path(d)).read_text()}
    sizes = [len(chunk) for chunk in make_chunks(docnames, app.parallel)]
    docnames[:] = read_order.spread_executed(docnames, executed, sizes, app.parallel)


def _create_execution_cache(app, env, docnames):
    """jupyter-cache's database, made before the parallel read forks its readers
    (``docs/_ext/execution_cache.py``)."""
    if nb_execution_mode == "cache":
        execution_cache.create_execution_cache(env.mystnb_config.execution_cache_path)


def setup(app):
    app.connect("env-before-read-docs", _create_execution_cache)
    app.connect("env-before-read-docs", _spread_executed_pages)
    app.connect("build-finished", _copy_mathjax)
    app.connect("autodoc-process-docstring", _drop_type_docstring, priority=100)
    app.connect("autodoc-process-signature", _init_signature)
