r"""Diagnostics of a tempering run: swap rates, round trips, communication barrier, summary.

Everything here reads ExchangeMC's per-draw sampler stats through
:func:`pymc_tempering.tempering_dataset` (dims ``rung`` / ``rung_pair``, coordinate ``beta``)
and returns labelled xarray objects. The NumPy cores (:func:`round_trip_counts`,
:func:`suggested_n_rungs`) take plain arrays and are tested on hand-made traces.

Definitions follow Syed et al. (2021). The swap rejection rate of rungs :math:`(l, l+1)` is
:math:`r_l = 1 - E[\min(1, e^{(\beta_{l+1} - \beta_l)(\ell_l - \ell_{l+1})})]`, estimated by the
mean acceptance probability of the swaps attempted (``swap_accept``). The global communication
barrier is :math:`\Lambda \approx \sum_l r_l`; a round trip is a replica going from the lowest
rung (the prior when :math:`\beta_0 = 0`) to the top rung (:math:`\beta = 1`) and back.
"""

import warnings

import numpy as np
import xarray as xr
from arviz_stats.base import array_stats

from pymc_tempering._trace import (
    PAIR_STATS,
    RUNG_STATS,
    has_per_chain_ladders,
    per_chain,
    tempering_dataset,
)
from pymc_tempering._trace import (
    relabel_sample_stats as relabel_stats,
)
from pymc_tempering.kernels.rules import round_trip_events
from pymc_tempering.ladder import communication_barrier, suggested_n_rungs

__all__ = [
    "round_trip_counts",
    "round_trips",
    "swap_rates",
    "suggested_n_rungs",
    "global_barrier",
    "tempering_summary",
    "add_tempering_group",
]


# --- NumPy cores -------------------------------------------------------------------------------
def round_trip_counts(rung_replica) -> np.ndarray:
    """Round trips completed by each replica, from the replica-index trace.

    A round trip is counted when a replica reaches the lowest rung after having reached the top
    rung after having been on the lowest rung (the rule ExchangeMC's ``round_trips`` stat uses).
    A replica that starts on the top rung must first reach the bottom.

    Parameters
    ----------
    rung_replica : array_like of int, shape (..., n_draws, n_rungs)
        ``rung_replica[..., t, l]`` is the id (``0 .. n_rungs - 1``) of the replica on rung ``l``
        at draw ``t``; leading axes (e.g. chains) are independent runs.

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
    trace = np.asarray(rung_replica)
    if trace.ndim < 2 or trace.shape[-1] < 2:
        raise ValueError(
            "`rung_replica` must have shape (..., n_draws, n_rungs) with n_rungs >= 2, got "
            f"{trace.shape}."
        )
    if not np.issubdtype(trace.dtype, np.integer):
        raise ValueError(f"`rung_replica` must hold integer replica ids, got {trace.dtype}.")
    return _round_trip_events(trace).sum(axis=-2)


def _round_trip_events(trace: np.ndarray) -> np.ndarray:
    """Boolean ``(..., n_draws, n_replicas)``: replica ``r`` ends a round trip at draw ``t``."""
    n_draws, n_rungs = trace.shape[-2:]
    if trace.size and (trace.min() < 0 or trace.max() >= n_rungs):
        raise ValueError(f"Replica ids must lie in 0..{n_rungs - 1} (one replica per rung).")
    runs = np.ascontiguousarray(trace.reshape(-1, n_draws, n_rungs), dtype=np.int64)
    events = round_trip_events(runs)  # the rule ExchangeMC's sweep runs, replayed
    return events.reshape(trace.shape)


# --- public functions on traces ----------------------------------------------------------------
def swap_rates(data, combined: bool = True) -> xr.Dataset:
    """Swap acceptance of each neighbouring pair of rungs.

    Parameters
    ----------
    data : DataTree or Dataset
        The result of ``pm.sample(step=pmt.ExchangeMC(...))``, its ``sample_stats``, or
        :func:`pymc_tempering.tempering_dataset`'s output.
    combined : bool, default True
        Pool all chains; otherwise keep a ``chain`` dim. When each chain tuned its own ladder
        (``ladder="adaptive"``), pair ``l`` joins different betas in each chain, so the rates
        keep the ``chain`` dim either way.

    Returns
    -------
    xarray.Dataset
        Dims ``(rung_pair,)`` (or ``(chain, rung_pair)``), coords ``beta_lower``,
        ``beta_upper``: ``swap_accept`` (mean acceptance probability of the swaps attempted),
        ``swap_accepted`` (fraction accepted), ``rejection`` (``1 - swap_accept``, the
        :math:`r_l` of Syed et al.) and ``n_draws_attempted`` (draws with at least one swap
        attempt of that pair). A pair never attempted (or that a chain does not have) has NaN
        rates and ``n_draws_attempted`` 0.

    Examples
    --------
    >>> pmt.swap_rates(idata).swap_accept.to_series()       # doctest: +SKIP
    """
    ds = tempering_dataset(data)
    if "swap_accept" not in ds:
        raise ValueError("No `swap_accept` trace: sample with pmt.ExchangeMC.")
    pool = combined and not has_per_chain_ladders(ds)
    dims = ("chain", "draw") if pool else ("draw",)
    attempted = ds["swap_accept"].notnull()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN pair -> NaN rate
        accept = ds["swap_accept"].mean(dims, skipna=True)
        accepted = ds["swap_accepted"].mean(dims, skipna=True)
    return xr.Dataset(
        {
            "swap_accept": accept,
            "swap_accepted": accepted,
            "rejection": 1.0 - accept,
            "n_draws_attempted": attempted.sum(dims),
        }
    )


def round_trips(data) -> xr.Dataset:
    """Round trips of the replicas between the lowest and the top rung, per chain.

    Parameters
    ----------
    data : DataTree or Dataset
        As for :func:`swap_rates`.

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


