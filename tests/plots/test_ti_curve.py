"""pymc_tempering.plots.ti_curve: the TI curve draws the rung means and log Z the estimator
computes, on shared, per-chain and padded ladders and with zero-likelihood prior draws."""

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pytest
from helpers import (
    adaptive_run,
    exchange_run,
    legend_text,
    lines_labelled,
    padded_run,
    render,
    with_zero_likelihood,
)
from two_legs import legs_of, two_leg_run

from pymc_tempering.evidence import EvidenceWarning, thermodynamic_integration
from pymc_tempering.plots._axes import with_error
from pymc_tempering.plots.ti_curve import plot_ti_curve
from pymc_tempering.trace import tempering_dataset


def _z_label(ti):
    """log Z +- MCSE as the legend writes it (the MCSE to 2 significant digits)."""
    return with_error(float(ti.log_marginal_likelihood), float(ti.mcse))


@pytest.fixture(scope="module")
def exchange_idata():
    return exchange_run()


def test_ti_curve_draws_the_rung_means_and_log_z(exchange_idata, tmp_path):
    fig, axes = render(tmp_path, "ti", plot_ti_curve, exchange_idata)
    ti = thermodynamic_integration(exchange_idata)
    assert len(axes) == 2
    linear, log = axes
    curve = [line for line in linear.get_lines() if line.get_label() == "rung mean"][0]
    np.testing.assert_allclose(curve.get_xdata(), ti["beta"].values)
    np.testing.assert_allclose(curve.get_ydata(), ti["mean_loglik"].values)
    assert _z_label(ti) in " ".join(t.get_text() for t in linear.get_legend().get_texts())
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
    assert _z_label(ti) in legend_text(linear)
    assert "chains pooled" in legend_text(linear)


def test_ti_curve_marks_zero_likelihood_prior_draws(exchange_idata, tmp_path):
    """loglik = -inf at beta = 0: the point is the mean of the finite draws, drawn hollow, and
    the legend says how many draws had zero likelihood and that log Z includes their log."""
    idata = with_zero_likelihood(exchange_idata)
    fig, (linear, log) = render(tmp_path, "ti_zero", plot_ti_curve, idata)
    loglik0 = tempering_dataset(idata)["rung_loglik"].sel(rung=0).values
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
    assert _z_label(ti) in legend_text(linear)
    (prior,) = lines_labelled(log, r"$\beta = 0$")
    assert "(finite draws)" in prior.get_label()
    # a precomputed result says the same (from its log_support_fraction)
    fig, (axis,) = render(tmp_path, "ti_zero_result", plot_ti_curve, ti, xscale="linear")
    assert f"zero likelihood: {percent} at $\\beta = 0$" in legend_text(axis)

    per_chain = with_zero_likelihood(adaptive_run())
    fig, (linear, _) = render(tmp_path, "ti_zero_chains", plot_ti_curve, per_chain)
    loglik0 = tempering_dataset(per_chain)["rung_loglik"].sel(rung=0).values
    for fraction in np.isneginf(loglik0).mean(axis=1):  # each chain's share, pooled nowhere
        assert f"{100 * fraction:.2g}% at $\\beta = 0$ (chain" in legend_text(linear)


def test_ti_curve_of_a_two_leg_run_shows_each_leg(tmp_path):
    """reference="variational": a row of panels per leg, each with that leg's TI (the
    variational leg's curve is E_beta[log p + log lik - log q])."""
    idata = two_leg_run()
    fig, axes = render(tmp_path, "ti_two_legs", plot_ti_curve, idata)
    assert len(axes) == 4
    for row, (leg, ds) in zip((axes[:2], axes[2:]), legs_of(idata).items(), strict=True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvidenceWarning)
            ti = thermodynamic_integration(ds)
        assert f", {leg} leg (" in row[0].get_title(loc="left")
        (line,) = lines_labelled(row[0], "rung mean")
        np.testing.assert_allclose(line.get_ydata(), ti["mean_loglik"].values)
        assert _z_label(ti) in legend_text(row[0])
    assert "q(" in axes[2].get_ylabel() and "q(" not in axes[0].get_ylabel()
