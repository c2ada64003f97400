r"""A two-component Gaussian mixture with one allocation per observation: exact
:math:`\log Z_\beta` and :math:`E_\beta[\ell]` by enumerating the :math:`2^n` allocations with
the component means integrated out, and the same evidence for the marginalised model by 2-D
quadrature.

The model (known weights, component scale :math:`\sigma` and prior scale :math:`s`):

.. math::
    \mu_0, \mu_1 \sim N(0, s^2),\quad z_i \sim \mathrm{Categorical}(w),\quad
    y_i \sim N(\mu_{z_i}, \sigma^2),\qquad i = 1..n.

With equal weights the posterior is symmetric under swapping the labels (``z -> 1 - z`` and
``mu -> mu[::-1]``): two equal modes. Given the allocation each component is the conjugate
Normal mean: with :math:`n_c` points, sum :math:`S_c`, sum of squares :math:`Q_c`,
:math:`P = 1/s^2 + \beta n_c/\sigma^2`, :math:`h = \beta S_c/\sigma^2`,

.. math::
    \log Z_\beta(c) = -\tfrac{\beta n_c}{2}\log 2\pi\sigma^2 - \tfrac{\beta Q_c}{2\sigma^2}
    + \tfrac{h^2}{2P} - \tfrac12\log(s^2P),

and the power posterior of :math:`\mu_c` is :math:`N(h/P, 1/P)`. The marginalised model
(``pm.NormalMixture``: :math:`y_i \sim \sum_c w_c N(\mu_c, \sigma^2)`) has the same
:math:`Z` at :math:`\beta = 1` but other power posteriors (its likelihood is the mixture, not the
allocated density), computed here by 2-D Gauss-Legendre quadrature over the two means.
NumPy/SciPy only, except the model builders, which import PyMC when called.
"""

from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

__all__ = [
    "MIXTURE_PRIOR",
    "MixtureData",
    "mixture_data",
    "mixture_allocation_model",
    "mixture_marginal_model",
    "mixture_log_evidence",
    "mixture_allocation_mean_loglik",
    "mixture_marginal_log_evidence",
]

#: Component weights, the known component standard deviation and the means' prior scale.
MIXTURE_PRIOR = {"weights": (0.5, 0.5), "sigma": 1.0, "prior_sd": 3.0}

_MAX_OBSERVATIONS = 20  # 2^20 allocations, about 1e6 rows


class MixtureData(NamedTuple):
    """Observations ``y`` and the allocations ``z`` that generated them."""

    y: np.ndarray
    z: np.ndarray


def mixture_data(n=14, *, separation=4.0, sigma=1.0, seed=0):
    """``n`` draws, half from ``N(-separation/2, sigma^2)`` and half from
    ``N(+separation/2, sigma^2)`` (allocations alternate, so both clusters are present).

    Parameters
    ----------
    n : int, default 14
        Observations.
    separation : float, default 4.0
        The distance between the two component means.
    sigma : float, default 1.0
        The components' standard deviation.
    seed : int, default 0
        Seed of the draws.

    Returns
    -------
    MixtureData
    """
    rng = np.random.default_rng(seed)
    z = np.arange(int(n)) % 2
    y = (z - 0.5) * separation + sigma * rng.standard_normal(int(n))
    return MixtureData(y, z)


def _check(y, weights, sigma, prior_sd):
    y = np.asarray(y, dtype=float)
    weights = np.asarray(weights, dtype=float)
    if y.ndim != 1 or not 1 <= y.size <= _MAX_OBSERVATIONS:
        raise ValueError(
            f"`y` must be 1-D with 1 to {_MAX_OBSERVATIONS} values (2^n allocations are "
            f"enumerated), got shape {y.shape}."
        )
    if weights.shape != (2,) or np.any(weights <= 0) or not np.isclose(weights.sum(), 1.0):
        raise ValueError(f"`weights` must be two positive numbers summing to 1, got {weights}.")
    if not (sigma > 0 and prior_sd > 0):
        raise ValueError(f"Need sigma > 0 and prior_sd > 0, got {sigma=}, {prior_sd=}.")
    return y, weights


