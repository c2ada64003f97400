"""Read ExchangeMC's per-rung sampler stats out of a DataTree, labelled by rung.

PyMC stores array-valued sampler stats with dims ``<stat>_dim_0``; this module is the one place
that knows those raw names and turns them into ``rung`` / ``rung_pair`` dims with a ``beta``
coordinate.
"""

import numpy as np
import xarray as xr

__all__ = ["tempering_dataset", "RUNG_STATS", "PAIR_STATS"]

RUNG_STATS = ("rung_loglik", "rung_accept", "rung_scaling", "rung_replica")
PAIR_STATS = ("swap_accept", "swap_accepted")


def _sample_stats(data) -> xr.Dataset:
    if isinstance(data, xr.Dataset):
        return data
    try:
        stats = data["sample_stats"]
    except (KeyError, TypeError):
        raise ValueError(
            "Expected the DataTree returned by pm.sample(step=pmt.ExchangeMC(...)), or its "
            "`sample_stats` Dataset; got an object without a `sample_stats` group."
        ) from None
    return stats.to_dataset() if hasattr(stats, "to_dataset") else stats


def tempering_dataset(data) -> xr.Dataset:
    """ExchangeMC's tempering traces with named dims.

    Parameters
    ----------
    data : DataTree or Dataset
        The result of ``pm.sample(step=ExchangeMC(...))`` or its ``sample_stats`` group.

    Returns
    -------
    xarray.Dataset
        ``rung_loglik``, ``rung_accept``, ``rung_scaling``, ``rung_replica`` with dims
        ``(chain, draw, rung)`` and ``swap_accept``, ``swap_accepted`` with dims
        ``(chain, draw, rung_pair)``; coordinates ``beta`` (on ``rung``), ``beta_lower`` and
        ``beta_upper`` (on ``rung_pair``). The ladder must be the same for every recorded draw
        (it is: ExchangeMC freezes it after tuning).

    Examples
    --------
    >>> ds = pmt.tempering_dataset(idata)            # doctest: +SKIP
    >>> ds.rung_loglik.sel(rung=0).mean()            # doctest: +SKIP
    """
    stats = _sample_stats(data)
    if "rung_loglik" not in stats or "betas" not in stats:
        raise ValueError(
            "No tempering traces (`rung_loglik`, `betas`) in these sample stats. They come from "
            "pm.sample(step=pmt.ExchangeMC(...)); sample with ExchangeMC, or use "
            "pmt.marginal_likelihood(model) which does it for you."
        )
    betas_trace = np.asarray(stats["betas"].values, dtype=float)
    betas = betas_trace.reshape(-1, betas_trace.shape[-1])
    if not np.allclose(betas, betas[0]):
        raise ValueError(
            "The ladder changes between recorded draws; pass only post-tuning draws "
            "(pm.sample's default discard_tuned_samples=True)."
        )
    betas = betas[0]
    n_rungs = betas.size
    coords = {
        "chain": stats["chain"].values,
        "draw": stats["draw"].values,
        "rung": np.arange(n_rungs),
        "rung_pair": np.arange(n_rungs - 1),
    }
    data_vars = {}
    for name in RUNG_STATS:
        if name in stats:
            data_vars[name] = (("chain", "draw", "rung"), stats[name].values)
    for name in PAIR_STATS:
        if name in stats:
            data_vars[name] = (("chain", "draw", "rung_pair"), stats[name].values)
    ds = xr.Dataset(data_vars, coords=coords)
    return ds.assign_coords(
        beta=("rung", betas),
        beta_lower=("rung_pair", betas[:-1]),
        beta_upper=("rung_pair", betas[1:]),
    )
