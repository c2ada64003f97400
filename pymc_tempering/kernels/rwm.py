"""Batched Metropolis moves over rungs, and their tuning rules. NumPy only.

:func:`metropolis_accept` and :func:`rwm_sweep` are the readable oracles of ExchangeMC's sweep:
production runs the compiled rules of :mod:`pymc_tempering.kernels.rules` (compared with these
in ``tests/kernels/``). Welford moments: :mod:`pymc_tempering.kernels.moments`.
:func:`proposal_cholesky` is the dense proposal's factor per rung (``x' = x + s_l L_l z``).

Every rung ``l`` holds one replica ``x[l]`` and targets ``logprior + betas[l] * loglik``. A sweep
proposes a move for all rungs at once, so one batched density call serves all of them.
"""

from collections.abc import Callable

import numpy as np

from pymc_tempering.kernels.dense import DenseMoments, shrunk_covariance
from pymc_tempering.kernels.moments import Moments, shrunk_variance

__all__ = [
    "admissible",
    "tempered",
    "metropolis_accept",
    "rwm_sweep",
    "optimal_accept",
    "robbins_monro_scaling",
    "proposal_covariance",
    "proposal_cholesky",
    "dense_step",
    "difference_gradient",
]


def admissible(logprior, loglik, betas) -> np.ndarray:
    """Whether each rung's state lies in the support of its target ``prior * lik ** beta``.

    The log prior must be finite. The log-likelihood must be finite too, except at
    ``beta = 0``, where ``lik ** 0 = 1`` makes the rung the prior itself: there a state the
    data rule out (``loglik = -inf``, e.g. a likelihood whose support depends on a parameter)
    is as good as any other prior draw.
    """
    ok_lik = np.isfinite(loglik) | ((betas == 0) & (loglik == -np.inf))
    return np.isfinite(logprior) & ok_lik


def tempered(betas, loglik_diff) -> np.ndarray:
    """``betas * loglik_diff`` with ``0 * anything = 0`` (the prior rung ignores the data)."""
    with np.errstate(invalid="ignore"):
        return np.where(betas == 0, 0.0, betas * loglik_diff)


def metropolis_accept(
    x,
    logprior,
    loglik,
    proposal,
    prop_logprior,
    prop_loglik,
    betas,
    rng,
    log_q_ratio=0.0,
    exact_rows=None,
    log_u=None,
):
    """Accept or reject a batch of proposals, one per rung.

    ``log_u`` (per rung, log of U(0, 1) draws) decides acceptance; drawn from ``rng`` if not
    given. ``log_q_ratio`` is ``log q(x | x') - log q(x' | x)`` per rung (0 for symmetric
    proposals). Rows flagged in ``exact_rows`` hold independent draws from their own rung's
    target (the prior at ``beta = 0``) and are accepted whenever admissible. Proposals that are
    not :func:`admissible` (a non-finite log prior or log-likelihood, except ``loglik = -inf``
    at ``beta = 0``) or whose ratio is NaN are rejected. The current state must be admissible.
    Returns new arrays ``x, logprior, loglik, accept_prob, accepted``.
    """
    finite = admissible(prop_logprior, prop_loglik, betas)
    if not finite.all():  # substitute before the arithmetic so that 0 * inf never happens
        prop_logprior = np.where(finite, prop_logprior, logprior)
        prop_loglik = np.where(finite, prop_loglik, loglik)
    with np.errstate(invalid="ignore"):  # -inf - -inf at beta = 0: tempered() makes it 0
        log_alpha = (prop_logprior - logprior) + tempered(betas, prop_loglik - loglik)
    log_alpha = log_alpha + log_q_ratio
    if exact_rows is not None:
        log_alpha[exact_rows] = 0.0
    log_alpha[~(finite & np.isfinite(log_alpha))] = -np.inf
    if log_u is None:
        log_u = np.log(rng.random(len(betas)))
    accepted = log_u < log_alpha
    x = x.copy()
    x[accepted] = proposal[accepted]
    logprior = np.where(accepted, prop_logprior, logprior)
    loglik = np.where(accepted, prop_loglik, loglik)
    return x, logprior, loglik, np.exp(np.minimum(log_alpha, 0.0)), accepted


