"""One draw's stats from a sweep record (:mod:`pymc_tempering.engine.stats`): every array stat
as long and of the dtype :func:`array_stat_shapes` declares, a ladder shorter than
``max_rungs`` (even by one rung) padded with NaN and replica id -1, one of full length kept
as it is."""

import numpy as np
import pytest

from pymc_tempering.engine.stats import ScalingStats, array_stat_shapes, draw_stats
from pymc_tempering.kernels.fused import ACCEPT, SWAP, Replicas

MAX_RUNGS = 6


def _stats(n_rungs, prefix=""):
    rng = np.random.default_rng(n_rungs)
    betas = np.linspace(0.0, 1.0, n_rungs)
    replicas = Replicas(
        rng.normal(size=(n_rungs, 2)), np.empty((n_rungs, 0)), rng.normal(size=n_rungs),
        rng.normal(size=n_rungs), rng.permutation(n_rungs),
    )  # fmt: skip
    record = rng.uniform(size=(4, n_rungs))
    scaling = ScalingStats(prior_rung=True)
    scaling.update(np.log(rng.uniform(0.5, 2.0, size=n_rungs)))
    stats = draw_stats(record, False, betas, replicas, scaling, 0.3, 2, MAX_RUNGS)
    return stats, record, betas, replicas


@pytest.mark.parametrize("n_rungs", [MAX_RUNGS - 1, MAX_RUNGS - 3, MAX_RUNGS])
def test_every_array_stat_is_as_declared_and_a_short_ladder_is_padded(n_rungs):
    stats, record, betas, replicas = _stats(n_rungs)
    shapes = array_stat_shapes(MAX_RUNGS)
    for name, (dtype, length) in shapes.items():
        assert stats[name].shape == (length,), name
        assert stats[name].dtype == np.dtype(dtype), name
    np.testing.assert_array_equal(stats["betas"][:n_rungs], betas)
    np.testing.assert_array_equal(stats["rung_loglik"][:n_rungs], replicas.loglik)
    np.testing.assert_array_equal(stats["rung_replica"][:n_rungs], replicas.rung_replica)
    np.testing.assert_array_equal(stats["rung_accept"][:n_rungs], record[ACCEPT])
    np.testing.assert_array_equal(stats["swap_accept"][: n_rungs - 1], record[SWAP, :-1])
    assert (
        np.isnan(stats["betas"][n_rungs:]).all() and np.isnan(stats["rung_loglik"][n_rungs:]).all()
    )
    assert (stats["rung_replica"][n_rungs:] == -1).all()
    assert np.isnan(stats["swap_accepted"][n_rungs - 1 :]).all()
    assert stats["accept"] == record[ACCEPT, -1] and stats["round_trips"] == 2


def test_the_prefix_names_every_array_stat_of_the_other_leg():
    plain, prefixed = array_stat_shapes(4), array_stat_shapes(4, "variational_")
    assert prefixed == {"variational_" + name: shape for name, shape in plain.items()}
    assert plain["rung_replica"] == (np.int64, 4) and plain["swap_accept"] == (np.float64, 3)
