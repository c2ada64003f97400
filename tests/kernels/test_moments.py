"""Welford moments and the shrunk variance, against NumPy and hand-derived numbers."""

import numpy as np

from pymc_tempering.kernels.moments import (
    moments_init,
    shrunk_variance,
    variance,
    welford_update,
)


def test_welford_equals_numpy_on_batches_of_vectors():
    x = np.random.default_rng(0).normal(size=(50, 4, 3)) * [1.0, 10.0, 1e-3]
    moments = moments_init((4, 3))
    for row in x:
        moments = welford_update(moments, row)
    assert moments.count == 50
    np.testing.assert_allclose(moments.mean, x.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(variance(moments), x.var(axis=0, ddof=1), rtol=1e-10)


def test_shrunk_variance_by_hand():
    moments = moments_init(2)
    for row in ([1.0, 0.0], [3.0, 0.0], [5.0, 0.0]):  # variances 4 and 0, n = 3
        moments = welford_update(moments, np.array(row))
    np.testing.assert_allclose(shrunk_variance(moments, 1e-6), [3 / 8 * 4 + 5 / 8 * 1e-6,
                                                                5 / 8 * 1e-6])  # fmt: skip
    # no draws yet: the floor itself
    np.testing.assert_array_equal(shrunk_variance(moments_init(1), 0.5), [0.5])
