"""pymc_tempering.diagnostics.summary: the tempering summary on real ExchangeMC output against
closed-form rung means (MCSE-scaled) and the TI estimator's MCSE and ESS, on per-chain and
padded ladders, and with zero-likelihood prior draws."""

import warnings

import numpy as np
import pytest
import two_legs
import xarray as xr
from helpers import (
    N_RUNGS,
    X_LECTURE,
    adaptive_run,
    exchange_run,
    padded_run,
    with_zero_likelihood,
)
from targets import lecture_power_moments

from pymc_tempering.diagnostics.summary import tempering_summary
from pymc_tempering.evidence.tempered import thermodynamic_integration
from pymc_tempering.ladder import geometric_ladder
from pymc_tempering.trace import one_chain, tempering_dataset


@pytest.fixture(scope="module")
def exchange_idata():
    return exchange_run()


def test_summary_values_on_real_output(exchange_idata):
    summary = tempering_summary(exchange_idata)
    assert not [d for d in summary.dims if str(d).endswith("_dim_0")]
    assert summary["mean_loglik"].dims == ("rung",)
    assert summary["swap_accept"].dims == ("rung_pair",)
    assert summary["round_trips"].dims == ("chain",)
    betas = summary["beta"].values
    np.testing.assert_allclose(betas, geometric_ladder(N_RUNGS))

    # per-rung mean loglik against the closed form, MCSE-scaled; MCSE and ESS as the TI uses
    exact, _ = lecture_power_moments(X_LECTURE, 1.0, betas)
    z = (summary["mean_loglik"].values - exact) / summary["mean_loglik_mcse"].values
    assert np.all(np.abs(z) < 4), z
    ti = thermodynamic_integration(exchange_idata)
    # the same MCSE up to the sd's ddof (ArviZ's mcse, used here, takes ddof=1)
    np.testing.assert_allclose(summary["mean_loglik_mcse"], ti["mean_loglik_mcse"], rtol=2e-3)
    np.testing.assert_allclose(summary["ess_loglik"], ti["ess_loglik"])
    assert np.all(summary["rhat_loglik"].values < 1.05)

    ds = tempering_dataset(exchange_idata)
    np.testing.assert_allclose(summary["accept"], ds["rung_accept"].mean(("chain", "draw")))
    assert np.all((summary["accept"] > 0.1) & (summary["accept"] <= 1))
    rejection = 1 - summary["swap_accept"].values
    assert float(summary["global_barrier"]) == pytest.approx(rejection.sum())
    assert 0 < float(summary["global_barrier"]) < N_RUNGS - 1
    np.testing.assert_allclose(summary["cumulative_barrier"][1:], np.cumsum(rejection))
    # observed round trips cannot beat the DEO rate with perfect local exploration by much
    observed = summary["round_trip_rate"].values
    assert np.all(observed < 1.2 * float(summary["predicted_round_trip_rate"]))
    assert np.all(observed > 0.3 * float(summary["predicted_round_trip_rate"]))
    assert summary.attrs["n_draws"] == 400


def test_summary_accepts_sample_stats_and_tempering_dataset(exchange_idata):
    full = tempering_summary(exchange_idata)
    for data in (exchange_idata.sample_stats.to_dataset(), tempering_dataset(exchange_idata)):
        xr.testing.assert_allclose(tempering_summary(data), full)


def test_summary_explains_non_tempering_input(hand_made_stats):
    with pytest.raises(ValueError, match="ExchangeMC"):
        tempering_summary(xr.Dataset({"accept": (("chain", "draw"), np.ones((1, 3)))}))
    with pytest.raises(ValueError, match="rung_scaling.*ExchangeMC"):
        tempering_summary(hand_made_stats.drop_vars("rung_scaling"))


def test_summary_refuses_corrupt_loglik(hand_made_stats):
    stats = hand_made_stats
    stats["rung_loglik"][0, 2, 1] = np.nan
    with pytest.raises(ValueError, match=r"rung_loglik.*NaN.*rungs \[1\]"):
        tempering_summary(stats)


# --- per-chain ladders, padded ladders, zero-likelihood prior draws ---------------------------
def test_summary_on_per_chain_ladders():
    """ladder="adaptive": every rung quantity is per chain, and equals the chain on its own."""
    idata = adaptive_run()
    summary = tempering_summary(idata)
    assert summary["beta"].dims == ("chain", "rung") and summary.attrs["n_chains"] == 2
    for c in range(2):
        alone = tempering_summary(tempering_dataset(idata).isel(chain=[c]))
        for name in ("mean_loglik", "mean_loglik_mcse", "ess_loglik", "rhat_loglik", "accept"):
            np.testing.assert_allclose(summary[name].isel(chain=c), alone[name].isel(chain=0))
    # every number is there: R-hat of a lone chain compares its halves instead of being NaN
    for name in ("mean_loglik", "mean_loglik_mcse", "ess_loglik", "rhat_loglik", "accept"):
        assert np.isfinite(summary[name].values).all(), name
    assert np.all(summary["rhat_loglik"].values < 1.2)
    assert np.all(summary["zero_likelihood_fraction"].values == 0)


