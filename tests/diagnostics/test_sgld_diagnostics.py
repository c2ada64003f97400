"""SGLD's readers in :mod:`pymc_tempering.diagnostics.sgld`: the step-size weighted mean
(Welling & Teh 2011, eq. 11) and the sampling-threshold crossing, against hand computations."""

import numpy as np
import pytest
import xarray as xr

from pymc_tempering.diagnostics.sgld import sampling_threshold_crossing, step_size_weighted_mean
from pymc_tempering.kernels.sgld import step_size_weighted_mean as weighted_mean_array


def test_step_size_weighted_mean_eq_11():
    values = np.array([[1.0, 3.0], [5.0, 7.0], [2.0, 2.0]])
    eps = np.array([0.5, 0.25, 0.25])
    np.testing.assert_allclose(weighted_mean_array(values, eps), [2.25, 3.75])
    posterior = xr.Dataset({"mu": (("chain", "draw"), [[1.0, 5.0, 2.0], [0.0, 0.0, 4.0]])})
    sample_stats = xr.Dataset(
        {
            "step_size": (("chain", "draw"), [[0.5, 0.25, 0.25], [0.5, 0.25, 0.25]]),
            "sampling_threshold": (("chain", "draw"), [[0.5, np.nan, 0.05], [0.01, 0.2, 0.3]]),
        }
    )
    for ds in (posterior, sample_stats):
        ds.coords.update({"chain": [0, 1], "draw": [0, 1, 2]})
    idata = xr.DataTree.from_dict({"posterior": posterior, "sample_stats": sample_stats})
    mean = step_size_weighted_mean(idata)
    np.testing.assert_allclose(mean["mu"], (0.5 + 1.25 + 0.5 + 0 + 0 + 1.0) / 2.0)
    crossing = sampling_threshold_crossing(idata, threshold=0.1)
    np.testing.assert_array_equal(crossing, [2, 0])
    late = step_size_weighted_mean(idata, start=crossing)
    np.testing.assert_allclose(late["mu"], (0.25 * 2 + 0.5 * 0 + 0.25 * 0 + 0.25 * 4) / 1.25)
    with pytest.raises(ValueError, match="sample_stats"):
        step_size_weighted_mean(xr.DataTree.from_dict({"posterior": posterior}))
