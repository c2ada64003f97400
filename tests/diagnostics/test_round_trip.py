"""pymc_tempering.diagnostics.round_trip: round trips counted on hand-made traces by the rule
ExchangeMC's sweep runs, then on real output against the sampler's own counter."""

import numpy as np
import pytest
from helpers import adaptive_run, exchange_run, padded_run

from pymc_tempering.diagnostics.round_trip import round_trip_counts, round_trip_events, round_trips
from pymc_tempering.trace import tempering_dataset

# 3 rungs; replica 0 goes bottom -> top -> bottom (draws 0, 2, 5), replica 1 bottom -> top ->
# bottom (draws 1, 4, 6), replica 2 starts on top, reaches the bottom, never returns to the top.
HAND_TRACE = np.array(
    [
        [0, 1, 2],
        [1, 0, 2],
        [1, 2, 0],
        [2, 1, 0],
        [2, 0, 1],
        [0, 2, 1],
        [1, 2, 0],
    ]
)


def test_round_trips_counted_on_a_hand_made_trace():
    np.testing.assert_array_equal(round_trip_counts(HAND_TRACE), [1, 1, 0])
    # a replica that has not yet reached the top does not complete a trip
    np.testing.assert_array_equal(round_trip_counts(HAND_TRACE[:5]), [0, 0, 0])
    np.testing.assert_array_equal(round_trip_counts(HAND_TRACE[:6]), [1, 0, 0])
    # leading axes are independent chains: the second chain is the first with ids relabelled
    relabel = np.array([2, 0, 1])
    both = np.stack([HAND_TRACE, relabel[HAND_TRACE]])
    # old ids 0, 1, 2 are now 2, 0, 1: counts follow them
    np.testing.assert_array_equal(round_trip_counts(both), [[1, 1, 0], [1, 0, 1]])


def test_round_trip_events_on_a_hand_made_trace():
    """Replica 0 completes its trip at draw 5, replica 1 at draw 6, and nothing else."""
    events = round_trip_events(HAND_TRACE)
    assert events.shape == HAND_TRACE.shape and events.dtype == bool
    np.testing.assert_array_equal(np.argwhere(events), [[5, 0], [6, 1]])
    np.testing.assert_array_equal(events.sum(axis=0), round_trip_counts(HAND_TRACE))


def test_round_trips_of_a_two_rung_conveyor():
    """Two rungs swapping every draw: each replica completes a trip every 2 draws after the
    first full cycle."""
    trace = np.array([[0, 1], [1, 0]] * 5)  # 10 draws
    # replica 0: bottom at 0, top at 1, bottom at 2 (trip), 4, 6, 8 -> 4 trips
    # replica 1: top at 0 (ignored), bottom at 1, top at 2, bottom at 3 (trip), 5, 7, 9 -> 4
    np.testing.assert_array_equal(round_trip_counts(trace), [4, 4])


def test_round_trip_counts_rejects_bad_traces():
    with pytest.raises(ValueError, match="n_rungs >= 2"):
        round_trip_counts(np.zeros((5, 1), dtype=int))
    with pytest.raises(ValueError, match="integer"):
        round_trip_counts(HAND_TRACE.astype(float))
    with pytest.raises(ValueError, match="0..2"):
        round_trip_counts(HAND_TRACE + 1)


# --- real sampler output -----------------------------------------------------------------------
def test_round_trips_match_the_samplers_own_counter():
    idata = exchange_run()
    res = round_trips(idata)
    counter = idata.sample_stats["round_trips"].isel(draw=-1).values
    np.testing.assert_array_equal(res["round_trips"].values, counter)
    assert counter.min() > 10  # the run does travel the ladder
    np.testing.assert_allclose(res["round_trip_rate"].values, counter * 1000 / 400)
    np.testing.assert_array_equal(res["replica_round_trips"].sum("replica"), counter)
    assert res["replica_round_trips"].dims == ("chain", "replica")


def test_round_trips_on_per_chain_ladders():
    """ladder="adaptive": counted per chain, equal to the sampler's counter."""
    idata = adaptive_run()
    trips = round_trips(idata)
    counter = idata.sample_stats["round_trips"].isel(draw=-1).values
    np.testing.assert_array_equal(trips["round_trips"].values, counter)


def test_round_trips_on_chains_with_different_numbers_of_rungs():
    """adapt_n_rungs=True, chains on 6 and 5 rungs: the replica a chain lacks has NaN trips."""
    idata = padded_run()
    short = int(np.argmin(np.isfinite(tempering_dataset(idata)["beta"].values).sum(axis=-1)))
    trips = round_trips(idata)
    counter = idata.sample_stats["round_trips"].isel(draw=-1).values
    np.testing.assert_array_equal(trips["round_trips"].values, counter)
    assert np.isnan(trips["replica_round_trips"].values[short, 5])
