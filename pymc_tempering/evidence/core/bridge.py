r"""Bridge sampling on arrays: the NumPy core. No PyMC import.

Bridge sampling (Meng & Wong 1996) estimates the normalising constant :math:`Z` of an
unnormalised density :math:`\tilde p` (here :math:`p(y, u)`, the joint density of the data and
the unconstrained parameters) from :math:`N_1` draws of the posterior :math:`p = \tilde p / Z`
and :math:`N_2` draws of a proposal :math:`g` with a known normalised density. With the
log ratios :math:`l_{1,i} = \log \tilde p(u_i) - \log g(u_i)` at the posterior draws and
:math:`l_{2,j}` at the proposal draws, and weights :math:`s_1 = N_1 / (N_1 + N_2)`,
:math:`s_2 = 1 - s_1`, the optimal bridge function gives the fixed point

.. math::

    \hat Z^{(t+1)} = \frac{\frac1{N_2} \sum_j e^{l_{2,j}} / (s_1 e^{l_{2,j}} + s_2 \hat Z^{(t)})}
                          {\frac1{N_1} \sum_i 1 / (s_1 e^{l_{1,i}} + s_2 \hat Z^{(t)})},

iterated here in log space (log-sum-exp), so no density under- or overflows. Its relative
mean squared error is estimated as Fruhwirth-Schnatter (2004) does (the R package
bridgesampling's ``error_measures``):

.. math::

    \mathrm{RE}^2 = \frac{\mathrm{Var}_g(f_1)}{N_2\,E_g(f_1)^2}
                  + \frac{\mathrm{Var}_p(f_2)}{\mathrm{ESS}(f_2)\,E_p(f_2)^2},\quad
    f_1 = \frac{p}{s_1 p + s_2 g},\ f_2 = \frac{g}{s_1 p + s_2 g},

with :math:`p = \tilde p / \hat Z`; the ESS of the posterior-side terms accounts for the
autocorrelation of MCMC draws (calibration: ``docs/decisions/004-bridge-mcse-calibration.md``).
Both :math:`f` are bounded (by :math:`1/s_1`, :math:`1/s_2`),
so the estimator has finite variance whatever the proposal; what a poor proposal costs is
overlap: few draws carry the sums (:func:`overlap_ess`).

Proposals (Gronau et al. 2017): ``"normal"``, a multivariate normal with the mean and
covariance of separate fitting draws; ``"warp3"`` (Meng & Schilling 2002), which matches mean,
covariance and skewness by bridging the symmetrised, standardised posterior
:math:`\tilde p_w(\eta) = \tfrac12 |L| [\tilde p(m + L\eta) + \tilde p(m - L\eta)]` (the same
:math:`Z`) to a standard normal.

References
----------
Meng & Wong (1996), Statistica Sinica 6. Meng & Schilling (2002), JCGS 11. Fruhwirth-Schnatter
(2004), Econometrics Journal 7. Gronau et al. (2017), J. Math. Psychology 81.
"""

from typing import NamedTuple

import numpy as np
import scipy.optimize
from arviz_stats.base import array_stats
from scipy.special import logsumexp

__all__ = [
    "BridgeIteration",
    "BridgeEstimate",
    "bridge_estimate",
    "split_draws",
    "terms_ess",
    "iterate_bridge",
    "bridge_terms",
    "relative_mse",
    "overlap_ess",
    "fit_normal",
    "normal_logpdf",
    "log_ratios",
    "MissedModes",
    "missed_modes",
    "METHODS",
]

METHODS = ("normal", "warp3")
_LOG_2PI = np.log(2.0 * np.pi)


class BridgeIteration(NamedTuple):
    """Result of :func:`iterate_bridge`: ``log_z``, iterations used, and whether it met ``tol``."""

    log_z: float
    n_iterations: int
    converged: bool


def _weights(n_post_eff: float, n_prop: int):
    """``log s1, log s2`` of the optimal bridge function."""
    total = n_post_eff + n_prop
    return np.log(n_post_eff / total), np.log(n_prop / total)


