"""The Langevin maths in :mod:`pymc_tempering.kernels.langevin`, without sampling: the h-form
proposal and its density, MALA's log Hastings ratio by hand, dual averaging, Welford moments
and the gradient preconditioner, the adaptation windows."""

import numpy as np
import pytest
from scipy import stats

from pymc_tempering.kernels.langevin import (
    Moments,
    adaptation_windows,
    diag_preconditioner,
    dual_average_init,
    dual_average_update,
    langevin_proposal,
    log_proposal_density,
    mala_log_accept_ratio,
    moments_init,
    regularized_variance,
    welford_update,
)


def test_proposal_is_the_h_form():
    x, grad = np.array([0.5, -1.0]), np.array([2.0, 0.25])
    h, m, noise = 0.1, np.array([1.0, 4.0]), np.array([0.3, -0.7])
    expected = [0.5 + 0.1 * 2.0 + np.sqrt(0.2) * 0.3, -1.0 + 0.1 * 4 * 0.25 - np.sqrt(0.8) * 0.7]
    np.testing.assert_allclose(langevin_proposal(x, grad, h, m, noise), expected, rtol=1e-14)


def test_log_proposal_density_is_the_gaussian_density():
    rng = np.random.default_rng(0)
    x, y, grad, m = rng.normal(size=(4, 3))
    m = np.abs(m) + 0.5
    h = 0.37
    ref = stats.multivariate_normal(x + h * m * grad, np.diag(2 * h * m)).logpdf(y)
    np.testing.assert_allclose(log_proposal_density(y, x, grad, h, m), ref, rtol=1e-12)


def test_mala_log_ratio_matches_a_hand_computation():
    # target N(0, 1) in 1-D: logp(x) = -x^2/2 + c, grad = -x. h = 0.5, M = 1.
    # q(x -> y) = N(y; x - 0.5 x, 1) = N(y; x/2, 1).
    x, y, h = 1.0, 2.0, 0.5
    logp_x, logp_y = -0.5, -2.0  # constants cancel in the ratio
    # forward: y - x/2 = 1.5 -> -1.125; backward: x - y/2 = 0 -> 0 (same normalising constant)
    hand = (logp_y - logp_x) + (0.0 - (-1.125))  # = -1.5 + 1.125
    got = mala_log_accept_ratio(
        np.array([x]), np.array([y]), logp_x, logp_y, np.array([-x]), np.array([-y]), h, np.ones(1)
    )
    assert got == pytest.approx(-0.375, abs=1e-14)
    assert got == pytest.approx(hand, abs=1e-14)
    # preconditioned 2-D case against scipy's Gaussian densities
    x, y = np.array([0.3, -1.2]), np.array([0.1, 0.4])
    gx, gy, m, h = np.array([1.0, -2.0]), np.array([0.5, 0.7]), np.array([2.0, 0.5]), 0.2
    fwd = stats.norm(x + h * m * gx, np.sqrt(2 * h * m)).logpdf(y).sum()
    bwd = stats.norm(y + h * m * gy, np.sqrt(2 * h * m)).logpdf(x).sum()
    got = mala_log_accept_ratio(x, y, -1.0, -3.0, gx, gy, h, m)
    assert got == pytest.approx(-2.0 + bwd - fwd, abs=1e-12)


def test_dual_averaging_finds_the_step_of_the_target_acceptance():
    # deterministic acceptance exp(-h): the step with acceptance 0.574 is -log(0.574)
    state = dual_average_init(0.01)
    for _ in range(3000):
        state = dual_average_update(state, np.exp(-np.exp(state.log_step)), 0.574)
    assert np.exp(state.log_step_bar) == pytest.approx(-np.log(0.574), rel=1e-2)


def test_welford_and_gradient_preconditioner():
    rng = np.random.default_rng(1)
    sd = np.array([0.01, 1.0, 30.0])
    draws = rng.normal(size=(400, 3)) * sd * 0.2  # a window that has explored only 20% of sd
    moments, grads = moments_init(3), moments_init(3)
    for x in draws:
        moments = welford_update(moments, x)
        grads = welford_update(grads, -x / sd**2)  # gradient of the Gaussian log density
    np.testing.assert_allclose(moments.mean, draws.mean(0), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(moments.m2 / 399, draws.var(0, ddof=1), rtol=1e-10)
    # the draw variance lags at (0.2 sd)^2; the gradient-weighted estimate is sd^2 exactly
    assert np.all(regularized_variance(moments) < 0.1 * sd**2 + 1e-4)
    np.testing.assert_allclose(diag_preconditioner(moments, grads), sd**2, rtol=0.02)
    # a zero gradient variance falls back to the draw variance
    flat = Moments(400, np.zeros(3), np.zeros(3))
    np.testing.assert_allclose(
        diag_preconditioner(moments, flat), regularized_variance(moments), rtol=1e-12
    )


@pytest.mark.parametrize("n_tune", [0, 19, 20, 100, 150, 1000, 5000])
def test_adaptation_windows_fit_inside_tuning(n_tune):
    windows = adaptation_windows(n_tune, 0.25)
    if n_tune < 20:
        assert windows == []
        return
    starts, ends = zip(*windows, strict=True)
    assert starts[0] > 0 and ends[-1] < n_tune  # a buffer at both ends
    assert all(s < e for s, e in windows)
    assert all(e == s for e, s in zip(ends[:-1], starts[1:], strict=True))  # contiguous
