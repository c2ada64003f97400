"""pymc_tempering.diagnostics.barrier: swap rates and the communication barrier on a hand-made
swap record with exact numbers, then per chain on adaptive and padded ladders."""

import warnings

import numpy as np
import pytest
from helpers import adaptive_run, padded_run

from pymc_tempering.diagnostics.barrier import global_barrier, swap_rates
from pymc_tempering.ladder import suggested_n_rungs
from pymc_tempering.trace import tempering_dataset


def test_barrier_on_a_hand_made_swap_record(hand_made_stats):
    res = global_barrier(hand_made_stats)
    # pair 0 accepts 0.8, 0.6 -> r = 0.3; pair 1 accepts 0.5, 0.1 -> r = 0.7
    np.testing.assert_allclose(res["rejection"].values, [0.3, 0.7])
    assert float(res["global_barrier"]) == pytest.approx(1.0)
    np.testing.assert_allclose(res["cumulative_barrier"].values, [0.0, 0.3, 1.0])
    np.testing.assert_allclose(res["beta"].values, [0.0, 0.5, 1.0])
    expected_rate = 1000.0 / (2 + 2 * (0.3 / 0.7 + 0.7 / 0.3))
    assert float(res["predicted_round_trip_rate"]) == pytest.approx(expected_rate)
    assert int(res["suggested_n_rungs"]) == suggested_n_rungs(1.0) == 3

    rates = swap_rates(hand_made_stats)
    np.testing.assert_allclose(rates["swap_accept"].values, [0.7, 0.3])
    np.testing.assert_array_equal(rates["n_draws_attempted"].values, [2, 2])
    assert rates["swap_accept"].dims == ("rung_pair",)
    np.testing.assert_allclose(rates["beta_upper"].values, [0.5, 1.0])


def test_never_attempted_pair_gives_nan_not_a_warning(hand_made_stats):
    stats = hand_made_stats
    stats["swap_accept"][..., 1] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rates = swap_rates(stats)
        res = global_barrier(stats)
    assert np.isnan(rates["swap_accept"].values[1])
    assert np.isnan(float(res["global_barrier"])) and int(res["suggested_n_rungs"]) == -1


def test_suggested_n_rungs_minimises_cost_per_round_trip():
    for barrier in (0.0, 0.3, 1.0, 2.5, 7.0, 30.0):
        n = np.arange(int(barrier) + 2, 400)  # every N with N - 1 > barrier
        cost = n * (1 + barrier * (n - 1) / (n - 1 - barrier))
        assert suggested_n_rungs(barrier) == n[np.argmin(cost)]
    # Syed et al. / Pigeons.jl: about 2 * Lambda for large barriers
    assert abs(suggested_n_rungs(50.0) - 101) <= 1
    with pytest.raises(ValueError, match=">= 0"):
        suggested_n_rungs(-1.0)


# --- per-chain ladders, padded ladders ----------------------------------------------------------
def test_swap_rates_and_barrier_on_per_chain_ladders():
    """ladder="adaptive": rates and barrier are per chain, since pairs join different betas."""
    idata = adaptive_run()
    ds = tempering_dataset(idata)
    rates = swap_rates(idata)  # combined=True cannot pool pairs of different betas
    assert rates["swap_accept"].dims == ("chain", "rung_pair")
    assert rates["beta_lower"].dims == ("chain", "rung_pair")
    np.testing.assert_allclose(
        rates["swap_accept"], ds["swap_accept"].mean("draw", skipna=True), rtol=1e-12
    )
    barrier = global_barrier(idata)
    np.testing.assert_allclose(barrier["global_barrier"], rates["rejection"].sum("rung_pair"))


def test_swap_rates_on_chains_with_different_numbers_of_rungs():
    """adapt_n_rungs=True, chains on 6 and 5 rungs: the pair a chain lacks is NaN, never
    attempted."""
    idata = padded_run()
    short = int(np.argmin(np.isfinite(tempering_dataset(idata)["beta"].values).sum(axis=-1)))
    rates = swap_rates(idata)
    assert np.isnan(rates["swap_accept"].values[short, -1])
    assert rates["n_draws_attempted"].values[short, -1] == 0
