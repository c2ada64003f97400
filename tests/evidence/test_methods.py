"""The ``method=`` argument of marginal_likelihood and compare_evidence (issue 19): BAR and
MBAR through the one-call helpers, against exact log Z."""

import warnings

import numpy as np
import pytest
import targets

import pymc_tempering as pmt
from pymc_tempering.evidence.bennett import bar, mbar
from pymc_tempering.evidence.compare import compare_evidence
from pymc_tempering.evidence.methods import METHODS, resolve_methods
from pymc_tempering.evidence.runner import marginal_likelihood
from pymc_tempering.exact import two_mode_log_evidence, two_mode_model

QUIET = {"cores": 1, "progressbar": False, "compute_convergence_checks": False}
ALL = ("bar", "mbar", "ti", "ss")


def _run(model, seed, n_rungs=24, beta_min=1e-4, draws=500, chains=4, method=ALL):
    chosen = {} if method is None else {"method": method}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmt.EvidenceWarning)
        return marginal_likelihood(
            model, n_rungs=n_rungs, beta_min=beta_min, draws=draws, tune=300, chains=chains,
            random_seed=seed, return_idata=True, **chosen, **QUIET,
        )  # fmt: skip


def _assert_within(result, exact):
    error = result.log_marginal_likelihood.values - exact
    assert np.all(np.abs(error) < 4 * result.mcse.values), (error, result.mcse.values)


@pytest.fixture(scope="module")
def lecture_run():
    x = targets.lecture_data()
    result, idata = _run(targets.lecture_model(x), seed=21)
    return result, idata, targets.lecture_log_evidence(x)


def test_names_resolve_and_unknown_names_are_refused():
    assert resolve_methods("mbar") == ("mbar",)
    assert resolve_methods(["ti", "stepping_stone", "ti"]) == tuple(METHODS.values())[:2]
    for bad in ("smc", ["bar", "nested"], [], 3):
        with pytest.raises(ValueError, match="`method` must"):
            resolve_methods(bad)


def test_every_method_within_four_mcse_in_the_order_asked(lecture_run):
    result, idata, exact = lecture_run
    assert list(result.estimator.values) == [METHODS[m] for m in ALL]
    _assert_within(result, exact)
    for name, fn in (("bar", bar), ("mbar", mbar)):  # the public estimators on the same draws
        alone = fn(idata)
        row = result.sel(estimator=METHODS[name])
        assert float(row.log_marginal_likelihood) == float(alone.log_marginal_likelihood)
        assert float(row.mcse) == float(alone.mcse)
    assert np.isnan(result.discretisation_error.sel(estimator="mbar"))
    assert result.attrs["ladder_start"] == 0.0 and result.attrs["ti_method"] == "corrected"


def test_default_is_ti_and_stepping_stone():
    x = targets.lecture_data()
    result, _ = _run(targets.lecture_model(x), seed=22, n_rungs=8, draws=100, chains=2,
                     method=None)  # fmt: skip
    assert list(result.estimator.values) == ["thermodynamic_integration", "stepping_stone"]


def test_marginal_likelihood_refuses_an_unknown_method_before_sampling():
    with pytest.raises(ValueError, match="`method` must name evidence estimators"):
        marginal_likelihood(targets.lecture_model(targets.lecture_data()), method="nested")


def test_compare_evidence_method_on_traces_and_results(lecture_run):
    result, idata, _ = lecture_run
    for method, fn in (("mbar", mbar), ("bar", bar)):
        table = compare_evidence({"trace": idata, "result": result}, method=method)
        assert set(table.method) == {METHODS[method]}
        expected = float(fn(idata).log_marginal_likelihood)
        assert np.allclose(table.log_marginal_likelihood, expected)
    default = compare_evidence({"trace": idata})  # thermodynamic integration, as before
    assert default.loc["trace", "method"] == "thermodynamic_integration"
    old = compare_evidence({"trace": idata}, estimator="stepping_stone")  # the former name
    assert old.loc["trace", "method"] == "stepping_stone"


def test_compare_evidence_refuses_bad_methods(lecture_run):
    result, idata, _ = lecture_run
    with pytest.raises(ValueError, match="`method` must name"):
        compare_evidence({"m": idata}, method="smc")
    with pytest.raises(ValueError, match="not both"):
        compare_evidence({"m": idata}, method="bar", estimator="bar")
    with pytest.raises(ValueError, match="one estimator's name"):
        compare_evidence({"m": idata}, method=["bar", "ti"])
    only_ss = result.sel(estimator=["stepping_stone"])
    with pytest.raises(ValueError, match="holds \\['stepping_stone'\\], not 'mbar'"):
        compare_evidence({"m": only_ss}, method="mbar")
    # without a method, a result that lacks the default gives its first estimator
    assert compare_evidence({"m": only_ss}).loc["m", "method"] == "stepping_stone"


def test_conjugate_regression():
    X, y = targets.regression_data()
    result, _ = _run(targets.regression_model(X, y), seed=23, n_rungs=32, beta_min=1e-6)
    _assert_within(result, targets.regression_log_evidence(X, y))


def test_two_mode_target():
    result, _ = _run(two_mode_model(), seed=24, n_rungs=24, beta_min=1e-4, draws=800)
    _assert_within(result, two_mode_log_evidence())


def test_singular_model():
    """The seed paper's singular model (H(w) = w1^2 w2^2), exact log Z by quadrature."""
    n = 10_000
    result, _ = _run(targets.singular_model(n), seed=25, n_rungs=48, beta_min=1e-6, draws=800)
    _assert_within(result, -targets.singular_free_energy(n))


PINE = targets.radiata_pine_path()


@pytest.mark.slow
@pytest.mark.skipif(PINE is None, reason="../shared/data/radiata_pine.csv is not beside the repo")
def test_radiata_pine():
    data = targets.radiata_pine_data(PINE)
    model = targets.radiata_model(data["y"], data["z"], noncentred=True)
    result, _ = _run(model, seed=26, n_rungs=48, beta_min=1e-6, draws=1000)
    _assert_within(result, targets.radiata_log_evidence(data["y"], data["z"]))
