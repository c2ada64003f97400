"""DaskPlacement on a real LocalCluster (worker processes): the rows of each evaluation split
over the workers, every row evaluated alone, so the draws equal placement=Rowwise() in one
process bit for bit; a worker killed mid-run or hanging past worker_timeout dropped with
nothing lost; the cost warning; no pickling into pm.sample's subprocesses."""

import pickle
import warnings

import numpy as np
import pymc as pm
import pytest
import targets
from helpers import SAMPLE_KWARGS

import pymc_tempering as pmt
from pymc_tempering.distributed import placement as dp
from pymc_tempering.engine.placement import Rowwise, RowwisePotential
from pymc_tempering.step_methods._compile import compile_tempered_density

X, Y = targets.regression_data()
pytestmark = pytest.mark.filterwarnings(
    "ignore::pymc_tempering.distributed.placement.DistributedCostWarning"
)


def build():
    """The conjugate regression (3 coefficients): a model builder the workers call."""
    return targets.regression_model(X, Y)


@pytest.fixture(scope="module")
def model():
    return build()


def _density(model, gradient=False):
    return compile_tempered_density(
        model, model.value_vars, model.initial_point(), gradient=gradient
    )


def _rows(n=5, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 3)) * [0.5, 1.3, 2.1]


def _sample(model, placement, draws=25, tune=15, callback=None, **options):
    with model:
        step = pmt.ExchangeMC(n_rungs=5, placement=placement, **options)
        return pm.sample(
            draws=draws, tune=tune, chains=1, cores=1, step=step, random_seed=5,
            callback=callback, **SAMPLE_KWARGS,
        )  # fmt: skip


@pytest.fixture(scope="module")
def rowwise_mala(model):
    return _sample(model, Rowwise(), explorer="mala")


def test_row_blocks_are_contiguous_ordered_and_balanced():
    for n_rows, n in [(5, 2), (7, 3), (2, 4), (8, 1)]:
        blocks = dp.row_blocks(n_rows, n)
        assert np.array_equal(np.concatenate(blocks), np.arange(n_rows))
        assert len(blocks) == min(n, n_rows) and all(b.size for b in blocks)
        sizes = [b.size for b in blocks]
        assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)


@pytest.mark.parametrize("n_workers", [1, 2])
def test_batch_and_gradient_equal_rowwise_bit_for_bit(client, model, n_workers):
    """Each evaluator's rows in place: outputs equal one-row-at-a-time evaluation in this
    process, for 5 rows (blocks of 3 and 2 on two workers); the gradient, not compiled for
    a walk, compiled on every worker by ensure_gradient."""
    local = _density(model)
    with model:
        potential = dp.DaskPlacement(client, n_workers=n_workers).place(local)
    try:
        assert potential.n_workers == n_workers and potential.n_params == 3
        x = _rows()
        want = RowwisePotential(local).batch(x)
        got = potential.batch(x)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
        assert potential.ensure_gradient()
        want = RowwisePotential(local).batch_grad(x)
        for a, b in zip(potential.batch_grad(x), want, strict=True):
            np.testing.assert_array_equal(a, b)
        assert potential.timing.calls == 2 and potential.timing.compute_s > 0
        assert not potential.lost
    finally:
        potential.close()


def test_mala_draws_equal_rowwise_with_one_and_two_workers(client, model, rowwise_mala):
    """2 workers here (1 and 4 workers: test_distributed_run.py, for every option)."""
    want = rowwise_mala.posterior["w"].values
    placement = dp.DaskPlacement(client, n_workers=2, model=build)
    idata = _sample(model, placement, explorer="mala")
    placement.close()
    assert not placement.placed[0].lost  # every gradient evaluated on the workers
    np.testing.assert_array_equal(idata.posterior["w"].values, want)


def _fault_at(at, hook):
    """A pm.sample callback that calls ``hook()`` once, after ``at`` draws (tuning
    included)."""
    state = {"done": False}

    def callback(trace, draw):
        if not state["done"] and draw.draw_idx + 1 >= at:
            state["done"] = True
            hook()

    return callback


def test_a_worker_killed_mid_run_is_dropped_and_the_draws_stay(client, model, rowwise_mala):
    """The second worker's process exits inside an evaluation after 20 sweeps: the run
    finishes on the first, with a WorkerLostWarning, and its draws are those of the
    uninterrupted run bit for bit."""
    placement = dp.DaskPlacement(client, model=build)
    holder = {}

    def kill():
        potential = placement.placed[0]
        holder["address"] = potential.evaluators[1].address
        potential.evaluators[1].actor.exit_next().result()

    with pytest.warns(dp.WorkerLostWarning, match="dropped"):
        idata = _sample(model, placement, explorer="mala", callback=_fault_at(20, kill))
    potential = placement.placed[0]
    assert len(potential.lost) == 1 and potential.lost[0].startswith(holder["address"])
    assert [e.address for e in potential.evaluators] != [holder["address"]]
    assert len(potential.evaluators) == 1
    np.testing.assert_array_equal(idata.posterior["w"].values, rowwise_mala.posterior["w"].values)
    placement.close()
    assert dp.with_run_attrs(idata, placement).posterior.attrs["workers_lost"] == 1
    client.wait_for_workers(2, timeout=60)  # the nanny restarts the killed worker


