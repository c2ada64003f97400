"""Diagnostics: round trips and barrier on hand-made traces, then on real ExchangeMC output, and
ArviZ's own functions on the DataTrees our samplers return."""

import functools
import warnings

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
import pytest
import xarray as xr
from helpers import SAMPLE_KWARGS
from targets import lecture_data, lecture_model, lecture_power_moments

import pymc_tempering as pmt
from pymc_tempering._trace import one_chain
from pymc_tempering.diagnostics import (
    add_tempering_group,
    global_barrier,
    round_trip_counts,
    round_trips,
    suggested_n_rungs,
    swap_rates,
    tempering_summary,
)
from pymc_tempering.evidence import thermodynamic_integration
from pymc_tempering.step_methods.langevin import MALA, ULA
from pymc_tempering.step_methods.sgld import SGLD

X_LECTURE = lecture_data()
N_RUNGS = 8


# --- runs shared with test_plots.py and test_trace.py (sampled once per session) -------------
@functools.cache
def exchange_run():
    """A fixed geometric ladder of 8 rungs, 2 chains."""
    with lecture_model(X_LECTURE):
        return pm.sample(
            draws=400,
            tune=300,
            chains=2,
            cores=1,
            step=pmt.ExchangeMC(n_rungs=N_RUNGS),
            random_seed=7,
            **SAMPLE_KWARGS,
        )


@functools.cache
def adaptive_run():
    """ladder="adaptive": each of the 2 chains tunes its own 8-rung ladder."""
    with lecture_model(X_LECTURE):
        idata = pm.sample(
            draws=300,
            tune=300,
            chains=2,
            cores=1,
            step=pmt.ExchangeMC(n_rungs=8, ladder="adaptive"),
            random_seed=2,
            **SAMPLE_KWARGS,
        )
    assert pmt.tempering_dataset(idata)["beta"].dims == ("chain", "rung")
    return idata


@functools.cache
def padded_run():
    """adapt_n_rungs=True where the 2 chains settle on different numbers of rungs (6 and 5), so
    the shorter one is padded with NaN betas."""
    with lecture_model(lecture_data(n=100), b=10.0):
        idata = pm.sample(
            draws=300,
            tune=300,
            chains=2,
            cores=1,
            step=pmt.ExchangeMC(n_rungs=8, ladder="adaptive", adapt_n_rungs=True),
            random_seed=1,
            **SAMPLE_KWARGS,
        )
    n_used = np.isfinite(pmt.tempering_dataset(idata)["beta"].values).sum(axis=-1)
    assert n_used[0] != n_used[1], f"the chains now settle on equal rungs {n_used}: reseed"
    return idata


def with_zero_likelihood(idata, fraction=0.2, seed=0):
    """A copy of ``idata`` whose beta = 0 rung has loglik -inf in about ``fraction`` of the
    draws, as where the prior rung draws outside the likelihood's support."""
    out = idata.copy(deep=True)
    stats = out["sample_stats"].to_dataset()
    loglik = stats["rung_loglik"].values.copy()
    loglik[np.random.default_rng(seed).random(loglik.shape[:2]) < fraction, 0] = -np.inf
    stats["rung_loglik"] = (stats["rung_loglik"].dims, loglik)
    out["sample_stats"] = xr.DataTree(stats)
    return out


@pytest.fixture(scope="module")
def exchange_idata():
    return exchange_run()


# --- hand-made traces --------------------------------------------------------------------------
# 3 rungs; replica 0 goes bottom -> top -> bottom (draws 0, 2, 5), replica 1 bottom -> top ->
# bottom (draws 1, 5, 6), replica 2 starts on top, reaches the bottom, never returns to the top.
HAND_TRACE = np.array(
    [
        [0, 1, 2],
        [1, 0, 2],
        [1, 2, 0],
        [2, 1, 0],
        [2, 0, 1],
        [0, 2, 1],
        [1, 2, 0],
    ]
)


def test_round_trips_counted_on_a_hand_made_trace():
    np.testing.assert_array_equal(round_trip_counts(HAND_TRACE), [1, 1, 0])
    # a replica that has not yet reached the top does not complete a trip
    np.testing.assert_array_equal(round_trip_counts(HAND_TRACE[:5]), [0, 0, 0])
    np.testing.assert_array_equal(round_trip_counts(HAND_TRACE[:6]), [1, 0, 0])
    # leading axes are independent chains: the second chain is the first with ids relabelled
    relabel = np.array([2, 0, 1])
    both = np.stack([HAND_TRACE, relabel[HAND_TRACE]])
    # old ids 0, 1, 2 are now 2, 0, 1: counts follow them
    np.testing.assert_array_equal(round_trip_counts(both), [[1, 1, 0], [1, 0, 1]])


