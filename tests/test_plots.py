"""Every plot renders to a PNG without warnings, labels its axes, and draws the numbers the
diagnostics compute (not something else)."""

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
import pytest
from conftest import SAMPLE_KWARGS
from targets import lecture_data, lecture_model

import pymc_tempering as pmt
from pymc_tempering.diagnostics import global_barrier, round_trips, swap_rates
from pymc_tempering.evidence import thermodynamic_integration
from pymc_tempering.plots import (
    plot_replica_trajectories,
    plot_sgld_noise,
    plot_swap_rates,
    plot_ti_curve,
)
from pymc_tempering.step_methods.sgld import SGLD

N_RUNGS = 8


@pytest.fixture(scope="module")
def exchange_idata():
    with lecture_model(lecture_data()):
        return pm.sample(
            draws=400,
            tune=300,
            chains=2,
            cores=1,
            step=pmt.ExchangeMC(n_rungs=N_RUNGS),
            random_seed=7,
            **SAMPLE_KWARGS,
        )


@pytest.fixture(scope="module")
def sgld_idata():
    rng = np.random.default_rng(0)
    n = 100
    x = rng.normal(size=n)
    y = 1.0 + 2.0 * x + rng.normal(size=n)
    with pm.Model():
        xb, yb = pm.Minibatch(x, y, batch_size=10)
        a = pm.Normal("a", 0, 5)
        b = pm.Normal("b", 0, 5)
        pm.Normal("y", a + b * xb, 1, observed=yb, total_size=n)
        return pm.sample(
            draws=150,
            tune=50,
            chains=1,
            cores=1,
            step=SGLD(threshold_every=10),
            random_seed=1,
            discard_tuned_samples=False,
            **SAMPLE_KWARGS,
        )


def render(tmp_path, name, plot, *args, **kwargs):
    """Call ``plot`` and save its figure with every warning an error; return what it returned."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = plot(*args, **kwargs)
        fig = out[0]
        path = tmp_path / f"{name}.png"
        fig.savefig(path, dpi=80)
    assert path.stat().st_size > 5_000
    plt.close(fig)
    return out


def assert_labelled(axis):
    assert axis.get_xlabel() and axis.get_ylabel()
    assert axis.get_legend() is not None and axis.get_legend().get_texts()


def test_ti_curve_draws_the_rung_means_and_log_z(exchange_idata, tmp_path):
    fig, axes = render(tmp_path, "ti", plot_ti_curve, exchange_idata)
    ti = thermodynamic_integration(exchange_idata)
    assert len(axes) == 2
    linear, log = axes
    curve = [line for line in linear.get_lines() if line.get_label() == "rung mean"][0]
    np.testing.assert_allclose(curve.get_xdata(), ti["beta"].values)
    np.testing.assert_allclose(curve.get_ydata(), ti["mean_loglik"].values)
    assert f"{float(ti.log_marginal_likelihood):.2f}" in " ".join(
        t.get_text() for t in linear.get_legend().get_texts()
    )
    assert log.get_xscale() == "log"
    log_curve = [line for line in log.get_lines() if line.get_label() == "rung mean"][0]
    np.testing.assert_allclose(log_curve.get_xdata(), ti["beta"].values[1:])  # beta = 0 dropped
    for axis in axes:
        assert axis.get_xlabel() and axis.get_legend() is not None
    assert "nats" in linear.get_ylabel()


def test_ti_curve_takes_a_precomputed_result_and_one_panel(exchange_idata, tmp_path):
    ti = thermodynamic_integration(exchange_idata)
    fig, axes = render(tmp_path, "ti_log", plot_ti_curve, ti, xscale="log")
    assert len(axes) == 1 and axes[0].get_xscale() == "log"
    fig, own = plt.subplots()
    out_fig, out_axes = plot_ti_curve(ti, xscale="linear", ax=own)
    assert out_fig is fig and out_axes[0] is own
    plt.close(fig)
    with pytest.raises(ValueError, match="xscale"):
        plot_ti_curve(ti, xscale="symlog")


def test_swap_rates_plot_shows_each_pair_and_the_barrier(exchange_idata, tmp_path):
    fig, ax = render(tmp_path, "swap", plot_swap_rates, exchange_idata)
    assert_labelled(ax)
    bars = [patch.get_height() for patch in ax.patches]
    np.testing.assert_allclose(bars, swap_rates(exchange_idata)["swap_accept"].values)
    barrier = global_barrier(exchange_idata)
    line = ax.right_ax.get_lines()[0]
    np.testing.assert_allclose(line.get_ydata(), barrier["cumulative_barrier"].values)
    assert f"{float(barrier.global_barrier):.2f}" in ax.get_title(loc="left")


def test_replica_trajectories_follow_the_replica_trace(exchange_idata, tmp_path):
    fig, ax = render(
        tmp_path, "replicas", plot_replica_trajectories, exchange_idata, replicas=[0, 3], draws=120
    )
    assert_labelled(ax)
    trace = exchange_idata.sample_stats["rung_replica"].sel(chain=0).values
    steps = [line for line in ax.get_lines() if line.get_label().startswith("replica")]
    assert len(steps) == 2
    for rep, line in zip([0, 3], steps, strict=True):
        rung_of_replica = np.argmax(trace == rep, axis=1)[:120]
        np.testing.assert_array_equal(line.get_ydata(), rung_of_replica)
    total = round_trips(exchange_idata)["replica_round_trips"].sel(chain=0).values
    assert f"({total[0]} round trips" in steps[0].get_label()


def test_sgld_noise_plot_shows_the_four_stats(sgld_idata, tmp_path):
    fig, axes = render(tmp_path, "sgld", plot_sgld_noise, sgld_idata)
    assert len(axes) == 3
    for axis in axes:
        assert axis.get_xlabel() and axis.get_ylabel() and axis.get_yscale() == "log"
    stats = sgld_idata.sample_stats
    warmup = sgld_idata.warmup_sample_stats
    eps = np.concatenate([warmup["step_size"].values[0], stats["step_size"].values[0]])
    step_line = axes[0].get_lines()[0]
    np.testing.assert_allclose(step_line.get_ydata(), eps)
    np.testing.assert_array_equal(step_line.get_xdata(), np.arange(1, eps.size + 1))
    threshold = axes[1].get_lines()[0].get_ydata()
    alpha = np.concatenate(
        [warmup["sampling_threshold"].values[0], stats["sampling_threshold"].values[0]]
    )
    np.testing.assert_allclose(threshold, alpha[np.isfinite(alpha) & (alpha > 0)])
    labels = [t.get_text() for t in axes[2].get_legend().get_texts()]
    assert "gradient noise" in labels and "injected noise" in labels


def test_sgld_noise_plot_explains_wrong_input(exchange_idata):
    with pytest.raises(ValueError, match="SGLD"):
        plot_sgld_noise(exchange_idata)
