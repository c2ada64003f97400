"""A tempering run of two legs joined at beta = 1 (:mod:`pymc_tempering.engine.run`),
followed draw by draw: ``tune`` reaches both legs, ``stop_tuning`` clears both legs' counters
and freezes the reference, ``round_trips`` counts both legs' trips, the variational stats
average the draw's sweeps, a draw whose sweep resized the ladder reports NaN, and
``reset_tuning`` restarts the variational leg from the fixed leg's beta = 1 replica."""

import numpy as np
import pytest
import targets
from pymc.blocking import DictToArrayBijection

from pymc_tempering.kernels.fused import ACCEPT
from pymc_tempering.step_methods.exchange.sampler import ExchangeMC

POINT = DictToArrayBijection.map({"mu": np.array(0.3)})


def _step(tune, draws=0, seed=0, **kwargs):
    kwargs = {"explorer": "rwm", "n_rungs": 5, "reference": "variational", **kwargs}
    with targets.lecture_model(targets.lecture_data(n=40), b=10.0):
        step = ExchangeMC(**kwargs)
    step.setup_chain(np.random.default_rng(seed), tune=tune, draws=draws)
    return step


def test_round_trips_count_both_legs_trips():
    """``round_trips`` is the fixed leg's count plus the variational leg's, at every draw;
    both legs complete trips within 200 sweeps here."""
    step = _step(tune=100, draws=100)
    fixed, leg = step.run.fixed, step.run.variational
    for i in range(200):
        if i == 100:
            step.stop_tuning()
        _, (stats,) = step.astep(POINT)
        assert stats["round_trips"] == fixed._round_trips + leg._round_trips
    assert fixed._round_trips > 0 and leg._round_trips > 0


def test_without_tuning_neither_leg_tunes():
    """``tune=0``: both legs' ``tune`` is False and neither's scales move."""
    step = _step(tune=0, draws=20)
    legs = step.run.legs
    assert [leg.tune for leg in legs] == [False, False]
    step.astep(POINT)
    scales = [leg.scales for leg in legs]
    for _ in range(20):
        step.astep(POINT)
    assert all(leg.scales is s for leg, s in zip(legs, scales, strict=True))
    step.run.tune = True
    assert [leg.tune for leg in legs] == [True, True]


def test_stop_tuning_clears_both_legs_counters_and_freezes_the_reference():
    step = _step(tune=60, draws=5)
    for _ in range(60):
        step.astep(POINT)
    assert step.run.variational.swaps.attempts > 0
    step.stop_tuning()
    for leg in step.run.legs:
        assert not leg.tune
        assert leg.swaps == (0.0, 0) and leg._round_trips == 0
        assert np.all(leg.recorder.last_end == leg.recorder.empty(leg.betas.size).last_end)
    assert step.reference_fit.frozen
    q = step.reference_fit.reference
    step.astep(POINT)
    assert step.reference_fit.reference is q


def test_the_variational_stats_average_the_draws_sweeps():
    """sweeps_per_draw=3: the leg's ``rung_accept`` is the mean of its three sweeps' accept
    rows (spied on the leg), not the last one's."""
    step = _step(tune=20, sweeps_per_draw=3)
    leg = step.run.variational
    rows = []
    sweep_once = leg.sweep_once

    def spy():
        record = sweep_once()
        rows.append(record[ACCEPT].copy())
        return record

    leg.sweep_once = spy
    differ = False
    for _ in range(5):
        rows.clear()
        _, (stats,) = step.astep(POINT)
        assert len(rows) == 3
        mean = np.mean(rows, axis=0)
        np.testing.assert_allclose(stats["variational_rung_accept"], mean, rtol=1e-12)
        differ |= not np.allclose(mean, rows[-1])
    assert differ


def test_a_draw_whose_sweep_resized_the_ladder_reports_nan():
    """adapt_n_rungs: the draw whose sweep changed the number of rungs has NaN per-rung
    acceptance (its record was made on the old ladder); the others are finite."""
    step = _step(tune=150, reference="prior", n_rungs=12, ladder="adaptive", adapt_n_rungs=True)
    resized = 0
    for _ in range(150):
        n = step.betas.size
        _, (stats,) = step.astep(POINT)
        accept = stats["rung_accept"][: step.betas.size]
        if step.betas.size != n:
            resized += 1
            assert np.isnan(accept).all()
        else:
            assert np.isfinite(accept).all()
    assert resized > 0


@pytest.mark.parametrize("sweeps_per_draw", [1, 2])
def test_reset_tuning_keeps_the_tuning_length_and_restarts_the_variational_leg(sweeps_per_draw):
    """tune = 80 draws: room for a fit (its first window ends at sweep 50), so the restarted
    reference is not frozen."""
    step = _step(tune=80, sweeps_per_draw=sweeps_per_draw)
    for _ in range(10):
        step.astep(POINT)
    step.reset_tuning()
    assert step.tune_sweeps == 80 * sweeps_per_draw
    assert step.sweep == 0 and step.run.variational.sweep == 0
    top = step.replicas.x[-1]
    np.testing.assert_array_equal(step.variational.replicas.x[-1], top)
    assert step.reference_fit is not None and not step.reference_fit.frozen
