r"""Evidence from power-posterior draws: the NumPy cores. No PyMC import.

Thermodynamic integration (trapezoid and the corrected trapezoid of Friel, Hurn & Wyse 2014)
and stepping stone (Xie et al. 2011), on arrays with the rungs on one axis; the per-draw terms
they return make autocorrelation-aware MCSEs possible. :mod:`pymc_tempering.evidence` reads
traces and labels the results.

Zero likelihood. Where the likelihood's support depends on the parameters (a uniform whose
bounds are parameters, a Potential that is ``-inf`` somewhere), prior draws can have
``loglik = -inf``; they may appear only on a ``beta = 0`` rung (at ``beta > 0`` the target is
zero there). With :math:`p = P_{\text{prior}}(\ell > -\infty)` and :math:`E_\beta` the
power-posterior mean, :math:`E_\beta[\ell]` tends, as :math:`\beta \to 0^+`, to the mean of
:math:`\ell` under the prior restricted to the support, not to the (infinite) prior mean, and
:math:`\log Z = \log p + \int_0^1 E_\beta[\ell]\,d\beta` with the restricted mean at 0.
Both estimators here use that identity: TI adds :math:`\log \hat p` (the fraction of finite
draws on the ``beta = 0`` rung) and stepping stone's first stone counts those draws as zero
weights, which is the same thing.
"""

import warnings

import numpy as np
from arviz_stats.base import array_stats
from scipy.special import logsumexp

__all__ = [
    "power_posterior_moments",
    "ti_quadrature",
    "ti_discretisation_error",
    "ti_draws",
    "ti_rung_tails",
    "stepping_stone_draws",
    "pareto_khat",
    "weight_concentration",
    "khat_threshold",
]


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


def _check_loglik(betas, loglik) -> np.ndarray:
    """``loglik`` with the rungs last; -inf is allowed only on a ``beta = 0`` rung."""
    loglik = np.asarray(loglik, dtype=float)
    if loglik.shape[-1] != betas.size:
        raise ValueError(
            f"`loglik` has {loglik.shape[-1]} rungs on its rung axis, the ladder {betas.size}."
        )
    finite = np.isfinite(loglik)
    allowed = finite | ((betas == 0) & (loglik == -np.inf))
    if not allowed.all():
        rungs = np.unique(np.nonzero(~allowed)[-1])
        raise ValueError(
            f"`loglik` holds NaN, +inf, or -inf at beta > 0 (rungs {rungs.tolist()}); only a "
            "beta = 0 rung may hold -inf (prior draws the data rule out). The traces are "
            "unusable: check the model's likelihood for NaN."
        )
    return loglik


def power_posterior_moments(betas, loglik, *, rung_axis=-1):
    r"""Per-rung mean and variance of the finite log-likelihoods, and the fraction finite.

    Parameters
    ----------
    betas : array_like, shape (n_rungs,)
    loglik : array_like
        Draws with the rungs on ``rung_axis``; every other axis is averaged over. Only a
        ``beta = 0`` rung may hold ``-inf``.

    Returns
    -------
    mean, var, support : ndarray, shape (n_rungs,)
        :math:`E_\beta[\ell]` and :math:`\mathrm{Var}_\beta[\ell]` (``ddof=0``) over the
        draws with finite :math:`\ell`, and the fraction of draws with finite :math:`\ell`
        (1 on every rung but a ``beta = 0`` one).
    """
    betas = _check_betas(betas)
    loglik = _check_loglik(betas, np.moveaxis(np.asarray(loglik, dtype=float), rung_axis, -1))
    axes = tuple(range(loglik.ndim - 1))
    finite = np.isfinite(loglik)
    count = finite.sum(axis=axes)
    support = count / np.prod([loglik.shape[a] for a in axes])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(finite, loglik, 0.0).sum(axis=axes) / count
        var = np.where(finite, (loglik - mean) ** 2, 0.0).sum(axis=axes) / count
    return mean, var, support