def _allocation_terms(beta, y, weights, sigma, prior_sd):
    """Per allocation: log prior + log Z_beta(allocation), and E_beta[loglik | allocation]."""
    n = y.size
    ones = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1  # rows: z in {0, 1}^n
    log_terms, mean_loglik = 0.0, 0.0
    for component, member in enumerate((1 - ones, ones)):
        count, total, squares = member.sum(1), member @ y, member @ y**2
        precision = 1.0 / prior_sd**2 + beta * count / sigma**2
        h = beta * total / sigma**2
        log_z = (
            -0.5 * beta * count * np.log(2 * np.pi * sigma**2)
            - 0.5 * beta * squares / sigma**2
            + 0.5 * h**2 / precision
            - 0.5 * np.log(prior_sd**2 * precision)
        )
        log_terms = log_terms + log_z + count * np.log(weights[component])
        mean, var = h / precision, 1.0 / precision
        sq = squares - 2.0 * total * mean + count * (mean**2 + var)  # E[sum (y_i - mu)^2]
        mean_loglik = mean_loglik - 0.5 * count * np.log(2 * np.pi * sigma**2) - 0.5 * sq / sigma**2
    return log_terms, mean_loglik


def mixture_log_evidence(y, beta=1.0, *, weights=(0.5, 0.5), sigma=1.0, prior_sd=3.0):
    r"""Exact :math:`\log Z_\beta` of :func:`mixture_allocation_model` (all :math:`2^n`
    allocations, the means integrated out); at ``beta = 1`` also the evidence of
    :func:`mixture_marginal_model`.

    Parameters
    ----------
    y : array_like, shape (n,)
        The observations, ``1 <= n <= 20`` (all :math:`2^n` allocations are enumerated).
    beta : float, default 1.0
        Power of the likelihood, in [0, 1].
    weights : sequence of float, default (0.5, 0.5)
        The two component weights, positive, summing to 1.
    sigma : float, default 1.0
        The known component standard deviation :math:`\sigma`.
    prior_sd : float, default 3.0
        :math:`s`, the prior standard deviation of each component mean.

    Returns
    -------
    float
    """
    y, weights = _check(y, weights, sigma, prior_sd)
    beta = float(beta)
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"`beta` must lie in [0, 1], got {beta}.")
    return float(logsumexp(_allocation_terms(beta, y, weights, sigma, prior_sd)[0]))


def mixture_allocation_mean_loglik(y, betas, *, weights=(0.5, 0.5), sigma=1.0, prior_sd=3.0):
    r"""Exact :math:`E_\beta[\ell]` of :func:`mixture_allocation_model` on every rung, with
    :math:`\ell = \sum_i \log N(y_i; \mu_{z_i}, \sigma^2)` (the allocations are in the prior).

    Parameters
    ----------
    y : array_like, shape (n,)
        The observations, ``1 <= n <= 20`` (all :math:`2^n` allocations are enumerated).
    betas : array_like
        Inverse temperatures in [0, 1].
    weights : sequence of float, default (0.5, 0.5)
        The two component weights, positive, summing to 1.
    sigma : float, default 1.0
        The known component standard deviation :math:`\sigma`.
    prior_sd : float, default 3.0
        :math:`s`, the prior standard deviation of each component mean.

    Returns
    -------
    ndarray
        One value per ``beta``.
    """
    y, weights = _check(y, weights, sigma, prior_sd)
    out = []
    for beta in np.atleast_1d(np.asarray(betas, dtype=float)):
        log_terms, mean_loglik = _allocation_terms(beta, y, weights, sigma, prior_sd)
        out.append(np.exp(log_terms - logsumexp(log_terms)) @ mean_loglik)
    return np.array(out)


