"""Dense random-walk proposals, the pure parts: batched cross moments, the regularised
covariance and its Cholesky factor per rung, the window rule of
:func:`pymc_tempering.engine.tuning.tune_scales`, and the explorer's move, against
NumPy and
hand-derived numbers (no sampling)."""

import numpy as np

from pymc_tempering.engine import tuning as ad
from pymc_tempering.engine.explorers import RandomBlock, RandomWalk
from pymc_tempering.kernels.dense import DenseMoments, shrunk_covariance
from pymc_tempering.kernels.fused import Replicas
from pymc_tempering.kernels.moments import (
    Moments,
    covariance_init,
    covariance_update,
    shrunk_variance,
    welford_update,
)
from pymc_tempering.kernels.rwm import (
    difference_gradient,
    proposal_cholesky,
    proposal_covariance,
)


def _cross(x):
    moments = covariance_init(x.shape[1:])
    for row in x:
        moments = covariance_update(moments, row)
    return moments


def test_cross_moments_equal_numpy_per_rung():
    x = np.random.default_rng(0).normal(size=(60, 3, 4)) @ np.diag([1.0, 10.0, 1e-3, 2.0])
    x[:, :, 1] += 0.9 * x[:, :, 0]  # correlated columns
    moments = _cross(x)
    assert moments.count == 60 and moments.m2.shape == (3, 4, 4)
    for rung in range(3):
        np.testing.assert_allclose(moments.mean[rung], x[:, rung].mean(axis=0), rtol=1e-12)
        np.testing.assert_allclose(moments.m2[rung] / 59, np.cov(x[:, rung].T), rtol=1e-10)
    # its diagonal is the running sum of squares of moments.welford_update
    diag = welford_update(welford_update(Moments(0, 0.0, 0.0), x[0]), x[1])
    np.testing.assert_allclose(np.diagonal(_cross(x[:2]).m2, 0, -2, -1), diag.m2, rtol=1e-12)


def test_proposal_covariance_by_hand():
    x = np.random.default_rng(1).normal(size=(30, 2, 3))
    moments = _cross(x)
    cov = proposal_covariance(moments, 1e-6)
    n, d = 30, 3
    for rung in range(2):
        sample = np.cov(x[:, rung].T)
        w = d / (n + d)  # towards the diagonal, as MALA's dense preconditioner
        shrunk = (1 - w) * sample + w * np.diag(np.diag(sample))
        expected = (n / (n + 5)) * shrunk + (5 / (n + 5)) * 1e-6 * np.eye(d)
        np.testing.assert_allclose(cov[rung], expected, rtol=1e-12)
        # the same shrinkage function as the preconditioner, not a copy
        np.testing.assert_allclose(
            shrunk_covariance(DenseMoments(n, moments.mean[rung], moments.m2[rung])),
            shrunk,
            rtol=1e-12,
        )
    # the diagonal is exactly the diagonal proposal's shrunk variance
    diag = Moments(n, moments.mean, np.diagonal(moments.m2, 0, -2, -1))
    np.testing.assert_allclose(np.diagonal(cov, 0, -2, -1), shrunk_variance(diag, 1e-6), rtol=1e-12)
    chol = proposal_cholesky(moments, 1e-6)
    np.testing.assert_allclose(chol @ np.swapaxes(chol, -1, -2), cov, rtol=1e-10)
    assert np.all(np.triu(chol, 1) == 0)


def test_a_rung_without_a_finite_covariance_falls_back_to_the_diagonal():
    moments = _cross(np.random.default_rng(2).normal(size=(20, 2, 2)))
    m2 = moments.m2.copy()
    m2[1, 0, 1] = m2[1, 1, 0] = np.inf  # a non-finite cross moment on rung 1
    chol = proposal_cholesky(moments._replace(m2=m2), 1e-6)
    good = proposal_cholesky(moments, 1e-6)
    np.testing.assert_array_equal(chol[0], good[0])
    diag = shrunk_variance(Moments(20, moments.mean, np.diagonal(m2, 0, -2, -1)), 1e-6)
    np.testing.assert_allclose(chol[1], np.diag(np.sqrt(diag[1])))


def test_dense_window_end_sets_the_cholesky_factor_and_restarts():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 2, 3))
    tuning = ad.init_scale_tuning(2, 3, 0.0, dense=True)._replace(window_end=4, window_len=4)
    np.testing.assert_array_equal(tuning.chol, np.broadcast_to(np.eye(3), (2, 3, 3)))
    for sweep, row in enumerate(x):
        tuning = ad.tune_scales(tuning, sweep, np.array([0.3, 0.3]), row, 0.3, 100, False)
    moments = _cross(x)
    np.testing.assert_allclose(tuning.chol, proposal_cholesky(moments, ad.VARIANCE_FLOOR))
    # the per-parameter scales (discrete moves, stats) from the same window
    diag = Moments(4, moments.mean, np.diagonal(moments.m2, 0, -2, -1))
    np.testing.assert_allclose(tuning.param_scale, np.sqrt(shrunk_variance(diag, 1e-6)))
    np.testing.assert_allclose(tuning.log_scaling, np.log(2.38 / np.sqrt(3)))
    assert tuning.moments.count == 0 and tuning.moments.m2.shape == (2, 3, 3)
    assert (tuning.window_end, tuning.window_len, tuning.gain_start) == (12, 8, 4)