def ti_discretisation_error(
    betas, mean_loglik, var_loglik, method="corrected", *, noise=0.0
) -> float:
    r"""Estimated absolute quadrature error of the trapezoid or corrected rule on this ladder.

    Richardson's idea, without new draws: drop every other rung (keeping ``beta = 0``, the
    lowest positive rung and 1) and compare. The trapezoid's error falls as :math:`h^2` and
    the corrected (Hermite) rule's as :math:`h^4`, so on a ladder fine enough for those rates
    to hold the errors are about ``|T - T_coarse| / 3`` and ``|C - C_coarse| / 15``. The
    trapezoid's error has a second estimate, ``|T - C|``; where the two disagree by more than
    a third of the larger plus twice ``noise`` (the Monte Carlo error of the estimates, so that
    noisy moments do not fake a disagreement), the ladder is too coarse for the rates, and the
    estimate is ``|T - C|`` (for both rules). The corrected rule's estimate is doubled for
    safety. Where it was checked: ``docs/decisions/005-evidence-estimator-notes.md``.
    """
    betas = _check_betas(betas)
    mean, var = np.asarray(mean_loglik, dtype=float), np.asarray(var_loglik, dtype=float)
    trapezoid, corrected = ti_quadrature(betas, mean, var)
    if betas.size < 4:
        return float(abs(trapezoid - corrected))
    keep = np.unique(np.concatenate([[0, 1], np.arange(betas.size - 1, 0, -2)]))
    trapezoid_coarse, corrected_coarse = ti_quadrature(betas[keep], mean[keep], var[keep])
    difference = abs(trapezoid - corrected)
    richardson_t = abs(trapezoid - trapezoid_coarse) / 3.0
    spread = abs(difference - richardson_t)
    asymptotic = spread <= max(difference, richardson_t) / 3.0 + 2.0 * noise
    if method == "trapezoid":
        return float(max(difference, richardson_t))
    if not asymptotic:
        return float(difference)
    return float(2.0 * abs(corrected - corrected_coarse) / 15.0)


def _chain_standardised(loglik, finite):
    """Draws ``(..., chain, draw, rung)`` centred and scaled by their own chain's median and
    interquartile range (robust: a heavy tail keeps its shape): the tail's shape within each
    chain. Chains whose rung laws differ (ExchangeMC(reference="variational") fits each chain's
    own reference) would otherwise pool into a scale mixture, which a Pareto fit reads as a
    heavy tail."""
    x = np.where(finite, loglik, np.nan)
    if loglik.ndim < 3:
        return np.where(finite, x - np.nanmedian(x, axis=0), 0.0)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a chain without finite draws
        low, loc, high = np.nanquantile(x, [0.25, 0.5, 0.75], axis=-2, keepdims=True)
    scale = high - low
    scale = np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)
    return np.where(finite, (x - loc) / scale, 0.0)


def ti_rung_tails(betas, loglik, method="corrected", *, rung_axis=-1):
    r"""Per tail (upper, lower) and rung: the Pareto :math:`\hat k` of its log-likelihood
    draws (finite draws) and the largest change one draw of that tail makes to the TI estimate.
    Each tail is judged with its own extremes, and its shape within each chain
    (:func:`_chain_standardised`): chains with different reference fits would otherwise pool
    into a mixture that looks heavy-tailed.

    A heavy tail (:math:`\hat k > 0.5`) leaves the rung mean without a finite variance, so
    the MCSE means nothing, but only where the rung's weight lets its extreme draws move the
    estimate: heavy-tailed priors put :math:`\hat k > 1` on the ``beta = 0`` rung, whose
    weight on a ladder that starts at ``2**-30`` is negligible. The influence of draw
    :math:`d` is :math:`(|w_l|\,|\ell_{l,d} - \bar\ell_l| + |c_l|\,(\ell_{l,d} -
    \bar\ell_l)^2) / (S \hat p_l)` with :math:`S` draws (see :func:`ti_draws`).

    Returns
    -------
    khat, max_influence : ndarray, shape (2, n_rungs)
        Row 0 the upper tail, row 1 the lower tail.
    """
    betas = _check_betas(betas)
    loglik = np.moveaxis(np.asarray(loglik, dtype=float), rung_axis, -1)
    mean, _, support = power_posterior_moments(betas, loglik)
    finite = np.isfinite(loglik)
    dev = np.where(finite, loglik - mean, 0.0).reshape(-1, betas.size)
    tails = np.stack([dev, -dev])  # (2, draws, rungs): each tail as an upper tail
    shape = _chain_standardised(loglik, finite).reshape(-1, betas.size)
    khat = np.stack([pareto_khat(tail, axis=0) for tail in (shape, -shape)])
    weights, correction = _trapezoid_weights(betas)
    largest = np.clip(tails.max(axis=1), 0.0, None)
    influence = np.abs(weights) * largest
    if method == "corrected":
        influence = influence + np.abs(correction) * largest**2
    return khat, influence / (dev.shape[0] * support)


