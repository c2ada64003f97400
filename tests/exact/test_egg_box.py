"""The egg box (pymc_tempering.exact.egg_box) against quadrature and Monte Carlo."""

import numpy as np
import pytest
import scipy.integrate
import scipy.special

from pymc_tempering import exact


# --- the egg box -------------------------------------------------------------------------------
def test_egg_box_log_evidence_against_gauss_legendre_on_the_full_square():
    """No periodicity used: Gauss-Legendre on 300 pieces per axis of [0, 10 pi]."""
    nodes, weights = np.polynomial.legendre.leggauss(8)
    edges = np.linspace(0.0, exact.EGG_BOX_SIDE, 301)
    half = np.diff(edges)[:, None] / 2
    x = (edges[:-1, None] + (nodes + 1) * half).ravel()
    log_w = np.log((weights * half).ravel())
    log_f = exact.egg_box_loglik(x[:, None], x[None, :]) + log_w[:, None] + log_w[None, :]
    ref = scipy.special.logsumexp(log_f) - 2 * np.log(exact.EGG_BOX_SIDE)
    assert exact.egg_box_log_evidence() == pytest.approx(ref, abs=1e-10)
    assert exact.egg_box_log_evidence(n_grid=2048) == pytest.approx(ref, abs=1e-10)
    assert abs(exact.egg_box_log_evidence() - 235.88) > 0.02  # the published value is coarse


def test_egg_box_monte_carlo():
    xy = np.random.default_rng(5).uniform(0, exact.EGG_BOX_SIDE, size=(2, 1_000_000))
    ratio = np.exp(exact.egg_box_loglik(*xy) - 243.0)
    mcse = ratio.std() / np.sqrt(ratio.size) / ratio.mean()
    estimate = 243.0 + np.log(ratio.mean())
    assert exact.egg_box_log_evidence() == pytest.approx(estimate, abs=4 * mcse)


def test_egg_box_power_moments_are_derivatives_of_log_z():
    for beta in (1e-3, 0.05, 0.5, 1.0):
        h = 1e-4 * beta
        log_z = [exact.egg_box_log_evidence(b) for b in (beta - h, beta, beta + h)]
        mean, var = exact.egg_box_power_moments([beta])
        assert mean[0] == pytest.approx((log_z[2] - log_z[0]) / (2 * h), rel=1e-7)
        assert var[0] == pytest.approx((log_z[2] - 2 * log_z[1] + log_z[0]) / h**2, rel=1e-4)
    mean, var = exact.egg_box_power_moments([0.0])  # the prior: uniform (u, v) on one period
    u = np.linspace(0, 2 * np.pi, 4001)[:-1]
    prior = exact.egg_box_loglik(2 * u[:, None], 2 * u[None, :])
    assert mean[0] == pytest.approx(prior.mean(), rel=1e-12)
    assert var[0] == pytest.approx(prior.var(), rel=1e-12)


def test_egg_box_model_is_the_uniform_prior_and_the_egg_box_loglik():
    """The PyMC model's Potential is :func:`egg_box_loglik` and its priors are uniform on
    the square (the prior's log density on the constrained values is -2 log(10 pi)), at a
    point given on the unconstrained (interval-transformed) scale."""
    model = exact.egg_box_model()
    z = {"x_interval__": -1.2, "y_interval__": 0.7}
    x, y = (exact.EGG_BOX_SIDE * scipy.special.expit(z[f"{v}_interval__"]) for v in "xy")
    loglik = model.compile_logp(vars=model.potentials, jacobian=False)(z)
    np.testing.assert_allclose(loglik, exact.egg_box_loglik(x, y), rtol=1e-12)
    logprior = model.compile_logp(vars=model.free_RVs, jacobian=False)(z)
    np.testing.assert_allclose(logprior, -2 * np.log(exact.EGG_BOX_SIDE), rtol=1e-12)
