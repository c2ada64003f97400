r"""Round trips of the replicas between the lowest and the top rung.

A round trip is a replica going from the lowest rung (the prior when :math:`\beta_0 = 0`) to
the top rung (:math:`\beta = 1`) and back (Syed et al. 2021). The rule is written once, as the
compiled :func:`pymc_tempering.kernels.rules.update_round_trips` that ExchangeMC's sweep runs;
here it is replayed over a recorded ``rung_replica`` trace.
"""

import numpy as np
import xarray as xr

from pymc_tempering.kernels import rules
from pymc_tempering.trace import has_per_chain_ladders, per_chain, tempering_dataset

__all__ = ["round_trip_counts", "round_trip_events", "round_trips"]


def round_trip_events(rung_replica) -> np.ndarray:
    """Where each replica completes a round trip, from the replica-index trace.

    Parameters
    ----------
    rung_replica : array_like of int, shape (..., n_draws, n_rungs)
        ``rung_replica[..., t, l]`` is the id (``0 .. n_rungs - 1``) of the replica on rung ``l``
        at draw ``t``; leading axes (e.g. chains) are independent runs.

    Returns
    -------
    ndarray of bool, shape (..., n_draws, n_rungs)
        ``events[..., t, r]`` is True where replica ``r`` completes a round trip at draw ``t``
        (reaches the lowest rung after having reached the top rung after having been on the
        lowest rung; the rule ExchangeMC's ``round_trips`` stat uses).

    Examples
    --------
    >>> trace = [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 2, 1]]   # replica 0: bottom, top, bottom
    >>> round_trip_events(trace)[:, 0]
    array([False, False, False,  True])
    """
    trace = np.asarray(rung_replica)
    if trace.ndim < 2 or trace.shape[-1] < 2:
        raise ValueError(
            "`rung_replica` must have shape (..., n_draws, n_rungs) with n_rungs >= 2, got "
            f"{trace.shape}."
        )
    if not np.issubdtype(trace.dtype, np.integer):
        raise ValueError(f"`rung_replica` must hold integer replica ids, got {trace.dtype}.")
    n_draws, n_rungs = trace.shape[-2:]
    if trace.size and (trace.min() < 0 or trace.max() >= n_rungs):
        raise ValueError(f"Replica ids must lie in 0..{n_rungs - 1} (one replica per rung).")
    runs = np.ascontiguousarray(trace.reshape(-1, n_draws, n_rungs), dtype=np.int64)
    events = rules.round_trip_events(runs)  # the rule ExchangeMC's sweep runs, replayed
    return events.reshape(trace.shape)


def round_trip_counts(rung_replica) -> np.ndarray:
    """Round trips completed by each replica, from the replica-index trace.

    A round trip is counted when a replica reaches the lowest rung after having reached the top
    rung after having been on the lowest rung (the rule ExchangeMC's ``round_trips`` stat uses).
    A replica that starts on the top rung must first reach the bottom.

    Parameters
    ----------
    rung_replica : array_like of int, shape (..., n_draws, n_rungs)
        As for :func:`round_trip_events`.

    Returns
    -------
    ndarray of int, shape (..., n_rungs)
        Round trips per replica id. Replicas only seen at the draws recorded: with
        ``sweeps_per_draw > 1`` a visit that starts and ends between two draws is missed, so
        the count is a lower bound.

    Examples
    --------
    >>> trace = [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 2, 1]]   # replica 0: bottom, top, bottom
    >>> round_trip_counts(trace)
    array([1, 0, 0])
    """
    return round_trip_events(rung_replica).sum(axis=-2)


def round_trips(data) -> xr.Dataset:
    """Round trips of the replicas between the lowest and the top rung, per chain.

    Parameters
    ----------
    data : DataTree or Dataset
        The result of ``pm.sample(step=pmt.ExchangeMC(...))``, its ``sample_stats``, or
        :func:`pymc_tempering.tempering_dataset`'s output.

    Returns
    -------
    xarray.Dataset
        ``round_trips`` (dim ``chain``): the total over replicas; ``round_trip_rate`` (dim
        ``chain``): round trips per 1,000 draws; ``replica_round_trips`` (dims ``chain``,
        ``replica``; NaN for replica ids a chain with fewer rungs does not have). Counted by
        :func:`round_trip_counts` from ``rung_replica``; for ``sweeps_per_draw = 1`` it equals
        ExchangeMC's ``round_trips`` stat at the last draw.

    Examples
    --------
    >>> pmt.round_trips(idata).round_trips.values           # doctest: +SKIP
    array([37, 41])
    """
    ds = tempering_dataset(data)
    if "rung_replica" not in ds:
        raise ValueError("No `rung_replica` trace: sample with pmt.ExchangeMC.")
    if has_per_chain_ladders(ds):  # chains may have different numbers of rungs
        return per_chain(round_trips, ds)
    trace = ds["rung_replica"].transpose("chain", "draw", "rung").values
    counts = round_trip_counts(trace.astype(np.int64))
    n_draws = ds.sizes["draw"]
    replica = xr.DataArray(
        counts,
        dims=("chain", "replica"),
        coords={"chain": ds["chain"].values, "replica": np.arange(counts.shape[-1])},
    )
    total = replica.sum("replica")
    return xr.Dataset(
        {
            "round_trips": total,
            "round_trip_rate": total * (1000.0 / n_draws),
            "replica_round_trips": replica,
        },
        attrs={"n_draws": n_draws},
    )