def ti_draws(betas, loglik, method="corrected", *, rung_axis=-1):
    r"""Per-draw terms whose mean over draws is the thermodynamic-integration estimate.

    The estimate is :math:`\log \hat p + \sum_l w_l \bar\ell_l` (trapezoid) plus
    :math:`\sum_l c_l \hat V_l` (corrected rule), with rung means and variances over finite
    draws (:func:`power_posterior_moments`; :math:`\hat p = 1` unless a ``beta = 0`` rung has
    draws with zero likelihood). Each draw's term is the estimate plus its influence on it
    (delta method): :math:`\sum_l w_l f_{l,d} (\ell_{l,d} - \bar\ell_l) / \hat p_l`, the
    same with :math:`(\ell_{l,d} - \bar\ell_l)^2 - \hat V_l` and :math:`c_l`, and
    :math:`(f_{0,d} - \hat p_0) / \hat p_0`, where :math:`f_{l,d}` says whether
    :math:`\ell_{l,d}` is finite. Feeding these terms to an autocorrelation-aware MCSE gives the
    estimate's MCSE with the correlation between rungs (replicas swap) and along draws included.

    Parameters
    ----------
    betas : array_like, shape (n_rungs,)
        The ladder, increasing from ``beta = 0`` to 1.
    loglik : array_like
        Log-likelihood draws with the rungs on ``rung_axis`` and draws (and chains) elsewhere.
    method : {"corrected", "trapezoid"}, default "corrected"
        The quadrature rule: Friel, Hurn & Wyse's (2014) corrected trapezoid, or the plain
        one.
    rung_axis : int, default -1
        The axis of ``loglik`` that runs over the rungs.

    Returns
    -------
    ndarray
        ``loglik`` with the rung axis summed out; its mean is the estimate.
    """
    if method not in ("corrected", "trapezoid"):
        raise ValueError(f"`method` must be 'trapezoid' or 'corrected', got {method!r}.")
    betas = _check_betas(betas)
    loglik = np.moveaxis(np.asarray(loglik, dtype=float), rung_axis, -1)
    mean, var, support = power_posterior_moments(betas, loglik)
    weights, correction = _trapezoid_weights(betas)
    finite = np.isfinite(loglik)
    centred = np.where(finite, loglik - mean, 0.0) / support
    estimate = np.log(support[0]) + mean @ weights
    terms = centred @ weights + (finite[..., 0] - support[0]) / support[0]
    if method == "corrected":
        estimate = estimate + var @ correction
        spread = np.where(finite, (loglik - mean) ** 2 - var, 0.0) / support
        terms = terms + spread @ correction
    return estimate + terms


