"""pymc_tempering.plots.replicas: each replica's steps follow the replica trace, and its label
gives the round trips round_trips counts; a chain with fewer rungs shows only its own."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
from helpers import assert_labelled, exchange_run, lines_labelled, padded_run, render
from two_legs import legs_of, two_leg_run

from pymc_tempering.diagnostics.round_trip import round_trip_events, round_trips
from pymc_tempering.plots.replicas import plot_replica_trajectories
from pymc_tempering.trace import tempering_dataset


def test_replica_trajectories_follow_the_replica_trace(tmp_path):
    exchange_idata = exchange_run()
    fig, ax = render(
        tmp_path, "replicas", plot_replica_trajectories, exchange_idata, replicas=[0, 3], draws=120
    )
    assert_labelled(ax)
    trace = exchange_idata.sample_stats["rung_replica"].sel(chain=0).values
    steps = [line for line in ax.get_lines() if line.get_label().startswith("replica")]
    assert len(steps) == 2
    for rep, line in zip([0, 3], steps, strict=True):
        rung_of_replica = np.argmax(trace == rep, axis=1)[:120]
        np.testing.assert_array_equal(line.get_ydata(), rung_of_replica)
    total = round_trips(exchange_idata)["replica_round_trips"].sel(chain=0).values
    assert f"({total[0]} round trips" in steps[0].get_label()


def test_replica_trajectories_of_a_chain_with_fewer_rungs(tmp_path):
    idata = padded_run()
    ds = tempering_dataset(idata)
    short = int(np.argmin(np.isfinite(ds["beta"].values).sum(axis=-1)))
    n_rungs = int(np.isfinite(ds["beta"].values[short]).sum())
    fig, ax = render(
        tmp_path, "replicas_short", plot_replica_trajectories, idata, chain=short, replicas=9
    )
    assert_labelled(ax)
    steps = lines_labelled(ax, "replica")
    assert len(steps) == n_rungs  # every replica the chain has, none from its padding
    trace = ds["rung_replica"].isel(chain=short).values[:, :n_rungs]
    total = round_trips(idata)["replica_round_trips"].isel(chain=short).values
    for rep, line in enumerate(steps):
        np.testing.assert_array_equal(line.get_ydata(), np.argmax(trace == rep, axis=1)[:300])
        assert f"({int(total[rep])} round trip" in line.get_label()
    assert ax.get_ylim()[1] == pytest.approx(n_rungs - 0.3)
    with pytest.raises(ValueError, match=rf"`replicas` must be ids in 0\.\.{n_rungs - 1}"):
        plot_replica_trajectories(idata, chain=short, replicas=[5])
    with pytest.raises(ValueError, match=r"`chain` must be one of the chain labels \[0, 1\]"):
        plot_replica_trajectories(idata, chain=2)
    plt.close("all")


def test_replica_trajectories_mark_each_completed_round_trip(tmp_path):
    """Over the whole chain, one marker per round trip, at the draw round_trip_events gives,
    as many as round_trips counts."""
    exchange_idata = exchange_run()
    fig, ax = render(
        tmp_path, "replicas_all", plot_replica_trajectories, exchange_idata, replicas=[0, 5],
        draws=slice(None),
    )  # fmt: skip
    trace = tempering_dataset(exchange_idata)["rung_replica"].sel(chain=0).values
    events = round_trip_events(trace.astype(np.int64))
    total = round_trips(exchange_idata)["replica_round_trips"].sel(chain=0).values
    markers = [line for line in lines_labelled(ax, "_") if line.get_marker() == "^"]
    assert len(markers) == 2
    for rep, line in zip([0, 5], markers, strict=True):
        np.testing.assert_array_equal(line.get_xdata(), np.flatnonzero(events[:, rep]))
        assert len(line.get_xdata()) == total[rep] > 0


def test_replica_trajectories_of_a_two_leg_run_show_each_leg(tmp_path):
    """reference="variational": a panel per leg, each following that leg's replica trace."""
    idata = two_leg_run()
    fig, axes = render(tmp_path, "replicas_two_legs", plot_replica_trajectories, idata,
                       replicas=[0], draws=100)  # fmt: skip
    assert len(axes) == 2
    for axis, (leg, ds) in zip(axes, legs_of(idata).items(), strict=True):
        assert_labelled(axis)
        assert axis.get_xlabel() == f"draw (chain 0, {leg} leg)"
        trace = ds["rung_replica"].sel(chain=0).transpose("draw", "rung").values
        (line,) = lines_labelled(axis, "replica 0")
        np.testing.assert_array_equal(line.get_ydata(), np.argmax(trace == 0, axis=1)[:100])