def test_summary_on_chains_with_different_numbers_of_rungs():
    """adapt_n_rungs=True, chains on 6 and 5 rungs: each chain is read on its own rungs; the
    rungs a chain lacks are NaN, never numbers made from padding."""
    idata = padded_run()
    ds = tempering_dataset(idata)
    assert ds.sizes["rung"] == 6  # the 58 rungs no chain used are gone
    n_used = np.isfinite(ds["beta"].values).sum(axis=-1)
    short = int(np.argmin(n_used))
    np.testing.assert_array_equal(np.isnan(ds["beta"].values[short]), np.arange(6) >= 5)
    assert np.isnan(ds["beta_lower"].values[short, -1])  # no pair above its beta = 1 rung
    one = one_chain(ds, short)
    assert one.sizes["rung"] == 5 and one["beta"].values[-1] == 1.0

    summary = tempering_summary(idata)
    missing = np.isnan(summary["beta"].values)
    for name in ("accept", "mean_loglik", "mean_loglik_mcse", "ess_loglik", "rhat_loglik"):
        np.testing.assert_array_equal(np.isnan(summary[name].values), missing, err_msg=name)
    np.testing.assert_array_equal(summary["suggested_n_rungs"] >= 3, [True, True])


def test_summary_reads_zero_likelihood_prior_draws():
    """loglik = -inf on the beta = 0 rung (a prior draw outside the likelihood's support): the
    summary counts those draws and averages the others; nothing else changes, no NaN, no
    warning."""
    base = exchange_run()
    idata = with_zero_likelihood(base)
    loglik0 = tempering_dataset(idata)["rung_loglik"].sel(rung=0).values
    zero = np.isneginf(loglik0)
    assert 0.1 < zero.mean() < 0.3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = tempering_summary(idata)
    before = tempering_summary(base)
    assert float(summary["zero_likelihood_fraction"].sel(rung=0)) == zero.mean()
    assert np.all(summary["zero_likelihood_fraction"].values[1:] == 0)
    assert float(summary["mean_loglik"].sel(rung=0)) == pytest.approx(loglik0[~zero].mean())
    for name in ("mean_loglik", "mean_loglik_mcse", "ess_loglik", "rhat_loglik"):
        values = summary[name].values
        assert np.isfinite(values).all(), name
        np.testing.assert_allclose(values[1:], before[name].values[1:], err_msg=name)
    # prior draws are independent: the ESS is about the number of finite draws
    n_finite = (~zero).sum()
    assert 0.6 * n_finite < float(summary["ess_loglik"].sel(rung=0)) < 1.4 * n_finite
    sd = loglik0[~zero].std(ddof=1)
    assert float(summary["mean_loglik_mcse"].sel(rung=0)) == pytest.approx(
        sd / np.sqrt(float(summary["ess_loglik"].sel(rung=0)))
    )
    for name in ("accept", "swap_accept", "global_barrier", "round_trips"):
        np.testing.assert_array_equal(summary[name], before[name], err_msg=name)

    # the same on per-chain ladders
    per_chain = tempering_summary(with_zero_likelihood(adaptive_run()))
    assert np.isfinite(per_chain["mean_loglik_mcse"].values).all()
    assert np.all(per_chain["zero_likelihood_fraction"].sel(rung=0).values > 0.1)


def test_summary_of_a_two_leg_run_reports_each_leg():
    """reference="variational": one summary per leg over a dim ``leg``, each the summary of that
    leg's tempering Dataset; each leg's round trips (between its own beta = 0 and 1) add up to
    the sampler's ``round_trips`` stat, which counts both legs'."""
    idata = two_legs.two_leg_run()
    summary = tempering_summary(idata)
    assert summary["leg"].values.tolist() == ["prior", "variational"]
    assert summary["global_barrier"].dims == ("leg",)
    assert summary["beta"].dims == ("leg", "rung") and summary.sizes["rung"] == two_legs.N_RUNGS
    for leg, ds in two_legs.legs_of(idata).items():
        alone = tempering_summary(idata, leg=leg)
        assert alone.attrs["leg"] == leg and "leg" not in alone.dims
        assert tempering_summary(ds).attrs.get("leg", "prior") == leg  # a one-leg run: none
        n = ds.sizes["rung"]
        assert n == (two_legs.N_RUNGS if leg == "prior" else two_legs.N_RUNGS_VARIATIONAL)
        one = summary.sel(leg=leg).isel(rung=slice(n), rung_pair=slice(n - 1)).drop_vars("leg")
        xr.testing.assert_allclose(one, alone)
        assert np.all(np.isnan(summary.sel(leg=leg)["mean_loglik"].values[n:]))
    np.testing.assert_array_equal(
        summary["round_trips"].sum("leg"), idata.sample_stats["round_trips"].values[:, -1]
    )
    with pytest.raises(ValueError, match="no variational leg"):
        tempering_summary(exchange_run(), leg="variational")
    assert "leg" not in tempering_summary(exchange_run()).dims


