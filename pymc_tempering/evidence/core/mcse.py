"""Monte Carlo standard error of a mean over (chain, draw), written once for every estimator.

NumPy only (ArviZ's array functions, no PyMC). The evidence estimators (TI, stepping stone,
BAR / MBAR) and the learning-coefficient estimators feed it per-draw influence terms, so a
chain's mean is its own estimate, linearised.
"""

from typing import NamedTuple

import numpy as np
from arviz_stats.base import array_stats

__all__ = ["Mcse", "mean_mcse", "MIN_CHAINS_BETWEEN"]

MIN_CHAINS_BETWEEN = 4  # chains from which the chains' spread floors the MCSE (decisions/003)


class Mcse(NamedTuple):
    """MCSE of a mean and the effective sample size that matches it (``var / mcse**2``)."""

    mcse: np.ndarray
    ess: np.ndarray


def mean_mcse(ary) -> Mcse:
    """MCSE of the mean of ``ary`` over its axes (chain, draw) = 0, 1, and its ESS.

    Within chains: ArviZ's ``ess(method="mean")`` (split chains, autocorrelation summed to
    Geyer's initial positive sequence), MCSE = sd / sqrt(ESS). With at least
    ``MIN_CHAINS_BETWEEN`` chains the variance of the chain means / n_chains is a floor: in
    tempered runs part of the variance is slower than a chain, which within-chain estimates
    cut off (docs/decisions/003). The ESS returned matches the MCSE.

    Parameters
    ----------
    ary : ndarray, shape (chain, draw, ...)
        Per-draw terms; trailing axes are independent quantities.

    Returns
    -------
    Mcse
        ``(mcse, ess)``, each of shape ``ary.shape[2:]``.
    """
    ess = np.asarray(array_stats.ess(ary, chain_axis=0, draw_axis=1, method="mean"))
    var = np.var(ary, axis=(0, 1), ddof=1)
    mcse_sq = var / ess
    if ary.shape[0] >= MIN_CHAINS_BETWEEN:
        between = np.var(ary.mean(axis=1), axis=0, ddof=1) / ary.shape[0]
        mcse_sq = np.maximum(mcse_sq, between)
    return Mcse(np.sqrt(mcse_sq), np.minimum(ess, var / mcse_sq))
