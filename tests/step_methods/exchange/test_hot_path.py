"""What ExchangeMC's per-draw path computes once instead of every draw, checked against the
per-draw computation it replaced: checkpoint rows built at snapshot time, the spacing of
snapshots, swap pairs picked out of a record by a slice, and stats computed only when the
proposal scales change."""

import math

import numpy as np
import pytensor
import pytest
from helpers import normal_model

from pymc_tempering.engine.swap import swap_pairs
from pymc_tempering.kernels.fused import pair_index
from pymc_tempering.resume.checkpoint import (
    CHUNK_BYTES,
    EMPTY_CHUNK,
    HEADER,
    MAX_SNAPSHOT_DRAWS,
    MIN_SNAPSHOT_DRAWS,
    _chunk_rows,
    snapshot_due,
)
from pymc_tempering.step_methods.exchange.sampler import ExchangeMC

FAST = {"mode": pytensor.compile.mode.Mode(linker="cvm", optimizer="fast_run")}


def _packed_chunk(at, k, payload):
    """The stat of draw ``k`` of a snapshot as it was built per draw before (struct + bytes)."""
    n_chunks = -(-len(payload) // CHUNK_BYTES)
    out = np.zeros(HEADER.size + CHUNK_BYTES, dtype=np.uint8)
    out[: HEADER.size] = np.frombuffer(HEADER.pack(at, k, n_chunks, len(payload)), np.uint8)
    piece = payload[k * CHUNK_BYTES : (k + 1) * CHUNK_BYTES]
    out[HEADER.size : HEADER.size + len(piece)] = np.frombuffer(piece, np.uint8)
    return out


@pytest.mark.parametrize("size", [1, CHUNK_BYTES - 1, CHUNK_BYTES, 3 * CHUNK_BYTES + 17])
def test_snapshot_rows_equal_the_chunks_packed_draw_by_draw(size):
    payload = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    rows = _chunk_rows(123, payload)
    assert rows.shape == (-(-size // CHUNK_BYTES), HEADER.size + CHUNK_BYTES)
    assert not rows.flags.writeable  # each draw's stat is a view: nothing may change it
    for k, row in enumerate(rows):
        np.testing.assert_array_equal(row, _packed_chunk(123, k, payload), strict=True)
    assert HEADER.unpack(EMPTY_CHUNK[: HEADER.size].tobytes()) == (-1, 0, 0, 0)
    assert not EMPTY_CHUNK[HEADER.size :].any() and not EMPTY_CHUNK.flags.writeable


def _snapshot_starts(n_draws, n_chunks):
    """Draws at which snapshots of ``n_chunks`` chunks start, as ``Resumable._chunk`` decides."""
    starts, written = [0], 1
    for draw in range(1, n_draws):
        if written < n_chunks:
            written += 1
        elif snapshot_due(draw, starts[-1]):
            starts.append(draw)
            written = 1
    return starts


def test_snapshots_space_out_with_the_run_up_to_a_maximum():
    assert _snapshot_starts(4000, 49) == [0, 100, 200, 400, 800, 1600, 2600, 3600]
    assert MIN_SNAPSHOT_DRAWS == 100 and MAX_SNAPSHOT_DRAWS == 1000
    # a state longer than the spacing: the next snapshot starts when the last is written
    assert _snapshot_starts(1000, 150) == [0, 150, 300, 600]


@pytest.mark.parametrize("scheme", ["deo", "seo", "random"])
@pytest.mark.parametrize("n_rungs", [2, 3, 8, 33])
def test_pair_index_picks_the_proposed_pairs_in_order(scheme, n_rungs):
    rng = np.random.default_rng(n_rungs)
    row = rng.normal(size=n_rungs)
    for sweep in range(6):
        lower = swap_pairs(n_rungs, sweep, scheme, rng)
        picked = row[pair_index(lower)]
        np.testing.assert_array_equal(picked, row[lower], strict=True)
        assert picked.sum() == row[lower].sum()  # the same bits: the swap_rate stat


def test_pair_index_falls_back_to_the_pairs_themselves():
    lower = np.array([0, 3, 5])
    assert pair_index(lower) is lower
    assert pair_index(np.array([], dtype=int)) == slice(0, 0)


def test_scaling_stats_follow_the_scales_and_freeze_with_them():
    """``scaling`` / ``rung_scaling`` equal exp(log_scaling) (NaN on the exact prior rung),
    are one read-only array while the scales do not change, and follow a restored state."""
    model = normal_model()
    with model:
        step = ExchangeMC(explorer="rwm", n_rungs=4, compile_kwargs=FAST)
    step.setup_chain(np.random.default_rng(0), tune=20, draws=10)
    point = model.initial_point()
    for _ in range(20):
        point, _ = step.step(point)
    step.stop_tuning()
    _, (first,) = step.step(point)
    _, (second,) = step.step(point)
    expected = np.exp(step.scales.log_scaling)
    expected[0] = np.nan if step.prior_rung else expected[0]
    np.testing.assert_array_equal(first["rung_scaling"], expected)
    assert first["scaling"] == math.exp(step.scales.log_scaling[-1])
    assert second["rung_scaling"] is first["rung_scaling"]
    assert not first["rung_scaling"].flags.writeable
    state = step.sampling_state
    state.scales = state.scales._replace(log_scaling=state.scales.log_scaling + 0.5)
    step.sampling_state = state
    _, (third,) = step.step(point)
    np.testing.assert_allclose(third["rung_scaling"], expected * np.exp(0.5))


def _assert_flat_step_is_pymcs(step, point, n_draws, stats=()):
    """``n_draws`` steps from ``point`` by ``step.step`` (``FlatPointStep``) and by PyMC's
    general ``ArrayStepShared.step``, each from the same sampling state: the same points,
    variable by variable in order, shape, dtype and value, and the same ``stats``. Returns the
    last point."""
    from pymc.step_methods.arraystep import ArrayStepShared

    fast = generic = point
    for _ in range(n_draws):
        state = step.sampling_state
        fast, fast_stats = step.step(fast)
        step.sampling_state = state
        generic, generic_stats = ArrayStepShared.step(step, generic)
        assert list(fast) == list(generic) == list(point)
        for name, value in generic.items():
            assert fast[name].shape == value.shape == np.shape(point[name]), name
            assert fast[name].dtype == value.dtype == np.asarray(point[name]).dtype, name
            np.testing.assert_array_equal(fast[name], value, strict=True)
        for stat in stats:
            np.testing.assert_array_equal(fast_stats[0][stat], generic_stats[0][stat])
    return fast


def test_the_flat_point_step_gives_pymcs_point_with_discrete_and_shaped_variables():
    """ExchangeMC maps the point to its flat state and back without PyMC's bookkeeping
    (``FlatPointStep``): the same point, variable by variable, as PyMC's ``map`` / ``rmap``
    give, in value, shape and dtype, on a model with an integer switchpoint, a transformed
    rate and a matrix."""
    import pymc as pm

    with pm.Model() as model:
        k = pm.DiscreteUniform("k", 0, 6)
        rate = pm.Exponential("rate", 1.0, shape=2)
        c = pm.Normal("c", 0.0, 1.0, shape=(2, 2))
        mean = pm.math.switch(pm.math.lt(np.arange(6), k), rate[0], rate[1]) + c.sum()
        pm.Normal("y", mean, 1.0, observed=np.array([0.5, 1.0, 0.2, 2.0, 2.5, 1.9]))
    with model:
        step = ExchangeMC(n_rungs=4, explorer="rwm", compile_kwargs=FAST)
    step.setup_chain(np.random.default_rng(3), tune=20, draws=0)
    point = model.initial_point()
    fast = _assert_flat_step_is_pymcs(step, point, 20, ("rung_loglik", "rung_replica"))
    assert fast["k"].dtype.kind == "i"
    assert any(not np.array_equal(fast[k], point[k]) for k in point)  # it moved


def _one_variable_model():
    """One vector variable (the flat step's common case) with a transform and correlated
    coordinates, so that a slip in the mapping shows in the values."""
    import pymc as pm

    with pm.Model() as model:
        w = pm.Normal("w", 0.0, 2.0, shape=(2, 3))
        pm.Normal("y", w.sum(axis=0) + w[0], 1.0, observed=np.array([0.5, -1.0, 2.0]))
    return model


def test_a_one_variable_point_takes_the_short_path_to_the_same_draw():
    """A point of one variable is mapped by its name, shape and dtype alone (``FlatPointStep``'s
    ``_flat_one``): the same point and stats as PyMC's general ``ArrayStepShared.step``, bit
    for bit, in shape and dtype; a point of another shape or name is mapped anew."""
    model = _one_variable_model()
    with model:
        step = ExchangeMC(n_rungs=4, explorer="rwm", compile_kwargs=FAST)
    step.setup_chain(np.random.default_rng(5), tune=10, draws=0)
    point = model.initial_point()
    stats = ("rung_loglik", "rung_replica", "rung_accept", "swap_accept")
    fast = _assert_flat_step_is_pymcs(step, point, 12, stats)
    assert list(fast) == ["w"] and fast["w"].shape == (2, 3)
    assert step._flat_one == ("w", (2, 3), point["w"].dtype)
    assert not np.array_equal(fast["w"], point["w"])  # it moved
    # a point laid out otherwise: the layout is learnt again, not read with the old one
    other = {"w": fast["w"].T.copy()}
    moved, _ = step.step(other)
    assert moved["w"].shape == (3, 2) and step._flat_one == ("w", (3, 2), point["w"].dtype)
    renamed, _ = step.step({"v": moved["w"]})
    assert list(renamed) == ["v"] and step._flat_one == ("v", (3, 2), point["w"].dtype)


def test_the_first_draw_copies_the_start_point():
    """The run reads the start point at the first draw of a chain only, as a float64 copy:
    changing the point PyMC handed in afterwards changes nothing of the run (here the
    reference ``N(q0, I)`` of a model with a flat prior, which keeps its mean). A second
    chain of the same step object gets a view of PyMC's point (the layout is learnt)."""
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Flat("mu", shape=2)
        pm.Normal("y", mu, 1.0, observed=np.array([[0.3, -0.2], [1.0, 0.4]]))
    with model:
        step = ExchangeMC(n_rungs=3, explorer="rwm", compile_kwargs=FAST)
    for chain in range(2):
        step.setup_chain(np.random.default_rng(chain), tune=5, draws=0)
        start = {"mu": np.array([0.1, -0.7])}
        step.step(start)
        mean = step.run.reference_fit.reference.mean
        assert mean.dtype == np.float64
        np.testing.assert_array_equal(mean, [0.1, -0.7])
        start["mu"][:] = 99.0
        np.testing.assert_array_equal(step.run.reference_fit.reference.mean, [0.1, -0.7])


def test_a_one_variable_discrete_point_keeps_its_integer_dtype():
    """The short path casts the flat float64 state back to the variable's dtype, as PyMC's
    ``rmap`` does: a model of one integer vector gets integer draws."""
    import pymc as pm

    with pm.Model() as model:
        k = pm.Binomial("k", n=12, p=0.4, shape=2)
        pm.Normal("y", k[0] - k[1], 1.0, observed=np.array([1.5, 2.5]))
    with model:
        step = ExchangeMC(n_rungs=3, compile_kwargs=FAST)
    step.setup_chain(np.random.default_rng(2), tune=5, draws=0)
    fast = _assert_flat_step_is_pymcs(step, model.initial_point(), 8)
    assert fast["k"].dtype.kind == "i"
    assert step._flat_one == ("k", (2,), fast["k"].dtype)  # the short path, in its dtype


def test_the_flat_step_learns_the_layout_again_for_another_dtype_or_variable_set():
    """A point of another dtype, or of several variables then one again, is mapped as PyMC's
    ``map`` / ``rmap`` map it: the move sees that point's layout, and the point comes back in
    its own dtype (not in the first point's)."""
    from pymc.blocking import DictToArrayBijection, RaveledVars

    from pymc_tempering.step_methods._flat_step import FlatPointStep

    class Shift(FlatPointStep):  # adds 1 to every entry, and keeps the layout it was given
        shared = {}

        def astep(self, q0):
            self.seen = q0.point_map_info
            return RaveledVars(q0.data + 1, q0.point_map_info), [{}]

    step = Shift()
    points = [
        {"x": np.zeros(3)},
        {"x": np.zeros(3), "y": np.zeros(2)},
        {"x": np.zeros(3)},
        {"x": np.zeros(3, dtype=np.float32)},
        {"x": np.zeros((1, 3))},
    ]
    for point in points:
        out, _ = step.step(point)
        q = DictToArrayBijection.map(point)
        expected = DictToArrayBijection.rmap(RaveledVars(q.data + 1, q.point_map_info))
        assert step.seen == q.point_map_info
        assert list(out) == list(expected)
        for name, value in expected.items():
            assert out[name].dtype == value.dtype and out[name].shape == value.shape, name
            np.testing.assert_array_equal(out[name], value)