def test_round_trips_of_a_two_rung_conveyor():
    """Two rungs swapping every draw: each replica completes a trip every 2 draws after the
    first full cycle."""
    trace = np.array([[0, 1], [1, 0]] * 5)  # 10 draws
    # replica 0: bottom at 0, top at 1, bottom at 2 (trip), 4, 6, 8 -> 4 trips
    # replica 1: top at 0 (ignored), bottom at 1, top at 2, bottom at 3 (trip), 5, 7, 9 -> 4
    np.testing.assert_array_equal(round_trip_counts(trace), [4, 4])


def test_round_trip_counts_rejects_bad_traces():
    with pytest.raises(ValueError, match="n_rungs >= 2"):
        round_trip_counts(np.zeros((5, 1), dtype=int))
    with pytest.raises(ValueError, match="integer"):
        round_trip_counts(HAND_TRACE.astype(float))
    with pytest.raises(ValueError, match="0..2"):
        round_trip_counts(HAND_TRACE + 1)


def hand_made_stats():
    """A raw PyMC-style sample_stats record of 3 rungs, 1 chain, 4 draws (DEO-like NaNs)."""
    betas = np.array([0.0, 0.5, 1.0])
    swap_accept = np.array([[[0.8, np.nan], [np.nan, 0.5], [0.6, np.nan], [np.nan, 0.1]]])
    return xr.Dataset(
        {
            "betas": (("chain", "draw", "betas_dim_0"), np.broadcast_to(betas, (1, 4, 3))),
            "rung_loglik": (("chain", "draw", "rung_loglik_dim_0"), np.zeros((1, 4, 3))),
            "rung_accept": (("chain", "draw", "rung_accept_dim_0"), np.full((1, 4, 3), 0.5)),
            "rung_scaling": (("chain", "draw", "rung_scaling_dim_0"), np.ones((1, 4, 3))),
            "rung_replica": (
                ("chain", "draw", "rung_replica_dim_0"),
                np.array([[[0, 1, 2], [1, 0, 2], [1, 2, 0], [0, 1, 2]]]),
            ),
            "swap_accept": (("chain", "draw", "swap_accept_dim_0"), swap_accept),
            "swap_accepted": (
                ("chain", "draw", "swap_accepted_dim_0"),
                np.where(np.isnan(swap_accept), np.nan, 1.0),
            ),
        },
        coords={"chain": [0], "draw": np.arange(4)},
    )


def test_barrier_on_a_hand_made_swap_record():
    res = global_barrier(hand_made_stats())
    # pair 0 accepts 0.8, 0.6 -> r = 0.3; pair 1 accepts 0.5, 0.1 -> r = 0.7
    np.testing.assert_allclose(res["rejection"].values, [0.3, 0.7])
    assert float(res["global_barrier"]) == pytest.approx(1.0)
    np.testing.assert_allclose(res["cumulative_barrier"].values, [0.0, 0.3, 1.0])
    np.testing.assert_allclose(res["beta"].values, [0.0, 0.5, 1.0])
    expected_rate = 1000.0 / (2 + 2 * (0.3 / 0.7 + 0.7 / 0.3))
    assert float(res["predicted_round_trip_rate"]) == pytest.approx(expected_rate)
    assert int(res["suggested_n_rungs"]) == suggested_n_rungs(1.0) == 3

    rates = swap_rates(hand_made_stats())
    np.testing.assert_allclose(rates["swap_accept"].values, [0.7, 0.3])
    np.testing.assert_array_equal(rates["n_draws_attempted"].values, [2, 2])
    assert rates["swap_accept"].dims == ("rung_pair",)
    np.testing.assert_allclose(rates["beta_upper"].values, [0.5, 1.0])


def test_never_attempted_pair_gives_nan_not_a_warning():
    stats = hand_made_stats()
    stats["swap_accept"][..., 1] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rates = swap_rates(stats)
        res = global_barrier(stats)
    assert np.isnan(rates["swap_accept"].values[1])
    assert np.isnan(float(res["global_barrier"])) and int(res["suggested_n_rungs"]) == -1


def test_suggested_n_rungs_minimises_cost_per_round_trip():
    for barrier in (0.0, 0.3, 1.0, 2.5, 7.0, 30.0):
        n = np.arange(int(barrier) + 2, 400)  # every N with N - 1 > barrier
        cost = n * (1 + barrier * (n - 1) / (n - 1 - barrier))
        assert suggested_n_rungs(barrier) == n[np.argmin(cost)]
    # Syed et al. / Pigeons.jl: about 2 * Lambda for large barriers
    assert abs(suggested_n_rungs(50.0) - 101) <= 1
    with pytest.raises(ValueError, match=">= 0"):
        suggested_n_rungs(-1.0)


