"""ExchangeMC's variational leg: the density it tempers, the reference's fitting schedule and the
junction with the fixed leg.

With ``reference="variational"`` ExchangeMC runs two ladders joined at ``beta = 1`` (the
*stabilized* scheme of Surjanovic et al. 2022): the fixed leg, prior to posterior, as always,
and a variational leg whose rung ``l`` targets ``q^(1 - beta_l) (prior * lik)^beta_l``, ``q`` a
Gaussian on the unconstrained space (:mod:`pymc_tempering.kernels.reference`). The leg runs the
same code as the fixed one on :class:`VariationalDensity`, whose ``(logprior, loglik)`` are
``(log q, log prior + log lik - log q)``: rung targets, swaps, exact ``beta = 0`` draws (from
``q``) and the evidence readers need nothing else. ``q`` is refitted to the posterior's draws
at the end of doubling windows while tuning (:func:`fit_due`), then frozen.
"""

from typing import NamedTuple

import numpy as np

from pymc_tempering.kernels.dense import DenseMoments, dense_moments_init, dense_moments_merge
from pymc_tempering.kernels.fused import Replicas
from pymc_tempering.kernels.moments import Moments, moments_init, welford_update
from pymc_tempering.kernels.reference import (
    DENSE_MAX_PARAMS,
    GaussianReference,
    fit_reference,
    gaussian_reference,
    reference_from_moments,
    reference_grad,
    reference_logpdf,
    reference_sample,
)

__all__ = [
    "VariationalDensity",
    "ReferenceFit",
    "init_reference_fit",
    "record_draws",
    "fit_due",
    "refit",
    "reweight",
    "junction_swap",
    "junction_due",
    "initial_reference",
    "REFERENCES",
    "log_ratio",
    "usable",
]

REFERENCES = ("prior", "variational")
FIRST_FIT = 50  # sweeps of the first fitting window; each next window is twice as long
FIT_FRACTION = 0.8  # the last fit ends within this share of tuning (as the scale windows do)
PRIOR_FIT_DRAWS = 256  # prior draws that the first reference is moment-matched to
MIN_VARIANCE = 1e-12  # relative: a fitted variance below it is a window that did not move


def log_ratio(logp, logq):
    """``logp - log q``, and ``-inf`` where both are ``-inf`` (a point the model rules out: not
    NaN, which no accept or swap rule could judge)."""
    with np.errstate(invalid="ignore"):
        out = np.subtract(logp, logq)
    return np.where(np.isnan(out) & np.isneginf(logp), -np.inf, out)


