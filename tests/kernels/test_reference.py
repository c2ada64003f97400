"""The Gaussian reference q of ExchangeMC's variational leg (pymc_tempering.kernels.reference):
its draws, log density, gradient and normalising constant against the exact Gaussian, on a
strongly correlated q with unequal scales (a round q hides a transposed factor), and its fits
against the sample moments of the draws (dense up to DENSE_MAX_PARAMS, diagonal above)."""

import numpy as np
import pytest
from scipy import stats

from pymc_tempering.kernels.dense import dense_moments_init, dense_welford_update
from pymc_tempering.kernels.moments import moments_init, welford_update
from pymc_tempering.kernels.reference import (
    DENSE_MAX_PARAMS,
    fit_reference,
    gaussian_reference,
    reference_from_moments,
    reference_grad,
    reference_logpdf,
    reference_sample,
)

SCALES = np.array([0.4, 3.0, 1.5])
CORR = np.array([[1.0, 0.9, -0.5], [0.9, 1.0, -0.6], [-0.5, -0.6, 1.0]])
COV = CORR * np.outer(SCALES, SCALES)  # rho = 0.9 between scales 0.4 and 3
MEAN = np.array([1.0, -2.0, 0.5])


def _points(n=50, seed=1):
    return MEAN + 2.0 * np.random.default_rng(seed).normal(size=(n, 3)) * SCALES


def test_draws_have_the_exact_mean_and_covariance_of_a_correlated_q():
    """Each mean and covariance entry of 40000 draws within 4 standard errors of the exact one
    (var of a product of two centred Gaussians: S_ii S_jj + S_ij^2). Drawing with the
    transposed Cholesky factor gives L^T L: thousands of standard errors off here."""
    q = gaussian_reference(MEAN, COV)
    n = 40_000
    draws = reference_sample(q, n, np.random.default_rng(7))
    assert draws.shape == (n, 3)
    mean_se = np.sqrt(np.diag(COV) / n)
    assert np.all(np.abs(draws.mean(axis=0) - MEAN) < 4 * mean_se), draws.mean(axis=0)
    dev = draws - MEAN
    cov = dev.T @ dev / n
    cov_se = np.sqrt((np.outer(np.diag(COV), np.diag(COV)) + COV**2) / n)
    z = (cov - COV) / cov_se
    assert np.all(np.abs(z) < 4), z


def test_log_density_and_its_normalising_constant_are_the_exact_gaussians():
    """log q against scipy's multivariate normal; log_norm = -d/2 log(2 pi) - 1/2 log det S.
    Tolerance: twice the first-order change that the jitter (1e-10 of the mean variance, on
    the diagonal) makes, delta/2 (|S^-1 (x - mean)|^2 + tr S^-1) per point."""
    q = gaussian_reference(MEAN, COV)
    x = _points()
    exact = stats.multivariate_normal(MEAN, COV)
    precision = np.linalg.inv(COV)
    delta = 1e-10 * np.mean(np.diag(COV))
    bound = delta * (np.sum(((x - MEAN) @ precision) ** 2, axis=1) + np.trace(precision))
    error = np.abs(reference_logpdf(q, x) - exact.logpdf(x))
    assert np.all(error < bound), (error / bound).max()
    log_det = np.linalg.slogdet(COV)[1]
    exact_norm = -1.5 * np.log(2 * np.pi) - 0.5 * log_det
    assert abs(q.log_norm - exact_norm) < delta * np.trace(precision)
    np.testing.assert_allclose(reference_logpdf(q, MEAN[None]), [q.log_norm], atol=1e-12)


