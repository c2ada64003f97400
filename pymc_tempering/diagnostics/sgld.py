"""Posterior summaries for SGLD traces: step-size weighting (eq. 11) and where burn-in ends."""

import numpy as np
import xarray as xr

from pymc_tempering.kernels.sgld import step_size_weighted_mean as weighted_mean_array
from pymc_tempering.trace import group, stat

__all__ = ["step_size_weighted_mean", "sampling_threshold_crossing"]


def _weighted_mean(values, weights):
    """Eq. (11) over the last two axes (chain, draw) of ``values``."""
    flat = values.reshape(*values.shape[:-2], -1)
    return weighted_mean_array(flat, weights.reshape(-1), axis=-1)


def sampling_threshold_crossing(data, threshold: float = 0.1) -> xr.DataArray:
    r"""First draw at which SGLD's sampling threshold is below ``threshold``, per chain.

    Welling & Teh (2011, sec. 4) collect samples once
    :math:`\alpha = \epsilon_t N^2/(4n)\,\lambda_{max}(M^{1/2} V_s M^{1/2}) \ll 1`; draws
    before the crossing are burn-in.

    Parameters
    ----------
    data : DataTree
        The result of ``pm.sample(step=pmt.SGLD(...))``.
    threshold : float, default 0.1
        The paper's value.

    Returns
    -------
    xarray.DataArray
        Integer index into the ``draw`` dimension, dims ``(chain,)``; ``-1`` for a chain whose
        threshold (computed every ``threshold_every`` steps) never fell below ``threshold``.

    Examples
    --------
    >>> start = pmt.sampling_threshold_crossing(idata)              # doctest: +SKIP
    >>> pmt.step_size_weighted_mean(idata, start=start)              # doctest: +SKIP
    """
    alpha = stat(data, "sampling_threshold")
    below = (alpha < threshold).fillna(False).values
    first = np.where(below.any(axis=-1), below.argmax(axis=-1), -1)
    return xr.DataArray(first, dims=("chain",), coords={"chain": alpha["chain"].values})


def step_size_weighted_mean(data, var_names=None, start=None) -> xr.Dataset:
    r"""Posterior means weighted by SGLD step size (Welling & Teh 2011, eq. 11).

    :math:`\hat E[\theta] = \sum_t \epsilon_t \theta_t / \sum_t \epsilon_t` over all chains and
    draws, which corrects for draws taken with larger steps moving further per step.

    Parameters
    ----------
    data : DataTree
        The result of ``pm.sample(step=pmt.SGLD(...))``: its ``posterior`` group and the
        ``step_size`` sampler stat.
    var_names : str or list of str, optional
        Posterior variables to summarise (default all).
    start : int or xarray.DataArray, optional
        Drop draws before this index (one per chain when a DataArray with dim ``chain``, as
        :func:`sampling_threshold_crossing` returns; ``-1`` keeps nothing of that chain).

    Returns
    -------
    xarray.Dataset
        One variable per posterior variable, with its own dims minus ``chain`` and ``draw``,
        like ``posterior.mean(("chain", "draw"))``.

    Examples
    --------
    >>> pmt.step_size_weighted_mean(idata, var_names=["beta"])       # doctest: +SKIP
    """
    posterior = group(data, "posterior")
    if posterior is None:
        raise ValueError(
            "Expected the DataTree returned by pm.sample(step=pmt.SGLD(...)); it has no "
            "`posterior` group."
        )
    if var_names is not None:
        posterior = posterior[[var_names] if isinstance(var_names, str) else list(var_names)]
    weights = stat(data, "step_size").astype(float)
    if start is not None:
        start = xr.DataArray(start) if np.ndim(start) == 0 else start
        keep = (weights["draw"] >= start) & (start >= 0)
        weights = weights.where(keep, 0.0)
    total = weights.sum(("chain", "draw"))
    if not total > 0:
        raise ValueError("No draws left to average: check `start`.")
    return xr.apply_ufunc(
        _weighted_mean, posterior, weights, input_core_dims=[["chain", "draw"]] * 2
    )
