r"""Swap rates of neighbouring rungs and the communication barrier they add up to.

Definitions follow Syed et al. (2021). The swap rejection rate of rungs :math:`(l, l+1)` is
:math:`r_l = 1 - E[\min(1, e^{(\beta_{l+1} - \beta_l)(\ell_l - \ell_{l+1})})]`, estimated by the
mean acceptance probability of the swaps attempted (``swap_accept``). The global communication
barrier is :math:`\Lambda \approx \sum_l r_l`.
"""

import warnings

import numpy as np
import xarray as xr

from pymc_tempering.ladder import communication_barrier, suggested_n_rungs
from pymc_tempering.trace import has_per_chain_ladders, per_chain, tempering_dataset

__all__ = ["swap_rates", "global_barrier"]


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
        ``suggested_n_rungs`` (:func:`pymc_tempering.ladder.suggested_n_rungs`) and
        ``predicted_round_trip_rate`` (:math:`1000 / (2 + 2\sum_l r_l / (1 - r_l))`, the round
        trips per 1,000 swap rounds that DEO swaps reach when every rung explores its target
        well: per 1,000 draws for ``sweeps_per_draw = 1``); ``rejection`` (dim ``rung_pair``)
        and ``cumulative_barrier`` (dim ``rung``, :math:`\Lambda(\beta_l)`, 0 at the lowest
        rung). When each chain tuned its own ladder, every variable has a ``chain`` dim.

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
