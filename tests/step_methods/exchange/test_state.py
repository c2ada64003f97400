"""ExchangeMC's sampling state over the engine (:mod:`pymc_tempering.step_methods.exchange.
state`): a saved state of a two-leg run, restored, repeats both legs' sweeps bit for bit; the
variational leg's fields are set on the leg, its stream stays the run's; the fields read and
set through are the run's (``rng``, ``tune``, ``reference_fit``) or the fixed leg's; frozen
fields refuse a state of another ``sweeps_per_draw`` or ``swap_scheme``."""

import numpy as np
import pytest
import targets
from pymc.blocking import DictToArrayBijection

from pymc_tempering.step_methods.exchange.sampler import ExchangeMC
from pymc_tempering.step_methods.exchange.state import ExchangeMCState, LegState

POINT = DictToArrayBijection.map({"mu": np.array(0.3)})


def _step(seed=0, tune=80, **kwargs):
    kwargs = {"explorer": "rwm", "n_rungs": 4, "reference": "variational", **kwargs}
    with targets.lecture_model(targets.lecture_data(n=40), b=10.0):
        step = ExchangeMC(**kwargs)
    step.setup_chain(np.random.default_rng(seed), tune=tune, draws=20)
    return step


def _follow(step, n):
    out = []
    for _ in range(n):
        x, (stats,) = step.astep(POINT)
        legs = step.run.legs
        out.append(
            (x.data.copy(), *[leg.replicas.x.copy() for leg in legs],
             *[leg.scales.log_scaling.copy() for leg in legs],
             stats["round_trips"], stats["swap_rate"])
        )  # fmt: skip
    return out


def _same(a, b):
    for one, two in zip(a, b, strict=True):
        for u, v in zip(one, two, strict=True):
            np.testing.assert_array_equal(u, v)


def test_a_restored_two_leg_state_repeats_both_legs_bit_for_bit():
    """Saved after 30 sweeps (a reference fitted at sweep 49 lies ahead), 30 sweeps, restored,
    30 again: the same draws, the same variational replicas and scales, the same stats."""
    step = _step()
    _follow(step, 30)
    state = step.sampling_state
    assert isinstance(state, ExchangeMCState)
    assert isinstance(state.variational, ExchangeMCState)
    assert state.variational.variational is None and state.variational.reference_fit is None
    first = _follow(step, 30)
    step.sampling_state = state
    _same(first, _follow(step, 30))


def test_a_state_restored_into_another_step_continues_that_run():
    """A second step of the same options and another seed, given the first's state after 70
    sweeps (the variational leg has counted round trips), continues as the first does: the
    counters, everything of both legs, the fit and the stream are in the state."""
    one, two = _step(seed=0), _step(seed=9)
    _follow(one, 70)
    _follow(two, 3)
    assert one.run.variational._round_trips > 0
    two.sampling_state = one.sampling_state
    for a, b in zip(one.run.legs, two.run.legs, strict=True):
        assert a.recorder.count == b.recorder.count and a.swaps == b.swaps
    _same(_follow(one, 40), _follow(two, 40))
    np.testing.assert_array_equal(
        two.reference_fit.reference.chol, one.reference_fit.reference.chol
    )


def test_the_variational_legs_state_is_set_on_the_leg_and_its_stream_stays_the_runs():
    step = _step()
    _follow(step, 5)
    leg = step.run.variational
    view = step.variational
    assert isinstance(view, LegState)
    assert view.rng is step.run.rng and leg.rng is step.run.rng
    assert view.variational is None and view.reference_fit is None
    state = view.sampling_state
    sweep = leg.sweep
    _follow(step, 3)
    view.sampling_state = state
    assert leg.sweep == sweep
    assert "sampling_state" not in vars(leg) and "rng" not in vars(leg)
    np.testing.assert_array_equal(leg.replicas.x, state.replicas.x)


def test_the_steps_fields_are_the_runs_and_the_fixed_legs():
    step = _step()
    run = step.run
    assert step.rng is run.rng and step.tune is run.tune is True
    step.tune = False
    assert not run.fixed.tune and not run.variational.tune
    _follow(step, 2)
    assert step.reference_fit is run.reference_fit
    assert step.betas is run.fixed.betas and step.sweep == run.fixed.sweep == 2
    step.sweep = 7
    assert run.fixed.sweep == 7 and run.variational.sweep == 2


@pytest.mark.parametrize(
    "options", [{"sweeps_per_draw": 2}, {"swap_scheme": "seo"}], ids=["sweeps", "scheme"]
)
def test_a_state_of_other_frozen_options_is_refused(options):
    one, two = _step(reference="prior"), _step(reference="prior", **options)
    _follow(one, 2)
    with pytest.raises(ValueError, match="frozen"):
        two.sampling_state = one.sampling_state
