"""The rules of ExchangeMC's discrete moves, batched over rungs: a tempered Gibbs draw over a
small finite support, and a symmetric jump on the integer lattice.

Rung ``l`` targets ``logprior + betas[l] * loglik`` (:mod:`pymc_tempering.kernels.rules`); at
``beta = 0`` the likelihood never enters. These functions see arrays only (no PyMC): the caller
evaluates the densities and applies the result.
"""

import numba
import numpy as np

from pymc_tempering.kernels.rules import log_accept_ratio
from pymc_tempering.kernels.rwm import admissible, tempered

__all__ = [
    "tempered_logdensity",
    "gibbs_choice",
    "tempered_gibbs",
    "lattice_jump",
    "lattice_log_ratios",
]


def tempered_logdensity(betas, logprior, loglik) -> np.ndarray:
    """``logprior + betas * loglik`` per row, ``-inf`` where the state is not admissible on
    its rung (:func:`~pymc_tempering.kernels.rwm.admissible`); ``betas`` broadcasts."""
    betas = np.broadcast_to(betas, np.shape(logprior))
    ok = admissible(logprior, loglik, betas)
    with np.errstate(invalid="ignore"):
        value = logprior + tempered(betas, loglik)
    return np.where(ok, value, -np.inf)


def gibbs_choice(log_weights, u) -> np.ndarray:
    """Index of one state per row, drawn with probability ``softmax(log_weights[row])``.

    ``log_weights`` is ``(n, K)``: the tempered log density of each of the ``K`` values of one
    discrete element, everything else fixed; ``u`` is ``(n,)`` uniform(0, 1) numbers (inverse
    CDF). ``-inf`` (and NaN) weights are never chosen; every row needs a finite weight (the
    current state always has one).
    """
    log_weights = np.where(np.isnan(log_weights), -np.inf, log_weights)
    top = log_weights.max(axis=1, keepdims=True)
    if not np.all(np.isfinite(top)):
        raise ValueError("every row of `log_weights` needs a finite weight (the current state)")
    cdf = np.cumsum(np.exp(log_weights - top), axis=1)
    index = (cdf < (u * cdf[:, -1])[:, None]).sum(axis=1)
    return np.minimum(index, log_weights.shape[1] - 1)


@numba.njit(cache=True, nogil=True)
def tempered_gibbs(logprior, loglik, betas, u, n_states):
    """The compiled Gibbs draw of the sampler: :func:`gibbs_choice` of the weights
    :func:`tempered_logdensity` (its readable oracles, checked against it in the tests).

    ``logprior`` and ``loglik`` hold ``n_states`` consecutive rows per rung (the element at each
    of its values), ``betas`` and ``u`` one value per rung. Returns the chosen index per rung.
    """
    n_rows = betas.size
    choice = np.empty(n_rows, dtype=np.int64)
    weights = np.empty(n_states)
    for r in range(n_rows):
        beta, top = betas[r], -np.inf
        for k in range(n_states):
            i = r * n_states + k
            lp, ll = logprior[i], loglik[i]
            ok = np.isfinite(lp) and (np.isfinite(ll) or (beta == 0.0 and ll == -np.inf))
            w = -np.inf
            if ok:
                w = lp if beta == 0.0 else lp + beta * ll
                if np.isnan(w):
                    w = -np.inf
            weights[k] = w
            top = max(top, w)
        if not np.isfinite(top):
            raise ValueError("every row of `log_weights` needs a finite weight")
        total = 0.0
        for k in range(n_states):
            weights[k] = total + np.exp(weights[k] - top)
            total = weights[k]
        target, k = u[r] * total, 0
        while k < n_states - 1 and weights[k] < target:
            k += 1
        choice[r] = k
    return choice


def lattice_jump(z, u_sign, step) -> np.ndarray:
    """Integer jumps ``sign * ceil(|z| * step)``: never zero, symmetric (``+d`` and ``-d`` equally
    likely, whatever ``step``), so the Metropolis ratio needs no proposal correction.

    ``z`` standard normals, ``u_sign`` uniforms deciding the sign, ``step >= 1`` the typical
    jump (the element's scale on its rung).
    """
    size = np.maximum(np.ceil(np.abs(z) * step), 1.0)
    return np.where(u_sign < 0.5, -size, size)


@numba.njit(cache=True, nogil=True)
def lattice_log_ratios(betas, logprior, loglik, prop_logprior, prop_loglik):
    """Log Metropolis ratio of each row's lattice jump, by the one accept rule of
    :func:`pymc_tempering.kernels.rules.log_accept_ratio` (symmetric proposal, never exact)."""
    out = np.empty(betas.size)
    for i in range(betas.size):
        out[i] = log_accept_ratio(
            betas[i], logprior[i], loglik[i], prop_logprior[i], prop_loglik[i], 0.0, False
        )
    return out
