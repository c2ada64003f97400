"""SGLD's maths in :mod:`pymc_tempering.kernels.sgld`, without sampling: the step-size
schedule, the step's drift and noise, the sampling threshold and noise variances, RMSprop."""

import numpy as np
import pytest

from pymc_tempering.kernels.sgld import (
    StepSizeSchedule,
    noise_variances,
    polynomial_schedule,
    rmsprop_preconditioner,
    rmsprop_update,
    sampling_threshold,
    score_covariance,
    sgld_step,
)


def test_polynomial_schedule_hits_both_ends():
    sched = polynomial_schedule(0.01, 1e-4, n_steps=10_000, gamma=0.55)
    np.testing.assert_allclose(sched(0), 0.01, rtol=1e-12)
    np.testing.assert_allclose(sched(9_999), 1e-4, rtol=1e-12)
    steps = sched(np.arange(10_000))
    assert np.all(np.diff(steps) < 0)
    np.testing.assert_allclose(steps, sched.a * (sched.b + np.arange(10_000)) ** -0.55)
    assert StepSizeSchedule.constant(0.3)(123) == 0.3
    assert polynomial_schedule(0.2, 0.2, 50).gamma == 0  # equal ends: constant


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"step_size": 0.0, "final_step_size": 1e-4}, "`step_size` must be a positive"),
        ({"step_size": 1e-2, "final_step_size": -1.0}, "`final_step_size` must be a positive"),
        ({"step_size": 1e-2, "final_step_size": 1e-4, "gamma": 0.5}, r"`gamma` must lie in"),
        ({"step_size": 1e-2, "final_step_size": 1e-4, "gamma": 1.2}, r"`gamma` must lie in"),
        ({"step_size": 1e-4, "final_step_size": 1e-2}, "must not exceed `step_size`"),
    ],
)
def test_schedule_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        polynomial_schedule(n_steps=100, **kwargs)


def test_sgld_step_has_the_stated_drift_and_noise():
    """theta' = theta + (eps/2) M g + N(0, eps M): check mean and variance over many coords."""
    rng = np.random.default_rng(0)
    d, eps = 400_000, 0.04
    precond = np.where(np.arange(d) % 2 == 0, 1.0, 4.0)
    out = sgld_step(np.zeros(d), np.ones(d), 2 * np.ones(d), eps, precond, rng)
    for m in (1.0, 4.0):
        part = out[precond == m]
        assert abs(part.mean() - 0.5 * eps * m * 3) < 4 * np.sqrt(eps * m / part.size)
        assert abs(part.var() / (eps * m) - 1) < 4 * np.sqrt(2 / part.size)


def test_sampling_threshold_and_noise_against_hand_computation():
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    precond = np.array([1.0, 4.0])
    # M^1/2 V M^1/2 = [[2, 1], [1, 4]]: largest eigenvalue 3 + sqrt(2)
    alpha = sampling_threshold(cov, step_size=0.01, n_data=100, batch_size=10, precond=precond)
    np.testing.assert_allclose(alpha, 0.01 * 100**2 / 40 * (3 + np.sqrt(2)), rtol=1e-12)
    grad_noise, injected = noise_variances(cov, 0.01, 100, 10, precond)
    np.testing.assert_allclose(grad_noise, 0.01**2 * 100**2 / 40 * np.array([2.0, 16.0]))
    np.testing.assert_allclose(injected, [0.01, 0.04])
    # in one dimension alpha is exactly the gradient-noise / injected-noise variance ratio
    a1 = sampling_threshold([[3.0]], 0.02, 50, 5, [2.0])
    g1, i1 = noise_variances(np.array([[3.0]]), 0.02, 50, 5, np.array([2.0]))
    np.testing.assert_allclose(a1, g1[0] / i1[0], rtol=1e-12)
    scores = np.random.default_rng(1).normal(size=(50, 3))
    np.testing.assert_allclose(score_covariance(scores), np.cov(scores.T), rtol=1e-12)


def test_rmsprop_is_li_et_al_algorithm_1():
    v = rmsprop_update(np.array([1.0, 0.0]), np.array([2.0, -3.0]), decay=0.9)
    np.testing.assert_allclose(v, [0.9 + 0.4, 0.9])
    np.testing.assert_allclose(rmsprop_preconditioner(v, 1e-5), 1 / (1e-5 + np.sqrt(v)))
