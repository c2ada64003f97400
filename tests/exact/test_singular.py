"""The singular model's exact references (pymc_tempering.exact.singular) against independent
computations."""

import numpy as np
import pytest
import scipy.integrate
import scipy.special
from scipy import stats

from pymc_tempering import exact
from pymc_tempering.exact.singular import _z_mellin, reduced_rank_learning_coefficient


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
        assert -np.log(_z_mellin(n, 2)) == pytest.approx(exact.singular_free_energy(n, 2), abs=1e-9)


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


# --- reduced-rank regression (Aoyagi & Watanabe 2005) -------------------------------------------
def test_reduced_rank_coefficient_is_half_the_dimension_at_a_regular_point():
    """At true rank r = H the point is regular: lambda = dim / 2, dim = H (M + N) - H^2 (the
    rank-H matrices), m = 1, in every case of the theorem; an independent count."""
    for m_ in range(1, 6):
        for n_ in range(1, 6):
            for h in range(1, min(m_, n_) + 1):
                assert reduced_rank_learning_coefficient(m_, n_, h, h) == (
                    (h * (m_ + n_) - h * h) / 2,
                    1,
                )


def test_reduced_rank_coefficient_values():
    assert reduced_rank_learning_coefficient(3, 3, 2, 1) == (3.5, 2)  # issue 33's network
    # H = 1, r = 0: K = |a|^2 |b|^2, lambda = min(M, N) / 2, multiplicity 2 when M = N
    for m_ in range(1, 6):
        for n_ in range(1, 6):
            expected = (min(m_, n_) / 2, 2 if m_ == n_ else 1)
            assert reduced_rank_learning_coefficient(m_, n_, 1, 0) == expected
    # never above the regular count of the full M x N model, nor below 0
    for args in [(4, 2, 3, 1), (2, 5, 2, 0), (6, 6, 3, 2), (1, 1, 4, 0)]:
        lam, mult = reduced_rank_learning_coefficient(*args)
        assert 0 <= lam <= args[0] * args[1] / 2 and mult in (1, 2)
    with pytest.raises(ValueError, match="true_rank"):
        reduced_rank_learning_coefficient(3, 3, 2, 3)
