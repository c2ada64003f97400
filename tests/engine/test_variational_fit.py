"""The variational reference's fitting record (engine/variational.py): the
schedule of fits (windows ending at sweeps 50, 150, 350, 750, ... while they end within 80% of
tuning), each fit from its own window's draws only, non-finite draws left out, and a window
stuck in any one coordinate refused (its variance below MIN_VARIANCE relative to 1 + mean^2)."""

import numpy as np
import pytest

from pymc_tempering.engine import variational as legs
from pymc_tempering.kernels.dense import DenseMoments
from pymc_tempering.kernels.moments import Moments
from pymc_tempering.kernels.reference import DENSE_MAX_PARAMS, gaussian_reference


def _fit_sweeps(tune_sweeps, d=2):
    """The sweeps (0-based) at which the record fits, over a whole tuning phase."""
    fit = legs.init_reference_fit(gaussian_reference(np.zeros(d), np.eye(d)), tune_sweeps)
    sweeps = []
    for sweep in range(tune_sweeps):
        if legs.fit_due(fit, sweep):
            sweeps.append(sweep)
            fit = legs.refit(fit, tune_sweeps)
    return sweeps, fit


@pytest.mark.parametrize(
    "tune_sweeps, expected",
    [
        (62, []),  # 50 > 0.8 * 62 = 49.6: too short a tuning to fit
        (63, [49]),  # 50 <= 50.4
        (187, [49]),  # 150 > 149.6
        (188, [49, 149]),
        (400, [49, 149]),  # 350 > 320
        (437, [49, 149]),  # 350 > 349.6
        (438, [49, 149, 349]),
        (938, [49, 149, 349, 749]),
        (3000, [49, 149, 349, 749, 1549]),  # 3150 > 2400
    ],
)
def test_fits_end_doubling_windows_within_80_percent_of_tuning(tune_sweeps, expected):
    """Window ends 50 (2^k - 1) sweeps, each fit on the sweep that ends its window, none past
    0.8 tune_sweeps; then the record is frozen. Edges on both sides of each threshold."""
    sweeps, fit = _fit_sweeps(tune_sweeps)
    assert sweeps == expected
    assert fit.frozen


def test_no_fit_is_due_once_frozen_or_off_the_windows_end():
    fit = legs.init_reference_fit(gaussian_reference(np.zeros(2), np.eye(2)), 1000)
    assert (fit.window_end, fit.window_len, fit.frozen) == (50, 50, False)
    assert [s for s in range(200) if legs.fit_due(fit, s)] == [49]
    assert not legs.fit_due(fit._replace(frozen=True), 49)


def _window(rows, d=None, tune_sweeps=1000):
    """A fresh record (reference N(0, I)) with ``rows`` recorded."""
    rows = np.asarray(rows, dtype=np.float64)
    d = rows.shape[1] if d is None else d
    fit = legs.init_reference_fit(gaussian_reference(np.zeros(d), np.eye(d)), tune_sweeps)
    return legs.record_draws(fit, rows)


def _correlated(n, seed, scales=(0.5, 2.0), rho=0.9, mean=(1.0, -3.0)):
    rng = np.random.default_rng(seed)
    cov = np.array([[1.0, rho], [rho, 1.0]]) * np.outer(scales, scales)
    return rng.multivariate_normal(mean, cov, size=n)


def test_a_fit_is_the_sample_moments_of_its_own_window_only():
    """Each fit reads its own window alone (mean, ddof = 1 covariance, to the jitter): the
    first window's 100 draws near (20, 20), kept, would move the second fit's mean (1, -3) by
    about (5, 6)."""
    first, second = _correlated(100, 1, mean=(20.0, 20.0)), _correlated(300, 2)
    fit = legs.refit(_window(first), 1000)
    np.testing.assert_allclose(fit.reference.mean, first.mean(axis=0), rtol=1e-10)
    assert fit.moments.count == 0
    fit = legs.refit(legs.record_draws(fit, second), 1000)
    q = fit.reference
    np.testing.assert_allclose(q.mean, second.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(q.chol @ q.chol.T, np.cov(second.T), rtol=1e-8)


def test_non_finite_draws_are_left_out_of_the_window():
    rows = _correlated(40, 3)
    bad = rows.copy()
    bad[[3, 17], 0], bad[25, 1] = np.nan, np.inf
    fit = _window(bad)
    keep = np.ones(40, dtype=bool)
    keep[[3, 17, 25]] = False
    assert fit.moments.count == 37
    np.testing.assert_allclose(fit.moments.mean, rows[keep].mean(axis=0), rtol=1e-12)
    q = legs.refit(fit, 1000).reference
    np.testing.assert_allclose(q.chol @ q.chol.T, np.cov(rows[keep].T), rtol=1e-8)


def test_the_window_is_dense_up_to_dense_max_params_and_diagonal_above():
    """A 64-parameter window keeps outer products (a dense q), a 65-parameter one squares."""
    for d, kind in [(DENSE_MAX_PARAMS, DenseMoments), (DENSE_MAX_PARAMS + 1, Moments)]:
        fit = legs.init_reference_fit(gaussian_reference(np.zeros(d), np.eye(d)), 1000)
        assert type(fit.moments) is kind
        assert type(legs.refit(fit, 1000).moments) is kind


@pytest.mark.parametrize("d", [2, DENSE_MAX_PARAMS + 1])
def test_a_window_stuck_in_one_coordinate_keeps_the_reference(d):
    """Every coordinate moves but the last, which sits at 0.7 all window (a rung stuck along
    one parameter): its variance 0 is refused, dense or diagonal, and the old q kept. The
    same window with that coordinate moving is fitted."""
    rng = np.random.default_rng(d)
    rows = rng.normal(size=(60, d))
    stuck = rows.copy()
    stuck[:, -1] = 0.7
    fit = _window(stuck)
    assert legs.refit(fit, 1000).reference is fit.reference
    moving = _window(rows)
    assert legs.refit(moving, 1000).reference is not moving.reference


@pytest.mark.parametrize("d", [2, DENSE_MAX_PARAMS + 1])
def test_the_variance_floor_is_relative_to_one_plus_the_mean_squared(d):
    """Last coordinate at mean 1e4: the floor is 1e-12 (1 + 1e8) ~ 1e-4. A window whose
    variance there is 0.25 of the floor is refused (1e-8 in absolute terms, far above 1e-12),
    one at 4 times the floor is fitted."""
    rng = np.random.default_rng(5)
    rows = rng.normal(size=(60, d))
    z = rng.normal(size=60)
    z = (z - z.mean()) / z.std(ddof=1)  # sample variance exactly 1
    floor = legs.MIN_VARIANCE * (1.0 + 1e8)
    for factor, fitted in [(0.25, False), (4.0, True)]:
        rows[:, -1] = 1e4 + np.sqrt(factor * floor) * z
        fit = _window(rows)
        var = np.var(rows[:, -1], ddof=1)
        assert np.isclose(var, factor * floor, rtol=1e-3)
        assert (legs.refit(fit, 1000).reference is not fit.reference) == fitted, factor


def test_a_window_of_two_draws_or_fewer_keeps_the_reference():
    fit = _window(_correlated(2, 6))
    assert legs.refit(fit, 1000).reference is fit.reference
    fit = _window(_correlated(3, 6))
    assert legs.refit(fit, 1000).reference is not fit.reference


def test_a_frozen_record_ignores_draws():
    fit = legs.init_reference_fit(gaussian_reference(np.zeros(2), np.eye(2)), 40)
    assert fit.frozen  # 50 > 0.8 * 40
    assert legs.record_draws(fit, _correlated(10, 7)).moments.count == 0
