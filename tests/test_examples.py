"""Every example's --quick mode runs, and its numbers agree with the references it prints.

Each example is imported from ``examples/`` and its ``main(["--quick", ...])`` called with the
figures written to a temporary folder; ``main`` returns the numbers it printed and the
example's own ``check(out, output)`` holds the assertions. The docs build runs the same quick
mode and the same ``check`` in each gallery page (docs/gallery/), so these tests carry the
``gallery`` marker: ``.ci/run`` leaves them to the docs build (``-m "not gallery"``), which
runs every check once; ``./run test`` runs them here too.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PINE = EXAMPLES.parents[1] / "shared" / "data" / "radiata_pine.csv"
pytestmark = pytest.mark.gallery


def load_example(name, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))  # story 1 reuses the demo's model
    monkeypatch.setattr(sys, "argv", [name])
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_and_check(name, output, monkeypatch, *extra):
    """``main(["--quick", "--output", output, *extra])`` of ``examples/<name>.py``, then its
    ``check``; the numbers ``main`` returned."""
    module = load_example(name, monkeypatch)
    out = module.main(["--quick", "--output", str(output), *extra])
    module.check(out, output)
    return out


def test_demo(tmp_path, monkeypatch):
    run_and_check("demo", tmp_path / "demo.png", monkeypatch)


def test_singular_learning(tmp_path, monkeypatch):
    run_and_check("01_singular_learning", tmp_path, monkeypatch)


def test_sgld(tmp_path, monkeypatch):
    run_and_check("02_sgld", tmp_path, monkeypatch)


def test_langevin_rejection(tmp_path, monkeypatch):
    run_and_check("03_langevin_rejection", tmp_path, monkeypatch)


def test_bayesian_perceptron(tmp_path, monkeypatch):
    run_and_check("04_bayesian_perceptron", tmp_path, monkeypatch)


def test_empirical_bayes(tmp_path, monkeypatch):
    run_and_check("05_empirical_bayes", tmp_path, monkeypatch)


@pytest.mark.skipif(not PINE.is_file(), reason="../shared/data/radiata_pine.csv is not there")
def test_model_selection(tmp_path, monkeypatch):
    run_and_check("06_model_selection", tmp_path, monkeypatch)


def test_variable_selection(tmp_path, monkeypatch):
    """8 models through a 2-worker LocalCluster (compare_models on Dask)."""
    out = run_and_check("07_variable_selection", tmp_path, monkeypatch)
    assert len(out["table"]) == 8


def test_learning_coefficient(tmp_path, monkeypatch):
    run_and_check("08_learning_coefficient", tmp_path, monkeypatch)


def test_discrete_models(tmp_path, monkeypatch):
    run_and_check("09_discrete_models", tmp_path, monkeypatch)