# -- explorer="auto": its choice recorded and explained (issue 42, item 1) ------------------------
def _correlated_regression(seed=0, n=60, rho=0.9):
    """A correlated Gaussian posterior (4 coefficients): explorer='auto' scores it near 1."""
    import pymc as pm

    rng = np.random.default_rng(seed)
    cov = rho * np.ones((4, 4)) + (1 - rho) * np.eye(4)
    X = rng.multivariate_normal(np.zeros(4), cov, size=n)
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 3.0, shape=4)
        pm.Normal(
            "y", X @ w, 1.0, observed=X @ np.array([1.0, -1.0, 0.5, 0.0]) + rng.normal(size=n)
        )
    return model


def test_the_auto_decision_is_recorded_per_draw_and_explained():
    """Tuning long enough to probe: every draw after the look carries its score, the same on
    every recorded draw; the summary lists the chains' scores and says both switched. Short
    tuning: no probe, NaN, and the summary says so; a fixed explorer has no such stat."""
    import pymc as pm

    import pymc_tempering as pmt
    from pymc_tempering.engine.auto import GAUSSIAN_LIMIT
    from pymc_tempering.trace import EXPLORER_SCORE_STAT, explorer_scores

    quiet = dict(chains=2, cores=1, progressbar=False, compute_convergence_checks=False)
    with _correlated_regression():
        long = pm.sample(60, tune=450, step=pmt.ExchangeMC(n_rungs=4), random_seed=3,
                         discard_tuned_samples=False, **quiet)  # fmt: skip
        short = pm.sample(30, tune=100, step=pmt.ExchangeMC(n_rungs=4), random_seed=3, **quiet)
        walk = pm.sample(30, tune=100, step=pmt.ExchangeMC(n_rungs=4, explorer="rwm"),
                         random_seed=3, **quiet)  # fmt: skip
    recorded = long["sample_stats"][EXPLORER_SCORE_STAT].values
    assert np.all(recorded == recorded[:, :1])  # decided while tuning: fixed after it
    scores = explorer_scores(long)
    np.testing.assert_array_equal(scores, recorded[:, -1])
    assert np.all(scores < GAUSSIAN_LIMIT)
    warm = long["warmup_sample_stats"][EXPLORER_SCORE_STAT].values
    assert np.all(np.isnan(warm[:, :149])) and np.all(np.isfinite(warm[:, 149]))
    summary = pmt.tempering_summary(long)
    np.testing.assert_array_equal(summary.attrs["explorer_score"], scores)
    text = summary.attrs["explorer_decision"]
    assert f"{scores[0]:.3g}, {scores[1]:.3g}" in text and "every chain switched" in text
    assert summary.attrs["explorer"] == "mala+dense"
    # chains in order, each at its last draw: hand-set scores that differ between draws
    edited = long.copy()
    values = np.full_like(recorded, 9.0)
    values[0, -1], values[1, -1] = 1.25, 2.75
    stats = edited["sample_stats"].to_dataset()
    edited["sample_stats"] = xr.DataTree(
        stats.assign({EXPLORER_SCORE_STAT: (("chain", "draw"), values)})
    )
    np.testing.assert_array_equal(explorer_scores(edited), [1.25, 2.75])
    assert "per chain 1.25, 2.75;" in pmt.tempering_summary(edited).attrs["explorer_decision"]
    assert np.all(np.isnan(explorer_scores(short)))
    assert "did not probe" in pmt.tempering_summary(short).attrs["explorer_decision"]
    assert EXPLORER_SCORE_STAT not in walk["sample_stats"]
    assert "explorer_decision" not in pmt.tempering_summary(walk).attrs


@pytest.mark.parametrize(
    ("scores", "verdict"),
    [
        ([1.02, 2.99], "every chain switched to dense MALA"),
        ([3.0, 41.0], "every chain kept the random walk"),
        ([1.5, 3.5], "the chains chose differently"),
        ([np.nan, 1.2], "not probed, 1.2; below 3 switches"),
    ],
)
def test_the_decision_in_words_follows_the_limit(scores, verdict):
    from pymc_tempering.diagnostics.summary import explorer_decision

    text = explorer_decision(scores)
    assert verdict in text and "docs/decisions/110" in text
