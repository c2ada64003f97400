"""The two-component mixture references (pymc_tempering.exact.mixture) against 2-D quadrature
over the means, finite differences, and the PyMC models' own densities."""

import itertools

import numpy as np
import pytest
import scipy.integrate
from scipy import stats
from scipy.special import logsumexp

from pymc_tempering.exact.mixture import (
    mixture_allocation_mean_loglik,
    mixture_allocation_model,
    mixture_data,
    mixture_log_evidence,
    mixture_marginal_log_evidence,
    mixture_marginal_model,
)

PRIOR = {"weights": (0.3, 0.7), "sigma": 0.9, "prior_sd": 2.5}
Y_SMALL = np.array([-1.8, 2.1, -0.4, 1.3, 2.6])


def _allocation_log_z_grid(y, beta, weights, sigma, prior_sd):
    """Sum over allocations of p(z) * a 2-D Gauss-Legendre integral over (mu0, mu1) of the
    allocated likelihood: no conjugacy used."""
    nodes, w = np.polynomial.legendre.leggauss(20)
    edges = np.linspace(-20.0, 20.0, 41)  # 8 prior sd: the empty-component case
    half = np.diff(edges)[:, None] / 2
    mu = (edges[:-1, None] + (nodes + 1) * half).ravel()
    log_w = np.log((w * half).ravel()) + stats.norm.logpdf(mu, 0, prior_sd)
    # log N(y_i; mu, sigma)^beta on the grid, one row per observation
    log_lik = beta * stats.norm.logpdf(y[:, None], mu[None, :], sigma)
    total = []
    for z in itertools.product((0, 1), repeat=y.size):
        z = np.array(z)
        grid = (log_lik[z == 0].sum(0) + log_w)[:, None] + (log_lik[z == 1].sum(0) + log_w)[None]
        total.append(logsumexp(grid) + np.log(np.asarray(weights)[z]).sum())
    return logsumexp(total)


@pytest.mark.parametrize("beta", [1.0, 0.35])
def test_allocation_log_evidence_against_2d_quadrature(beta):
    ref = _allocation_log_z_grid(Y_SMALL, beta, **PRIOR)
    assert mixture_log_evidence(Y_SMALL, beta, **PRIOR) == pytest.approx(ref, abs=1e-7)


def test_marginal_model_evidence_equals_allocation_evidence_at_beta_1():
    data = mixture_data(14)
    exact = mixture_log_evidence(data.y)
    assert mixture_marginal_log_evidence(data.y) == pytest.approx(exact, abs=1e-9)
    assert mixture_marginal_log_evidence(data.y, n_nodes=800) == pytest.approx(exact, abs=1e-9)
    # the power posteriors differ: (sum_c w_c N)^beta is not sum_c w_c N^beta
    gap = mixture_marginal_log_evidence(data.y, 0.3) - mixture_log_evidence(data.y, 0.3)
    assert gap > 1.0


def test_allocation_mean_loglik_is_the_derivative_and_integrates_to_log_z():
    y = mixture_data(10, seed=1).y
    for beta in (0.0, 0.02, 0.5, 1.0):
        h = 1e-5
        lo, hi = max(beta - h, 0.0), min(beta + h, 1.0)
        slope = (mixture_log_evidence(y, hi, **PRIOR) - mixture_log_evidence(y, lo, **PRIOR)) / (
            hi - lo
        )
        value = mixture_allocation_mean_loglik(y, [(lo + hi) / 2], **PRIOR)[0]
        assert value == pytest.approx(slope, rel=1e-6)
    t = np.linspace(0.0, 1.0, 201)
    curve = mixture_allocation_mean_loglik(y, t**3, **PRIOR) * 3 * t**2
    integral = scipy.integrate.simpson(curve, x=t)
    assert integral == pytest.approx(mixture_log_evidence(y, **PRIOR), abs=1e-4)


def test_label_switching_gives_two_equal_modes():
    """With equal weights, relabelling (z -> 1 - z) leaves every allocation's weight unchanged."""
    from pymc_tempering.exact.mixture import _allocation_terms

    y = mixture_data(12).y
    log_terms, _ = _allocation_terms(1.0, y, np.array([0.5, 0.5]), 1.0, 3.0)
    flipped = (2**y.size - 1) - np.arange(2**y.size)  # the complement of each bit pattern
    np.testing.assert_allclose(log_terms, log_terms[flipped], atol=1e-12)
    best = np.argsort(log_terms)[-2:]
    assert set(best) == {best[0], flipped[best[0]]}


def test_pymc_models_have_the_exact_references_density():
    y = mixture_data(8).y
    alloc = mixture_allocation_model(y, **PRIOR)
    marginal = mixture_marginal_model(y, **PRIOR)
    alloc_logp = alloc.compile_logp()
    marginal_logp = marginal.compile_logp()
    rng = np.random.default_rng(0)
    w, sigma, prior_sd = np.array(PRIOR["weights"]), PRIOR["sigma"], PRIOR["prior_sd"]
    for _ in range(5):
        mu, z = rng.normal(0, 2, size=2), rng.integers(0, 2, size=y.size)
        prior = stats.norm.logpdf(mu, 0, prior_sd).sum()
        ref = prior + np.log(w[z]).sum() + stats.norm.logpdf(y, mu[z], sigma).sum()
        assert alloc_logp({"z": z, "mu": mu}) == pytest.approx(ref, abs=1e-6)
        mix = logsumexp(np.log(w) + stats.norm.logpdf(y[:, None], mu, sigma), axis=1).sum()
        assert marginal_logp({"mu": mu}) == pytest.approx(prior + mix, abs=1e-6)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="at most|1 to 20"):
        mixture_log_evidence(np.zeros(21))
    with pytest.raises(ValueError, match="weights"):
        mixture_log_evidence(Y_SMALL, weights=(0.5, 0.6))
    with pytest.raises(ValueError, match="beta"):
        mixture_log_evidence(Y_SMALL, 1.2)
