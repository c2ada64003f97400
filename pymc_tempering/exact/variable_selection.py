r"""Bayesian variable selection with inclusion indicators: exact inclusion probabilities,
:math:`\log Z_\beta` and :math:`E_\beta[\ell]` by enumerating the :math:`2^k` subsets.

The model (known noise scale :math:`\sigma`, independent slabs):

.. math::
    \gamma_j \sim \mathrm{Bernoulli}(p),\quad b_j \sim N(0, \tau^2),\quad
    y \sim N(X(\gamma \odot b), \sigma^2 I),\qquad j = 1..k.

A coefficient whose indicator is off does not touch the likelihood and integrates to 1, so given
:math:`\gamma` only :math:`b_\gamma` (the columns :math:`A = X_\gamma`) matters. With
:math:`G = A^TA`, :math:`P_\beta = I/\tau^2 + \beta G/\sigma^2` and
:math:`h_\beta = \beta A^Ty/\sigma^2`, completing the square in the Gaussian integral gives

.. math::
    \log Z_\beta(\gamma) = -\tfrac{\beta n}{2}\log 2\pi\sigma^2 - \tfrac{\beta\,y^Ty}{2\sigma^2}
    + \tfrac12 h_\beta^TP_\beta^{-1}h_\beta - \tfrac12\log\lvert\tau^2P_\beta\rvert,

(at :math:`\beta = 1` the density of :math:`N(0, \sigma^2I + \tau^2AA^T)` at :math:`y`), and
the power posterior of :math:`b_\gamma` is :math:`N(P_\beta^{-1}h_\beta, P_\beta^{-1})`, so
:math:`E_\beta[\ell \mid \gamma] = -\tfrac n2\log 2\pi\sigma^2 - (\lVert y - Am\rVert^2
+ \mathrm{tr}(P_\beta^{-1}G))/(2\sigma^2)`. Summing over the :math:`2^k` subsets with weights
:math:`p^{|\gamma|}(1-p)^{k-|\gamma|}Z_\beta(\gamma)` gives every exact answer.

:func:`variable_selection_data` makes data on which single-flip moves get stuck: two pairs of
nearly collinear columns of which the truth uses one each. To swap which member of a pair is in,
a sampler that keeps ``b`` must pass through "both in" with the coefficient mass moving along a
narrow ridge, or through "neither in", which loses the signal. An excluded coefficient
wanders over its prior, so the wide default slab (``tau = 5``) makes "switch it on" land far
from the fit: on the default data PyMC's default compound step (NUTS for ``b``,
BinaryGibbsMetropolis for ``gamma``) kept one chain of two at ``gamma_0 = 1`` for all 1000
draws (ESS 6-13 of the pairs' indicators; exact inclusion probabilities 0.50-0.60).
NumPy/SciPy only, except the model builder, which imports PyMC when called.
"""

import itertools
from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

__all__ = [
    "VARIABLE_SELECTION_PRIOR",
    "VariableSelectionData",
    "VariableSelectionPosterior",
    "variable_selection_data",
    "variable_selection_model",
    "variable_selection_log_evidence",
    "variable_selection_posterior",
    "variable_selection_mean_loglik",
]

#: Prior inclusion probability ``p``, slab scale ``tau`` and the known noise scale ``sigma``.
VARIABLE_SELECTION_PRIOR = {"p": 0.5, "tau": 5.0, "sigma": 1.0}

_MAX_PREDICTORS = 16  # 65536 subsets


class VariableSelectionData(NamedTuple):
    """Design ``X`` (n, k), response ``y`` (n,) and the true coefficients (k,)."""

    X: np.ndarray
    y: np.ndarray
    coefficients: np.ndarray


class VariableSelectionPosterior(NamedTuple):
    """Exact posterior: inclusion probability per predictor, and every subset (rows of 0/1
    indicators) with its posterior probability, most probable first."""

    inclusion_probability: np.ndarray
    subsets: np.ndarray
    probability: np.ndarray


