"""Every plot renders to a PNG without warnings, labels its axes, and draws the numbers the
diagnostics compute (not something else)."""

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
import pytest
from helpers import SAMPLE_KWARGS
from test_diagnostics import adaptive_run, exchange_run, padded_run, with_zero_likelihood

import pymc_tempering as pmt
from pymc_tempering.diagnostics import (
    global_barrier,
    round_trips,
    swap_rates,
)
from pymc_tempering.evidence import EvidenceWarning, thermodynamic_integration
from pymc_tempering.plots import (
    plot_replica_trajectories,
    plot_sgld_noise,
    plot_swap_rates,
    plot_ti_curve,
)
from pymc_tempering.step_methods.sgld import SGLD


@pytest.fixture(scope="module")
def exchange_idata():
    return exchange_run()


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
    """Call ``plot`` and save its figure with every warning an error (but the EvidenceWarnings
    of these short runs); return what it returned."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", EvidenceWarning)
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


# --- per-chain ladders, padded ladders, zero-likelihood prior draws ---------------------------
def lines_labelled(axis, prefix):
    return [line for line in axis.get_lines() if line.get_label().startswith(prefix)]


def legend_text(axis):
    return " ".join(t.get_text() for t in axis.get_legend().get_texts())


@pytest.mark.parametrize("run", [adaptive_run, padded_run], ids=["adaptive", "adapt_n_rungs"])
def test_ti_curve_draws_each_chains_own_ladder(run, tmp_path):
    """Issue 18: plot_ti_curve raised IndexError on every multi-chain adaptive run."""
    idata = run()
    fig, (linear, log) = render(tmp_path, "ti_per_chain", plot_ti_curve, idata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        ti = thermodynamic_integration(idata)
    for chain in (0, 1):
        beta = ti["beta"].sel(chain=chain).values
        have = np.isfinite(beta)  # a chain on fewer rungs draws only those
        (curve,) = lines_labelled(linear, f"rung mean, chain {chain}")
        np.testing.assert_allclose(curve.get_xdata(), beta[have])
        np.testing.assert_allclose(curve.get_ydata(), ti["mean_loglik"].sel(chain=chain)[have])
        (log_curve,) = lines_labelled(log, f"rung mean, chain {chain}")
        np.testing.assert_allclose(log_curve.get_xdata(), beta[have][1:])
        (prior,) = lines_labelled(log, r"$\beta = 0$")[chain : chain + 1]
        assert prior.get_ydata()[0] == pytest.approx(float(ti["mean_loglik"].sel(chain=chain)[0]))
    n_points = [len(line.get_xdata()) for line in lines_labelled(linear, "rung mean")]
    assert n_points == list(np.isfinite(ti["beta"].values).sum(axis=-1))
    assert f"{float(ti.log_marginal_likelihood):.2f}" in legend_text(linear)
    assert "chains pooled" in legend_text(linear)


def test_ti_curve_marks_zero_likelihood_prior_draws(exchange_idata, tmp_path):
    """loglik = -inf at beta = 0: the point is the mean of the finite draws, drawn hollow, and
    the legend says how many draws had zero likelihood and that log Z includes their log."""
    idata = with_zero_likelihood(exchange_idata)
    fig, (linear, log) = render(tmp_path, "ti_zero", plot_ti_curve, idata)
    loglik0 = pmt.tempering_dataset(idata)["rung_loglik"].sel(rung=0).values
    zero = np.isneginf(loglik0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        ti = thermodynamic_integration(idata)
    (curve,) = lines_labelled(linear, "rung mean")
    assert np.isfinite(curve.get_ydata()).all()
    assert curve.get_ydata()[0] == pytest.approx(loglik0[~zero].mean())
    np.testing.assert_allclose(curve.get_ydata(), ti["mean_loglik"].values)
    hollow = [line for line in linear.get_lines() if line.get_markerfacecolor() == "w"]
    assert [list(line.get_xdata()) for line in hollow if len(line.get_xdata())] == [[0.0]]
    percent = f"{100 * zero.mean():.2g}%"
    for axis in (linear, log):
        assert f"zero likelihood: {percent} at $\\beta = 0$" in legend_text(axis)
    assert f"$+ \\log {1 - zero.mean():.2g}$" in legend_text(linear)  # log Z = log P(L > 0) + area
    assert f"{float(ti.log_marginal_likelihood):.2f}" in legend_text(linear)
    (prior,) = lines_labelled(log, r"$\beta = 0$")
    assert "(finite draws)" in prior.get_label()
    # a precomputed result says the same (from its log_support_fraction)
    fig, (axis,) = render(tmp_path, "ti_zero_result", plot_ti_curve, ti, xscale="linear")
    assert f"zero likelihood: {percent} at $\\beta = 0$" in legend_text(axis)

    per_chain = with_zero_likelihood(adaptive_run())
    fig, (linear, _) = render(tmp_path, "ti_zero_chains", plot_ti_curve, per_chain)
    loglik0 = pmt.tempering_dataset(per_chain)["rung_loglik"].sel(rung=0).values
    for fraction in np.isneginf(loglik0).mean(axis=1):  # each chain's share, pooled nowhere
        assert f"{100 * fraction:.2g}% at $\\beta = 0$ (chain" in legend_text(linear)


@pytest.mark.parametrize("run", [adaptive_run, padded_run], ids=["adaptive", "adapt_n_rungs"])
def test_swap_rates_plot_gives_each_chain_its_bars_and_barrier(run, tmp_path):
    idata = run()
    fig, ax = render(tmp_path, "swap_per_chain", plot_swap_rates, idata)
    assert_labelled(ax)
    rates = swap_rates(idata, combined=False)
    barrier = global_barrier(idata)
    bars = {container.get_label(): container for container in ax.containers}
    for chain in (0, 1):
        have = np.isfinite(rates["beta_upper"].sel(chain=chain).values)
        heights = [patch.get_height() for patch in bars[f"chain {chain}"]]
        np.testing.assert_allclose(heights, rates["swap_accept"].sel(chain=chain)[have])
        (line,) = lines_labelled(ax.right_ax, "cumulative barrier")[chain : chain + 1]
        assert line.get_label().endswith(f"chain {chain}")
        cumulative = barrier["cumulative_barrier"].sel(chain=chain).values
        np.testing.assert_allclose(line.get_ydata(), cumulative[np.isfinite(cumulative)])
        assert f"{float(barrier.global_barrier.sel(chain=chain)):.2f}" in ax.get_title(loc="left")
    n_rungs = np.isfinite(pmt.tempering_dataset(idata)["beta"].values).sum(axis=-1)
    assert f"(have {n_rungs[0]}, {n_rungs[1]})" in ax.get_title(loc="left")


def test_replica_trajectories_of_a_chain_with_fewer_rungs(tmp_path):
    idata = padded_run()
    ds = pmt.tempering_dataset(idata)
    short = int(np.argmin(np.isfinite(ds["beta"].values).sum(axis=-1)))
    n_rungs = int(np.isfinite(ds["beta"].values[short]).sum())
    fig, ax = render(
        tmp_path, "replicas_short", plot_replica_trajectories, idata, chain=short, replicas=9
    )
    assert_labelled(ax)
    steps = lines_labelled(ax, "replica")
    assert len(steps) == n_rungs  # every replica the chain has, none from its padding
    trace = ds["rung_replica"].isel(chain=short).values[:, :n_rungs]
    total = round_trips(idata)["replica_round_trips"].isel(chain=short).values
    for rep, line in enumerate(steps):
        np.testing.assert_array_equal(line.get_ydata(), np.argmax(trace == rep, axis=1)[:300])
        assert f"({int(total[rep])} round trip" in line.get_label()
    assert ax.get_ylim()[1] == pytest.approx(n_rungs - 0.3)
    with pytest.raises(ValueError, match=rf"`replicas` must be ids in 0\.\.{n_rungs - 1}"):
        plot_replica_trajectories(idata, chain=short, replicas=[5])
    with pytest.raises(ValueError, match=r"`chain` must be one of the chain labels \[0, 1\]"):
        plot_replica_trajectories(idata, chain=2)
    plt.close("all")
