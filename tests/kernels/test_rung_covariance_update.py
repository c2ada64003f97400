"""The compiled per-rung covariance update equals NumPy's
(:func:`pymc_tempering.kernels.moments.covariance_update`) bit for bit and leaves its input
untouched (tuning records are values, never updated in place)."""

import numpy as np

from pymc_tempering.kernels.dense import rung_covariance_update
from pymc_tempering.kernels.moments import covariance_init, covariance_update


def test_equals_numpy_bit_for_bit_over_many_updates():
    rng = np.random.default_rng(0)
    numpy_moments = compiled = covariance_init((6, 5))
    for _ in range(200):
        x = rng.normal(size=(6, 5)) * 10.0 ** rng.uniform(-3, 3, size=(6, 1))
        before = compiled.m2.copy()
        old = compiled
        numpy_moments = covariance_update(numpy_moments, x)
        compiled = rung_covariance_update(compiled, x)
        np.testing.assert_array_equal(old.m2, before)  # the input record is unchanged
    assert compiled.count == numpy_moments.count == 200
    np.testing.assert_array_equal(compiled.mean, numpy_moments.mean)
    np.testing.assert_array_equal(compiled.m2, numpy_moments.m2)
    cov = compiled.m2 / (compiled.count - 1)
    assert np.allclose(cov, np.swapaxes(cov, 1, 2))