def variable_selection_data(n=50, k=8, *, correlation=0.97, effect=1.0, sigma=1.0, seed=2):
    """Data with two nearly collinear pairs of predictors, the truth using one of each.

    Columns 0 and 1 share a latent factor, as do 2 and 3 (each pair correlated about
    ``correlation``); the rest are independent. ``y = effect * (x_0 - x_2) + N(0, sigma^2)``.
    Columns are centred, ``y`` is not (the model has no intercept; ``y``'s mean is near 0).

    Parameters
    ----------
    n : int, default 50
        Observations.
    k : int, default 8
        Predictors, at least 4.
    correlation : float, default 0.97
        Within-pair correlation of the columns, in (0, 1).
    effect : float, default 1.0
        The true coefficient of column 0 (and minus that of column 2).
    sigma : float, default 1.0
        Noise standard deviation (use the same in the model).
    seed : int, default 2
        The default gives data on which both pairs are ambiguous (inclusion probabilities
        0.50/0.60 and 0.56/0.51 under the default prior).

    Returns
    -------
    VariableSelectionData
    """
    if int(k) < 4 or not 0.0 < correlation < 1.0:
        raise ValueError(f"Need k >= 4 and 0 < correlation < 1, got k={k}, {correlation=}.")
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((int(n), int(k)))
    factors = rng.standard_normal((int(n), 2))
    for pair, factor in zip(((0, 1), (2, 3)), factors.T, strict=True):
        X[:, pair] = np.sqrt(correlation) * factor[:, None] + np.sqrt(1 - correlation) * X[:, pair]
    X -= X.mean(axis=0)
    coefficients = np.zeros(int(k))
    coefficients[[0, 2]] = effect, -effect
    y = X @ coefficients + sigma * rng.standard_normal(int(n))
    return VariableSelectionData(X, y, coefficients)


def _check(X, y, p, tau, sigma):
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"`X` must be (n, k) and `y` (n,), got {X.shape} and {y.shape}.")
    if X.shape[1] > _MAX_PREDICTORS:
        raise ValueError(
            f"Enumeration covers at most {_MAX_PREDICTORS} predictors (2^k subsets), got "
            f"k={X.shape[1]}; select fewer columns."
        )
    if not (0.0 < p < 1.0 and tau > 0 and sigma > 0):
        raise ValueError(f"Need 0 < p < 1, tau > 0, sigma > 0, got {p=}, {tau=}, {sigma=}.")
    return X, y


def _subset_terms(betas, X, y, p, tau, sigma):
    """Per beta (rows) and subset (columns): log prior + log Z_beta(subset), E_beta[loglik].

    Each subset's Gram matrix is diagonalised once, ``G = U diag(lam) U^T``; in that basis
    :math:`P_\beta` is diagonal for every beta, so all rungs cost one eigendecomposition.
    """
    betas = np.atleast_1d(np.asarray(betas, dtype=float))[:, None]
    n, k = X.shape
    subsets = np.array(list(itertools.product((0, 1), repeat=k)), dtype=np.int8)
    gram, xty, yty = X.T @ X, X.T @ y, y @ y
    const = -0.5 * n * np.log(2 * np.pi * sigma**2)
    log_terms = np.empty((betas.shape[0], len(subsets)))
    mean_loglik = np.empty_like(log_terms)
    for col, subset in enumerate(subsets):
        idx = np.flatnonzero(subset)
        lam, vectors = np.linalg.eigh(gram[np.ix_(idx, idx)])
        c = vectors.T @ xty[idx]
        precision = 1.0 / tau**2 + betas * lam / sigma**2  # (betas, |subset|)
        mean = betas * c / sigma**2 / precision  # posterior mean of U^T b
        log_z = betas[:, 0] * (const - 0.5 * yty / sigma**2)
        log_z += 0.5 * (betas * c / sigma**2 * mean).sum(1) - 0.5 * np.log(tau**2 * precision).sum(
            1
        )
        rss = yty - 2.0 * (c * mean).sum(1) + (lam * (mean**2 + 1.0 / precision)).sum(1)
        log_terms[:, col] = log_z
        mean_loglik[:, col] = const - 0.5 * rss / sigma**2
    size = subsets.sum(axis=1)
    log_terms += size * np.log(p) + (k - size) * np.log1p(-p)
    return subsets, log_terms, mean_loglik


