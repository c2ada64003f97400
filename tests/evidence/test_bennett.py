"""pmt.bar and pmt.mbar on ExchangeMC runs with exact log Z."""

import warnings

import numpy as np
import pymc as pm
import pytest
import targets
import xarray as xr

import pymc_tempering as pmt
from pymc_tempering import exact
from pymc_tempering.evidence.bennett import bar, mbar

SAMPLE = {"cores": 1, "progressbar": False, "compute_convergence_checks": False}


def run(model, seed, chains=4, draws=500, **step):
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.sample(draws, tune=500, chains=chains, random_seed=seed,
                         step=pmt.ExchangeMC(**step), **SAMPLE)  # fmt: skip


@pytest.fixture(scope="module")
def lecture_run():
    x = targets.lecture_data()
    return run(targets.lecture_model(x), 11, betas=pmt.evidence_ladder(24)), x


@pytest.mark.parametrize("estimator", [bar, mbar])
def test_lecture_model_within_four_mcse(lecture_run, estimator):
    idata, x = lecture_run
    with warnings.catch_warnings():
        warnings.simplefilter("error", pmt.EvidenceWarning)  # a clean run warns of nothing
        res = estimator(idata)
    error = float(res.log_marginal_likelihood) - targets.lecture_log_evidence(x)
    assert abs(error) < 4 * float(res.mcse)
    assert bool(res.converged) and res.attrs["ladder_start"] == 0.0
    assert res["log_z"].sizes["rung"] == 24 and float(res["log_z"][0]) == 0.0
    assert float(res["log_z"][-1]) == float(res.log_marginal_likelihood)


def test_agree_with_stepping_stone_on_the_same_draws(lecture_run):
    idata, _ = lecture_run
    ss = pmt.stepping_stone(idata)
    for estimator in (bar, mbar):
        res = estimator(idata)
        gap = float(res.log_marginal_likelihood - ss.log_marginal_likelihood)
        assert abs(gap) < 4 * np.hypot(float(res.mcse), float(ss.mcse))


@pytest.mark.parametrize("estimator", [bar, mbar])
def test_likelihood_with_bounded_support(estimator):
    """Most prior draws have loglik = -inf: the prior mass of the support enters log Z."""
    y = targets.support_data()
    idata = run(targets.support_model(y), 5, betas=pmt.evidence_ladder(24))
    res = estimator(idata)
    error = float(res.log_marginal_likelihood) - exact.uniform_support_log_evidence(y)
    assert abs(error) < 4 * float(res.mcse)


def test_per_chain_ladders_are_pooled():
    x = targets.lecture_data()
    idata = run(targets.lecture_model(x), 3, chains=4, n_rungs=12, ladder="adaptive",
                ladder_objective="evidence")  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmt.EvidenceWarning)
        res = mbar(idata)
    assert "log_z" not in res  # each chain has its own ladder: no common curve
    error = float(res.log_marginal_likelihood) - targets.lecture_log_evidence(x)
    assert abs(error) < 4 * float(res.mcse)


def test_a_ladder_that_does_not_start_at_zero_warns():
    x = targets.lecture_data()
    idata = run(targets.lecture_model(x), 2, chains=2, draws=300, betas=[0.01, 0.1, 0.4, 1.0])
    with pytest.warns(pmt.EvidenceWarning, match="not 0"):
        res = bar(idata)
    assert res.attrs["ladder_start"] == 0.01


def test_not_an_exchange_run_is_refused():
    with targets.lecture_model(targets.lecture_data()):
        idata = pm.sample(50, tune=50, chains=1, step=pm.Metropolis(), random_seed=1, **SAMPLE)
    with pytest.raises(ValueError, match="ExchangeMC"):
        mbar(idata)


def _autocorrelated_lecture_draws(betas, seed, rho=0.9, n_chains=2, n_draws=1000):
    """Exact power-posterior draws of the lecture model, autocorrelated along draws (an AR(1)
    with coefficient ``rho`` behind each rung's mean parameter, marginally exact): the MCSE
    must exceed the iid one, sd / sqrt(n) (for each rung's mean, by sqrt((1 + rho) / (1 - rho))
    = 4.4x)."""
    x = targets.lecture_data()
    rng = np.random.default_rng(seed)
    mean_mu, sd_mu = targets._lecture_power_posterior(x, 1.0, betas)
    z = np.empty((n_chains, n_draws, len(betas)))
    z[:, 0] = rng.standard_normal((n_chains, len(betas)))
    noise = np.sqrt(1 - rho**2) * rng.standard_normal(z.shape)
    for d in range(1, n_draws):
        z[:, d] = rho * z[:, d - 1] + noise[:, d]
    mu = mean_mu + sd_mu * z
    n, xbar = len(x), np.mean(x)
    loglik = -0.5 * n * np.log(2 * np.pi) - 0.5 * (np.sum((x - xbar) ** 2) + n * (mu - xbar) ** 2)
    return xr.Dataset(
        {"rung_loglik": (("chain", "draw", "rung"), loglik)},
        coords={"rung": np.arange(len(betas)), "beta": ("rung", betas)},
    )


@pytest.mark.parametrize("estimator", [bar, mbar])
def test_error_bars_count_autocorrelation(estimator):
    """Over 40 seeds of autocorrelated exact draws, the z-scores (estimate - exact log Z) /
    MCSE have sd near 1 (0.7-1.4: the sd of 40 z-scores is within 11% of its truth at one
    sigma) and none beyond 4; an MCSE of sd / sqrt(n), blind to autocorrelation, gave sd
    2.15 (BAR) and 2.25 (MBAR) here (2.2-2.9 on seeds 100-239; honest: 0.82-1.26)."""
    betas = pmt.evidence_ladder(8)
    truth = exact.lecture_log_evidence(targets.lecture_data())
    z = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pmt.EvidenceWarning)
        for seed in range(40):
            res = estimator(_autocorrelated_lecture_draws(betas, seed))
            z.append((float(res.log_marginal_likelihood) - truth) / float(res.mcse))
    assert 0.7 < np.std(z) < 1.4, np.std(z)
    assert np.max(np.abs(z)) < 4, z