def test_a_hung_worker_is_dropped_after_the_timeout(client, model, rowwise_mala):
    """One worker sleeps 8 s inside an evaluation; worker_timeout=2 drops it after ~2 s, its
    rows go to the other and the draws stay bit for bit; the run does not wait the 8 s (it
    samples in about 3 s). With a 1 s timeout, a clean clone's CI on 2 busy cores dropped the
    healthy worker too (2 workers lost, not 1), twice in two sessions."""
    placement = dp.DaskPlacement(client, model=build, worker_timeout=2.0)

    def hang():
        placement.placed[0].evaluators[0].actor.sleep_next(8.0).result()

    with pytest.warns(dp.WorkerLostWarning, match="worker_timeout=2.0"):
        idata = _sample(model, placement, explorer="mala", callback=_fault_at(10, hang))
    elapsed = idata.posterior.attrs["sampling_time"]  # the sampling loop, compiling aside
    potential = placement.placed[0]
    assert len(potential.lost) == 1 and "no answer within" in potential.lost[0]
    np.testing.assert_array_equal(idata.posterior["w"].values, rowwise_mala.posterior["w"].values)
    assert elapsed < 8.0, elapsed
    placement.close()


def test_no_worker_left_evaluates_here_and_says_so(client, model, rowwise_mala):
    """The only worker hangs past the timeout: the rest of the run is evaluated in this
    process, one row at a time (bit for bit), with a warning saying what to do."""
    placement = dp.DaskPlacement(client, n_workers=1, model=build, worker_timeout=0.5)

    def hang():
        placement.placed[0].evaluators[0].actor.sleep_next(2.0).result()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = _sample(model, placement, explorer="mala", callback=_fault_at(10, hang))
    text = " ".join(str(w.message) for w in caught if w.category is dp.WorkerLostWarning)
    assert "No worker of this distributed run is left" in text
    assert "continue_sampling(idata, draws, client=new_client)" in text
    assert placement.placed[0].evaluators == []
    np.testing.assert_array_equal(idata.posterior["w"].values, rowwise_mala.posterior["w"].values)


def _renamed():
    """The regression with its coefficients named ``v``: 3 parameters, another layout."""
    with pm.Model() as renamed:
        v = pm.Normal("v", 0.0, 2.0, shape=3)
        pm.Normal("y", pm.math.dot(X, v), 0.7, observed=Y)
    return renamed


@pytest.mark.parametrize(
    ("other", "match"),
    [
        (lambda: targets.regression_model(X[:, :2], Y), "reads 2 parameters"),
        (lambda: targets.regression_model(np.column_stack([X, X[:, 1] ** 2]), Y), "reads 4 "),
        (_renamed, "reads 3 parameters laid out as .*'v'"),
    ],
)
def test_another_model_on_the_workers_is_refused(client, model, other, match):
    """Fewer, more, or as many parameters under other names: refused, naming the layouts."""
    with model, pytest.raises(ValueError, match=match):
        dp.DaskPlacement(client, n_workers=1, model=other).place(_density(model))


def test_cannot_be_pickled_into_pm_sample_subprocesses(client, model):
    placement = dp.DaskPlacement(client, n_workers=1)
    with pytest.raises(TypeError, match="cores=1"):
        pickle.dumps(placement)
    with model:
        step = pmt.ExchangeMC(n_rungs=3, placement=placement)
        with pytest.raises(TypeError, match="cores=1"):
            pickle.dumps(step)
        with pytest.raises(Exception, match="cores=1"):
            pm.sample(draws=5, tune=5, chains=2, cores=2, step=step, **SAMPLE_KWARGS)
    placement.close()


def test_cost_warning_fires_once_for_a_cheap_model(client, model):
    """A 3-parameter regression costs microseconds a row: the round trip dominates."""
    placement = dp.DaskPlacement(client, model=build)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _sample(model, placement, draws=20, tune=20, explorer="rwm")
    placement.close()
    cost = [w for w in caught if w.category is dp.DistributedCostWarning]
    assert len(cost) == 1, [str(w.message) for w in caught]
    assert "pm.sample(step=pmt.ExchangeMC(...))" in str(cost[0].message)
    assert cost[0].filename == __file__  # the user's line, not the package's


@pytest.mark.parametrize(
    ("round_s", "compute_s", "warns"), [(1.0, 0.4, True), (1.0, 0.6, False), (1.0, 0.5, False)]
)
def test_cost_check_warns_when_communication_outweighs_compute(round_s, compute_s, warns):
    """The rule itself: warn when (round trip - compute) > compute over the measured calls."""
    potential = dp.DaskPotential(object(), [])
    potential._measured = dp.Timing(dp.COST_CHECK_CALLS, round_s, compute_s)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        potential._cost_check()
    assert len(caught) == warns


def test_cost_check_judges_the_calls_after_the_warmup():
    """Measured: calls WARMUP_CALLS + 1 on; judged once, at COST_CHECK_CALLS of them."""

    class Slow:
        n_params = 1

        def batch(self, x):
            return np.zeros(len(x)), np.zeros(len(x))

    potential = dp.DaskPotential(Slow(), [])
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for _ in range(dp.WARMUP_CALLS + dp.COST_CHECK_CALLS - 1):
            potential.batch(np.zeros((2, 1)))
        assert not potential._cost_checked
        assert potential._measured.calls == dp.COST_CHECK_CALLS - 1
        potential.batch(np.zeros((2, 1)))
    assert potential._cost_checked and potential.timing.calls == 25


@pytest.mark.parametrize("bad", [0, -1.0, "5", True])
def test_worker_timeout_must_be_positive_seconds(client, bad):
    with pytest.raises(ValueError, match="worker_timeout"):
        dp.DaskPlacement(client, worker_timeout=bad)