def global_barrier(data) -> xr.Dataset:
    r"""Communication barrier of the ladder estimated from the swap trace (Syed et al. 2021).

    Parameters
    ----------
    data : DataTree or Dataset
        As for :func:`swap_rates`.

    Returns
    -------
    xarray.Dataset
        Scalars ``global_barrier`` (:math:`\Lambda = \sum_l r_l`, chains pooled),
        ``suggested_n_rungs`` (:func:`suggested_n_rungs`) and ``predicted_round_trip_rate``
        (:math:`1000 / (2 + 2\sum_l r_l / (1 - r_l))`, the round trips per 1,000 swap rounds
        that DEO swaps reach when every rung explores its target well: per 1,000 draws for
        ``sweeps_per_draw = 1``); ``rejection`` (dim ``rung_pair``) and
        ``cumulative_barrier`` (dim ``rung``, :math:`\Lambda(\beta_l)`, 0 at the lowest rung).
        When each chain tuned its own ladder, every variable has a ``chain`` dim.

    Notes
    -----
    A rung pair whose rejection is far above ``global_barrier / (n_rungs - 1)`` is where rungs
    are missing; ``ExchangeMC(ladder="adaptive")`` equalises them. The suggested number of
    rungs assumes such an equal-rejection ladder.

    Examples
    --------
    >>> res = pmt.global_barrier(idata)                     # doctest: +SKIP
    >>> float(res.global_barrier), int(res.suggested_n_rungs)  # doctest: +SKIP
    """
    ds = tempering_dataset(data)
    if has_per_chain_ladders(ds):
        return per_chain(global_barrier, ds)
    rejection = swap_rates(ds)["rejection"]
    r = rejection.values
    barrier = float(np.sum(r))
    cumulative = communication_barrier(ds["beta"].values, r)
    with np.errstate(divide="ignore"):
        expected = np.sum(r / (1.0 - r))
    return xr.Dataset(
        {
            "global_barrier": barrier,
            "suggested_n_rungs": suggested_n_rungs(barrier) if np.isfinite(barrier) else -1,
            "predicted_round_trip_rate": 1000.0 / (2.0 + 2.0 * expected),
            "rejection": rejection,
            "cumulative_barrier": ("rung", cumulative),
        },
        coords={"rung": ds["rung"].values, "beta": ("rung", ds["beta"].values)},
    )