def iterate_bridge(l1, l2, *, n_post_eff=None, log_z0=None, tol=1e-10, maxiter=1000):
    r"""Meng & Wong's iterative scheme for :math:`\log Z`, in log space.

    Parameters
    ----------
    l1 : array_like, shape (N1,)
        :math:`\log \tilde p - \log g` at the posterior draws.
    l2 : array_like, shape (N2,)
        :math:`\log \tilde p - \log g` at the proposal draws (``-inf`` where
        :math:`\tilde p = 0`).
    n_post_eff : float, optional
        The posterior draws' effective number, for the weight :math:`s_1` (MCMC draws are
        worth fewer than independent ones); default ``N1``.
    log_z0 : float, optional
        Starting value; default the median of ``l1`` (the log ratio where the posterior draws
        sit).
    tol : float, default 1e-10
        Stop when :math:`|\log \hat Z^{(t+1)} - \log \hat Z^{(t)}| <` ``tol`` (the relative
        change of :math:`\hat Z`).
    maxiter : int, default 1000

    Returns
    -------
    BridgeIteration

    Examples
    --------
    With one draw on each side and equal weights the fixed point solves
    :math:`Z^2 = e^{l_1 + l_2}`:

    >>> round(iterate_bridge([1.0], [3.0]).log_z, 8)
    2.0
    """
    l1, l2 = np.asarray(l1, dtype=float).ravel(), np.asarray(l2, dtype=float).ravel()
    if not np.all(np.isfinite(l1)):
        raise ValueError("The log ratios at the posterior draws must all be finite.")
    n_post_eff = l1.size if n_post_eff is None else float(n_post_eff)
    log_s1, log_s2 = _weights(n_post_eff, l2.size)
    log_z = float(np.median(l1)) if log_z0 is None else float(log_z0)
    for iteration in range(1, int(maxiter) + 1):
        numerator = logsumexp(l2 - np.logaddexp(log_s1 + l2, log_s2 + log_z)) - np.log(l2.size)
        denominator = logsumexp(-np.logaddexp(log_s1 + l1, log_s2 + log_z)) - np.log(l1.size)
        new = float(numerator - denominator)
        if not np.isfinite(new):
            return BridgeIteration(new, iteration, False)
        change, log_z = abs(new - log_z), new
        if change < tol:
            return BridgeIteration(log_z, iteration, True)
    return BridgeIteration(log_z, int(maxiter), False)


def bridge_terms(log_z, l1, l2, *, n_post_eff=None):
    r"""The bounded terms :math:`f_1` (at proposal draws) and :math:`f_2` (at posterior draws).

    :math:`f_1 = 1 / (s_1 + s_2 e^{\log Z - l_2})` and :math:`f_2 = 1 / (s_1 e^{l_1 - \log Z} +
    s_2)`; at the fixed point of :func:`iterate_bridge` their means agree (both estimate the
    overlap of posterior and proposal). ``l1`` keeps its shape (e.g. ``(chain, draw)``), so the
    ESS of :math:`f_2` can be taken over chains.
    """
    l1, l2 = np.asarray(l1, dtype=float), np.asarray(l2, dtype=float)
    n_post_eff = l1.size if n_post_eff is None else float(n_post_eff)
    log_s1, log_s2 = _weights(n_post_eff, l2.size)
    f1 = np.exp(-np.logaddexp(log_s1, log_s2 + log_z - l2))
    f2 = np.exp(-np.logaddexp(log_s1 + l1 - log_z, log_s2))
    return f1, f2