def test_the_gradient_is_minus_the_precision_times_the_deviation():
    """grad log q(x) = -S^{-1} (x - mean) in closed form (the jitter changes it by a relative
    1e-10 mean(diag S) / lambda_min(S), about 1e-8 here), and the central finite difference of
    reference_logpdf (step 1e-5)."""
    q = gaussian_reference(MEAN, COV)
    x = _points()
    closed = -(x - MEAN) @ np.linalg.inv(COV)  # S symmetric
    np.testing.assert_allclose(reference_grad(q, x), closed, rtol=1e-7, atol=1e-8)
    h = 1e-5
    for i in range(3):
        step = np.zeros(3)
        step[i] = h
        fd = (reference_logpdf(q, x + step) - reference_logpdf(q, x - step)) / (2 * h)
        np.testing.assert_allclose(reference_grad(q, x)[:, i], fd, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("scale", [1e-8, 1.0, 1e8])
def test_the_jitter_is_relative_to_the_mean_variance(scale):
    """chol chol^T reproduces the covariance to 1e-8 (relative) at any scale: the jitter of
    1e-10 times the mean variance, never an absolute one."""
    q = gaussian_reference(MEAN, scale * COV)
    np.testing.assert_allclose(q.chol @ q.chol.T, scale * COV, rtol=1e-8, atol=1e-8 * scale)
    assert np.all(np.triu(q.chol, 1) == 0)


def test_a_covariance_that_is_not_positive_definite_falls_back_to_its_diagonal():
    """Variances 4 and 9 with covariance 7 (correlation 7/6): q = N(mean, diag(4, 9)), standard
    deviations 2 and 3 on the factor's diagonal."""
    q = gaussian_reference(np.zeros(2), np.array([[4.0, 7.0], [7.0, 9.0]]))
    np.testing.assert_array_equal(q.chol, np.diag([2.0, 3.0]))
    x = _points()[:, :2]
    exact = stats.multivariate_normal(np.zeros(2), np.diag([4.0, 9.0])).logpdf(x)
    np.testing.assert_allclose(reference_logpdf(q, x), exact, atol=1e-10)


def _correlated_draws(d, n, seed):
    """n draws in d dimensions with each coordinate correlated 0.9 to the one before."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, d))
    x = np.empty_like(z)
    x[:, 0] = z[:, 0]
    for i in range(1, d):
        x[:, i] = 0.9 * x[:, i - 1] + np.sqrt(1 - 0.81) * z[:, i]
    return x * np.linspace(0.5, 2.0, d) + np.arange(d)


def test_a_fit_is_the_draws_mean_and_sample_covariance():
    """Dense: np.cov (ddof = 1) of the draws; diagonal: their ddof = 1 variances, nothing off
    the diagonal; both to 1e-8 (the jitter)."""
    x = _correlated_draws(3, 30, seed=2)
    dense = fit_reference(x)
    np.testing.assert_allclose(dense.mean, x.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(dense.chol @ dense.chol.T, np.cov(x.T), rtol=1e-8, atol=1e-12)
    diagonal = fit_reference(x, dense=False)
    np.testing.assert_allclose(np.diag(diagonal.chol) ** 2, x.var(axis=0, ddof=1), rtol=1e-8)
    assert np.all(diagonal.chol == np.diag(np.diag(diagonal.chol)))
    with pytest.raises(ValueError, match="at least 2 draws"):
        fit_reference(x[:1])


def test_the_fit_is_dense_up_to_dense_max_params_and_diagonal_above():
    """64 parameters: the full covariance (neighbours correlated 0.9 show off the diagonal);
    65: the diagonal only."""
    for d, dense in [(DENSE_MAX_PARAMS, True), (DENSE_MAX_PARAMS + 1, False)]:
        x = _correlated_draws(d, 400, seed=d)
        q = fit_reference(x)
        off_diagonal = np.abs(np.tril(q.chol, -1)).max()
        assert (off_diagonal > 0.1) == dense, (d, off_diagonal)
        cov = np.cov(x.T) if dense else np.diag(x.var(axis=0, ddof=1))
        np.testing.assert_allclose(q.chol @ q.chol.T, cov, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("dense", [True, False])
def test_a_reference_from_running_moments_is_the_sample_covariance(dense):
    """Welford's running sums of (outer products of) deviations give the ddof = 1 covariance,
    as fit_reference does from the draws themselves."""
    x = _correlated_draws(3, 25, seed=4)
    moments = dense_moments_init(3) if dense else moments_init(3)
    update = dense_welford_update if dense else welford_update
    for row in x:
        moments = update(moments, row)
    q = reference_from_moments(moments.count, moments.mean, moments.m2)
    fitted = fit_reference(x, dense=dense)
    np.testing.assert_allclose(q.mean, fitted.mean, rtol=1e-12)
    np.testing.assert_allclose(q.chol, fitted.chol, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(q.log_norm, fitted.log_norm, rtol=1e-10)
