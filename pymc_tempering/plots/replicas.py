"""Which rung each replica occupies, draw by draw, with its round trips marked.

The round trips come from :func:`pymc_tempering.diagnostics.round_trips` and the rule it
replays (:func:`pymc_tempering.diagnostics.round_trip_events`); nothing is recomputed here.
"""

import numpy as np
from matplotlib.ticker import FixedLocator, FuncFormatter

from pymc_tempering.diagnostics.round_trip import round_trip_events, round_trips
from pymc_tempering.plots._axes import beta_label, new_axes, rung_ticks
from pymc_tempering.plots._legs import each_leg, has_two_legs, leg_label
from pymc_tempering.trace import one_chain, tempering_dataset

__all__ = ["plot_replica_trajectories"]


def plot_replica_trajectories(data, *, chain=0, replicas=3, draws=300, leg=None, ax=None):
    """Which rung each replica occupies, draw by draw; round trips marked.

    Parameters
    ----------
    data : DataTree or Dataset
        An ExchangeMC result, its ``sample_stats``, or ``tempering_dataset``'s output.
    chain : int, default 0
        Label of the chain to show (its own ladder, when each chain tuned one).
    replicas : int or sequence of int, default 3
        Replica ids to draw, or how many (spread over the ids).
    draws : int or slice, default 300
        The first ``draws`` draws, or a slice of the ``draw`` index.
    leg : {"prior", "variational"}, optional
        One leg of a two-leg run (``reference="variational"``); default: each leg it has, one
        panel per leg (replica ids are the leg's own; round trips between its ``beta = 0`` and
        ``beta = 1``).
    ax : matplotlib Axes, optional
        Two for two legs.

    Returns
    -------
    fig : matplotlib Figure
    ax : matplotlib Axes
        Two legs: an array.

    Examples
    --------
    >>> fig, ax = pmt.plot_replica_trajectories(idata, replicas=[0, 5])   # doctest: +SKIP
    """
    if has_two_legs(data, leg):
        kwargs = {"chain": chain, "replicas": replicas, "draws": draws}
        return each_leg(plot_replica_trajectories, data, ax, **kwargs)
    ds = tempering_dataset(data, leg=leg)
    labels = ds["chain"].values
    if chain not in labels:
        raise ValueError(
            f"`chain` must be one of the chain labels {labels.tolist()}, got {chain!r}."
        )
    one = one_chain(ds, int(np.flatnonzero(labels == chain)[0]))  # its rungs only
    trace = one["rung_replica"].isel(chain=0).transpose("draw", "rung").values.astype(np.int64)
    n_draws, n_rungs = trace.shape
    events = round_trip_events(trace)  # whole chain, so counts match round_trips()
    position = np.argsort(trace, axis=-1)  # position[t, r]: the rung replica r is on
    window = slice(0, min(draws, n_draws)) if isinstance(draws, int | np.integer) else draws
    draw_index = np.arange(n_draws)[window]
    if isinstance(replicas, int | np.integer):
        replicas = np.unique(np.linspace(0, n_rungs - 1, min(replicas, n_rungs)).round())
    replicas = [int(r) for r in replicas]
    if any(not 0 <= r < n_rungs for r in replicas):
        raise ValueError(
            f"`replicas` must be ids in 0..{n_rungs - 1} (chain {chain} has {n_rungs} rungs), "
            f"got {replicas}."
        )
    total = round_trips(one)["replica_round_trips"].isel(chain=0).values
    fig, axes = new_axes(ax, figsize=(7.0, 4.0))
    axis = axes[0]
    for k, rep in enumerate(replicas):
        color = f"C{k % 10}"
        axis.step(
            draw_index,
            position[window, rep],
            where="post",
            lw=1.1,
            color=color,
            alpha=0.85,
            label=f"replica {rep} ({total[rep]} round trip{'' if total[rep] == 1 else 's'} "
            f"in all {n_draws} draws)",
        )
        done = draw_index[events[window, rep]]
        axis.plot(done, np.full(done.size, -0.45), "^", color=color, ms=6, mec="k", mew=0.5)
    axis.plot([], [], "^", color="w", mec="k", mew=0.5, label="round trip completed")
    axis.set_ylim(-0.9, n_rungs - 0.3)
    axis.set_ylabel(r"rung $l$ (0: lowest $\beta$)")
    ticks = rung_ticks(n_rungs)
    axis.yaxis.set_major_locator(FixedLocator(ticks))
    betas = one["beta"].values
    right = axis.secondary_yaxis("right")
    right.yaxis.set_major_locator(FixedLocator(ticks))
    right.yaxis.set_major_formatter(FuncFormatter(lambda y, _: beta_label(betas[int(round(y))])))
    right.set_ylabel(r"$\beta_l$")
    axis.grid(axis="y", alpha=0.3)
    axis.legend(
        loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2, fontsize="small", frameon=False
    )
    where = f", {leg_label(ds, leg)}" if leg_label(ds, leg) else ""
    axis.set_xlabel(f"draw (chain {chain}{where})")
    return fig, axis