def relative_mse(f1, f2, ess_f2=None):
    r"""Fruhwirth-Schnatter's (2004) relative mean squared error of :math:`\hat Z`.

    ``ess_f2`` is the effective sample size of the posterior-side terms (their count if the
    draws are independent). Its square root is the standard error of :math:`\log \hat Z`.
    """
    f1, f2 = np.ravel(f1), np.ravel(f2)
    ess_f2 = f2.size if ess_f2 is None else float(ess_f2)
    with np.errstate(divide="ignore", invalid="ignore"):
        term1 = np.var(f1, ddof=1) / (f1.size * np.mean(f1) ** 2)
        term2 = np.var(f2, ddof=1) / (ess_f2 * np.mean(f2) ** 2)
    return float(term1 + term2)


def overlap_ess(terms):
    r"""How many draws carry the sum of ``terms``: :math:`(\sum f)^2 / \sum f^2`.

    Equal terms give their count; one dominant term gives 1. Low values mean that posterior
    and proposal barely overlap, so the variance estimate itself rests on a handful of draws.
    """
    terms = np.ravel(terms)
    total = np.sum(terms**2)
    return float(np.sum(terms) ** 2 / total) if total > 0 else 0.0


def fit_normal(draws):
    """Mean and lower Cholesky factor of the covariance of ``draws`` (shape ``(n, d)``).

    A covariance that is not numerically positive definite (collinear draws) has its
    eigenvalues raised to a small fraction of the largest one.
    """
    draws = np.asarray(draws, dtype=float)
    mean = draws.mean(axis=0)
    cov = np.atleast_2d(np.cov(draws, rowvar=False))
    try:
        return mean, np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        values, vectors = np.linalg.eigh(cov)
        floor = max(float(values.max()), 1.0) * 1e-10
        cov = (vectors * np.maximum(values, floor)) @ vectors.T
        return mean, np.linalg.cholesky(cov)


def _standardise(x, mean, chol):
    """``L^{-1} (x - mean)`` row by row."""
    return np.linalg.solve(chol, (np.asarray(x, dtype=float) - mean).T).T


def _std_normal_logpdf(z):
    return -0.5 * (z.shape[-1] * _LOG_2PI + np.sum(z**2, axis=-1))


def normal_logpdf(x, mean, chol):
    """Log density of ``N(mean, chol chol^T)`` at the rows of ``x``."""
    z = _standardise(x, mean, chol)
    return _std_normal_logpdf(z) - np.sum(np.log(np.diag(chol)))


def log_ratios(logp, fit_draws, post_draws, n_proposal, rng, method="normal"):
    r"""Fit the proposal, draw from it, and return ``(l1, l2)`` for :func:`iterate_bridge`.

    Parameters
    ----------
    logp : callable
        ``logp(x)`` of an ``(n, d)`` array: the unnormalised log density :math:`\log \tilde p`
        (``-inf`` or NaN where it is zero) of each row.
    fit_draws : array_like, shape (n_fit, d)
        Posterior draws that fit the proposal, kept apart from ``post_draws`` so that the
        proposal does not depend on the draws it is evaluated with.
    post_draws : array_like, shape (N1, d)
        Posterior draws for the estimator.
    n_proposal : int
        Number of proposal draws ``N2``.
    rng : numpy.random.Generator
    method : {"normal", "warp3"}, default "normal"

    Returns
    -------
    l1 : ndarray, shape (N1,)
    l2 : ndarray, shape (N2,)
        Log ratios of the (warped) posterior to the proposal density at the posterior and the
        proposal draws. For ``"warp3"`` both are on the standardised scale
        :math:`\eta = L^{-1}(u - m)`, where the proposal is ``N(0, I)``.
    """
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}, got {method!r}.")
    post_draws = np.asarray(post_draws, dtype=float)
    mean, chol = fit_normal(fit_draws)
    eta = rng.standard_normal((int(n_proposal), mean.size))

    def safe(values):
        values = np.asarray(values, dtype=float)
        return np.where(np.isnan(values), -np.inf, values)

    if method == "normal":
        proposal = mean + eta @ chol.T
        l1 = safe(logp(post_draws)) - normal_logpdf(post_draws, mean, chol)
        l2 = safe(logp(proposal)) - (_std_normal_logpdf(eta) - np.sum(np.log(np.diag(chol))))
        return l1, l2
    # warp3: p_w(eta) = |L| (p(m + L eta) + p(m - L eta)) / 2 against N(0, I)
    log_det = np.sum(np.log(np.diag(chol)))

    def warped(points_plus, points_minus):
        both = safe(logp(np.concatenate([points_plus, points_minus])))
        half = len(points_plus)
        return np.logaddexp(both[:half], both[half:]) + log_det - np.log(2.0)

    eta_post = _standardise(post_draws, mean, chol)
    l1 = warped(post_draws, 2.0 * mean - post_draws) - _std_normal_logpdf(eta_post)
    step = eta @ chol.T
    l2 = warped(mean + step, mean - step) - _std_normal_logpdf(eta)
    return l1, l2