def test_gradients_recover_a_gaussian_rungs_covariance_from_a_narrow_window():
    """A window that explored only a sliver of a correlated Gaussian (draws with a 100 times
    too small covariance): the draws alone give that sliver, draws and gradients the target's
    covariance (the dense preconditioner's identity C_x # (S C_x^-1 S) = S)."""
    sigma = np.array([[1.0, 0.95], [0.95, 1.0]])
    rng = np.random.default_rng(4)
    x = rng.multivariate_normal([0, 0], 0.01 * sigma, size=(4000, 1))
    grad = -x @ np.linalg.inv(sigma)  # gradient of log N(0, sigma) at the draws
    tuning = ad.init_scale_tuning(1, 2, 0.0, dense=True, gradients=True)
    tuning = tuning._replace(window_end=4000, window_len=4000)
    plain = ad.init_scale_tuning(1, 2, 0.0, dense=True)._replace(window_end=4000, window_len=4000)
    for sweep in range(4000):
        tuning = ad.tune_scales(tuning, sweep, np.ones(1), x[sweep], 0.3, 10**5, False, grad[sweep])
        plain = ad.tune_scales(plain, sweep, np.ones(1), x[sweep], 0.3, 10**5, False)
    learned = tuning.chol[0] @ tuning.chol[0].T
    np.testing.assert_allclose(learned, sigma, rtol=0.05, atol=0.02)
    sliver = plain.chol[0] @ plain.chol[0].T
    assert np.linalg.eigvalsh(sliver).max() < 0.05  # the draws alone: 100 times too small
    assert tuning.grad_moments.count == 0  # a fresh window


def test_resizing_the_ladder_carries_each_rungs_factor():
    tuning = ad.init_scale_tuning(3, 2, 0.0, dense=True, gradients=True)
    chol = np.stack([np.eye(2) * k for k in (1.0, 2.0, 3.0)])
    tuning = tuning._replace(chol=chol)
    betas, old = np.array([0.0, 0.3, 0.6, 1.0]), np.array([0.0, 0.5, 1.0])
    replicas = Replicas(np.zeros((3, 2)), np.zeros((3, 0)), np.zeros(3), np.zeros(3), np.arange(3))
    _, scales = ad.resize_rungs(betas, old, replicas, tuning)
    nearest = ad.nearest_rungs(betas, old)
    np.testing.assert_array_equal(scales.chol, chol[nearest])
    assert scales.moments.m2.shape == (4, 2, 2) and scales.grad_moments.m2.shape == (4, 2, 2)


class _Density:
    n_params = 3

    def batch(self, x):
        return np.zeros(len(x)), -0.5 * np.sum(x**2, axis=1)


def test_the_dense_move_is_x_plus_scaling_times_l_z_and_leaves_fixed_columns():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 3))
    chol = np.linalg.cholesky(np.array([[[4.0, 1.0, 0.5], [1.0, 2.0, 0.3], [0.5, 0.3, 1.0]]] * 2))
    scales = ad.init_scale_tuning(2, 3, np.log(0.5), dense=True)._replace(chol=chol)
    noise = rng.normal(size=(1, 2, 3))
    block = RandomBlock(noise, np.log(rng.random((1, 3))), 0)
    replicas = Replicas(x, np.zeros((2, 0)), np.zeros(2), np.zeros(2), np.arange(2))
    args = (replicas, np.array([0.5, 1.0]), scales, None, rng, block, lambda: np.array([0]))
    proposal, _, block_after = RandomWalk(_Density()).explore(*args)
    np.testing.assert_allclose(proposal.x, x + 0.5 * np.einsum("rij,rj->ri", chol, noise[0]))
    assert block_after.pos == 1
    # with column 1 fixed (a discrete variable), it never moves; the others move as before
    fixed, _, _ = RandomWalk(_Density(), fixed=np.array([1])).explore(*args)
    np.testing.assert_array_equal(fixed.x[:, 1], x[:, 1])
    expected = x + 0.5 * np.einsum("rij,rj->ri", chol, noise[0])
    np.testing.assert_allclose(fixed.x[:, [0, 2]], expected[:, [0, 2]])


def test_difference_gradient_of_tempered_gaussians():
    """logprior = -|x|^2 / 2, loglik = -(x - 1)^T A (x - 1) / 2: the gradient of rung beta is
    -x - beta A (x - 1); at beta = 0 a replica with loglik = -inf still gets the prior's."""
    a = np.array([[2.0, 0.9], [0.9, 1.0]])

    def batch(x):
        r = x - 1.0
        return -0.5 * np.sum(x**2, axis=1), -0.5 * np.einsum("ij,jk,ik->i", r, a, r)

    rng = np.random.default_rng(6)
    x, betas = rng.normal(size=(3, 2)), np.array([0.0, 0.5, 1.0])
    logprior, loglik = batch(x)
    grad = difference_gradient(batch, x, logprior, loglik, betas, np.full((3, 2), 1e-6))
    np.testing.assert_allclose(grad, -x - betas[:, None] * ((x - 1.0) @ a), atol=1e-4)
    loglik[0] = -np.inf  # ruled out by the data, admissible at beta = 0
    grad0 = difference_gradient(batch, x, logprior, loglik, betas, np.full((3, 2), 1e-6))
    np.testing.assert_allclose(grad0[0], -x[0], atol=1e-4)
