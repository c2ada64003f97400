"""Batched Metropolis-adjusted Langevin moves over rungs. NumPy only.

Rung ``l`` targets ``log pi_l = logprior + betas[l] * loglik``. With diagonal preconditioner
``M_l = diag(scale[l]**2)`` and step ``h_l``, the h-form proposal is

    x' = x + h_l M_l grad log pi_l(x) + sqrt(2 h_l) M_l^(1/2) z,   z ~ N(0, I),

accepted with the Metropolis-Hastings ratio including ``q(x | x') / q(x' | x)``
(Roberts & Tweedie 1996). Here ``noise = sqrt(2 h_l)`` is the per-rung tuning knob, the same
knob the random walk tunes, so the two explorers share the tuning code. The proposal maths is
:mod:`pymc_tempering.kernels.langevin`'s, broadcast over rungs.

With a dense preconditioner ``M_l = L_l L_l^T`` per rung the move is
``x' = x + L_l u`` with ``u = h_l L_l^T grad + noise_l z`` (:func:`dense_mala_step`): MALA in the
whitened coordinates ``L_l^{-1} x``, whose Hastings term needs no inverse
(:func:`dense_mala_log_q_ratio`; :mod:`pymc_tempering.kernels.dense` for one chain).
"""

from collections.abc import Callable

import numba
import numpy as np

from pymc_tempering.kernels.langevin import langevin_mean, langevin_proposal
from pymc_tempering.kernels.rwm import metropolis_accept, tempered

__all__ = [
    "mala_log_q",
    "tempered_grad",
    "finite_rows",
    "mala_log_q_ratio",
    "mala_sweep",
    "dense_mala_step",
    "dense_mala_log_q_ratio",
    "dense_mala_hastings",
]


def mala_log_q(x_to, x_from, grad_from, noise, scale):
    """Log density (up to a constant shared by both directions) of the proposal ``x_from -> x_to``.

    ``noise`` has shape (n_rungs,), ``scale`` (n_rungs, n_params); the proposal mean is
    ``x_from + (noise**2 / 2) * scale**2 * grad_from`` and its covariance ``noise**2 scale**2``.
    """
    resid = x_to - langevin_mean(x_from, grad_from, 0.5 * noise[:, None] ** 2, scale**2)
    return -0.5 * np.sum((resid / (noise[:, None] * scale)) ** 2, axis=1)


def tempered_grad(betas, grad_prior, grad_lik):
    """Gradient of every rung's ``logprior + beta * loglik``, (n_rungs, n_params); the prior
    rung (``beta = 0``) ignores the likelihood's gradient, even a non-finite one. One compiled
    pass, equal bit for bit to ``grad_prior + rwm.tempered(betas[:, None], grad_lik)``."""
    out = np.empty(np.shape(grad_prior))
    _tempered_grad_kernel(np.asarray(betas, dtype=np.float64), grad_prior, grad_lik, out)
    return out


@numba.njit(cache=True, nogil=True)
def _tempered_grad_kernel(betas, grad_prior, grad_lik, out):
    for r in range(out.shape[0]):
        beta = betas[r]
        for j in range(out.shape[1]):
            out[r, j] = grad_prior[r, j] + (0.0 if beta == 0.0 else beta * grad_lik[r, j])


@numba.njit(cache=True, nogil=True)
def finite_rows(a) -> np.ndarray:
    """Per row of ``a`` (2-D), whether all its entries are finite."""
    out = np.ones(a.shape[0], dtype=np.bool_)
    for r in range(a.shape[0]):
        for j in range(a.shape[1]):
            if not np.isfinite(a[r, j]):
                out[r] = False
                break
    return out


