"""The compile-once cache of ExchangeMC's tempered density (step_methods/_compile/cache.py): a hit
returns the same compiled functions and the same draws; a hit never serves another model, a
changed model or stale pm.Data; options it cannot compare bypass it."""

import arviz as az
import numpy as np
import pymc as pm
import pytest
from pytensor.compile.mode import get_mode

from pymc_tempering.step_methods._compile import cache
from pymc_tempering.step_methods._compile.tempered import compile_tempered_density
from pymc_tempering.step_methods.exchange.sampler import ExchangeMC

SAMPLE = dict(chains=1, progressbar=False, compute_convergence_checks=False)


def data_model(x, prior_sd=1.0):
    with pm.Model() as model:
        data = pm.Data("data", x)
        mu = pm.Normal("mu", 0.0, prior_sd)
        pm.Normal("x", mu, 1.0, observed=data)
    return model


def exact_logps(model, point):
    """PyMC's own prior and likelihood terms at ``point`` (value space)."""
    logprior = model.compile_fn(model.varlogp, point_fn=True)(point)
    loglik = model.compile_fn(model.datalogp, point_fn=True)(point)
    return float(logprior), float(loglik)


def density_at(density, point):
    flat = np.concatenate([np.ravel(point[name]) for name, *_ in density.point_map_info])
    logprior, loglik = density.batch(flat[None, :])
    return float(logprior[0]), float(loglik[0])


X = np.random.default_rng(3).normal(0.5, 1.0, size=20)


def test_second_step_on_the_same_model_reuses_the_compiled_density_and_repeats_the_draws():
    model = data_model(X)
    with model:
        first = ExchangeMC(n_rungs=4)
        second = ExchangeMC(n_rungs=4)
        assert second.density is first.density
        draws = [
            pm.sample(draws=50, tune=50, step=step, random_seed=7, **SAMPLE).posterior.mu.values
            for step in (first, second)
        ]
        cache.clear()
        fresh = ExchangeMC(n_rungs=4)
        assert fresh.density is not first.density
        draws.append(
            pm.sample(draws=50, tune=50, step=fresh, random_seed=7, **SAMPLE).posterior.mu.values
        )
    np.testing.assert_array_equal(draws[0], draws[1])
    np.testing.assert_array_equal(draws[0], draws[2])


def test_set_data_is_read_by_a_cached_density_and_the_draws_follow_the_new_data():
    model = data_model(X)
    with model:
        old = ExchangeMC(n_rungs=4)
        new_x = X + 2.5
        pm.set_data({"data": new_x[:15]})  # new values and a new length
        step = ExchangeMC(n_rungs=4)
    assert step.density is old.density  # same graph: the data are read at each call
    point = {"mu": np.array(1.3)}
    np.testing.assert_allclose(density_at(step.density, point), exact_logps(model, point))
    with model:
        idata = pm.sample(draws=1500, tune=500, step=step, random_seed=11, **SAMPLE)
    # conjugate posterior of mu with the new data
    n, total = 15, new_x[:15].sum()
    exact_mean, old_mean = total / (1 + n), X.sum() / (1 + X.size)
    mean = float(idata.posterior.mu.mean())
    mcse = float(az.mcse(idata, var_names=["mu"]).mu)
    assert abs(mean - exact_mean) < 4 * mcse
    assert abs(mean - old_mean) > 20 * mcse  # the test can tell stale data apart


def test_a_model_differing_in_one_constant_compiles_its_own_density():
    first, second = data_model(X, prior_sd=1.0), data_model(X, prior_sd=0.1)
    with first:
        step_first = ExchangeMC(n_rungs=4)
    with second:
        step_second = ExchangeMC(n_rungs=4)
    assert step_second.density is not step_first.density
    point = {"mu": np.array(0.4)}
    np.testing.assert_allclose(density_at(step_second.density, point), exact_logps(second, point))
    assert density_at(step_first.density, point)[0] != density_at(step_second.density, point)[0]


def test_a_term_added_to_the_model_after_compiling_is_a_miss():
    model = data_model(X)
    with model:
        before = ExchangeMC(n_rungs=4)
        pm.Potential("pull", -3.0 * model["mu"] ** 2)
        after = ExchangeMC(n_rungs=4)
    assert after.density is not before.density
    point = {"mu": np.array(0.7)}
    np.testing.assert_allclose(density_at(after.density, point), exact_logps(model, point))


def test_a_changed_parameter_shape_is_a_miss():
    with pm.Model(coords={"group": range(2)}) as model:
        theta = pm.Normal("theta", 0.0, 1.0, dims="group")
        pm.Normal("y", theta.sum(), 1.0, observed=[0.3])
        two = ExchangeMC(n_rungs=4)
        model.set_dim("group", 3, coord_values=range(3))
        three = ExchangeMC(n_rungs=4)
    assert two.density.n_params == 2 and three.density.n_params == 3


def test_options_the_cache_cannot_compare_bypass_it():
    model = data_model(X)
    ip = model.initial_point()
    with model:
        mode = {"mode": get_mode("NUMBA")}
        assert compile_tempered_density(model, model.value_vars, ip, mode) is not (
            compile_tempered_density(model, model.value_vars, ip, mode)
        )
        plain = compile_tempered_density(model, model.value_vars, ip)
        assert compile_tempered_density(model, model.value_vars, ip) is plain
        assert compile_tempered_density(model, model.value_vars, ip, gradient=True) is not plain
        other = compile_tempered_density(model, model.value_vars, ip, {"on_unused_input": "warn"})
        assert other is not plain


@pytest.mark.slow
def test_the_step_pickles_for_worker_processes_and_repeats_the_draws():
    """cores > 1 under mp_ctx 'forkserver' / 'spawn' (macOS, Windows) pickles the step (where
    it cannot, PyMC logs "Could not pickle model" and samples the chains one after the other)."""
    import cloudpickle

    model = data_model(X)
    kwargs = dict(draws=30, tune=30, chains=2, random_seed=5, progressbar=False)
    with model:
        step = ExchangeMC(n_rungs=4)
        cloudpickle.dumps(step)
        parallel = pm.sample(cores=2, mp_ctx="forkserver", step=step, **kwargs)
        serial = pm.sample(cores=1, step=step, **kwargs)
    np.testing.assert_array_equal(parallel.posterior.mu.values, serial.posterior.mu.values)


def test_every_sampler_on_a_logistic_model_pickles():
    """The rewrites behind the batched and minibatch densities are included by name, not as a
    rewriter object in the mode (which held an unpicklable cache)."""
    import cloudpickle

    import pymc_tempering as pmt

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    y = rng.integers(0, 2, 50).astype("int32")
    with pm.Model():
        coef = pm.Normal("coef", 0.0, 1.0, shape=2)
        pm.Bernoulli("y", logit_p=pm.math.dot(X, coef), observed=y)
        steps = [ExchangeMC(n_rungs=4), ExchangeMC(n_rungs=4, explorer="mala"), pmt.SGLD()]
    for step in steps:
        copy = cloudpickle.loads(cloudpickle.dumps(step))
        assert type(copy) is type(step)


def test_the_density_takes_the_replicas_alone():
    """The batched function's only input is the replicas (the data stay constants of the
    graph, or the model's own pm.Data)."""
    model = constant_model(X)
    density = compile_tempered_density(model, model.value_vars, model.initial_point())
    assert len(density.batched.maker.fgraph.inputs) == 1


def constant_model(x, prior_sd=1.0):
    """The model of data_model with the data folded in as a constant (no pm.Data)."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, prior_sd)
        pm.Normal("x", mu, 1.0, observed=x)
    return model