# --- real sampler output -----------------------------------------------------------------------
def test_round_trips_match_the_samplers_own_counter(exchange_idata):
    res = round_trips(exchange_idata)
    counter = exchange_idata.sample_stats["round_trips"].isel(draw=-1).values
    np.testing.assert_array_equal(res["round_trips"].values, counter)
    assert counter.min() > 10  # the run does travel the ladder
    np.testing.assert_allclose(res["round_trip_rate"].values, counter * 1000 / 400)
    np.testing.assert_array_equal(res["replica_round_trips"].sum("replica"), counter)
    assert res["replica_round_trips"].dims == ("chain", "replica")


def test_summary_values_on_real_output(exchange_idata):
    summary = tempering_summary(exchange_idata)
    assert not [d for d in summary.dims if str(d).endswith("_dim_0")]
    assert summary["mean_loglik"].dims == ("rung",)
    assert summary["swap_accept"].dims == ("rung_pair",)
    assert summary["round_trips"].dims == ("chain",)
    betas = summary["beta"].values
    np.testing.assert_allclose(betas, pmt.geometric_ladder(N_RUNGS))

    # per-rung mean loglik against the closed form, MCSE-scaled; MCSE and ESS as the TI uses
    exact, _ = lecture_power_moments(X_LECTURE, 1.0, betas)
    z = (summary["mean_loglik"].values - exact) / summary["mean_loglik_mcse"].values
    assert np.all(np.abs(z) < 4), z
    ti = thermodynamic_integration(exchange_idata)
    # the same MCSE up to the sd's ddof (ArviZ's mcse, used here, takes ddof=1)
    np.testing.assert_allclose(summary["mean_loglik_mcse"], ti["mean_loglik_mcse"], rtol=2e-3)
    np.testing.assert_allclose(summary["ess_loglik"], ti["ess_loglik"])
    assert np.all(summary["rhat_loglik"].values < 1.05)

    ds = pmt.tempering_dataset(exchange_idata)
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
    for data in (exchange_idata.sample_stats.to_dataset(), pmt.tempering_dataset(exchange_idata)):
        xr.testing.assert_allclose(tempering_summary(data), full)


def test_tempering_group_reads_naturally(exchange_idata):
    before = set(exchange_idata.children)
    dt = add_tempering_group(exchange_idata)
    assert set(exchange_idata.children) == before  # input untouched
    group = dt["tempering"]
    top = group["rung_loglik"].sel(rung=N_RUNGS - 1)
    np.testing.assert_array_equal(top, exchange_idata.sample_stats["rung_loglik"][..., -1])
    assert float(group["beta"].sel(rung=N_RUNGS - 1)) == 1.0
    stats = dt.sample_stats
    assert not [d for d in stats.dims if str(d).endswith("_dim_0")]
    assert stats["swap_accept"].dims == ("chain", "draw", "rung_pair")
    np.testing.assert_array_equal(stats["rung_loglik"].sel(rung=0), group["rung_loglik"][..., 0])
    np.testing.assert_array_equal(stats["accept"], exchange_idata.sample_stats["accept"])
    again = add_tempering_group(dt)  # idempotent
    xr.testing.assert_identical(again["sample_stats"].to_dataset(), stats.to_dataset())
    xr.testing.assert_identical(again["tempering"].to_dataset(), group.to_dataset())
    # everything downstream still works on the augmented tree
    assert az.summary(dt).loc["mu", "r_hat"] < 1.05
    xr.testing.assert_allclose(tempering_summary(dt), tempering_summary(exchange_idata))
    with pytest.raises(TypeError):
        add_tempering_group(exchange_idata.sample_stats.to_dataset())


def test_summary_explains_non_tempering_input():
    with pytest.raises(ValueError, match="ExchangeMC"):
        tempering_summary(xr.Dataset({"accept": (("chain", "draw"), np.ones((1, 3)))}))
    with pytest.raises(ValueError, match="rung_scaling.*ExchangeMC"):
        tempering_summary(hand_made_stats().drop_vars("rung_scaling"))


