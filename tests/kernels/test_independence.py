"""The independence proposals' kernels (pymc_tempering.kernels.independence), without sampling:
the log density against SciPy's multivariate t, draws against their own law, the fit against
known mixtures, the buffer."""

import numpy as np
import pytest
from scipy import stats

from pymc_tempering.kernels import independence as ind


def _two_rung_fit(df):
    """Rung 0: one t component; rung 1: two, weights 0.3 / 0.7 (d = 2)."""
    chol = np.array(
        [
            [[[1.0, 0.0], [0.5, 2.0]], [[1.0, 0.0], [0.0, 1.0]]],
            [[[0.5, 0.0], [0.2, 0.8]], [[1.5, 0.0], [-0.3, 0.6]]],
        ]
    )
    log_weight = np.array([[0.0, -np.inf], np.log([0.3, 0.7])])
    mean = np.array([[[1.0, -1.0], [0.0, 0.0]], [[-3.0, 2.0], [4.0, 1.0]]])
    log_scale = log_weight - np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
    return ind.IndependenceFit(log_weight, mean, chol, np.linalg.inv(chol), df, log_scale)


def _scipy_log_q(fit, rung, x):
    comps = []
    for k in range(2):
        if fit.log_weight[rung, k] == -np.inf:
            continue
        cov = fit.chol[rung, k] @ fit.chol[rung, k].T
        if np.isinf(fit.df):
            logpdf = stats.multivariate_normal(fit.mean[rung, k], cov).logpdf(x)
        else:
            logpdf = stats.multivariate_t(fit.mean[rung, k], cov, df=fit.df).logpdf(x)
        comps.append(fit.log_weight[rung, k] + logpdf)
    return np.logaddexp.reduce(comps)


@pytest.mark.parametrize("df", [4.0, np.inf])
def test_log_q_ratio_is_scipys_mixture_density_ratio(df):
    """``log q(x) - log q(x')`` per rung equals the ratio of SciPy's mixture densities (the
    normalising constant that log_density leaves out cancels)."""
    fit = _two_rung_fit(df)
    rng = np.random.default_rng(0)
    x, y = rng.normal(0, 3, (2, 2)), rng.normal(0, 3, (2, 2))
    expected = [_scipy_log_q(fit, r, x[r]) - _scipy_log_q(fit, r, y[r]) for r in range(2)]
    np.testing.assert_allclose(ind.log_q_ratio(fit, x, y), expected, rtol=1e-12, atol=1e-12)


def test_draws_follow_the_fitted_mixture():
    """Many draws per rung: component shares, mean and covariance of the t mixture within
    4 standard errors (iid draws)."""
    fit = _two_rung_fit(8.0)
    rng = np.random.default_rng(1)
    n = 40_000
    draws = np.stack(
        [
            ind.propose(fit, rng.standard_normal((2, 2)), rng.random(2), rng.chisquare(8.0, 2))
            for _ in range(n)
        ]
    )  # (n, rung, d)
    # rung 1: the mixture's mean, sum_k w_k mu_k, within 4 standard errors
    x = draws[:, 1]
    expected = 0.3 * fit.mean[1, 0] + 0.7 * fit.mean[1, 1]
    assert np.all(np.abs(x.mean(axis=0) - expected) < 4 * x.std(axis=0) / np.sqrt(n))
    # the uniform picks the component by its weight: below 0.3 the first
    zero = np.zeros((2, 2))
    for u, k in ((0.0, 0), (0.299, 0), (0.301, 1), (0.999, 1)):
        picked = ind.propose(fit, zero, np.array([u, u]), np.ones(2))
        np.testing.assert_array_equal(picked[1], fit.mean[1, k])
        np.testing.assert_array_equal(picked[0], fit.mean[0, 0])
    # rung 0: a single t, covariance df / (df - 2) * L L^T
    cov = 8.0 / 6.0 * fit.chol[0, 0] @ fit.chol[0, 0].T
    mean_err = draws[:, 0].mean(axis=0) - fit.mean[0, 0]
    assert np.all(np.abs(mean_err) < 4 * np.sqrt(np.diag(cov) / n))
    np.testing.assert_allclose(np.cov(draws[:, 0].T), cov, rtol=0.08)


def _buffer_of(x):
    """A FitTuning holding the draws x (n_rungs, n, d) in order."""
    tuning = ind.fit_tuning_init(x.shape[0], x.shape[2])
    for i in range(x.shape[1]):
        tuning = ind.store_draws(tuning, x[:, i])
    return tuning


def test_fit_finds_two_modes_and_keeps_one_gaussian():
    """Rung 0 Gaussian draws: one component at their mean; rungs 1-2 draws from two modes
    (weights 0.25 / 0.75, 12 sds apart in 4-D): two components with those weights and means.
    No pooling across rungs here (the rungs differ on purpose)."""
    rng = np.random.default_rng(2)
    n, d = 400, 4
    x = rng.standard_normal((3, n, d))
    centre = np.array([3.0, -3.0, 3.0, -3.0])
    upper = rng.random((2, n)) < 0.75
    x[1:] += np.where(upper[..., None], centre, -centre)
    tuning = _buffer_of(x)
    fit = ind.fit_rungs(tuning, pool=0)
    assert fit.n_components.tolist() == [1, 2, 2]
    kept = slice(n - ind.BUFFER, n)  # the buffer keeps the latest draws
    np.testing.assert_allclose(fit.mean[0, 0], x[0, kept].mean(axis=0))
    for rung in (1, 2):
        weights = np.exp(fit.log_weight[rung])
        big = int(np.argmax(weights))
        assert weights[big] == pytest.approx(upper[rung - 1, kept].mean(), abs=1e-6)
        np.testing.assert_allclose(fit.mean[rung, big], centre, atol=0.25)
        np.testing.assert_allclose(fit.mean[rung, 1 - big], -centre, atol=0.25)


def test_buffer_keeps_the_latest_draws_and_pools_neighbours():
    x = np.arange(3 * 300 * 1, dtype=float).reshape(3, 300, 1)
    tuning = ind.fit_tuning_init(3, 1, size=256)
    for i in range(300):
        tuning = ind.store_draws(tuning, x[:, i])
    assert tuning.count == 300
    stored = ind._stored(tuning, pool=0)
    assert sorted(stored[1, :, 0]) == sorted(x[1, 44:, 0])  # the latest 256
    pooled = ind._stored(tuning, pool=1)
    assert pooled.shape == (3, 3 * 256, 1)
    assert set(pooled[1, :, 0]) == set(x[:, 44:, 0].ravel())
    assert set(pooled[0, :, 0]) == set(x[:2, 44:, 0].ravel())  # the end repeats its own


def test_take_rungs_reorders_every_array():
    fit = _two_rung_fit(5.0)
    taken = ind.take_rungs(fit, np.array([1, 1, 0]))
    for name in ("log_weight", "mean", "chol", "inv_chol", "log_scale"):
        np.testing.assert_array_equal(getattr(taken, name), getattr(fit, name)[[1, 1, 0]])