def variable_selection_log_evidence(X, y, beta=1.0, *, p=0.5, tau=5.0, sigma=1.0):
    r"""Exact :math:`\log Z_\beta` of :func:`variable_selection_model` over all :math:`2^k`
    subsets (see the module docstring).

    Parameters
    ----------
    X : array_like, shape (n, k)
        The design matrix, ``k <= 16`` predictors (all :math:`2^k` subsets are summed over).
    y : array_like, shape (n,)
        The response.
    beta : float, default 1.0
        Power of the likelihood, in [0, 1].
    p : float, default 0.5
        Prior inclusion probability of each predictor, in (0, 1).
    tau : float, default 5.0
        Slab standard deviation of each coefficient.
    sigma : float, default 1.0
        The known noise standard deviation.

    Returns
    -------
    float
    """
    X, y = _check(X, y, p, tau, sigma)
    beta = float(beta)
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"`beta` must lie in [0, 1], got {beta}.")
    return float(logsumexp(_subset_terms(beta, X, y, p, tau, sigma)[1][0]))


def variable_selection_posterior(X, y, *, p=0.5, tau=5.0, sigma=1.0):
    """Exact posterior inclusion probabilities and subset probabilities.

    Parameters
    ----------
    X : array_like, shape (n, k)
        The design matrix, ``k <= 16`` predictors (all :math:`2^k` subsets are summed over).
    y : array_like, shape (n,)
        The response.
    p : float, default 0.5
        Prior inclusion probability of each predictor, in (0, 1).
    tau : float, default 5.0
        Slab standard deviation of each coefficient.
    sigma : float, default 1.0
        The known noise standard deviation.

    Returns
    -------
    VariableSelectionPosterior
    """
    X, y = _check(X, y, p, tau, sigma)
    subsets, log_terms, _ = _subset_terms(1.0, X, y, p, tau, sigma)
    log_terms = log_terms[0]
    probability = np.exp(log_terms - logsumexp(log_terms))
    order = np.argsort(-probability, kind="stable")
    return VariableSelectionPosterior(probability @ subsets, subsets[order], probability[order])


def variable_selection_mean_loglik(X, y, betas, *, p=0.5, tau=5.0, sigma=1.0):
    r"""Exact :math:`E_\beta[\ell]` of :func:`variable_selection_model` on every rung: the
    subsets' :math:`E_\beta[\ell \mid \gamma]` weighted by :math:`p(\gamma)Z_\beta(\gamma)`.

    Parameters
    ----------
    X : array_like, shape (n, k)
        The design matrix, ``k <= 16`` predictors (all :math:`2^k` subsets are summed over).
    y : array_like, shape (n,)
        The response.
    betas : array_like
        Inverse temperatures in [0, 1].
    p : float, default 0.5
        Prior inclusion probability of each predictor, in (0, 1).
    tau : float, default 5.0
        Slab standard deviation of each coefficient.
    sigma : float, default 1.0
        The known noise standard deviation.

    Returns
    -------
    ndarray
        One value per ``beta``; it integrates to :math:`\log Z` over [0, 1].
    """
    X, y = _check(X, y, p, tau, sigma)
    _, log_terms, mean_loglik = _subset_terms(betas, X, y, p, tau, sigma)
    weights = np.exp(log_terms - logsumexp(log_terms, axis=1, keepdims=True))
    return (weights * mean_loglik).sum(1)


def variable_selection_model(X, y, *, p=0.5, tau=5.0, sigma=1.0):
    """PyMC model with Bernoulli indicators and continuous coefficients.

    Free variables ``gamma`` (``Bernoulli(p)``, dims ``predictor``) and ``b``
    (``Normal(0, tau)``, dims ``predictor``); observed ``y ~ Normal(X @ (gamma * b), sigma)``.
    Its exact answers: :func:`variable_selection_log_evidence`,
    :func:`variable_selection_posterior`, :func:`variable_selection_mean_loglik`.

    Parameters
    ----------
    X : array_like, shape (n, k)
        The design matrix, ``k <= 16`` predictors (all :math:`2^k` subsets are summed over).
    y : array_like, shape (n,)
        The response.
    p : float, default 0.5
        Prior inclusion probability of each predictor, in (0, 1).
    tau : float, default 5.0
        Slab standard deviation of each coefficient.
    sigma : float, default 1.0
        The known noise standard deviation.

    Returns
    -------
    pymc.Model
    """
    import pymc as pm

    X, y = _check(X, y, p, tau, sigma)
    coords = {"predictor": np.arange(X.shape[1]), "obs": np.arange(X.shape[0])}
    with pm.Model(coords=coords) as model:
        gamma = pm.Bernoulli("gamma", p=float(p), dims="predictor")
        b = pm.Normal("b", 0.0, float(tau), dims="predictor")
        pm.Normal("y", pm.math.dot(X, gamma * b), float(sigma), observed=y, dims="obs")
    return model
