"""Every example's --quick mode runs, and its numbers agree with the references it prints.

Each example is imported from ``examples/`` and its ``main(["--quick", ...])`` called with the
figures written to a temporary folder; ``main`` returns the numbers it printed.
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PINE = EXAMPLES.parents[1] / "shared" / "data" / "radiata_pine.csv"


def run_example(name, tmp_path, monkeypatch, *extra):
    monkeypatch.syspath_prepend(str(EXAMPLES))  # story 1 reuses the demo's model
    monkeypatch.setattr(sys, "argv", [name])
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main(["--quick", "--output", str(tmp_path), *extra])


def test_demo(tmp_path, monkeypatch):
    out = run_example("demo", tmp_path, monkeypatch, "--output", str(tmp_path / "demo.png"))
    assert (tmp_path / "demo.png").is_file()
    for label in ("ExchangeMC, TI", "ExchangeMC, SS"):
        value, mcse = out["evidence"][label]
        assert abs(value - out["exact"]) < 4 * mcse, (label, value, out["exact"], mcse)
    assert abs(out["asymptotic"] - out["exact"]) < 1e-3
    # exchanges move the recorded chain between the arms of H(w) = 0 far more often
    assert out["mixing"]["ExchangeMC"][0] > 2 * out["mixing"]["pm.Metropolis"][0]


def test_singular_learning(tmp_path, monkeypatch):
    out = run_example("01_singular_learning", tmp_path, monkeypatch)
    assert (tmp_path / "01_clouds.png").is_file() and (tmp_path / "01_error_rate.png").is_file()
    for grid in ("by_k", "by_n", "by_d"):
        median = out[grid]["ExchangeMC"][0]
        assert np.all(np.abs(median) < 0.05), (grid, median)


def test_sgld(tmp_path, monkeypatch):
    out = run_example("02_sgld", tmp_path, monkeypatch)
    assert (tmp_path / "02_sgld_noise.png").is_file()
    lr = out["logistic"]
    assert abs(lr["acc_sgld"] - lr["acc_nuts"]) < 0.1
    assert np.all(np.abs(lr["z"]) < 3), lr["z"]  # SGLD means within 3 posterior sds of NUTS


def test_langevin_rejection(tmp_path, monkeypatch):
    out = run_example("03_langevin_rejection", tmp_path, monkeypatch)
    assert out["cauchy"]["divergences"] == 0
    assert out["quartic_ula"]["blown"] == 15  # every ULA path on exp(-x^4) blows up
    for est, err, exact in out["quartic_mala"]["moments"].values():
        assert abs(est - exact) < 4 * err, (est, err, exact)


def test_bayesian_perceptron(tmp_path, monkeypatch):
    out = run_example("04_bayesian_perceptron", tmp_path, monkeypatch)
    maps, losses = out["maps"], out["losses"]
    for name in ("ExchangeMC", "pm.Metropolis (σ = 0.1)"):
        assert np.max(np.abs(maps[name] - maps["NUTS"])) < 0.15, name
    assert losses["NUTS"] < losses["MAP plug-in"] < losses["ML plug-in"]


def test_empirical_bayes(tmp_path, monkeypatch):
    out = run_example("05_empirical_bayes", tmp_path, monkeypatch)
    for row in out["rows"]:
        assert abs(row["TI"] - row["exact"]) < 4 * row["TI mcse"], row
        assert row["Laplace"] == pytest.approx(row["exact"], abs=1e-5)  # Gaussian: exact
    assert len({round(row["BIC"], 9) for row in out["rows"]}) == 1  # BIC ignores b


@pytest.mark.skipif(not PINE.is_file(), reason="../shared/data/radiata_pine.csv is not there")
def test_model_selection(tmp_path, monkeypatch):
    out = run_example("06_model_selection", tmp_path, monkeypatch)
    table = out["table"]
    for model, row in table.iterrows():
        for key in ("TI", "SS"):
            assert abs(row[key] - row["exact"]) < 4 * row[f"{key} mcse"], (model, key)
    assert out["ranking"].index[0] == "M2: resin-adjusted density"
    bf = out["ranking"].loc["M1: density"]
    assert abs(bf.log_bayes_factor - out["exact_bf"]) < 4 * bf.log_bayes_factor_mcse


def test_learning_coefficient(tmp_path, monkeypatch):
    out = run_example("08_learning_coefficient", tmp_path, monkeypatch)
    assert (tmp_path / "08_learning_coefficient.png").is_file()
    cases = {(row["d"], row["n"]) for row in out["rows"]}
    assert cases == {(2, 100), (2, 1000), (3, 100), (3, 1000)}
    for row in out["rows"]:  # WBIC and both lambda estimators against their exact finite-n values
        for key in ("wbic", "two_temperature", "fluctuation"):
            assert abs(row[key] - row[f"{key}_exact"]) < 4 * row[f"{key}_mcse"], (key, row)
    seed, tanh = out["llc"]["seed"], out["llc"]["tanh"]
    assert abs(seed["llc"] - seed["exact"]) < 4 * seed["mcse"], seed
    assert tanh["llc"] + 4 * tanh["mcse"] < tanh["d_half"], tanh  # singular: below d/2
    assert tanh["llc"] > 4 * tanh["mcse"], tanh
    # gamma = 100 carries most of the estimate (the finite-gamma LLC): said, not hidden
    assert "localization takes" in tanh["warning"], tanh


def test_discrete_models(tmp_path, monkeypatch):
    out = run_example("09_discrete_models", tmp_path, monkeypatch)
    for name in ("09_change_point.png", "09_variable_selection.png"):
        assert (tmp_path / name).is_file(), name
    coal = out["change_point"]
    p = coal["probabilities"]
    p = p[p.exact > 0.01]  # the 10 years that carry 97% of the posterior
    assert len(p) >= 5 and np.all(np.abs(p.estimate - p.exact) < 4 * p.mcse), p
    rates = coal["rates"]
    assert np.all(np.abs(rates.estimate - rates.exact) < 4 * rates.mcse), rates
    for model, rows in coal["log_z"].items():  # TI and SS: a warning is an honest answer,
        _check_evidence(model, rows)  # but one of the two must be trusted and within 4 MCSE
    bf = coal["log_bf"]  # compare_evidence (TI): within 4 MCSE unless it warned
    assert bf["warning"] or abs(bf["estimate"] - bf["exact"]) < 4 * bf["mcse"], bf
    selection = out["variable_selection"]
    pips = selection["pips"]
    error = np.abs(pips["ExchangeMC"] - pips["exact"])
    assert np.all(error < 4 * pips["ExchangeMC mcse"]), pips
    _check_evidence("variable selection", selection["log_z"])


def _check_evidence(model, rows):
    trusted = {name: row for name, row in rows.items() if not row["warning"]}
    assert trusted, (model, "every estimator warned", rows)
    for name, row in trusted.items():
        assert row["|error| / mcse"] < 4, (model, name, row)
