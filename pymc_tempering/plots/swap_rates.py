r"""Swap acceptance of each neighbouring rung pair, and the cumulative communication barrier.

The numbers come from :func:`pymc_tempering.diagnostics.swap_rates` and
:func:`pymc_tempering.diagnostics.global_barrier`; nothing is recomputed here.
"""

import numpy as np
import xarray as xr
from matplotlib.ticker import FixedLocator, FuncFormatter

from pymc_tempering.diagnostics.barrier import global_barrier, swap_rates
from pymc_tempering.plots._axes import BLUE, ORANGE, beta_label, new_axes, rung_ticks
from pymc_tempering.plots._legs import each_leg, has_two_legs, leg_label
from pymc_tempering.trace import has_per_chain_ladders, tempering_dataset

__all__ = ["plot_swap_rates"]


def _swap_title(barrier: xr.Dataset, n_rungs) -> str:
    values = np.atleast_1d(barrier["global_barrier"].values)
    suggested = np.atleast_1d(barrier["suggested_n_rungs"].values)
    have = ", ".join(str(int(n)) for n in np.atleast_1d(n_rungs))
    return (
        rf"$\Lambda = {', '.join(f'{v:.2f}' for v in values)}$; suggested rungs: "
        f"{', '.join(str(int(s)) for s in suggested)} (have {have})"
    )


def plot_swap_rates(data, *, leg=None, ax=None):
    r"""Swap acceptance of each neighbouring rung pair, and the cumulative barrier.

    Bars: mean swap acceptance probability of pair :math:`(l, l+1)`, drawn between the two
    rungs, with one dot per chain. Line (right axis): the cumulative communication barrier
    :math:`\Lambda(\beta_l)` (:func:`pymc_tempering.global_barrier`); it climbs steeply where
    rungs are missing. The top axis gives :math:`\beta` at some rungs. When each chain tuned
    its own ladder (``ladder="adaptive"``), each chain gets its own bars and barrier line,
    and the title lists each chain's barrier; the top axis is left out, since :math:`\beta_l`
    differs by chain.

    Parameters
    ----------
    data : DataTree or Dataset
        An ExchangeMC result, its ``sample_stats``, or ``tempering_dataset``'s output.
    leg : {"prior", "variational"}, optional
        One leg of a two-leg run (``reference="variational"``); default: each leg it has, one
        panel per leg (prior first).
    ax : matplotlib Axes, optional
        Two for two legs.

    Returns
    -------
    fig : matplotlib Figure
    ax : matplotlib Axes
        The left (acceptance) axis; the barrier axis is ``ax.right_ax``. Two legs: an array.

    Examples
    --------
    >>> fig, ax = pmt.plot_swap_rates(idata)                          # doctest: +SKIP
    """
    if has_two_legs(data, leg):
        return each_leg(plot_swap_rates, data, ax)
    ds = tempering_dataset(data, leg=leg)
    per_chain_ladders = has_per_chain_ladders(ds)
    barrier = global_barrier(ds)
    n_rungs = ds.sizes["rung"]
    fig, axes = new_axes(ax, figsize=(7.0, 4.0))
    axis = axes[0]
    right = axis.twinx()
    draw = _draw_per_chain_ladders if per_chain_ladders else _draw_shared_ladder
    n_used = draw(axis, right, ds, barrier)
    axis.set_ylim(0, 1.3)
    axis.set_yticks(np.linspace(0, 1, 6))
    axis.set_xlim(-0.3, n_rungs - 0.7)
    axis.set_ylabel("swap acceptance probability")
    axis.set_xlabel(r"rung $l$ (bars: pair $l \leftrightarrow l+1$)")
    ticks = rung_ticks(n_rungs)
    axis.xaxis.set_major_locator(FixedLocator(ticks))

    top_barrier = np.nanmax(np.atleast_1d(barrier["global_barrier"].values), initial=0.0)
    right.set_ylim(0, max(1e-9, float(top_barrier)) * 1.05)
    right.set_ylabel(r"communication barrier $\Lambda(\beta_l)$", color=ORANGE)
    right.tick_params(axis="y", colors=ORANGE)
    axis.right_ax = right

    if not per_chain_ladders:
        betas = ds["beta"].values
        top = axis.secondary_xaxis("top")
        top.xaxis.set_major_locator(FixedLocator(ticks))
        top.xaxis.set_major_formatter(FuncFormatter(lambda x, _: beta_label(betas[int(round(x))])))
        top.set_xlabel(r"$\beta_l$")
    handles = axis.get_legend_handles_labels()
    extra = right.get_legend_handles_labels()
    axis.legend(
        handles[0] + extra[0],
        handles[1] + extra[1],
        loc="upper center",
        ncols=3 if not per_chain_ladders else 2,
        fontsize="small",
        frameon=False,
    )
    title = _swap_title(barrier, n_used)
    if per_chain_ladders:
        title += "; per chain (own ladders)"
    if leg_label(ds, leg):
        title = f"{leg_label(ds, leg)}: {title}"
    axis.set_title(title, loc="left", fontsize="medium")
    return fig, axis


_BARRIER_LABEL = r"cumulative barrier $\Lambda(\beta_l)$"


def _draw_shared_ladder(axis, right, ds: xr.Dataset, barrier: xr.Dataset) -> int:
    """Pooled bars with one dot per chain, and the barrier line, of a ladder all chains share;
    returns the number of rungs."""
    n_rungs = ds.sizes["rung"]
    mid = np.arange(n_rungs - 1) + 0.5
    per_chain = swap_rates(ds, combined=False)
    pooled = swap_rates(ds)["swap_accept"].values
    axis.bar(mid, pooled, width=0.8, color=BLUE, alpha=0.7, label="all chains")
    for chain in per_chain["chain"].values:
        values = per_chain["swap_accept"].sel(chain=chain).values
        axis.plot(mid, values, "o", ms=2.5, color="k", alpha=0.6, mew=0)
    axis.plot([], [], "o", ms=2.5, color="k", alpha=0.6, label="one chain")
    cumulative = barrier["cumulative_barrier"].values
    right.plot(np.arange(n_rungs), cumulative, "-", color=ORANGE, lw=2, label=_BARRIER_LABEL)
    return n_rungs


def _draw_per_chain_ladders(axis, right, ds: xr.Dataset, barrier: xr.Dataset) -> list[int]:
    """Side-by-side bars and a barrier line per chain, each on the rungs it has (each chain
    tuned its own ladder); returns each chain's number of rungs."""
    per_chain = swap_rates(ds, combined=False)
    mid = np.arange(ds.sizes["rung"] - 1) + 0.5
    chains = per_chain["chain"].values
    width = 0.8 / chains.size
    n_used = []
    for k, chain in enumerate(chains):
        color = f"C{2 * k}"
        values = per_chain["swap_accept"].sel(chain=chain).values
        have = np.isfinite(per_chain["beta_upper"].sel(chain=chain).values)
        offset = (k - (chains.size - 1) / 2) * width
        axis.bar(
            mid[have] + offset,
            values[have],
            width=width,
            color=color,
            alpha=0.7,
            label=f"chain {chain}",
        )
        cumulative = barrier["cumulative_barrier"].sel(chain=chain).values
        rungs = np.flatnonzero(np.isfinite(ds["beta"].sel(chain=chain).values))
        right.plot(
            rungs,
            cumulative[rungs],
            "-",
            color=color,
            lw=2,
            label=f"{_BARRIER_LABEL}, chain {chain}",
        )
        n_used.append(rungs.size)
    return n_used