# --- per-chain ladders, padded ladders, zero-likelihood prior draws ---------------------------
def test_diagnostics_on_per_chain_ladders():
    """ladder="adaptive": every rung quantity is per chain, and equals the chain on its own."""
    idata = adaptive_run()
    ds = pmt.tempering_dataset(idata)
    rates = swap_rates(idata)  # combined=True cannot pool pairs of different betas
    assert rates["swap_accept"].dims == ("chain", "rung_pair")
    assert rates["beta_lower"].dims == ("chain", "rung_pair")
    np.testing.assert_allclose(
        rates["swap_accept"], ds["swap_accept"].mean("draw", skipna=True), rtol=1e-12
    )
    trips = round_trips(idata)
    counter = idata.sample_stats["round_trips"].isel(draw=-1).values
    np.testing.assert_array_equal(trips["round_trips"].values, counter)
    barrier = global_barrier(idata)
    np.testing.assert_allclose(barrier["global_barrier"], rates["rejection"].sum("rung_pair"))

    summary = tempering_summary(idata)
    assert summary["beta"].dims == ("chain", "rung") and summary.attrs["n_chains"] == 2
    for c in range(2):
        alone = tempering_summary(pmt.tempering_dataset(idata).isel(chain=[c]))
        for name in ("mean_loglik", "mean_loglik_mcse", "ess_loglik", "rhat_loglik", "accept"):
            np.testing.assert_allclose(summary[name].isel(chain=c), alone[name].isel(chain=0))
    # every number is there: R-hat of a lone chain compares its halves instead of being NaN
    for name in ("mean_loglik", "mean_loglik_mcse", "ess_loglik", "rhat_loglik", "accept"):
        assert np.isfinite(summary[name].values).all(), name
    assert np.all(summary["rhat_loglik"].values < 1.2)
    assert np.all(summary["zero_likelihood_fraction"].values == 0)


def test_diagnostics_on_chains_with_different_numbers_of_rungs():
    """adapt_n_rungs=True, chains on 6 and 5 rungs: each chain is read on its own rungs; the
    rungs (pairs, replicas) a chain lacks are NaN, never numbers made from padding."""
    idata = padded_run()
    ds = pmt.tempering_dataset(idata)
    assert ds.sizes["rung"] == 6  # the 58 rungs no chain used are gone
    n_used = np.isfinite(ds["beta"].values).sum(axis=-1)
    short = int(np.argmin(n_used))
    np.testing.assert_array_equal(np.isnan(ds["beta"].values[short]), np.arange(6) >= 5)
    assert np.isnan(ds["beta_lower"].values[short, -1])  # no pair above its beta = 1 rung
    one = one_chain(ds, short)
    assert one.sizes["rung"] == 5 and one["beta"].values[-1] == 1.0

    trips = round_trips(idata)
    counter = idata.sample_stats["round_trips"].isel(draw=-1).values
    np.testing.assert_array_equal(trips["round_trips"].values, counter)
    assert np.isnan(trips["replica_round_trips"].values[short, 5])
    rates = swap_rates(idata)
    assert np.isnan(rates["swap_accept"].values[short, -1])
    assert rates["n_draws_attempted"].values[short, -1] == 0
    summary = tempering_summary(idata)
    missing = np.isnan(summary["beta"].values)
    for name in ("accept", "mean_loglik", "mean_loglik_mcse", "ess_loglik", "rhat_loglik"):
        np.testing.assert_array_equal(np.isnan(summary[name].values), missing, err_msg=name)
    np.testing.assert_array_equal(summary["suggested_n_rungs"] >= 3, [True, True])

    tree = add_tempering_group(idata)  # PyMC's 64 padded columns relabelled to the 6 rungs
    assert tree.sample_stats.sizes["rung"] == 6 and tree.sample_stats.sizes["rung_pair"] == 5
    np.testing.assert_array_equal(tree.sample_stats["rung_loglik"], ds["rung_loglik"])
    xr.testing.assert_allclose(tempering_summary(tree), summary)


def test_summary_reads_zero_likelihood_prior_draws():
    """loglik = -inf on the beta = 0 rung (a prior draw outside the likelihood's support): the
    summary counts those draws and averages the others; nothing else changes, no NaN, no
    warning."""
    base = exchange_run()
    idata = with_zero_likelihood(base)
    loglik0 = pmt.tempering_dataset(idata)["rung_loglik"].sel(rung=0).values
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


def test_summary_refuses_corrupt_loglik():
    stats = hand_made_stats()
    stats["rung_loglik"][0, 2, 1] = np.nan
    with pytest.raises(ValueError, match=r"rung_loglik.*NaN.*rungs \[1\]"):
        tempering_summary(stats)


