"""pymc_tempering.plots.swap_rates: the bars and the barrier line are the numbers
swap_rates and global_barrier compute, on a shared ladder and one per chain."""

import numpy as np
import pytest
from helpers import adaptive_run, assert_labelled, exchange_run, lines_labelled, padded_run, render
from two_legs import legs_of, two_leg_run

from pymc_tempering.diagnostics.barrier import global_barrier, swap_rates
from pymc_tempering.plots.swap_rates import plot_swap_rates
from pymc_tempering.trace import tempering_dataset


def test_swap_rates_plot_shows_each_pair_and_the_barrier(tmp_path):
    exchange_idata = exchange_run()
    fig, ax = render(tmp_path, "swap", plot_swap_rates, exchange_idata)
    assert_labelled(ax)
    bars = [patch.get_height() for patch in ax.patches]
    np.testing.assert_allclose(bars, swap_rates(exchange_idata)["swap_accept"].values)
    barrier = global_barrier(exchange_idata)
    line = ax.right_ax.get_lines()[0]
    np.testing.assert_allclose(line.get_ydata(), barrier["cumulative_barrier"].values)
    assert f"{float(barrier.global_barrier):.2f}" in ax.get_title(loc="left")


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
    n_rungs = np.isfinite(tempering_dataset(idata)["beta"].values).sum(axis=-1)
    assert f"(have {n_rungs[0]}, {n_rungs[1]})" in ax.get_title(loc="left")


def test_swap_rates_plot_of_a_two_leg_run_shows_each_leg(tmp_path):
    """reference="variational": one panel per leg, each the plot of that leg alone."""
    idata = two_leg_run()
    fig, axes = render(tmp_path, "swap_two_legs", plot_swap_rates, idata)
    assert len(axes) == 2
    for axis, (leg, ds) in zip(axes, legs_of(idata).items(), strict=True):
        assert_labelled(axis)
        assert axis.get_title(loc="left").startswith(f"{leg} leg: ")
        bars = [patch.get_height() for patch in axis.patches]
        np.testing.assert_allclose(bars, swap_rates(ds)["swap_accept"].values)
    _, alone = render(tmp_path, "swap_variational", plot_swap_rates, idata, leg="variational")
    assert alone.get_title(loc="left") == axes[1].get_title(loc="left")
