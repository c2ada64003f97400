"""The variable-selection references (pymc_tempering.exact.variable_selection) against the
multivariate-normal marginal per subset, finite differences, and a brute-force integral of the
PyMC model's own log density over the coefficients."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.integrate
from pytensor.graph.replace import vectorize_graph
from scipy import stats
from scipy.special import logsumexp

from pymc_tempering.exact.variable_selection import (
    variable_selection_data,
    variable_selection_log_evidence,
    variable_selection_mean_loglik,
    variable_selection_model,
    variable_selection_posterior,
)

PRIOR = {"p": 0.3, "tau": 1.5, "sigma": 0.8}


def _brute_force_by_subset(X, y, p, tau, sigma):
    """log p(gamma) + log N(y; 0, sigma^2 I + tau^2 X_g X_g^T) for every subset, and the subsets."""
    n, k = X.shape
    subsets = np.array(np.meshgrid(*[[0, 1]] * k, indexing="ij")).reshape(k, -1).T
    log_terms = []
    for subset in subsets:
        a = X[:, subset.astype(bool)]
        cov = sigma**2 * np.eye(n) + tau**2 * a @ a.T
        log_prior = stats.bernoulli(p).logpmf(subset).sum()
        log_terms.append(log_prior + stats.multivariate_normal(np.zeros(n), cov).logpdf(y))
    return subsets, np.array(log_terms)


def test_log_evidence_and_inclusion_against_multivariate_normal():
    data = variable_selection_data(n=30, k=8, seed=5)
    subsets, log_terms = _brute_force_by_subset(data.X, data.y, **PRIOR)
    value = variable_selection_log_evidence(data.X, data.y, **PRIOR)
    assert value == pytest.approx(logsumexp(log_terms), abs=1e-9)
    weights = np.exp(log_terms - logsumexp(log_terms))
    post = variable_selection_posterior(data.X, data.y, **PRIOR)
    np.testing.assert_allclose(post.inclusion_probability, weights @ subsets, atol=1e-12)
    assert np.all(np.diff(post.probability) <= 0) and post.probability.sum() == pytest.approx(1)
    best = subsets[np.argmax(weights)]
    np.testing.assert_array_equal(post.subsets[0], best)


def test_default_data_split_both_collinear_pairs():
    """The truth uses x0 and x2; x1 and x3 nearly copy them, so the posterior splits each pair
    (a single-flip sampler must cross 'both in' or 'neither in' to move between the modes)."""
    data = variable_selection_data()
    assert data.X.shape == (50, 8) and np.flatnonzero(data.coefficients).tolist() == [0, 2]
    corr = np.corrcoef(data.X.T)
    assert corr[0, 1] > 0.95 and corr[2, 3] > 0.95 and abs(corr[0, 4]) < 0.5
    incl = variable_selection_posterior(data.X, data.y).inclusion_probability
    assert np.all((incl[:4] > 0.4) & (incl[:4] < 0.75)) and np.all(incl[4:] < 0.2)
    np.testing.assert_array_equal(variable_selection_data().X, data.X)  # seeded


def test_mean_loglik_is_the_derivative_and_integrates_to_log_z():
    data = variable_selection_data(n=30, k=8, seed=5)
    X, y = data.X, data.y
    for beta in (0.0, 0.01, 0.3, 1.0):
        h = 1e-5
        lo, hi = max(beta - h, 0.0), min(beta + h, 1.0)
        slope = (
            variable_selection_log_evidence(X, y, hi, **PRIOR)
            - variable_selection_log_evidence(X, y, lo, **PRIOR)
        ) / (hi - lo)
        mean = variable_selection_mean_loglik(X, y, [(lo + hi) / 2], **PRIOR)[0]
        assert mean == pytest.approx(slope, rel=1e-6)
    t = np.linspace(0.0, 1.0, 401)
    curve = variable_selection_mean_loglik(X, y, t**3, **PRIOR) * 3 * t**2
    integral = scipy.integrate.simpson(curve, x=t)
    assert integral == pytest.approx(variable_selection_log_evidence(X, y, **PRIOR), abs=1e-4)


def test_pymc_model_log_z_by_brute_force_integration_k2():
    """The PyMC model's own log density, summed over gamma and integrated over b on a grid."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((6, 2))
    y = X @ [1.0, 0.5] + rng.standard_normal(6)
    model = variable_selection_model(X, y, **PRIOR)
    gamma, b = (model.rvs_to_values[model[name]] for name in ("gamma", "b"))
    grid = pt.matrix("grid")
    logp = pytensor.function([gamma, grid], vectorize_graph(model.logp(), {b: grid}))
    nodes, weights = np.polynomial.legendre.leggauss(16)
    edges = np.linspace(-10.0, 10.0, 26)  # 25 panels of width 0.8 on each axis
    half = np.diff(edges)[:, None] / 2
    axis = (edges[:-1, None] + (nodes + 1) * half).ravel()
    log_w = np.log((weights * half).ravel())
    points = np.stack(np.meshgrid(axis, axis, indexing="ij"), -1).reshape(-1, 2)
    log_w2 = (log_w[:, None] + log_w[None, :]).ravel()
    terms = [
        logsumexp(logp(np.array(g, dtype=np.int64), points) + log_w2)
        for g in ([0, 0], [0, 1], [1, 0], [1, 1])
    ]
    # PyTensor folds the N(0, tau) constant in float32: about 1.2e-8 per coefficient
    assert logsumexp(terms) == pytest.approx(
        variable_selection_log_evidence(X, y, **PRIOR), abs=1e-7
    )


def test_bad_input_is_named():
    X = np.zeros((5, 17))
    with pytest.raises(ValueError, match="at most 16"):
        variable_selection_log_evidence(X, np.zeros(5))
    with pytest.raises(ValueError, match="`y`"):
        variable_selection_log_evidence(np.zeros((5, 2)), np.zeros(4))
    with pytest.raises(ValueError, match="p=1.5"):
        variable_selection_posterior(np.zeros((5, 2)), np.zeros(5), p=1.5)
