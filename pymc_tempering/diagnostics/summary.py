r"""Everything that says whether a tempering run worked, in one labelled Dataset.

Per rung: local acceptance, proposal scale, the mean log-likelihood that thermodynamic
integration integrates (with its MCSE, ESS and R-hat, over the finite draws where the prior rung
samples zero likelihood); per rung pair: swap rates; per chain: round trips; and the
communication barrier (:mod:`.barrier`, :mod:`.round_trip`). A two-leg run
(``ExchangeMC(reference="variational")``) is summarised leg by leg, over a dim ``leg``.
"""

import warnings

import numpy as np
import xarray as xr
from arviz_stats.base import array_stats

from pymc_tempering.diagnostics.barrier import global_barrier, swap_rates
from pymc_tempering.diagnostics.round_trip import round_trips
from pymc_tempering.engine.auto import GAUSSIAN_LIMIT
from pymc_tempering.trace import (
    LEGS,
    PAIR_STATS,
    RUNG_STATS,
    explorer_run,
    explorer_scores,
    has_per_chain_ladders,
    has_variational_leg,
    per_chain,
    reference_only_run,
    tempering_dataset,
)

__all__ = ["tempering_summary"]


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


def tempering_summary(data, leg: str | None = None) -> xr.Dataset:
    r"""Everything that says whether a tempering run worked, in one labelled Dataset.

    Parameters
    ----------
    data : DataTree or Dataset
        The result of ``pm.sample(step=pmt.ExchangeMC(...))``, its ``sample_stats``, or
        :func:`pymc_tempering.tempering_dataset`'s output.
    leg : {"prior", "variational"}, optional
        A leg of a two-leg run (``reference="variational"``); default: each, over a dim ``leg``.

    Returns
    -------
    xarray.Dataset
        Per rung (dim ``rung``, coord ``beta``): ``accept`` (1 on an exact prior rung),
        ``scaling`` (chains averaged; NaN on an exact prior rung), ``mean_loglik``,
        ``mean_loglik_mcse``, ``ess_loglik``, ``rhat_loglik`` (one chain: its halves),
        ``zero_likelihood_fraction``, ``cumulative_barrier``. Per pair (dim ``rung_pair``, coords
        ``beta_lower``, ``beta_upper``): ``swap_accept``, ``swap_accepted``, ``rejection``. Per
        chain: ``round_trips``, ``round_trip_rate`` (per 1,000 draws). Scalars:
        ``global_barrier``, ``suggested_n_rungs``, ``predicted_round_trip_rate``. ``attrs``:
        ``n_draws``, ``n_chains``, ``explorer`` (if recorded), for ``explorer="auto"``
        ``explorer_score`` (per chain) and ``explorer_decision`` (in words), ``reference``
        ("variational alone" for a model with improper priors, whose rung 0 is the fitted
        Gaussian).
        Per-chain ladders (``"adaptive"``) add a ``chain`` dim, ``beta`` too; NaN on rungs a
        chain lacks (``adapt_n_rungs``).

    Raises
    ------
    ValueError
        If ``rung_loglik`` holds NaN or +inf (corrupt traces).

    Notes
    -----
    Prior-rung draws of zero likelihood are left out of the loglik statistics (the limit
    :math:`\beta \to 0^+` that TI needs; docs/decisions/005): swap and local rates keep them.

    See Also
    --------
    swap_rates, round_trips, global_barrier

    Examples
    --------
    >>> summary = pmt.tempering_summary(idata)                                   # doctest: +SKIP
    >>> float(summary.global_barrier), int(summary.suggested_n_rungs)            # doctest: +SKIP
    """
    if leg is None and has_variational_leg(data):
        return _both_legs(data)
    ds = tempering_dataset(data, leg=leg)
    missing = [name for name in (*RUNG_STATS, *PAIR_STATS) if name not in ds]
    if missing:
        raise ValueError(f"No {missing} traces: sample with pmt.ExchangeMC.")
    if has_per_chain_ladders(ds):
        return _with_local_move(per_chain(tempering_summary, ds), data, ds, leg)
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
    return _with_local_move(summary, data, ds, leg)


def _both_legs(data) -> xr.Dataset:
    """:func:`tempering_summary` of each leg of a two-leg run, over a dim ``leg``."""
    parts = [tempering_summary(data, leg=leg) for leg in LEGS]
    out = xr.concat(
        parts, dim="leg", data_vars="all", coords="different", join="outer", compat="equals"
    ).assign_coords(leg=list(LEGS))
    out.attrs = {k: v for k, v in parts[0].attrs.items() if k != "leg"}
    return out


def explorer_decision(scores) -> str:
    """``explorer="auto"``'s choice in words, from each chain's score
    (:func:`pymc_tempering.trace.explorer_scores`; the rule: :mod:`pymc_tempering.engine.auto`)."""
    scores = np.asarray(scores, dtype=float)
    if np.all(np.isnan(scores)):
        return (
            "explorer='auto' did not probe (tuning too short for a switch, or no gradient): "
            "the random walk"
        )
    listed = ", ".join("not probed" if np.isnan(s) else f"{s:.3g}" for s in scores)
    below = scores < GAUSSIAN_LIMIT
    verdict = (
        "every chain switched to dense MALA" if below.all()
        else "every chain kept the random walk" if not below.any()
        else "the chains chose differently"
    )  # fmt: skip
    return (
        f"explorer='auto': the top rung's Gaussianity score (1 for a Gaussian) per chain "
        f"{listed}; below {GAUSSIAN_LIMIT:g} switches to dense MALA (where the model has "
        f"gradients): {verdict} (docs/decisions/110-exchange-defaults.md)"
    )


def _with_local_move(summary: xr.Dataset, data, ds, leg) -> xr.Dataset:
    """``summary`` with ``attrs["explorer"]`` from ``data``'s stat, where it has one, and
    ``attrs["leg"]`` where a leg was asked for or ``ds`` is the variational one."""
    found = ds.attrs.get("leg", "prior")
    if leg is not None or found != "prior":
        summary.attrs["leg"] = found
    explorer = explorer_run(data)
    if explorer is not None:
        summary.attrs["explorer"] = explorer
    scores = explorer_scores(data)
    if scores is not None:
        summary.attrs["explorer_score"] = scores
        summary.attrs["explorer_decision"] = explorer_decision(scores)
    if reference_only_run(ds):  # tempering_dataset carries the run's mark
        summary.attrs["reference"] = "variational alone"  # rung 0 is q: improper priors
    return summary
