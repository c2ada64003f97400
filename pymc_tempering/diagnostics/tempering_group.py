"""A ``tempering`` group on the DataTree ``pm.sample`` returns: ExchangeMC's per-rung traces,
named by rung, next to the groups ArviZ reads."""

import xarray as xr

from pymc_tempering.trace import reference_only_run, tempering_dataset
from pymc_tempering.trace import relabel_sample_stats as relabel_stats

__all__ = ["add_tempering_group"]


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
    ds.attrs = {**stats.attrs, **({"reference_only": True} if reference_only_run(ds) else {})}
    out["tempering"] = xr.DataTree(ds)
    if relabel_sample_stats:
        out["sample_stats"] = xr.DataTree(relabel_stats(stats, ds))
    return out
