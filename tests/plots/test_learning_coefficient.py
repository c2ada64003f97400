"""pymc_tempering.plots.learning_coefficient: the two curves, their error bars, beta* and the
reference lines are the numbers of the result handed in (a hand-made one here; the plot of a
real learning_coefficient result is drawn in tests/singular/test_estimators.py)."""

import numpy as np
import pytest
import xarray as xr
from helpers import render

from pymc_tempering.plots.learning_coefficient import plot_learning_coefficient

BETAS = np.array([0.0, 0.01, 0.1, 1.0])


def hand_made_result():
    """The variables plot_learning_coefficient reads, as learning_coefficient lays them out."""
    return xr.Dataset(
        {
            "beta": 0.2,
            "fluctuation_curve": ("rung", [0.0, 0.9, 1.1, 1.0]),
            "fluctuation_curve_mcse": ("rung", [0.0, 0.05, 0.1, 0.2]),
            "two_temperature_curve": ("rung_pair", [0.7, 0.95, 1.05]),
            "two_temperature_curve_mcse": ("rung_pair", [0.3, 0.02, 0.04]),
        },
        coords={
            "rung": np.arange(4),
            "beta_rung": ("rung", BETAS),
            "rung_pair": np.arange(3),
            "beta_lower": ("rung_pair", BETAS[:-1]),
            "beta_upper": ("rung_pair", BETAS[1:]),
        },
        attrs={"n_obs": 148},
    )


def test_curves_and_error_bars_are_the_results(tmp_path):
    result = hand_made_result()
    fig, ax = render(
        tmp_path, "lambda", plot_learning_coefficient, result, reference={"d/2": 1.0}, band=2.0
    )
    fluct, pair = ax.containers  # errorbar containers: (line, caps, bars)
    # beta = 0 has no log-axis position: rungs 1..3; pairs whose lower beta is 0 are left out
    np.testing.assert_allclose(fluct.lines[0].get_xdata(), [0.01, 0.1, 1.0])
    np.testing.assert_allclose(fluct.lines[0].get_ydata(), [0.9, 1.1, 1.0])
    np.testing.assert_allclose(pair.lines[0].get_xdata(), np.sqrt([0.01 * 0.1, 0.1 * 1.0]))
    np.testing.assert_allclose(pair.lines[0].get_ydata(), [0.95, 1.05])
    # error bars are band x MCSE either side: 2 x (0.05, 0.1, 0.2)
    (segments,) = [c.get_segments() for c in fluct.lines[2]]
    np.testing.assert_allclose([s[1, 1] - s[0, 1] for s in segments], [0.2, 0.4, 0.8])
    (beta_star,) = [ln for ln in ax.get_lines() if list(ln.get_xdata()) == [0.2, 0.2]]
    (reference,) = [ln for ln in ax.get_lines() if ln.get_label() == "d/2"]
    assert list(reference.get_ydata()) == [1.0, 1.0]
    assert ax.get_xscale() == "log" and "n = 148" in ax.get_title()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "two-temperature (rung pairs)" in labels and "d/2" in labels


def test_other_results_are_refused():
    with pytest.raises(ValueError, match=r"pmt.learning_coefficient\(idata, n_obs=...\)"):
        plot_learning_coefficient(xr.Dataset({"wbic": 1.0}))