def rwm_sweep(
    x: np.ndarray,
    logprior: np.ndarray,
    loglik: np.ndarray,
    betas: np.ndarray,
    step_scale: np.ndarray,
    density: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    rng: np.random.Generator | None,
    exact_draw: np.ndarray | None = None,
    noise: np.ndarray | None = None,
    log_u: np.ndarray | None = None,
):
    """One Gaussian random-walk Metropolis move on every rung.

    Parameters
    ----------
    x : ndarray, shape (n_rungs, n_params)
    logprior, loglik : ndarray, shape (n_rungs,)
        Densities of the current replicas (finite).
    betas : ndarray, shape (n_rungs,)
    step_scale : ndarray, shape (n_rungs, n_params)
        Proposal standard deviation per rung and parameter.
    density : callable
        Maps an ``(n_rungs, n_params)`` batch to ``(logprior, loglik)``.
    rng : numpy.random.Generator
        Source of the random numbers not passed in; may be None when both are.
    exact_draw : ndarray, shape (n_params,), optional
        An independent prior draw that replaces rung 0's move (requires ``betas[0] == 0``).
    noise : ndarray, shape (n_rungs, n_params), optional
        Standard normal draws for the proposal; drawn from ``rng`` if not given.
    log_u : ndarray, shape (n_rungs,), optional
        Logs of U(0, 1) draws for the accept decisions; drawn from ``rng`` if not given.

    Returns
    -------
    x, logprior, loglik : the new state
    accept_prob : ndarray, shape (n_rungs,)
        ``min(1, exp(log_alpha))``, 0 where the proposal's density is not finite.
    accepted : ndarray of bool, shape (n_rungs,)
    """
    if noise is None:
        noise = rng.standard_normal(x.shape)
    proposal = x + step_scale * noise
    exact_rows = None
    if exact_draw is not None:
        proposal[0] = exact_draw
        exact_rows = np.zeros(len(betas), dtype=bool)
        exact_rows[0] = True
    prop_logprior, prop_loglik = density(proposal)
    return metropolis_accept(
        x,
        logprior,
        loglik,
        proposal,
        prop_logprior,
        prop_loglik,
        betas,
        rng,
        exact_rows=exact_rows,
        log_u=log_u,
    )


def optimal_accept(n_params: int) -> float:
    """Target acceptance of Gaussian random-walk Metropolis in ``n_params`` dimensions.

    Interpolates the optimal rates for Gaussian targets of Gelman, Roberts & Gilks (1996):
    0.44 in one dimension, 0.35 in two, falling to the high-dimensional limit 0.234
    (Roberts, Gelman & Gilks 1997).
    """
    return 0.234 + 0.206 / max(int(n_params), 1) ** 0.9


def robbins_monro_scaling(log_scaling, accept_prob, target, gain):
    """Stochastic-approximation update ``log s += gain * (accept - target)`` per rung."""
    return log_scaling + gain * (np.asarray(accept_prob) - target)


def proposal_covariance(moments: Moments, floor: float) -> np.ndarray:
    """Regularised sample covariance per rung from cross moments (``m2`` ``(n_rungs, d, d)``).

    Each rung's covariance is shrunk towards its own diagonal with weight ``d / (n + d)``
    (:mod:`pymc_tempering.kernels.dense`, as MALA's dense preconditioner), then towards
    ``floor * I`` with weight ``5 / (n + 5)`` as Stan does: its diagonal is exactly
    :func:`~pymc_tempering.kernels.moments.shrunk_variance`, the diagonal proposal's variance.
    """
    n, d = moments.count, moments.mean.shape[-1]
    rungs = zip(moments.mean, moments.m2, strict=True)
    cov = np.stack([shrunk_covariance(DenseMoments(n, mean, m2)) for mean, m2 in rungs])
    return (n / (n + 5.0)) * cov + (floor * 5.0 / (n + 5.0)) * np.eye(d)


def proposal_cholesky(moments: Moments, floor: float) -> np.ndarray:
    """Lower Cholesky factors ``(n_rungs, d, d)`` of :func:`proposal_covariance`; a rung whose
    covariance is not finite and positive definite gets the diagonal factor
    ``diag(sqrt(shrunk_variance))`` instead (still a valid, symmetric proposal)."""
    cov = proposal_covariance(moments, floor)
    diag_m2 = np.diagonal(moments.m2, axis1=-2, axis2=-1)
    diag_var = shrunk_variance(Moments(moments.count, moments.mean, diag_m2), floor)
    chol = np.empty_like(cov)
    for rung, c in enumerate(cov):
        try:
            chol[rung] = np.linalg.cholesky(c)
            ok = np.all(np.isfinite(chol[rung]))
        except np.linalg.LinAlgError:
            ok = False
        if not ok:
            chol[rung] = np.diag(np.sqrt(diag_var[rung]))
    return chol


def dense_step(step_chol: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """The dense random walk's displacement per rung, ``step_chol[l] @ noise[l]``: with
    ``step_chol = scaling[l] * L[l]`` and standard normal ``noise`` (n_rungs, d), a Gaussian
    of covariance ``scaling[l]**2 L[l] L[l]^T``, symmetric in the two states."""
    return np.matmul(step_chol, noise[:, :, None])[..., 0]


def difference_gradient(batch, x, logprior, loglik, betas, step) -> np.ndarray:
    """Forward-difference gradient of every rung's ``logprior + betas[l] * loglik`` at ``x``.

    ``batch`` maps an ``(m, d)`` batch to ``(logprior, loglik)``; ``logprior`` and ``loglik``
    are the densities at ``x`` (n_rungs, d), ``step`` (n_rungs, d) the difference per rung and
    coordinate. One batched call of ``n_rungs * d`` rows, no compiled gradient; NaN where a
    shifted point leaves the support.
    """
    n_rungs, d = x.shape
    shifted = x[:, None, :] + step[:, :, None] * np.eye(d)  # row (l, j): x[l] + step[l, j] e_j
    prior, lik = batch(shifted.reshape(n_rungs * d, d))
    with np.errstate(invalid="ignore"):  # -inf - -inf on a beta = 0 rung: tempered() makes 0
        d_prior = (prior.reshape(n_rungs, d) - logprior[:, None]) / step
        d_lik = (lik.reshape(n_rungs, d) - loglik[:, None]) / step
    return d_prior + tempered(betas[:, None], d_lik)