def stepping_stone_draws(betas, loglik, *, rung_axis=-1):
    r"""Stepping-stone log ratios and the per-draw terms for their MCSE.

    Stone :math:`l` estimates :math:`\log Z_{\beta_{l+1}} / Z_{\beta_l} = \log
    E_{\beta_l}[e^{(\beta_{l+1} - \beta_l)\ell}]` from rung :math:`l`'s draws, by log-sum-exp
    (a draw with :math:`\ell = -\infty` on a ``beta = 0`` rung has weight 0).

    Parameters
    ----------
    betas : array_like, shape (n_rungs,)
        The ladder, increasing from ``beta = 0`` to 1.
    loglik : array_like
        Log-likelihood draws, rungs on ``rung_axis``; every other axis is averaged over.
    rung_axis : int, default -1
        The axis of ``loglik`` that runs over the rungs.

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
    loglik = np.moveaxis(np.asarray(loglik, dtype=float), rung_axis, -1)
    loglik = _check_loglik(betas, loglik)[..., :-1]
    axes = tuple(range(loglik.ndim - 1))
    exponent = np.diff(betas) * loglik
    log_ratio = logsumexp(exponent, axis=axes) - np.log(exponent[..., 0].size)
    terms = np.exp(exponent - log_ratio).sum(axis=-1)
    return log_ratio, terms


MIN_TAIL_VALUES = 5  # draws a tail needs to be fitted, and that must share a stone's weight


def _one_khat(draws, log):
    """ArviZ's :math:`\\hat k` of one 1-D sample, with ties read as atoms (see pareto_khat)."""
    if log:
        if not np.isfinite(draws).any():  # every weight zero: no mass anywhere
            return np.nan
        try:  # psislw takes log-likelihoods: the log weights are their negatives
            return float(array_stats.psislw(-draws, r_eff=1.0)[1])
        except ValueError:  # the M largest weights are equal: no tail above them
            return -np.inf
    try:
        return float(
            array_stats.pareto_khat(draws, chain_axis=None, draw_axis=-1, r_eff=1.0, tail="right")
        )
    except ValueError:
        return -np.inf


def pareto_khat(values, *, axis=-1, log=False):
    r"""Shape :math:`\hat k` of a generalised Pareto fit to the upper tail of ``values``: the
    number ArviZ reports.

    The tail diagnostic of Pareto-smoothed importance sampling (Vehtari, Simpson, Gelman, Yao
    & Gabry 2024), computed by arviz-stats with ``r_eff=1`` (the largest
    :math:`\min(S/5, 3\sqrt S)` of :math:`S` draws): with ``log=True`` it is the ``pareto_k``
    of ``az.loo`` (``array_stats.psislw``) for these log weights, otherwise
    ``array_stats.pareto_khat(tail="right")``. Above 0.5 a mean has no finite variance; above
    :func:`khat_threshold` the estimate is unreliable at this sample size. Vectorised over
    every other axis.

    Parameters
    ----------
    values : array_like
        Draws along ``axis`` (all other axes are batch axes).
    axis : int, default -1
    log : bool, default False
        ``values`` are logs (importance log-weights): the tail of ``exp(values)`` is fitted.

    Returns
    -------
    ndarray
        :math:`\hat k` per batch element; NaN with fewer than 25 draws and where the tail is a
        few tied values that no Pareto tail fits (ArviZ's NaN: the log-likelihood of a discrete
        model; :func:`weight_concentration` judges those weights), ``-inf`` where the largest
        values are all equal (no tail above them), ``inf`` where the fit breaks down.
    """
    x = np.moveaxis(np.asarray(values, dtype=float), axis, -1)
    out = np.full(x.shape[:-1], np.nan)
    if x.shape[-1] < 25:  # too few draws for a tail fit: unknown (callers flag so few draws)
        return out
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        for index in np.ndindex(out.shape):
            out[index] = _one_khat(x[index], log)
    return out


def weight_concentration(log_weights, *, axis=-1):
    r"""How far the log of a mean of weights moves without its few largest draws.

    :math:`-\log(1 - s)`, :math:`s` the share of :math:`\sum_d e^{w_d}` carried by the
    ``MIN_TAIL_VALUES - 1`` largest weights: ``inf`` when they carry all of it. Where
    :func:`pareto_khat` cannot fit a tail (tied values), this says whether a few draws decide a
    stone's log ratio; compared with the estimate's MCSE in
    :func:`pymc_tempering.evidence.checks.tail_problems`.
    """
    w = np.moveaxis(np.asarray(log_weights, dtype=float), axis, -1)
    few = min(MIN_TAIL_VALUES - 1, w.shape[-1] - 1)
    ranked = np.partition(w, w.shape[-1] - few, axis=-1)  # the `few` largest come last
    with np.errstate(all="ignore"):
        return logsumexp(ranked, axis=-1) - logsumexp(ranked[..., :-few], axis=-1)


def khat_threshold(n_draws: int) -> float:
    """Largest :math:`\\hat k` at which ``n_draws`` draws still give a reliable estimate."""
    return float(min(1.0 - 1.0 / np.log10(n_draws), 0.7))