def mala_log_q_ratio(x, proposal, grad, prop_grad, noise, scale):
    """``log q(x | x') - log q(x' | x)`` per rung (NaN or inf where a density overflowed: the
    accept rule rejects those)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return mala_log_q(x, proposal, prop_grad, noise, scale) - mala_log_q(
            proposal, x, grad, noise, scale
        )


def mala_sweep(
    x,
    logprior,
    loglik,
    grad_prior,
    grad_lik,
    betas,
    noise,
    scale,
    density_grad: Callable,
    rng,
    exact_draw=None,
):
    """One MALA move on every rung: the readable NumPy oracle of ExchangeMC's MALA explorer
    (:class:`pymc_tempering.engine.explorers.Langevin`, whose accept rule runs
    compiled in
    :mod:`pymc_tempering.kernels.rules`); tests compare the two. ``density_grad(batch)`` returns
    ``(logprior, loglik, grad_logprior, grad_loglik)``; gradients are ``(n_rungs, n_params)``.

    Returns ``x, logprior, loglik, grad_prior, grad_lik, accept_prob, accepted``.
    """
    grad = grad_prior + tempered(betas[:, None], grad_lik)
    # the single-chain h-form move, broadcast over rungs: h = noise**2 / 2, M = scale**2
    h = 0.5 * noise[:, None] ** 2
    proposal = langevin_proposal(x, grad, h, scale**2, rng.standard_normal(x.shape))
    exact_rows = None
    if exact_draw is not None:
        proposal[0] = exact_draw
        exact_rows = np.zeros(len(betas), dtype=bool)
        exact_rows[0] = True
    p_lp, p_ll, p_glp, p_gll = density_grad(proposal)
    p_grad = p_glp + tempered(betas[:, None], p_gll)
    with np.errstate(invalid="ignore", over="ignore"):
        log_q_ratio = mala_log_q(x, proposal, p_grad, noise, scale) - mala_log_q(
            proposal, x, grad, noise, scale
        )
    finite_grad = np.all(np.isfinite(p_grad), axis=1)
    p_lp = np.where(finite_grad, p_lp, -np.inf)  # a non-finite gradient: reject the move
    new_x, lp, ll, accept_prob, accepted = metropolis_accept(
        x, logprior, loglik, proposal, p_lp, p_ll, betas, rng, log_q_ratio, exact_rows
    )
    grad_prior = np.where(accepted[:, None], p_glp, grad_prior)
    grad_lik = np.where(accepted[:, None], p_gll, grad_lik)
    return new_x, lp, ll, grad_prior, grad_lik, accept_prob, accepted


# the kernels may reassociate their sums (SIMD): the dense products take about a third of the
# time of strict left-to-right order, and results differ from NumPy's only in the last bits
FAST = {"reassoc"}


@numba.njit(cache=True, nogil=True, fastmath=FAST)
def _t_matvec_into(chol, v, out):
    """``out = chol^T v``, as rows of ``chol`` times ``v[j]`` (contiguous)."""
    d = v.size
    for i in range(d):
        out[i] = 0.0
    for j in range(d):
        vj = v[j]
        for i in range(d):
            out[i] += chol[j, i] * vj


@numba.njit(cache=True, nogil=True, fastmath=FAST)
def _dense_step_kernel(x, grad, chol, noise, z, prop, u):
    n_rungs, d = x.shape
    t_grad = np.empty(d)
    for r in range(n_rungs):
        _t_matvec_into(chol[r], grad[r], t_grad)
        h = 0.5 * noise[r] * noise[r]
        for i in range(d):
            u[r, i] = h * t_grad[i] + noise[r] * z[r, i]
        for i in range(d):
            s = 0.0
            for j in range(d):
                s += chol[r, i, j] * u[r, j]
            prop[r, i] = x[r, i] + s


@numba.njit(cache=True, nogil=True, fastmath=FAST)
def _dense_log_q_row(u, z, prop_grad, chol, noise, t_grad) -> float:
    """One rung's whitened Hastings term (``t_grad``: scratch of length d)."""
    _t_matvec_into(chol, prop_grad, t_grad)
    h = 0.5 * noise * noise
    forward = 0.0
    backward = 0.0
    for i in range(u.size):
        f = noise * z[i]
        b = u[i] + h * t_grad[i]
        forward += f * f
        backward += b * b
    return (forward - backward) / (2.0 * noise * noise)


