"""Eight schools (pymc_tempering.exact.eight_schools) against a 2-D quadrature."""

import numpy as np
import pytest
import scipy.integrate
import scipy.special
from scipy import stats

from pymc_tempering import exact


# --- eight schools -----------------------------------------------------------------------------
def _gauss_legendre(lo, hi, pieces, order=20):
    """Nodes and weights of composite Gauss-Legendre on [lo, hi]."""
    x, w = np.polynomial.legendre.leggauss(order)
    edges = np.linspace(lo, hi, pieces + 1)
    half = np.diff(edges)[:, None] / 2
    return (edges[:-1, None] + (x + 1) * half).ravel(), (w * half).ravel()


def _schools_log_z_2d(beta):
    """log Z_beta by a 2-D Gauss-Legendre grid over (mu, phi = atan(tau / 5)), theta integrated
    out school by school (no Sherman-Morrison, no conditioning on tau)."""
    y, sigma = exact.EIGHT_SCHOOLS_Y, exact.EIGHT_SCHOOLS_SIGMA
    # N(y; theta, s^2)^beta = (2 pi s^2)^((1 - beta)/2) beta^(-1/2) N(y; theta, s^2 / beta)
    const = np.sum(0.5 * (1 - beta) * np.log(2 * np.pi * sigma**2) - 0.5 * np.log(beta))
    mu, w_mu = _gauss_legendre(-45.0, 45.0, 30)
    phi, w_phi = _gauss_legendre(0.0, np.pi / 2, 40)
    tau = 5.0 * np.tan(phi)  # HalfCauchy(5) is uniform in phi on (0, pi / 2)
    sd = np.sqrt(sigma**2 / beta + tau[None, :, None] ** 2)
    log_lik = stats.norm.logpdf(y, mu[:, None, None], sd).sum(-1)
    log_f = log_lik + stats.norm.logpdf(mu, 0, 5)[:, None] + np.log(2 / np.pi)
    log_w = np.log(w_mu)[:, None] + np.log(w_phi)[None, :]
    return scipy.special.logsumexp(log_f + log_w) + const


def test_eight_schools_log_evidence_issue_value_and_2d_quadrature():
    value = exact.eight_schools_log_evidence()
    assert round(value, 4) == -31.3113  # the value the project's issue quotes
    assert value == pytest.approx(_schools_log_z_2d(1.0), abs=1e-9)
    for beta in (0.01, 0.3):
        ref = _schools_log_z_2d(beta)
        assert exact.eight_schools_log_evidence(beta) == pytest.approx(ref, abs=1e-9)


def test_eight_schools_mean_loglik_is_the_derivative_and_integrates_to_log_z():
    for beta in (1e-4, 0.05, 0.5, 0.9):
        h = 1e-4 * beta
        slope = (
            exact.eight_schools_log_evidence(beta + h) - exact.eight_schools_log_evidence(beta - h)
        ) / (2 * h)
        assert exact.eight_schools_mean_loglik([beta])[0] == pytest.approx(slope, rel=1e-6)
    # E_beta falls like beta^-1/2 near 0: integrate over t = sqrt(beta), d beta = 2 t dt
    t = np.linspace(0.0, 1.0, 201)[1:]
    curve = exact.eight_schools_mean_loglik(t**2) * 2 * t
    # the t -> 0 limit of 2 t E_{t^2}, extrapolated from the first rungs (quadratic in t)
    head = np.polyval(np.polyfit(t[:4], curve[:4], 2), 0.0)
    integral = scipy.integrate.simpson(np.concatenate([[head], curve]), x=np.r_[0.0, t])
    assert integral == pytest.approx(exact.eight_schools_log_evidence(), abs=1e-3)
    assert exact.eight_schools_mean_loglik([0.0])[0] == -np.inf
