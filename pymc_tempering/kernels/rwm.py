"""Batched random-walk Metropolis over rungs, and its tuning rules. NumPy only.

Every rung ``l`` holds one replica ``x[l]`` and targets ``logprior + betas[l] * loglik``. A sweep
proposes ``x' = x + scaling[l] * scale[l] * z``, ``z ~ N(0, I)``, for all rungs at once, so that
one batched density call serves all of them.
"""

from collections.abc import Callable

import numpy as np

__all__ = ["rwm_sweep", "optimal_accept", "robbins_monro_scaling", "RunningMoments"]


def rwm_sweep(
    x: np.ndarray,
    logprior: np.ndarray,
    loglik: np.ndarray,
    betas: np.ndarray,
    step_scale: np.ndarray,
    density: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    rng: np.random.Generator,
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

    Returns
    -------
    x, logprior, loglik : the new state
    accept_prob : ndarray, shape (n_rungs,)
        ``min(1, exp(log_alpha))``, 0 where the proposal's density is not finite.
    accepted : ndarray of bool, shape (n_rungs,)
    """
    proposal = x + step_scale * rng.standard_normal(x.shape)
    prop_logprior, prop_loglik = density(proposal)
    finite = np.isfinite(prop_logprior) & np.isfinite(prop_loglik)
    with np.errstate(invalid="ignore", over="ignore"):
        log_alpha = (prop_logprior - logprior) + betas * (prop_loglik - loglik)
    log_alpha = np.where(finite, log_alpha, -np.inf)
    accepted = np.log(rng.uniform(size=len(betas))) < log_alpha
    x = np.where(accepted[:, None], proposal, x)
    logprior = np.where(accepted, prop_logprior, logprior)
    loglik = np.where(accepted, prop_loglik, loglik)
    return x, logprior, loglik, np.exp(np.minimum(log_alpha, 0.0)), accepted


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


class RunningMoments:
    """Welford running mean and variance of a batch of vectors, one set per rung."""

    def __init__(self, shape):
        self.shape = shape
        self.reset()

    def reset(self):
        self.count = 0
        self.mean = np.zeros(self.shape)
        self.m2 = np.zeros(self.shape)

    def update(self, x):
        self.count += 1
        delta = x - self.mean
        self.mean = self.mean + delta / self.count
        self.m2 = self.m2 + delta * (x - self.mean)

    def variance(self):
        return self.m2 / max(self.count - 1, 1)
