"""The exact references in pymc_tempering.exact against independent computations."""

import numpy as np
import pytest
import scipy.integrate
import scipy.special
from scipy import stats

from pymc_tempering import exact


# --- singular model ----------------------------------------------------------------------------
def _brute_force_z(n, d):
    """Z by direct quadrature over w (d = 2) or over (w1, w2) with w3 integrated out (d = 3)."""
    if d == 2:

        def f(w2, w1):
            return np.exp(-n * w1**2 * w2**2) * stats.norm.pdf(w1) * stats.norm.pdf(w2)

        inner = 4.0 / np.sqrt(n)  # the ridge along the axes has width ~ 1/sqrt(n)
        pieces = [(0, inner, 0, 8), (inner, 8, 0, inner), (inner, 8, inner, 8)]
    else:

        def f(w2, w1):
            a = n * w1**2 * w2**2
            return stats.norm.pdf(w1) * stats.norm.pdf(w2) / np.sqrt(1 + 2 * a)

        pieces = [(0, 1, 0, 8), (1, 8, 0, 8)]
    total = 0.0
    for a, b, c, e in pieces:
        total += scipy.integrate.dblquad(f, a, b, c, e, epsabs=1e-9, epsrel=1e-7)[0]
    return 4.0 * total


@pytest.mark.parametrize(("n", "d"), [(2000.0, 2), (300.0, 3)])
def test_singular_free_energy_against_2d_quadrature(n, d):
    assert exact.singular_free_energy(n, d) == pytest.approx(
        -np.log(_brute_force_z(n, d)), abs=1e-6
    )


def test_singular_free_energy_quadrature_and_mellin_agree():
    for n in (1.0, 1e3, 1e5, 1e7):
        assert -np.log(exact._z_mellin(n, 2)) == pytest.approx(
            exact.singular_free_energy(n, 2), abs=1e-9
        )


@pytest.mark.parametrize("d", [1, 4])
def test_singular_free_energy_monte_carlo(d):
    n = 200.0
    rng = np.random.default_rng(0)
    w = rng.standard_normal((400_000, d))
    # integrate the last coordinate out exactly: lower-variance Monte Carlo of Z
    a = n * np.prod(w[:, :-1] ** 2, axis=1)
    z = 1.0 / np.sqrt(1.0 + 2.0 * a)
    mcse = z.std() / np.sqrt(z.size) / z.mean()
    assert exact.singular_free_energy(n, d) == pytest.approx(-np.log(z.mean()), abs=5 * mcse)


def test_singular_mean_loglik_is_the_derivative_of_f():
    n, h = 1e4, 1e-5
    for d in (2, 3):
        for t in (1e-3, 0.1, 1.0):
            f_plus = exact.singular_free_energy(n * t * (1 + h), d)
            f_minus = exact.singular_free_energy(n * t * (1 - h), d)
            derivative = -(f_plus - f_minus) / (2 * h * t)
            assert exact.singular_mean_loglik(n, [t], d)[0] == pytest.approx(derivative, rel=1e-6)
    assert exact.singular_mean_loglik(n, [0.0])[0] == -n  # E_prior[-n w1^2 w2^2] = -n


def test_singular_mean_loglik_integrates_to_minus_f():
    n = 1e3
    t = np.concatenate([[0.0], np.geomspace(1e-7, 1.0, 150)])
    e = exact.singular_mean_loglik(n, t)
    assert scipy.integrate.trapezoid(e, t) == pytest.approx(
        -exact.singular_free_energy(n), abs=1e-2
    )


def test_asymptotic_formula_is_close_for_d2_only_with_its_constant():
    for n in (1e4, 1e5):
        f = exact.singular_free_energy(n)
        assert exact.singular_free_energy_asymptotic(n) == pytest.approx(f, abs=1e-3)
        assert abs(exact.singular_free_energy_asymptotic(n, constant=0.0) - f) > 0.1


def test_singular_free_energy_bad_input():
    assert exact.singular_free_energy(0.0) == 0.0
    with pytest.raises(ValueError):
        exact.singular_free_energy(-1.0)


