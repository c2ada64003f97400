"""Parameter-dependent support and hard constraints (pymc_tempering.exact.support) against
quadrature and Monte Carlo."""

import numpy as np
import pytest
import scipy.integrate
import scipy.special
from scipy import stats

from pymc_tempering import exact


# --- parameter-dependent support ---------------------------------------------------------------
@pytest.mark.parametrize("y", [[-1.0, 2.0, 0.5], [6.0, 7.0], [-12.0, -9.5, -10.8]])
def test_uniform_support_log_evidence_against_quadrature(y):
    y = np.asarray(y)
    lo, hi = y.max(), y.min() + 10.0
    scale = stats.norm.pdf(np.clip(0.0, lo, hi))  # the largest prior density on the support
    mass = scipy.integrate.quad(
        lambda u: stats.norm.pdf(u) / scale, lo, hi, epsabs=0, epsrel=1e-12
    )[0]
    ref = np.log(mass) + np.log(scale) - y.size * np.log(10.0)
    assert exact.uniform_support_log_evidence(y) == pytest.approx(ref, abs=1e-9)
    probability = exact.uniform_support_prior_probability(y)
    assert np.log(probability) == pytest.approx(ref + y.size * np.log(10.0), abs=1e-9)


def test_uniform_support_monte_carlo_and_mean_loglik():
    y = np.array([-1.0, 2.0, 0.5])
    u = np.random.default_rng(4).standard_normal(400_000)
    inside = (u >= y.max()) & (u <= y.min() + 10.0)
    z = inside * 10.0**-y.size
    mcse = z.std() / np.sqrt(z.size)
    assert np.exp(exact.uniform_support_log_evidence(y)) == pytest.approx(z.mean(), abs=4 * mcse)
    e = exact.uniform_support_mean_loglik(y, [0.0, 0.01, 1.0])
    assert e[0] == -np.inf and np.allclose(e[1:], -3 * np.log(10.0))
    assert exact.uniform_support_log_evidence([0.0, 11.0]) == -np.inf
    assert exact.uniform_support_prior_probability([0.0, 11.0]) == 0.0


# --- hard constraint as a Potential ------------------------------------------------------------
def _constrained_log_z(y, beta):
    def f(x):
        return np.exp(beta * stats.norm.logpdf(y, x, 1.0).sum() + 20.0) * stats.norm.pdf(x)

    return np.log(scipy.integrate.quad(f, 0, 12, epsabs=0, epsrel=1e-12)[0]) - 20.0


@pytest.mark.parametrize("y", [[0.3, -0.2, 1.1, 0.4], [-1.5, -0.7, -2.2, -0.9, -1.1]])
def test_constrained_log_evidence_and_mean_loglik_against_quadrature(y):
    y = np.asarray(y)
    assert exact.constrained_log_evidence(y) == pytest.approx(_constrained_log_z(y, 1.0), abs=1e-9)
    for beta in (0.02, 0.4, 0.999):
        h = 1e-4 * beta
        slope = (_constrained_log_z(y, beta + h) - _constrained_log_z(y, beta - h)) / (2 * h)
        assert exact.constrained_mean_loglik(y, [beta])[0] == pytest.approx(slope, rel=1e-6)
    assert exact.constrained_mean_loglik(y, [0.0])[0] == -np.inf