def _mean_stats(ary: np.ndarray) -> np.ndarray:
    """Rows mean, MCSE, ESS (of the mean) and R-hat of ``ary`` (chain, draw, k), per column.

    MCSE is ``sd / sqrt(ESS)`` with ArviZ's ``ess(method="mean")``, as the evidence
    estimators compute it. A single chain's R-hat compares its two halves.
    """
    kwargs = {"chain_axis": 0, "draw_axis": 1}
    ess = np.asarray(array_stats.ess(ary, method="mean", **kwargs))
    halves = ary
    if ary.shape[0] == 1:  # R-hat needs two chains: split the one there is
        half = ary.shape[1] // 2
        halves = np.concatenate([ary[:, :half], ary[:, half : 2 * half]], axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # too few draws -> NaN, not a warning
        mcse = np.std(ary, axis=(0, 1), ddof=1) / np.sqrt(ess)
        rhat = np.asarray(array_stats.rhat(halves, **kwargs))
    return np.stack([ary.mean(axis=(0, 1)), mcse, ess, rhat])


def _finite_mean_stats(draws: np.ndarray) -> np.ndarray:
    """:func:`_mean_stats` of one rung's ``draws`` (chain, draw) over its finite draws.

    The mean is over all finite draws. ESS and R-hat are computed on each chain's finite draws
    in order, cut to the shortest chain's count so the chains line up, and the ESS is scaled
    back up to all finite draws (same ESS per draw); the MCSE is ``sd / sqrt(ESS)``.
    """
    kept = [row[np.isfinite(row)] for row in draws]
    finite = np.concatenate(kept)
    n = min(row.size for row in kept)
    if n < 4:  # too few draws in some chain for ESS / R-hat
        mean = finite.mean() if finite.size else np.nan
        return np.array([mean, np.nan, np.nan, np.nan])
    stats = _mean_stats(np.stack([row[:n] for row in kept])[..., None])[:, 0]
    ess = stats[2] * finite.size / (n * len(kept))
    mcse = np.std(finite, ddof=1) / np.sqrt(ess)
    return np.array([finite.mean(), mcse, ess, stats[3]])


def _loglik_stats(ds: xr.Dataset) -> xr.Dataset:
    r"""Per rung: mean ``rung_loglik`` over the finite draws, with its MCSE, ESS and R-hat, and
    the fraction of draws with zero likelihood (``loglik = -inf``).

    Zero-likelihood draws happen where the ``beta = 0`` rung samples the prior exactly and the
    likelihood's support depends on a parameter; no power posterior with ``beta > 0`` puts mass
    there, so :math:`E_\beta[\ell]` as :math:`\beta \to 0^+` is the mean over the finite
    draws. Per chain, with a ``chain`` dim, when each chain tuned its own ladder.
    """
    if has_per_chain_ladders(ds):
        return per_chain(_loglik_stats, ds)
    loglik = ds["rung_loglik"].transpose("chain", "draw", "rung").values.astype(float)
    invalid = np.isnan(loglik) | (loglik == np.inf)
    if invalid.any():
        rungs = np.flatnonzero(invalid.any(axis=(0, 1))).tolist()
        raise ValueError(
            f"`rung_loglik` holds NaN or +inf on rungs {rungs}: the traces are corrupt (a "
            "likelihood is at most finite, or zero: -inf). Re-run pm.sample with ExchangeMC."
        )
    zero = loglik == -np.inf
    stats = np.full((4, loglik.shape[-1]), np.nan)
    all_finite = ~zero.any(axis=(0, 1))
    stats[:, all_finite] = _mean_stats(loglik[..., all_finite])
    for rung in np.flatnonzero(~all_finite):
        stats[:, rung] = _finite_mean_stats(loglik[..., rung])
    names = ("mean_loglik", "mean_loglik_mcse", "ess_loglik", "rhat_loglik")
    return xr.Dataset(
        {name: ("rung", row) for name, row in zip(names, stats, strict=True)}
        | {"zero_likelihood_fraction": ("rung", zero.mean(axis=(0, 1)))},
        coords={"rung": ds["rung"].values, "beta": ("rung", ds["beta"].values)},
    )


def tempering_summary(data) -> xr.Dataset:
    r"""Everything that says whether a tempering run worked, in one labelled Dataset.

    Parameters
    ----------
    data : DataTree or Dataset
        The result of ``pm.sample(step=pmt.ExchangeMC(...))``, its ``sample_stats``, or
        :func:`pymc_tempering.tempering_dataset`'s output.

    Returns
    -------
    xarray.Dataset
        Per rung (dim ``rung``, coord ``beta``): ``accept`` (local Metropolis acceptance
        probability; 1 on an exact prior rung), ``scaling`` (proposal scale, chains averaged;
        NaN on an exact prior rung, which proposes nothing), ``mean_loglik`` with
        ``mean_loglik_mcse``, ``ess_loglik`` (ESS of the mean) and ``rhat_loglik`` (with one
        chain, its two halves compared), ``zero_likelihood_fraction`` (draws whose
        log-likelihood is -inf; the loglik statistics are over the other draws, see Notes)
        and ``cumulative_barrier``. Per rung pair (dim ``rung_pair``, coords ``beta_lower``,
        ``beta_upper``): ``swap_accept``, ``swap_accepted``, ``rejection``. Per chain:
        ``round_trips``, ``round_trip_rate`` (per 1,000 draws). Scalars: ``global_barrier``,
        ``suggested_n_rungs``, ``predicted_round_trip_rate``. ``attrs["n_draws"]`` and
        ``attrs["n_chains"]``. When each chain tuned its own ladder (``ladder="adaptive"``),
        every quantity is computed per chain and has a ``chain`` dim, and so has ``beta``;
        with ``adapt_n_rungs=True`` a chain that settled on fewer rungs has NaN on the rungs
        it lacks (where its ``beta`` is NaN).

    Raises
    ------
    ValueError
        If ``rung_loglik`` holds NaN or +inf (corrupt traces).

    Notes
    -----
    Where the likelihood's support depends on a parameter (or a Potential is -inf), the
    ``beta = 0`` rung samples prior draws with zero likelihood. They have no weight under any
    rung with ``beta > 0``, so ``mean_loglik`` there is the mean over the finite draws (the
    limit :math:`\beta \to 0^+` that thermodynamic integration needs) and
    ``zero_likelihood_fraction`` says how many were left out. Swap and local acceptance rates
    are unaffected: a swap that would move such a draw up is always rejected.

    See Also
    --------
    swap_rates, round_trips, global_barrier

    Examples
    --------
    >>> summary = pmt.tempering_summary(idata)                                   # doctest: +SKIP
    >>> summary[["accept", "mean_loglik", "mean_loglik_mcse"]].to_dataframe()   # doctest: +SKIP
    >>> float(summary.global_barrier), int(summary.suggested_n_rungs)            # doctest: +SKIP
    """
    ds = tempering_dataset(data)
    missing = [name for name in (*RUNG_STATS, *PAIR_STATS) if name not in ds]
    if missing:
        raise ValueError(f"No {missing} traces: sample with pmt.ExchangeMC.")
    if has_per_chain_ladders(ds):
        return per_chain(tempering_summary, ds)
    dims = ("chain", "draw")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # exact prior rung: all-NaN scaling
        scaling = ds["rung_scaling"].mean(dims)
    per_rung = xr.Dataset({"accept": ds["rung_accept"].mean(dims), "scaling": scaling}).merge(
        _loglik_stats(ds)
    )
    barrier = global_barrier(ds)
    trips = round_trips(ds)
    summary = xr.merge(
        [
            per_rung,
            swap_rates(ds),
            barrier.drop_vars("rejection"),
            trips[["round_trips", "round_trip_rate"]],
        ],
        join="exact",
        compat="override",
    )
    summary.attrs = {"n_draws": ds.sizes["draw"], "n_chains": ds.sizes["chain"]}
    return summary


def add_tempering_group(data, relabel_sample_stats: bool = True) -> xr.DataTree:
    """The DataTree with a ``tempering`` group of ExchangeMC's per-rung traces, named by rung.

    Parameters
    ----------
    data : DataTree
        The result of ``pm.sample(step=pmt.ExchangeMC(...))``. Not modified.
    relabel_sample_stats : bool, default True
        Also give the per-rung stats in ``sample_stats`` the dims ``rung`` / ``rung_pair`` and
        the ``beta`` coordinates, in place of PyMC's ``<stat>_dim_0`` (and drop the rungs that
        no chain used, padded by ``adapt_n_rungs=True``).

    Returns
    -------
    xarray.DataTree
        A copy with group ``tempering`` (:func:`pymc_tempering.tempering_dataset`: variables
        ``rung_loglik``, ``rung_accept``, ``rung_scaling``, ``rung_replica`` on
        ``(chain, draw, rung)``, ``swap_accept``, ``swap_accepted`` on
        ``(chain, draw, rung_pair)``). ArviZ functions (``az.summary``, ``az.plot_trace``...)
        keep working on it.

    Examples
    --------
    >>> idata = pmt.add_tempering_group(idata)                          # doctest: +SKIP
    >>> idata["tempering"].rung_loglik.sel(rung=0).mean()             # doctest: +SKIP
    >>> idata.sample_stats.rung_loglik.sel(rung=-1)                    # doctest: +SKIP
    """
    if not isinstance(data, xr.DataTree) or "sample_stats" not in data.children:
        raise TypeError(
            "`data` must be the DataTree pm.sample returns (with a `sample_stats` group), got "
            f"{type(data).__module__}.{type(data).__name__}."
        )
    ds = tempering_dataset(data)
    out = data.copy()
    stats = data["sample_stats"].to_dataset()
    ds.attrs = dict(stats.attrs)
    out["tempering"] = xr.DataTree(ds)
    if relabel_sample_stats:
        out["sample_stats"] = xr.DataTree(relabel_stats(stats, ds))
    return out