def split_draws(draws):
    """Each chain's first half (fits the proposal) and second half (enters the bridge).

    Returns ``(fit, post, n_post_eff, max_rhat)``: the halves of ``draws`` (shape
    ``(chain, draw, d)``), the second half's effective size (median bulk ESS over parameters,
    within ``[2, n]``) and the largest rank R-hat of all the draws.
    """
    n_draws = draws.shape[1]
    if n_draws < 4:
        raise ValueError(
            f"Bridge sampling needs at least 4 draws per chain (half of each fits the proposal), "
            f"got {n_draws}: draw more."
        )
    fit, post = draws[:, : n_draws // 2], draws[:, n_draws // 2 :]
    n_post = post.shape[0] * post.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        post_ess = np.asarray(array_stats.ess(post, chain_axis=0, draw_axis=1, method="bulk"))
        max_rhat = float(
            np.nanmax(array_stats.rhat(draws, chain_axis=0, draw_axis=1, method="rank"))
        )
    n_post_eff = float(np.clip(np.nan_to_num(np.median(post_ess), nan=n_post), 2.0, n_post))
    return fit, post, n_post_eff, max_rhat


def terms_ess(f2) -> float:
    """ArviZ's ESS of the posterior draws' bridge terms ``(chain, draw)``; their count where
    the terms are constant (a perfect proposal, where the ESS is not finite)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ess = float(array_stats.ess(f2, chain_axis=0, draw_axis=1, method="mean"))
    return ess if np.isfinite(ess) else float(f2.size)


class BridgeEstimate(NamedTuple):
    """Result of :func:`bridge_estimate`; ``relative_error`` is the MCSE of ``log_z``."""

    log_z: float
    relative_error: float
    ess: float
    n_iterations: int
    converged: bool
    max_rhat: float
    overlap_posterior: float
    overlap_proposal: float
    n_draws: int
    n_fit: int
    n_proposal: int


def bridge_estimate(
    logp, draws, rng, *, method="normal", n_proposal=None, tol=1e-10, maxiter=1000
) -> BridgeEstimate:
    r"""Bridge sampling's :math:`\log Z` and its MCSE from posterior draws, start to end.

    The rule of :func:`pymc_tempering.bridge_sampling`, on arrays: :func:`split_draws`, then
    :func:`log_ratios` (``n_proposal`` proposal draws, default as many as bridged posterior
    draws), :func:`iterate_bridge` with the bulk ESS as the posterior draws' weight, and the
    MCSE :math:`\sqrt{\mathrm{RE}^2}` of :func:`relative_mse` with :func:`terms_ess`. It is
    calibrated on exact and AR(1) draws (``docs/decisions/004-bridge-mcse-calibration.md``).

    Parameters
    ----------
    logp : callable
        ``logp(x)`` of an ``(n, d)`` array, as in :func:`log_ratios`.
    draws : ndarray, shape (chain, draw, d)
        Posterior draws, at least 4 per chain.
    rng : numpy.random.Generator
        Draws the proposal; use a stream independent of the one that made ``draws``.
    method : {"normal", "warp3"}, default "normal"
    n_proposal : int, optional
    tol, maxiter : float, int, default 1e-10, 1000
        As in :func:`iterate_bridge`.

    Returns
    -------
    BridgeEstimate
    """
    n_params = draws.shape[2]
    fit, post, n_post_eff, max_rhat = split_draws(draws)
    n_post = post.shape[0] * post.shape[1]
    n_proposal = n_post if n_proposal is None else int(n_proposal)
    l1, l2 = log_ratios(
        logp, fit.reshape(-1, n_params), post.reshape(-1, n_params), n_proposal, rng, method
    )
    result = iterate_bridge(l1, l2, n_post_eff=n_post_eff, tol=tol, maxiter=maxiter)
    f1, f2 = bridge_terms(result.log_z, l1.reshape(post.shape[:2]), l2, n_post_eff=n_post_eff)
    ess = terms_ess(f2)
    re2 = relative_mse(f1, f2, ess)
    return BridgeEstimate(
        result.log_z, float(np.sqrt(re2)), ess, result.n_iterations, result.converged,
        max_rhat, overlap_ess(f2), overlap_ess(f1), n_post, fit.shape[0] * fit.shape[1],
        n_proposal,
    )  # fmt: skip


class MissedModes(NamedTuple):
    """Result of :func:`missed_modes`: how many distinct local maxima lie outside the draws,
    the log of their summed Laplace masses (``-inf`` if none) and the largest one's distance."""

    n_modes: int
    log_mass: float
    distance: float


def _local_max(value_and_grad, start):
    """BFGS on ``-logp`` from ``start``; ``(x, logp, inverse Hessian)`` or None if it fails."""

    def negative(x):
        value, grad = value_and_grad(x)
        return -float(value), -np.asarray(grad, dtype=float)

    with np.errstate(all="ignore"):
        if not np.isfinite(negative(start)[0]):
            return None
        opt = scipy.optimize.minimize(negative, start, jac=True, method="BFGS")
    # BFGS stops with "precision loss" at many true maxima: accept a small gradient instead
    if not (np.isfinite(opt.fun) and np.linalg.norm(opt.jac) < 1e-3 * (1.0 + abs(opt.fun))):
        return None
    return opt.x, -float(opt.fun), np.atleast_2d(opt.hess_inv)


def missed_modes(value_and_grad, starts, mean, chol, radius) -> MissedModes:
    r"""Local maxima of the log density that the posterior draws never reached.

    From each of ``starts`` (e.g. prior draws), BFGS climbs ``value_and_grad`` (the log density
    and its gradient). A maximum :math:`u^*` whose standardised distance
    :math:`|L^{-1}(u^* - m)|` from the proposal's fit exceeds ``radius`` (the farthest
    posterior draw's) is a mode the draws missed; maxima closer than 1 (standardised) to one
    already found are the same mode. Its mass is Laplace's :math:`\log p(u^*) + \frac d2
    \log 2\pi + \frac12 \log |H^{-1}|`, with BFGS's estimate of the inverse Hessian: rough,
    but enough to say whether the missed mass matters.
    """
    found, log_masses, distances = [], [], []
    for start in np.atleast_2d(np.asarray(starts, dtype=float)):
        local = _local_max(value_and_grad, start)
        if local is None:
            continue
        x, logp, hess_inv = local
        distance = float(np.linalg.norm(_standardise(x[None], mean, chol)))
        if distance <= radius:
            continue
        if any(np.linalg.norm(_standardise(x[None], y, chol)) < 1.0 for y in found):
            continue
        sign, log_det = np.linalg.slogdet(hess_inv)
        if sign <= 0:
            continue
        found.append(x)
        log_masses.append(logp + 0.5 * x.size * _LOG_2PI + 0.5 * log_det)
        distances.append(distance)
    if not found:
        return MissedModes(0, -np.inf, np.nan)
    return MissedModes(len(found), float(logsumexp(log_masses)), float(max(distances)))