def mixture_marginal_log_evidence(
    y, beta=1.0, *, weights=(0.5, 0.5), sigma=1.0, prior_sd=3.0, n_nodes=400
):
    r""":math:`\log Z_\beta` of :func:`mixture_marginal_model` by 2-D Gauss-Legendre
    quadrature over :math:`(\mu_0, \mu_1)` on :math:`[-10s, 10s]^2` (in 40 panels per axis).

    :math:`Z_\beta = \int N(\mu_0; 0, s^2)N(\mu_1; 0, s^2)\prod_i(\sum_c w_c N(y_i; \mu_c,
    \sigma^2))^\beta\,d\mu`. At ``beta = 1`` it equals :func:`mixture_log_evidence`; for
    ``beta < 1`` the two models' power posteriors differ. Accuracy about 1e-10 at the
    default ``n_nodes`` for data within a few ``prior_sd`` of 0.

    Parameters
    ----------
    y : array_like, shape (n,)
        The observations, ``1 <= n <= 20`` (all :math:`2^n` allocations are enumerated).
    beta : float, default 1.0
        Power of the likelihood, in [0, 1].
    weights : sequence of float, default (0.5, 0.5)
        The two component weights, positive, summing to 1.
    sigma : float, default 1.0
        The known component standard deviation :math:`\sigma`.
    prior_sd : float, default 3.0
        :math:`s`, the prior standard deviation of each component mean.
    n_nodes : int, default 400
        Quadrature nodes per axis (``n_nodes // 40`` per panel).

    Returns
    -------
    float
    """
    y, weights = _check(y, weights, sigma, prior_sd)
    nodes, log_w = _gauss_legendre(-10.0 * prior_sd, 10.0 * prior_sd, int(n_nodes))
    log_prior = -0.5 * (nodes / prior_sd) ** 2 - 0.5 * np.log(2 * np.pi * prior_sd**2) + log_w
    log_comp = -0.5 * ((y[:, None] - nodes[None, :]) / sigma) ** 2 - 0.5 * np.log(
        2 * np.pi * sigma**2
    )  # (n, nodes)
    a = np.log(weights[0]) + log_comp[:, :, None]
    b = np.log(weights[1]) + log_comp[:, None, :]
    loglik = np.logaddexp(a, b).sum(0)  # (mu0 nodes, mu1 nodes)
    return float(logsumexp(float(beta) * loglik + log_prior[:, None] + log_prior[None, :]))


def _gauss_legendre(lo, hi, n_nodes, panels=40):
    """Nodes and log weights of composite Gauss-Legendre (``n_nodes // panels`` per panel)."""
    x, w = np.polynomial.legendre.leggauss(max(n_nodes // panels, 2))
    edges = np.linspace(lo, hi, panels + 1)
    half = np.diff(edges)[:, None] / 2
    return (edges[:-1, None] + (x + 1) * half).ravel(), np.log((w * half).ravel())


def mixture_allocation_model(y, *, weights=(0.5, 0.5), sigma=1.0, prior_sd=3.0):
    r"""PyMC model with explicit allocations: free ``z`` (``Categorical(weights)``, dims
    ``obs``) and ``mu`` (``Normal(0, prior_sd)``, two components); observed
    ``y ~ Normal(mu[z], sigma)``. Exact answers: :func:`mixture_log_evidence`,
    :func:`mixture_allocation_mean_loglik`.

    Parameters
    ----------
    y : array_like, shape (n,)
        The observations, ``1 <= n <= 20`` (all :math:`2^n` allocations are enumerated).
    weights : sequence of float, default (0.5, 0.5)
        The two component weights, positive, summing to 1.
    sigma : float, default 1.0
        The known component standard deviation :math:`\sigma`.
    prior_sd : float, default 3.0
        :math:`s`, the prior standard deviation of each component mean.

    Returns
    -------
    pymc.Model
    """
    import pymc as pm

    y, weights = _check(y, weights, sigma, prior_sd)
    coords = {"obs": np.arange(y.size), "component": [0, 1]}
    with pm.Model(coords=coords) as model:
        z = pm.Categorical("z", p=weights, dims="obs")
        mu = pm.Normal("mu", 0.0, float(prior_sd), dims="component")
        pm.Normal("y", mu[z], float(sigma), observed=y, dims="obs")
    return model


def mixture_marginal_model(y, *, weights=(0.5, 0.5), sigma=1.0, prior_sd=3.0):
    r"""The same mixture with the allocations summed out (``pm.NormalMixture``): free ``mu``
    only, continuous. Exact answers: :func:`mixture_log_evidence` (at ``beta = 1``),
    :func:`mixture_marginal_log_evidence` (any ``beta``).

    Parameters
    ----------
    y : array_like, shape (n,)
        The observations, ``1 <= n <= 20`` (all :math:`2^n` allocations are enumerated).
    weights : sequence of float, default (0.5, 0.5)
        The two component weights, positive, summing to 1.
    sigma : float, default 1.0
        The known component standard deviation :math:`\sigma`.
    prior_sd : float, default 3.0
        :math:`s`, the prior standard deviation of each component mean.

    Returns
    -------
    pymc.Model
    """
    import pymc as pm

    y, weights = _check(y, weights, sigma, prior_sd)
    coords = {"obs": np.arange(y.size), "component": [0, 1]}
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", 0.0, float(prior_sd), dims="component")
        pm.NormalMixture("y", w=weights, mu=mu, sigma=float(sigma), observed=y, dims="obs")
    return model
