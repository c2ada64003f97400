"""A Gaussian reference distribution for tempering: fitted to draws, normalised, sampled. NumPy
only.

The variational leg of ExchangeMC tempers from this Gaussian ``q`` to the posterior along
``q^(1 - beta) (prior * lik)^beta`` (Surjanovic, Syed, Bouchard-Cote & Campbell, NeurIPS 2022):
``q`` is moment-matched to the posterior's tuning draws, with a dense covariance up to
:data:`DENSE_MAX_PARAMS` parameters and a diagonal one above. Being normalised, ``q`` makes the
leg's evidence estimates absolute (``log Z(beta = 0) = 0``).
"""

from typing import NamedTuple

import numpy as np
from scipy.linalg import solve_triangular

__all__ = [
    "GaussianReference",
    "DENSE_MAX_PARAMS",
    "gaussian_reference",
    "fit_reference",
    "reference_from_moments",
    "reference_logpdf",
    "reference_grad",
    "reference_sample",
]

# dense covariance up to this many parameters (a dense fit needs many more draws than
# parameters; its log density costs d^2 per replica): docs/decisions/130-variational-reference.md
DENSE_MAX_PARAMS = 64
JITTER = 1e-10  # added to the covariance's diagonal, relative to its mean diagonal


class GaussianReference(NamedTuple):
    """``N(mean, chol chol^T)`` and its log normalising constant."""

    mean: np.ndarray  # (d,)
    chol: np.ndarray  # (d, d) lower triangular (diagonal for a mean-field fit)
    log_norm: float  # -d/2 log(2 pi) - log det chol


def gaussian_reference(mean, cov) -> GaussianReference:
    """The reference with this ``mean`` and covariance ``cov`` (d, d), made positive definite
    by a small jitter; a covariance that is still not positive definite falls back to its
    diagonal."""
    mean = np.asarray(mean, dtype=np.float64)
    cov = np.asarray(cov, dtype=np.float64)
    d = mean.size
    diag = np.clip(np.diag(cov), 1e-300, None)
    cov = cov + np.eye(d) * JITTER * float(np.mean(diag))
    try:
        chol = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        chol = np.diag(np.sqrt(diag))
    if not np.all(np.isfinite(chol)):
        chol = np.diag(np.sqrt(diag))
    log_norm = -0.5 * d * np.log(2 * np.pi) - float(np.sum(np.log(np.diag(chol))))
    return GaussianReference(mean, chol, log_norm)


def fit_reference(draws, dense: bool | None = None) -> GaussianReference:
    """The Gaussian moment-matched to ``draws`` (n, d): their mean and covariance, the full
    covariance when ``dense`` (default: ``d <= DENSE_MAX_PARAMS``), else its diagonal."""
    draws = np.asarray(draws, dtype=np.float64)
    n, d = draws.shape
    if n < 2:
        raise ValueError(f"A Gaussian reference needs at least 2 draws, got {n}.")
    dense = d <= DENSE_MAX_PARAMS if dense is None else dense
    mean = draws.mean(axis=0)
    dev = draws - mean
    cov = dev.T @ dev / (n - 1) if dense else np.diag(np.mean(dev**2, axis=0) * n / (n - 1))
    return gaussian_reference(mean, cov)


def reference_from_moments(count: int, mean, m2) -> GaussianReference:
    """The Gaussian with the mean and covariance of running moments: ``m2`` the sum of outer
    products of deviations (d, d), or of squared deviations (d,) for a diagonal fit."""
    m2 = np.asarray(m2, dtype=np.float64) / max(count - 1, 1)
    return gaussian_reference(mean, m2 if m2.ndim == 2 else np.diag(m2))


def _standardised(ref: GaussianReference, x) -> np.ndarray:
    """``chol^{-1} (x - mean)`` for each row of ``x``, as rows."""
    dev = np.atleast_2d(x) - ref.mean
    return solve_triangular(ref.chol, dev.T, lower=True, check_finite=False).T


def reference_logpdf(ref: GaussianReference, x) -> np.ndarray:
    """``log q(x)`` of each row of ``x`` (n, d)."""
    z = _standardised(ref, x)
    return ref.log_norm - 0.5 * np.einsum("ij,ij->i", z, z)


def reference_grad(ref: GaussianReference, x) -> np.ndarray:
    """``grad log q(x) = -Sigma^{-1} (x - mean)`` of each row of ``x`` (n, d)."""
    z = _standardised(ref, x)
    return -solve_triangular(ref.chol.T, z.T, lower=False, check_finite=False).T


def reference_sample(ref: GaussianReference, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` independent draws from ``q``, (n, d)."""
    z = rng.standard_normal((n, ref.mean.size))
    return ref.mean + z @ ref.chol.T