# --- ArviZ on every DataTree our samplers return ----------------------------------------------
def check_arviz_functions(idata, model, var_name, n_obs, min_ess=10):
    """az.summary, ess, rhat, plot_trace and compare (after pm.compute_log_likelihood) run and
    give sane numbers."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # compare of a model with itself
        summary = az.summary(idata)
        assert var_name in summary.index and np.isfinite(float(summary.loc[var_name, "mean"]))
        assert float(az.ess(idata)[var_name].max()) > min_ess
        assert np.isfinite(float(az.rhat(idata)[var_name].max()))
        plot = az.plot_trace(idata, var_names=[var_name])
        assert plot is not None
        plt.close("all")
        pm.compute_log_likelihood(idata, model=model, progressbar=False)
        assert idata.log_likelihood[model.observed_RVs[0].name].shape[-1] == n_obs
        comparison = az.compare({"first": idata, "second": idata.copy()})
    assert np.all(np.isfinite(comparison["elpd"].astype(float)))
    return summary


def test_arviz_functions_on_exchange_mc_output(exchange_idata):
    idata = exchange_idata.copy()
    n_obs = len(X_LECTURE)
    summary = check_arviz_functions(idata, lecture_model(X_LECTURE), "mu", n_obs)
    posterior_mean = X_LECTURE.sum() / (len(X_LECTURE) + 1.0)  # N(0, 1) prior, unit noise
    assert abs(float(summary.loc["mu", "mean"]) - posterior_mean) < 0.1
    # also after adding the tempering group
    tree = add_tempering_group(exchange_idata)
    check_arviz_functions(tree, lecture_model(X_LECTURE), "mu", n_obs)


@pytest.mark.parametrize("step", [lambda: ULA(step_size=0.02), MALA], ids=["ULA", "MALA"])
def test_arviz_functions_on_langevin_output(step):
    with lecture_model(X_LECTURE) as model:
        idata = pm.sample(
            draws=300, tune=200, chains=2, cores=1, step=step(), random_seed=2, **SAMPLE_KWARGS
        )
    summary = check_arviz_functions(idata, model, "mu", len(X_LECTURE))
    posterior_mean = X_LECTURE.sum() / (len(X_LECTURE) + 1.0)
    assert abs(float(summary.loc["mu", "mean"]) - posterior_mean) < 0.1


def test_arviz_functions_on_sgld_output():
    rng = np.random.default_rng(1)
    n = 100
    x = rng.normal(size=n)
    y = 1.0 + 2.0 * x + rng.normal(size=n)
    with pm.Model():
        xb, yb = pm.Minibatch(x, y, batch_size=20)
        a = pm.Normal("a", 0, 5)
        b = pm.Normal("b", 0, 5)
        pm.Normal("y", a + b * xb, 1, observed=yb, total_size=n)
        idata = pm.sample(
            draws=200,
            tune=500,  # with 50 the chains had not arrived: b's mean ~1.65 on some seeds
            chains=2,
            cores=1,
            step=SGLD(threshold_every=25),
            random_seed=3,
            **SAMPLE_KWARGS,
        )
    # pm.compute_log_likelihood on the minibatch model would score a random minibatch per
    # draw; the full-data model with the same free variables gives the pointwise loglik.
    with pm.Model() as full:
        a = pm.Normal("a", 0, 5)
        b = pm.Normal("b", 0, 5)
        pm.Normal("y", a + b * x, 1, observed=y)
    # a decreasing step size mixes slowly: ESS is small but must be a finite positive number
    summary = check_arviz_functions(idata, full, "b", n, min_ess=1)
    assert abs(float(summary.loc["b", "mean"]) - 2.0) < 0.5


@pytest.mark.parametrize(
    "make_step",
    [lambda: pmt.ExchangeMC(n_rungs=4), lambda: ULA(step_size=0.05), MALA, SGLD],
    ids=["exchange", "ula", "mala", "sgld"],
)
def test_progress_bar_columns_follow_the_stats(make_step):
    """Every value a sampler's update function shows has a column (and every column but SGLD's
    sampling threshold, which keeps its last finite value, gets one each draw); a run with the
    progress bar on (rich, not a terminal here) completes."""
    with lecture_model(lecture_data()):
        step = make_step()
        _, initial = step._progressbar_config(n_chains=2)
        (update,) = step._make_progressbar_update_functions()
        kwargs = {**SAMPLE_KWARGS, "progressbar": True}
        idata = pm.sample(draws=30, tune=20, chains=1, random_seed=1, step=step, **kwargs)
    stats = {name: idata.sample_stats[name].values[0, -1] for name in idata.sample_stats}
    shown = set(update(stats)) - {"failing"}
    assert shown <= set(initial), (shown, set(initial))
    assert set(initial) - shown <= {"sampling_threshold"}, (shown, set(initial))
    assert all(len(values) == 2 for values in initial.values())
