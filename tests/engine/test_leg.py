"""One leg's sweep (:mod:`pymc_tempering.engine.leg`), followed sweep by sweep on ExchangeMC's
fixed leg: tuning sweeps counted in sweeps (draws times sweeps per draw), exact prior draws
only with a prior rung, one per sweep, drawn a block at a time; the record's rows are
probabilities and the swap tally adds the proposed pairs' swap row; the adaptive ladder
re-placed at the last sweep of each round, a resized ladder resizing replicas, scales and the
padded stats; no tuning after ``stop_tuning``."""

import numpy as np
import pymc as pm
import pytest
import targets
from pymc.blocking import DictToArrayBijection

from pymc_tempering.kernels.fused import ACCEPT, SWAP
from pymc_tempering.step_methods._compile.prior import PRIOR_BLOCK
from pymc_tempering.step_methods.exchange.sampler import ExchangeMC


def _model():
    """mu ~ N(0, 10^2), 40 points from N(0.5, 1): tempering moves mu a long way."""
    return targets.lecture_model(targets.lecture_data(n=40), b=10.0)


def _step(tune, draws=0, seed=0, **kwargs):
    kwargs = {"explorer": "rwm", "n_rungs": 6, **kwargs}
    with _model():
        step = ExchangeMC(**kwargs)
    step.setup_chain(np.random.default_rng(seed), tune=tune, draws=draws)
    return step


POINT = DictToArrayBijection.map({"mu": np.array(0.3)})


def test_tuning_sweeps_are_tuning_draws_times_sweeps_per_draw():
    step = _step(tune=10, sweeps_per_draw=3)
    assert step.tune_sweeps == 30
    step.astep(POINT)
    assert step.sweep == 3
    step.reset_tuning()
    assert step.tune_sweeps == 30


@pytest.mark.parametrize("prior_rung", [False, True])
def test_exact_prior_draws_only_on_a_prior_rung_one_per_sweep(prior_rung):
    """With the prior rung each sweep uses the next draw of a block of the potential's
    ``prior_draws_per_call`` draws; without, no prior draw is made."""
    step = _step(tune=20, prior_rung=prior_rung)
    step.astep(POINT)  # replicas made
    for k in range(1, 6):
        step.astep(POINT)
        buffer = step.prior_draws
        if not prior_rung:
            assert buffer.draws.shape[0] == 0
            continue
        assert buffer.draws.shape == (PRIOR_BLOCK, 1)
        assert buffer.pos == k + 1


def test_the_record_holds_probabilities_and_the_tally_adds_the_proposed_pairs_swap_row():
    """Per sweep: the ``ACCEPT`` row and the proposed pairs' ``SWAP`` in [0, 1] (exp of a log
    ratio at most 0); the tally grows by the swap row over this sweep's pairs, one attempt per
    pair. On this ladder the accept and swap rows differ by more than 0.1 somewhere."""
    step = _step(tune=50)
    step.astep(POINT)
    leg = step.run.fixed
    gap = 0.0
    for _ in range(10):
        before = leg.swaps
        record = leg.sweep_once()
        pairs = leg._pair_index
        for row in (record[ACCEPT], record[SWAP, pairs]):
            assert np.all((row >= 0) & (row <= 1))
        after = leg.swaps
        assert after.attempts - before.attempts == record[SWAP, pairs].size > 0
        np.testing.assert_allclose(
            after.accept_sum - before.accept_sum, record[SWAP, pairs].sum(), rtol=1e-12
        )
        gap = max(gap, np.abs(record[SWAP, pairs] - record[ACCEPT, pairs]).max())
    assert gap > 0.1
    assert step.swaps.rate() == pytest.approx(after.accept_sum / after.attempts)


def test_the_adaptive_ladder_is_replaced_at_the_last_sweep_of_each_round():
    """tune = 150: rounds end at sweeps 32 and 96 (32 + 64 <= 0.8 * 150), so the ladder
    changes in sweeps 31 and 95 (counted from 0) and in no other."""
    step = _step(tune=150, ladder="adaptive")
    changed = []
    for sweep in range(150):
        betas = step.betas.copy()
        step.astep(POINT)
        if betas.shape != step.betas.shape or not np.array_equal(betas, step.betas):
            changed.append(sweep)
    assert changed == [31, 95]


def test_a_resized_ladder_resizes_replicas_scales_and_the_padded_stats():
    """adapt_n_rungs on a 12-rung ladder that needs fewer: after the resize every per-rung
    record has the new size and the stats are padded with NaN to ``max_rungs``."""
    step = _step(tune=150, n_rungs=12, ladder="adaptive", adapt_n_rungs=True)
    max_rungs = step.run.fixed.options.max_rungs
    sizes = set()
    for _ in range(150):
        _, (stats,) = step.astep(POINT)
        n = step.betas.size
        sizes.add(n)
        assert step.replicas.x.shape[0] == n == step.replicas.loglik.size
        assert step.scales.log_scaling.shape[0] == n
        assert step.recorder.last_end.size == n
        assert stats["betas"].shape == (max_rungs,) == stats["rung_loglik"].shape
        assert stats["swap_accept"].shape == (max_rungs - 1,)
        assert np.isnan(stats["betas"][n:]).all() and np.isfinite(stats["betas"][:n]).all()
    assert len(sizes) > 1, sizes


def test_nothing_is_tuned_after_stop_tuning():
    step = _step(tune=30, draws=20)
    for _ in range(30):
        step.astep(POINT)
    step.stop_tuning()
    scales, betas = step.scales, step.betas.copy()
    for _ in range(20):
        step.astep(POINT)
    assert step.scales is scales
    np.testing.assert_array_equal(step.betas, betas)


def test_a_jittered_start_keeps_the_start_point_on_top_and_rounds_discrete_columns():
    """init="jitter": the top rung at the start point, the others within 1 of it, the discrete
    vector's jittered values rounded to integers (a Poisson's log density is finite between
    integers, so nothing else would catch them)."""
    with pm.Model():
        k = pm.Poisson("k", 2.0, shape=3)
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu + k.sum(), 1.0, observed=[4.1, 5.3])
        step = ExchangeMC(explorer="rwm", n_rungs=8, init="jitter")
    leg = step.run.fixed
    columns = leg.discrete_columns
    assert columns.size == 3
    continuous = np.setdiff1d(np.arange(4), columns)
    q0 = np.full(4, 2.0)
    q0[continuous] = 0.25
    leg.start(q0)
    x = leg.replicas.x
    np.testing.assert_array_equal(x[-1], q0)
    assert np.abs(x - q0).max() <= 1.0
    np.testing.assert_array_equal(x[:, columns], np.round(x[:, columns]))
    assert np.unique(x[:-1, continuous]).size == 7
