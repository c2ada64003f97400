"""pymc_tempering.plots._axes: beta tick labels, rung and power-of-two ticks, and the axes check,
against hand-worked values."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from pymc_tempering.plots._axes import (
    as_percent,
    beta_label,
    new_axes,
    power_of_two_ticks,
    rung_ticks,
)


def test_beta_label_names_powers_of_two():
    assert beta_label(0.0) == "0" and beta_label(1.0) == "1"
    assert beta_label(0.25) == "$2^{-2}$" and beta_label(2.0**-30) == "$2^{-30}$"
    assert beta_label(0.3) == "0.3" and beta_label(0.123) == "0.12"
    assert as_percent(0.2) == "20%" and as_percent(0.123) == "12%"


def test_rung_ticks_keep_both_ends():
    np.testing.assert_array_equal(rung_ticks(2), [0, 1])
    np.testing.assert_array_equal(rung_ticks(8), np.arange(8))  # step ceil(7 / 8) = 1
    np.testing.assert_array_equal(rung_ticks(10), [0, 2, 4, 6, 9])  # step 2, last is 9
    np.testing.assert_array_equal(rung_ticks(32), [0, 4, 8, 12, 16, 20, 24, 31])  # step 4


def test_power_of_two_ticks_at_a_round_exponent_step():
    # lowest exponent -30: steps 1 and 2 give 30 and 15 ticks, 5 gives 6 < 8
    ticks = power_of_two_ticks(np.array([2.0**-30, 0.5, 1.0]))
    np.testing.assert_array_equal(ticks, 2.0 ** np.array([-30, -25, -20, -15, -10, -5, 0]))
    np.testing.assert_array_equal(power_of_two_ticks(np.array([0.3, 1.0])), [0.25, 0.5, 1.0])


def test_new_axes_uses_the_callers_axes_or_says_how_many():
    fig, own = plt.subplots(1, 2)
    out_fig, axes = new_axes(own, ncols=2)
    assert out_fig is fig and list(axes) == list(own)
    with pytest.raises(ValueError, match="`ax` must hold 3 axes, got 2"):
        new_axes(own, ncols=3)
    plt.close(fig)
    fig, axes = new_axes(None, ncols=3, figsize=(6.0, 2.0))
    assert axes.shape == (3,) and tuple(fig.get_size_inches()) == (6.0, 2.0)
    plt.close(fig)