# --- the lecture model -------------------------------------------------------------------------
def test_lecture_log_evidence_against_multivariate_normal_and_quadrature():
    x = np.random.default_rng(1).normal(0.5, 1.0, size=20)
    for b in (0.05, 1.0, 3.0):
        cov = np.eye(x.size) + b**2 * np.ones((x.size, x.size))
        ref = stats.multivariate_normal(np.zeros(x.size), cov).logpdf(x)
        assert exact.lecture_log_evidence(x, b) == pytest.approx(ref, abs=1e-9)

        def integrand(mu, b=b, ref=ref):
            return np.exp(stats.norm.logpdf(x, mu, 1).sum() - ref) * stats.norm.pdf(mu, 0, b)

        ratio = scipy.integrate.quad(integrand, -10, 10, points=[x.mean()], epsabs=1e-12)[0]
        assert np.log(ratio) == pytest.approx(0.0, abs=1e-7)
    grid = exact.lecture_log_evidence(x, np.array([0.5, 1.0]))
    assert grid.shape == (2,) and grid[1] == pytest.approx(exact.lecture_log_evidence(x, 1.0))


# --- Normal-Gamma regression -------------------------------------------------------------------
def test_normal_gamma_against_student_t_marginal():
    # marginally y ~ multivariate Student-t(2 a0, X m0, (b0/a0)(I + X Q0^-1 X^T))
    rng = np.random.default_rng(2)
    X = np.column_stack([np.ones(15), rng.normal(size=15)])
    y = X @ [1.0, -0.5] + rng.normal(size=15)
    m0, q0, a0, b0 = np.array([0.5, 0.0]), np.diag([2.0, 0.5]), 3.0, 2.0
    shape = (b0 / a0) * (np.eye(15) + X @ np.linalg.solve(q0, X.T))
    ref = stats.multivariate_t(X @ m0, shape, df=2 * a0).logpdf(y)
    assert exact.normal_gamma_log_evidence(y, X, m0, q0, a0, b0) == pytest.approx(ref, abs=1e-9)


def test_radiata_pine_published_values():
    """The variant table (row 9 = 3670, 32.3, 29.0) gives Friel & Pettitt's published values."""
    rng = np.random.default_rng(3)
    x = rng.uniform(20, 35, size=42)
    z = x - rng.uniform(0, 4, size=42)
    y = 3000 + 185 * (x - x.mean()) + rng.normal(0, 300, size=42)
    # the original table ships outside the package; use it when it is there
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "shared" / "data" / "radiata_pine.csv"
    if path.is_file():
        data = exact.read_radiata_pine(path)
        y, x, z = data["y"].copy(), data["x"].copy(), data["z"].copy()
        y[8], x[8], z[8] = 3670.0, 32.3, 29.0
        assert exact.radiata_pine_log_evidence(y, x) == pytest.approx(-310.1283, abs=1e-4)
        assert exact.radiata_pine_log_evidence(y, z) == pytest.approx(-301.7046, abs=1e-4)
    else:  # at least the closed form against the generic one
        X = np.column_stack([np.ones(42), x - x.mean()])
        ref = exact.normal_gamma_log_evidence(y, X, **exact.RADIATA_PINE_PRIOR)
        assert exact.radiata_pine_log_evidence(y, x) == pytest.approx(ref)


def test_two_mode_log_evidence_against_quadrature():
    """The closed form against a 2-D grid integral of prior * mixture likelihood."""
    import pymc_tempering.exact as ex

    grid = np.linspace(-80, 80, 1601)
    dx = grid[1] - grid[0]
    X, Y = np.meshgrid(grid, grid, indexing="ij")
    prior = np.exp(-(X**2 + Y**2) / (2 * 20.0**2)) / (2 * np.pi * 20.0**2)
    lik = sum(
        w * np.exp(-((X - m[0]) ** 2 + (Y - m[1]) ** 2) / 2) / (2 * np.pi)
        for w, m in zip(ex.TWO_MODE_WEIGHTS, ex.TWO_MODE_MEANS, strict=True)
    )
    numeric = np.log(np.sum(prior * lik) * dx * dx)
    assert abs(numeric - ex.two_mode_log_evidence()) < 1e-6


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
