"""The two-mode target's evidence (pymc_tempering.exact.two_mode) against a grid integral."""

import numpy as np


def test_two_mode_log_evidence_against_quadrature():
    """The closed form against a 2-D grid integral of prior * mixture likelihood."""
    import pymc_tempering.exact as ex

    grid = np.linspace(-80, 80, 1601)
    dx = grid[1] - grid[0]
    X, Y = np.meshgrid(grid, grid, indexing="ij")
    prior = np.exp(-(X**2 + Y**2) / (2 * 20.0**2)) / (2 * np.pi * 20.0**2)
    lik = sum(
        w * np.exp(-((X - m[0]) ** 2 + (Y - m[1]) ** 2) / 2) / (2 * np.pi)
        for w, m in zip(ex.TWO_MODE_WEIGHTS, ex.TWO_MODE_MEANS, strict=True)
    )
    numeric = np.log(np.sum(prior * lik) * dx * dx)
    assert abs(numeric - ex.two_mode_log_evidence()) < 1e-6