class VariationalDensity:
    """``(log q, log prior + log lik - log q)`` of flat parameter vectors, batched like
    :class:`~pymc_tempering.step_methods._compile.tempered.TemperedDensity` (whose other
    attributes it passes through); its "prior" draws are ``q``'s."""

    def __init__(self, base, reference: GaussianReference):
        self.base, self.reference = base, reference

    def __getattr__(self, name):  # n_params, point_map_info, to_point, ...
        return getattr(self.base, name)

    def batch(self, x):
        logprior, loglik = self.base.batch(x)
        logq = reference_logpdf(self.reference, x)
        return logq, log_ratio(logprior + loglik, logq)

    def batch_grad(self, x):
        logprior, loglik, grad_prior, grad_lik = self.base.batch_grad(x)
        logq, grad_q = reference_logpdf(self.reference, x), reference_grad(self.reference, x)
        ratio = log_ratio(logprior + loglik, logq)
        return logq, ratio, grad_q, grad_prior + grad_lik - grad_q

    def can_sample_prior(self) -> bool:
        return True

    def sample_prior(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return reference_sample(self.reference, n, rng)


class ReferenceFit(NamedTuple):
    """The reference and the moments of the posterior draws gathered since it was fitted."""

    reference: GaussianReference
    moments: Moments | DenseMoments  # this window's draws (both legs' beta = 1 replicas)
    window_end: int  # sweep at which this window ends (a fit) ...
    window_len: int
    frozen: bool  # ... unless tuning has ended


def initial_reference(density, q0, rng) -> GaussianReference:
    """The reference before any fit: moment-matched (diagonal) to prior draws where the prior
    can be forward-sampled, else ``N(q0, I)``."""
    if density.can_sample_prior():
        draws = density.sample_prior(PRIOR_FIT_DRAWS, rng)
        if np.all(np.isfinite(draws)):
            return fit_reference(draws, dense=False)
    return gaussian_reference(q0, np.eye(q0.size))


def _empty_moments(d: int):
    return dense_moments_init(d) if d <= DENSE_MAX_PARAMS else moments_init(d)


def init_reference_fit(reference: GaussianReference, tune_sweeps: int) -> ReferenceFit:
    frozen = FIRST_FIT > FIT_FRACTION * tune_sweeps  # too short a tuning to fit
    d = reference.mean.size
    return ReferenceFit(reference, _empty_moments(d), FIRST_FIT, FIRST_FIT, frozen)


def record_draws(fit: ReferenceFit, rows) -> ReferenceFit:
    """The record with the posterior draws ``rows`` (k, d) added to the window's moments
    (non-finite rows left out)."""
    if fit.frozen:
        return fit
    rows = rows[np.all(np.isfinite(rows), axis=1)]
    moments = fit.moments
    if isinstance(moments, DenseMoments):
        moments = dense_moments_merge(moments, rows)
    else:
        for row in rows:
            moments = welford_update(moments, row)
    return fit._replace(moments=moments)


def fit_due(fit: ReferenceFit, sweep: int) -> bool:
    """Whether tuning sweep number ``sweep`` (0-based) ends a fitting window."""
    return not fit.frozen and sweep + 1 == fit.window_end


def refit(fit: ReferenceFit, tune_sweeps: int) -> ReferenceFit:
    """The record after a window's end: ``q`` moment-matched to the window's draws (dense up to
    :data:`~pymc_tempering.kernels.reference.DENSE_MAX_PARAMS` parameters), an empty window
    twice as long, frozen when that would not end within :data:`FIT_FRACTION` of tuning."""
    m = fit.moments
    reference = fit.reference
    if m.count > 2:
        fitted = reference_from_moments(m.count, m.mean, m.m2)
        if usable(fitted, m):
            reference = fitted
    length = 2 * fit.window_len
    end = fit.window_end + length
    frozen = end > FIT_FRACTION * tune_sweeps
    return ReferenceFit(reference, _empty_moments(m.mean.size), end, length, frozen)


def usable(reference: GaussianReference, moments) -> bool:
    """Whether a fit may replace the reference: finite, and with every variance above
    :data:`MIN_VARIANCE` relative to ``1 + mean**2`` (a window whose draws did not move - a
    stuck rung - gives a zero variance, and a ``q`` under which the leg's replicas have
    ``log q = -inf``)."""
    var = np.diag(moments.m2) if moments.m2.ndim == 2 else moments.m2
    var = var / max(moments.count - 1, 1)
    floor = MIN_VARIANCE * (1.0 + moments.mean**2)
    finite = np.all(np.isfinite(reference.chol)) and np.isfinite(reference.log_norm)
    return bool(finite and np.all(var > floor))


def reweight(replicas: Replicas, old: GaussianReference, new: GaussianReference, gradient: bool):
    """Re-express the variational leg's replicas for a new reference, in place: their
    ``logprior`` (``log q``) and ``loglik`` (``log prior + log lik - log q``) fields, and with
    ``gradient`` MALA's gradients in ``aux``; no density evaluation (their sum is kept)."""
    total = replicas.logprior + replicas.loglik
    logq = reference_logpdf(new, replicas.x)
    replicas.logprior[:] = logq
    replicas.loglik[:] = log_ratio(total, logq)
    if gradient:
        d = replicas.x.shape[1]
        grad_total = replicas.aux[:, :d] + replicas.aux[:, d:]
        grad_q = reference_grad(new, replicas.x)
        replicas.aux[:, :d] = grad_q
        replicas.aux[:, d:] = grad_total - grad_q


def junction_due(sweep: int, n_fixed: int) -> bool:
    """Whether sweep ``sweep`` proposes the junction pair: the joined ladder (fixed rungs
    ``0 .. n_fixed - 1``, then the variational leg's from ``beta = 1`` down) under the even/odd
    scheme, where the junction is pair ``n_fixed - 1``."""
    return (n_fixed - 1) % 2 == sweep % 2


def junction_swap(fixed: Replicas, variational: Replicas, fixed_end, var_end, density, gradient):
    """Exchange the two ``beta = 1`` replicas in place. Both rungs target the posterior, so the
    swap is always accepted. The replica arriving on the fixed leg gets its log prior and
    log-likelihood from one evaluation of the model (``density``, the variational leg's); the
    one leaving gets the variational fields from its own. Each replica's round-trip record
    travels with it (``fixed_end``, ``var_end``: per replica id)."""
    x_fixed, x_var = fixed.x[-1].copy(), variational.x[-1].copy()
    base, ref = density.base, density.reference
    if gradient:
        d = x_fixed.size
        logprior, loglik, grad_prior, grad_lik = base.batch_grad(x_var[None])
        aux_fixed = np.concatenate([grad_prior[0], grad_lik[0]])
        grad_q = reference_grad(ref, x_fixed[None])[0]
        grad_total = fixed.aux[-1, :d] + fixed.aux[-1, d:]
        aux_var = np.concatenate([grad_q, grad_total - grad_q])
    else:
        logprior, loglik = base.batch(x_var[None])
        aux_fixed, aux_var = fixed.aux[-1], variational.aux[-1]
    logq = float(reference_logpdf(ref, x_fixed[None])[0])
    total = fixed.logprior[-1] + fixed.loglik[-1]
    fixed.x[-1], variational.x[-1] = x_var, x_fixed
    fixed.aux[-1], variational.aux[-1] = aux_fixed, aux_var
    fixed.logprior[-1], fixed.loglik[-1] = logprior[0], loglik[0]
    variational.logprior[-1], variational.loglik[-1] = logq, log_ratio(total, logq)
    a, b = fixed.rung_replica[-1], variational.rung_replica[-1]
    fixed_end[a], var_end[b] = var_end[b], fixed_end[a]