@numba.njit(cache=True, nogil=True, fastmath=FAST)
def _dense_log_q_kernel(u, z, prop_grad, chol, noise, out):
    t_grad = np.empty(u.shape[1])
    for r in range(u.shape[0]):
        out[r] = _dense_log_q_row(u[r], z[r], prop_grad[r], chol[r], noise[r], t_grad)


@numba.njit(cache=True, nogil=True)
def _dense_hastings_kernel(
    u, z, grad_prior, grad_lik, betas, chol, noise, logprior, log_q, aux, logprior_out
):
    n_rungs, d = u.shape
    prop_grad, t_grad = np.empty(d), np.empty(d)
    for r in range(n_rungs):
        beta = betas[r]
        finite = True
        for j in range(d):
            g = grad_prior[r, j] + (0.0 if beta == 0.0 else beta * grad_lik[r, j])
            prop_grad[j] = g
            finite = finite and np.isfinite(g)
            aux[r, j] = grad_prior[r, j]
            aux[r, d + j] = grad_lik[r, j]
        log_q[r] = _dense_log_q_row(u[r], z[r], prop_grad, chol[r], noise[r], t_grad)
        logprior_out[r] = logprior[r] if finite else -np.inf


def dense_mala_hastings(u, z, grad_prior, grad_lik, betas, chol, noise, logprior):
    """What a dense move's proposal needs after its density call, in one compiled pass:
    ``(log_q_ratio, aux, logprior)``. ``log_q_ratio`` is :func:`dense_mala_log_q_ratio` at the
    tempered gradient :func:`tempered_grad` ``(betas, grad_prior, grad_lik)``; ``aux`` the two
    gradients side by side; ``logprior`` a copy, ``-inf`` on rungs whose tempered gradient is
    not finite (so the accept rule rejects them)."""
    u, z, grad_prior, grad_lik, betas, chol, noise, logprior = _float_arrays(
        u, z, grad_prior, grad_lik, betas, chol, noise, logprior
    )
    n_rungs, d = u.shape
    log_q, aux, logprior_out = np.empty(n_rungs), np.empty((n_rungs, 2 * d)), np.empty(n_rungs)
    _dense_hastings_kernel(
        u, z, grad_prior, grad_lik, betas, chol, noise, logprior, log_q, aux, logprior_out
    )
    return log_q, aux, logprior_out


def _float_arrays(*arrays):
    return [np.ascontiguousarray(a, dtype=np.float64) for a in arrays]


def dense_mala_step(x, grad, chol, noise, z):
    """``(x', u)``: the dense move ``x' = x + L u``, ``u = h L^T grad + noise z`` per rung
    (``h = noise**2 / 2``, ``noise`` (n_rungs,), ``chol`` (n_rungs, d, d), ``z`` standard
    normal); one compiled pass per rung, any ``L``."""
    x, grad, chol, noise, z = _float_arrays(x, grad, chol, noise, z)
    prop, u = np.empty_like(x), np.empty_like(x)
    _dense_step_kernel(x, grad, chol, noise, z, prop, u)
    return prop, u


def dense_mala_log_q_ratio(u, z, prop_grad, chol, noise):
    """``log q(x | x') - log q(x' | x)`` of :func:`dense_mala_step`, in whitened coordinates:
    the forward residual is ``noise z``, the backward one ``-(u + h L^T grad(x'))``, both of
    covariance ``noise**2 I``. NaN or inf where a gradient overflowed (the accept rule rejects
    those)."""
    u, z, prop_grad, chol, noise = _float_arrays(u, z, prop_grad, chol, noise)
    out = np.empty(u.shape[0])
    _dense_log_q_kernel(u, z, prop_grad, chol, noise, out)
    return out
