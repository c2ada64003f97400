"""The compiled minibatch gradients (:mod:`pymc_tempering.step_methods._compile.minibatch`):
unbiased for the full-data gradient over a partition and at random, and one minibatch call
found after other samplers have rewritten the model."""

import numpy as np
import pymc as pm
from helpers import FAST
from helpers import SAMPLE_KWARGS as SAMPLE
from targets import (
    logistic_data,
    logistic_model,
)

from pymc_tempering.step_methods._compile import compile_minibatch_gradients
from pymc_tempering.step_methods.sgld import SGLD


def test_minibatch_gradient_is_unbiased_over_a_partition():
    """Averaged over a partition of the rows into batches, (N/n) sum_batch = the full sum."""
    X, y = logistic_data(60)
    model = logistic_model(X, y, batch_size=10)
    grads = compile_minibatch_gradients(model, model.value_vars, model.initial_point(), FAST)
    assert (grads.total_size, grads.batch_size, grads.n_rows) == (60, 10, 60)
    beta = np.array([0.3, -0.2, 0.1])
    batches = np.random.default_rng(0).permutation(60).reshape(6, 10)
    per_batch = np.array([grads.indexed(beta, rows)[1] for rows in batches])
    full = X.T @ (y - 1 / (1 + np.exp(-X @ beta)))
    np.testing.assert_allclose(per_batch.mean(axis=0), full, rtol=1e-12, atol=1e-12)
    assert not np.allclose(per_batch[0], full)  # each batch alone is noisy
    # the full-batch model compiles the same full gradient, and the same prior gradient
    full_model = logistic_model(X, y)
    exact = compile_minibatch_gradients(full_model, full_model.value_vars, {"beta": beta}, FAST)
    assert not exact.minibatched
    prior_g, lik_g = exact.grads(beta)
    np.testing.assert_allclose(lik_g, full, rtol=1e-12)
    np.testing.assert_allclose(prior_g, -beta)
    # per-datum scores: unscaled gradient of log p(y_i | beta)
    rows = batches[0]
    p = 1 / (1 + np.exp(-X[rows] @ beta))
    np.testing.assert_allclose(grads.scores(beta, rows), X[rows] * (y[rows] - p)[:, None])


def test_random_minibatch_gradient_averages_to_full_gradient():
    X, y = logistic_data(40, seed=3)
    model = logistic_model(X, y, batch_size=5)
    grads = compile_minibatch_gradients(model, model.value_vars, model.initial_point(), FAST)
    grads.reseed(np.random.default_rng(1))
    beta = np.array([0.2, 0.1, -0.4])
    draws = np.array([grads.grads(beta)[1] for _ in range(4000)])
    full = X.T @ (y - 1 / (1 + np.exp(-X @ beta)))
    se = draws.std(axis=0) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - full) < 4 * se)


# -- a model that other samplers have touched ------------------------------------------------------


def sgld_trace(model, seed=6):
    with model:
        step = SGLD(step_size=1e-3, schedule="constant", compile_kwargs=FAST)
        idata = pm.sample(draws=30, tune=0, chains=1, step=step, random_seed=seed, **SAMPLE)
    return idata.posterior["beta"].values, step


def test_one_minibatch_call_after_nuts_and_compile_dlogp_touched_the_model():
    """PyMC's pre-gradient rewrites (run when NUTS is built and by model.compile_dlogp) give one
    copy of the pm.Minibatch node a new op, in place. SGLD must still see one call (it said
    'found 2') and still draw a fresh minibatch every step: the same trace as on a fresh
    model, and a gradient that is unbiased for the full-data one."""
    X, y = logistic_data(100)
    fresh, _ = sgld_trace(logistic_model(X, y, batch_size=10))
    touched = logistic_model(X, y, batch_size=10)
    with touched:
        pm.NUTS()
    touched.compile_dlogp()
    trace, step = sgld_trace(touched)
    np.testing.assert_array_equal(trace, fresh)
    grads = step.gradients
    assert len(grads.rngs) == 1  # the minibatch RNG is updated at every call
    grads.reseed(np.random.default_rng(1))
    beta = np.array([0.2, 0.1, -0.4])
    draws = np.array([grads.grads(beta)[1] for _ in range(2000)])
    full = X.T @ (y - 1 / (1 + np.exp(-X @ beta)))
    se = draws.std(axis=0) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - full) < 4 * se)
