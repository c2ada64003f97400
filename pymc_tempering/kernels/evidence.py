r"""Evidence from power-posterior draws: the NumPy cores. No PyMC import.

Thermodynamic integration (trapezoid and the corrected trapezoid of Friel, Hurn & Wyse 2014)
and stepping stone (Xie et al. 2011), on arrays with the rungs on one axis; the per-draw terms
they return make autocorrelation-aware MCSEs possible. :mod:`pymc_tempering.evidence` reads
traces and labels the results.
"""

import numpy as np
from scipy.special import logsumexp

__all__ = ["ti_quadrature", "ti_draws", "stepping_stone_draws"]


def _check_betas(betas) -> np.ndarray:
    betas = np.asarray(betas, dtype=float)
    if betas.ndim != 1 or betas.size < 2:
        raise ValueError(f"`betas` must be a 1-D ladder of at least 2 rungs, got {betas.shape}.")
    if np.any(np.diff(betas) <= 0):
        raise ValueError(
            "`betas` must be strictly increasing (rung l must hold the replica at betas[l]); "
            f"got {betas}."
        )
    return betas


def _trapezoid_weights(betas):
    """Weights ``w`` with ``sum(w * f) = trapezoid`` and ``c`` with ``sum(c * f')`` = correction."""
    width = np.diff(betas)
    padded = np.concatenate([[0.0], width, [0.0]])
    weights = 0.5 * (padded[:-1] + padded[1:])
    # Euler-Maclaurin: -sum_l width_l^2 / 12 * (f'_{l+1} - f'_l), regrouped per rung
    correction = (padded[1:] ** 2 - padded[:-1] ** 2) / 12.0
    return weights, correction


def ti_quadrature(betas, mean_loglik, var_loglik=None, *, axis=-1):
    r"""Trapezoid and corrected-trapezoid integrals of :math:`E_\beta[\ell]` over the ladder.

    Parameters
    ----------
    betas : array_like, shape (n_rungs,)
        Strictly increasing inverse temperatures.
    mean_loglik : array_like
        :math:`E_{\beta_l}[\ell]` along ``axis`` (exact values, or estimates).
    var_loglik : array_like, optional
        :math:`\mathrm{Var}_{\beta_l}[\ell] = dE_\beta[\ell]/d\beta` along ``axis``. Needed for
        the corrected rule.
    axis : int, default -1
        The rung axis.

    Returns
    -------
    trapezoid : ndarray
        :math:`\sum_l (\beta_{l+1} - \beta_l)(E_l + E_{l+1}) / 2`.
    corrected : ndarray or None
        ``trapezoid - sum_l (beta_{l+1} - beta_l)**2 / 12 * (V_{l+1} - V_l)`` (Friel, Hurn &
        Wyse 2014); ``None`` without ``var_loglik``. Exact for cubic :math:`E_\beta[\ell]`.

    Examples
    --------
    >>> betas = np.linspace(0, 1, 5)
    >>> ti_quadrature(betas, -(betas**2), -2 * betas)      # integral of -beta^2 is -1/3
    (np.float64(-0.34375), np.float64(-0.3333333333333333))
    """
    betas = _check_betas(betas)
    weights, correction = _trapezoid_weights(betas)
    mean = np.moveaxis(np.asarray(mean_loglik, dtype=float), axis, -1)
    trapezoid = mean @ weights
    if var_loglik is None:
        return trapezoid, None
    var = np.moveaxis(np.asarray(var_loglik, dtype=float), axis, -1)
    return trapezoid, trapezoid + var @ correction


def ti_draws(betas, loglik, method="corrected", *, rung_axis=-1):
    r"""Per-draw terms whose mean over draws is the thermodynamic-integration estimate.

    The trapezoid estimate is linear in the rung means, so its per-draw term is
    :math:`\sum_l w_l \ell_{l,d}`. The corrected rule also uses the rung variances; its term adds
    :math:`\sum_l c_l (\ell_{l,d} - \bar\ell_l)^2`, the influence function of the variance (delta
    method). Feeding these terms to an autocorrelation-aware MCSE gives the estimate's MCSE with
    the correlation between rungs (replicas swap) and along draws included.

    Parameters
    ----------
    betas : array_like, shape (n_rungs,)
    loglik : array_like
        Log-likelihood draws with the rungs on ``rung_axis`` and draws (and chains) elsewhere.
    method : {"corrected", "trapezoid"}, default "corrected"
    rung_axis : int, default -1

    Returns
    -------
    ndarray
        ``loglik`` with the rung axis summed out.
    """
    betas = _check_betas(betas)
    loglik = np.moveaxis(np.asarray(loglik, dtype=float), rung_axis, -1)
    weights, correction = _trapezoid_weights(betas)
    terms = loglik @ weights
    if method == "corrected":
        axes = tuple(range(loglik.ndim - 1))
        centred = loglik - loglik.mean(axis=axes)
        terms = terms + centred**2 @ correction
    elif method != "trapezoid":
        raise ValueError(f"`method` must be 'trapezoid' or 'corrected', got {method!r}.")
    return terms


def stepping_stone_draws(betas, loglik, *, rung_axis=-1):
    r"""Stepping-stone log ratios and the per-draw terms for their MCSE.

    Stone :math:`l` estimates :math:`\log Z_{\beta_{l+1}} / Z_{\beta_l} = \log
    E_{\beta_l}[e^{(\beta_{l+1} - \beta_l)\ell}]` from rung :math:`l`'s draws, by log-sum-exp.

    Parameters
    ----------
    betas : array_like, shape (n_rungs,)
    loglik : array_like
        Log-likelihood draws, rungs on ``rung_axis``; every other axis is averaged over.
    rung_axis : int, default -1

    Returns
    -------
    log_ratio : ndarray, shape (n_rungs - 1,)
        One log ratio per stone; their sum is the stepping-stone :math:`\log Z`.
    terms : ndarray
        ``loglik``'s shape without the rung axis: :math:`\sum_l Y_{l,d} / \bar Y_l` with
        :math:`Y_{l,d} = e^{(\beta_{l+1}-\beta_l)\ell_{l,d}}`; its MCSE is the delta-method MCSE
        of the sum of log ratios.
    """
    betas = _check_betas(betas)
    loglik = np.moveaxis(np.asarray(loglik, dtype=float), rung_axis, -1)[..., :-1]
    axes = tuple(range(loglik.ndim - 1))
    exponent = np.diff(betas) * loglik
    log_ratio = logsumexp(exponent, axis=axes) - np.log(exponent[..., 0].size)
    terms = np.exp(exponent - log_ratio).sum(axis=-1)
    return log_ratio, terms
