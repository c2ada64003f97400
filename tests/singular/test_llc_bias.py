"""The LLC's finite-gamma bias bound on the regular regression of issue 39 (d = 4, n = 1000):
the default run reads about 1.9 +- 0.04 against lambda = d/2 = 2, its exact finite-gamma target.
The result carries the bound (``bias_bound``, the summary) rather than warning; the bound is
the exact gap d/2 - target within its MCSE, so it covers the estimate's bias, and wrong bounds
fail the same check."""

import warnings

import numpy as np
import pymc as pm
import pytest

from pymc_tempering.evidence import EvidenceWarning
from pymc_tempering.singular.llc import TARGET_Z, local_learning_coefficient

N, D = 1000, 4
RUN = {"draws": 1000, "tune": 500, "chains": 2, "cores": 1}


def _regression(seed=0):
    """y = X w0 + noise orthogonal to X's columns: w0 is an exact minimiser of L_n, and L_n -
    L_n(w0) is X's quadratic form exactly (a regular w*, lambda = d/2)."""
    rng = np.random.default_rng(seed)
    X, w0 = rng.normal(size=(N, D)), np.array([0.5, -0.3, 0.2, 0.1])
    noise = rng.normal(size=N)
    q, _ = np.linalg.qr(X)
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 1.0, shape=D)
        pm.Normal("y", X @ w, 1.0, observed=X @ w0 + noise - q @ (q.T @ noise))
    return model, w0, X


def _target(X, w0, beta, gamma):
    """The exact finite-gamma LLC: the localised tempered posterior is Gaussian with precision
    beta X^T X + (gamma + 1) I (prior N(0, I)) and mean offset -cov w0."""
    hessian = X.T @ X
    cov = np.linalg.inv(beta * hessian + (gamma + 1.0) * np.eye(D))
    shift = -cov @ w0
    return 0.5 * beta * (np.trace(hessian @ cov) + shift @ hessian @ shift)


@pytest.fixture(scope="module")
def regular():
    model, w0, X = _regression()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = local_learning_coefficient(model, {"w": w0}, random_seed=1, **RUN)
    flagged = [w for w in caught if issubclass(w.category, EvidenceWarning)]
    return res, _target(X, w0, res.attrs["beta"], res.attrs["localization"]), flagged


def _bound_problems(estimate, mcse, bound, bound_mcse, target):
    """What a bias bound must satisfy on a regular model: cover the estimate's gap to d/2 (with
    4 of its MCSE), and equal the exact gap d/2 - target within 4 of the bound's own MCSE."""
    problems = []
    if not abs(D / 2 - estimate) <= bound + 4 * mcse:
        problems.append("does not cover")
    if not abs(bound - (D / 2 - target)) < 4 * bound_mcse:
        problems.append("not the exact gap")
    return problems


def test_regular_llc_carries_a_bound_that_covers_its_bias(regular):
    """The issue's case: no warning (the shares stay under 10%), the estimate within 4 MCSE of
    its finite-gamma target, the exact gap larger than the MCSE, and the result's bias_bound and
    summary cover it."""
    res, target, flagged = regular
    estimate, mcse = float(res.local_learning_coefficient), float(res.mcse)
    bound, bound_mcse = float(res.bias_bound), float(res.bias_bound_mcse)
    assert not flagged and res.attrs["warning"] == ""
    assert abs(estimate - target) < 4 * mcse
    assert D / 2 - target > mcse  # the bias exceeds the error bar ...
    assert _bound_problems(estimate, mcse, bound, bound_mcse, target) == []  # ... and is carried
    assert bound_mcse < 0.1 * bound
    summary = res.attrs["summary"]
    assert f"is up to {bound:.2g} below lambda(w*)" in summary and "more than the MCSE" in summary
    assert f"[{estimate:.4g}, {estimate + bound:.4g}]" in summary


def test_wrong_bounds_fail_the_check(regular):
    """Planted wrong bounds: none, half or twice the bound, and the shares (fractions) reported
    in place of the bound each fail `_bound_problems`. (The localization's part alone is only
    ~4 MCSE of the bound below it here, the prior's share being 0.5%: that plant fails the exact
    Gaussian test of test_llc_shares.py, where the prior takes -25%.)"""
    res, target, _ = regular
    estimate, mcse = float(res.local_learning_coefficient), float(res.mcse)
    bound, bound_mcse = float(res.bias_bound), float(res.bias_bound_mcse)
    shares = float(res.localization_share), float(res.prior_share)
    wrong = {
        "none": 0.0,
        "half": 0.5 * bound,
        "twice": 2.0 * bound,
        "shares": sum(shares),
    }
    for name, value in wrong.items():
        assert _bound_problems(estimate, mcse, value, bound_mcse, target), name


def test_regular_default_run_passes_the_target_check(regular):
    """Draws that follow the target: the mean of Delta . grad U is d = 4 within TARGET_Z MCSE (no
    warning, above), and the summary prints the check as passed."""
    res, _, flagged = regular
    check, check_mcse = float(res.target_check), float(res.target_check_mcse)
    assert not flagged and res.attrs["n_params"] == D
    assert abs(check - D) < TARGET_Z * check_mcse and check_mcse < 0.2
    assert "target check" in res.attrs["summary"] and "(passed)" in res.attrs["summary"]
