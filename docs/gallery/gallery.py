"""Run an example script of ``examples/`` inside a gallery page, and show its figures.

The scripts stay plain files (``tests/test_examples.py`` runs their quick mode too); a page
imports one by path and calls its ``main(["--quick", ...])``, which writes the figures under
``docs/gallery/_output/<name>/`` (git-ignored).
"""

import importlib.util
import sys
from pathlib import Path

from IPython.display import Image, display

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
OUTPUT = Path(__file__).resolve().parent / "_output"


def load(name: str):
    """The module ``examples/<name>.py`` (story 1 imports the demo, so the folder goes on the
    path); ``sys.argv`` is reset so that argparse reads only what ``main`` is given."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    sys.argv = [f"{name}.py"]
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pickling by reference (Dask workers) finds it
    spec.loader.exec_module(module)
    return module


def show_figures(name: str) -> None:
    """Embed every PNG the quick run wrote, in name order."""
    for png in sorted((OUTPUT / name).glob("*.png")):
        display(Image(filename=str(png)))
