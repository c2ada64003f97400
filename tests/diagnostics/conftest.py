"""Fixtures of the diagnostics tests: a hand-made sample_stats record with known rates."""

import numpy as np
import pytest
import xarray as xr


@pytest.fixture
def hand_made_stats():
    """A raw PyMC-style sample_stats record of 3 rungs, 1 chain, 4 draws (DEO-like NaNs); a
    fresh copy for each test, which may modify it."""
    betas = np.array([0.0, 0.5, 1.0])
    swap_accept = np.array([[[0.8, np.nan], [np.nan, 0.5], [0.6, np.nan], [np.nan, 0.1]]])
    return xr.Dataset(
        {
            "betas": (("chain", "draw", "betas_dim_0"), np.broadcast_to(betas, (1, 4, 3))),
            "rung_loglik": (("chain", "draw", "rung_loglik_dim_0"), np.zeros((1, 4, 3))),
            "rung_accept": (("chain", "draw", "rung_accept_dim_0"), np.full((1, 4, 3), 0.5)),
            "rung_scaling": (("chain", "draw", "rung_scaling_dim_0"), np.ones((1, 4, 3))),
            "rung_replica": (
                ("chain", "draw", "rung_replica_dim_0"),
                np.array([[[0, 1, 2], [1, 0, 2], [1, 2, 0], [0, 1, 2]]]),
            ),
            "swap_accept": (("chain", "draw", "swap_accept_dim_0"), swap_accept),
            "swap_accepted": (
                ("chain", "draw", "swap_accepted_dim_0"),
                np.where(np.isnan(swap_accept), np.nan, 1.0),
            ),
        },
        coords={"chain": [0], "draw": np.arange(4)},
    )
