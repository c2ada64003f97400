"""RowEvaluator in this process (the actor's code without a cluster): each row evaluated alone,
bit for bit the Rowwise arithmetic; its layout; the gradient compiled on demand; the compiled
density reused for the same model bytes; the sleep hook."""

import time

import cloudpickle
import numpy as np
import targets

from pymc_tempering.distributed import evaluator
from pymc_tempering.engine.placement import RowwisePotential
from pymc_tempering.step_methods._compile import compile_tempered_density

X, Y = targets.regression_data()


def build():
    return targets.regression_model(X, Y)


def _rows(n=16):
    return np.random.default_rng(1).normal(size=(n, 3)) * [0.4, 1.7, 2.9]


def test_rows_equal_rowwise_evaluation_and_report_compute_time():
    model = build()
    local = compile_tempered_density(model, model.value_vars, model.initial_point(), gradient=True)
    actor = evaluator.RowEvaluator(cloudpickle.dumps(build), gradient=True)
    x = _rows()
    # 16 rows: a batched call rounds the log-likelihood and its gradient differently here
    *out, seconds = actor.batch(x)
    for a, b in zip(out, RowwisePotential(local).batch(x), strict=True):
        np.testing.assert_array_equal(a, b)
    *out, seconds_grad = actor.batch_grad(x)
    assert len(out) == 4 and out[2].shape == out[3].shape == (16, 3)
    for a, b in zip(out, RowwisePotential(local).batch_grad(x), strict=True):
        np.testing.assert_array_equal(a, b)
    assert seconds > 0 and seconds_grad > 0
    n_params, info = actor.layout()
    assert n_params == 3 and tuple(info) == tuple(local.point_map_info)


def test_gradient_compiled_on_demand_and_density_reused():
    data = cloudpickle.dumps(build)
    walk = evaluator.RowEvaluator(data, {"on_unused_input": "ignore"})
    assert walk.density.batched_grad is None
    assert walk.ensure_gradient() and walk.density.batched_grad is not None
    again = evaluator.RowEvaluator(data, {"on_unused_input": "ignore"})
    assert again.density is walk.density  # same bytes and options: compiled once
    other = evaluator.RowEvaluator(data, {"on_unused_input": "warn"})
    assert other.density is not walk.density


def test_a_pm_model_payload_is_used_as_is():
    actor = evaluator.RowEvaluator(cloudpickle.dumps(build()))
    assert actor.layout()[0] == 3


def test_sleep_next_delays_only_the_next_evaluation():
    actor = evaluator.RowEvaluator(cloudpickle.dumps(build))
    actor.sleep_next(0.3)
    started = time.perf_counter()
    *_, seconds = actor.batch(_rows(1))
    assert time.perf_counter() - started >= 0.3 and seconds >= 0.3
    started = time.perf_counter()
    actor.batch(_rows(1))
    assert time.perf_counter() - started < 0.3
