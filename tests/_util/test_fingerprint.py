"""model_logp_graphs: a model's varlogp and datalogp graphs built once and shared by the store key,
the likelihood check, the compiled density and the checkpoint digests, and built again (never
served stale) when the model gains a variable or Potential."""

import numpy as np
import pymc as pm
from pytensor.graph.basic import equal_computations

from pymc_tempering._util.fingerprint import model_graph_digests, model_logp_graphs
from pymc_tempering.step_methods._compile import cache, compile_tempered_density


def lecture():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("x", mu, 1.0, observed=np.array([0.1, -0.3, 0.8]))
    return model


def test_same_graphs_while_the_model_is_unchanged():
    model = lecture()
    first = model_logp_graphs(model)
    assert all(a is b for a, b in zip(first, model_logp_graphs(model), strict=True))
    # the graphs PyMC would build: equal computations
    assert equal_computations([model.varlogp, model.datalogp], list(first))


def test_graphs_and_digests_follow_a_changed_model():
    """Each kind of change the graphs depend on builds them again."""
    model = lecture()
    before, digests = model_logp_graphs(model), model_graph_digests(model)
    with model:
        sigma = pm.HalfNormal("sigma", 1.0)  # a new free variable (with a transform)
    after = model_logp_graphs(model)
    assert after[0] is not before[0]
    assert equal_computations([model.varlogp, model.datalogp], list(after))
    assert model_graph_digests(model)["prior"] != digests["prior"]
    with model:
        pm.Potential("pull", -((sigma - 1.0) ** 2))  # a new likelihood term
    assert equal_computations([model.datalogp], [model_logp_graphs(model)[1]])
    assert model_graph_digests(model)["likelihood"] != digests["likelihood"]
    with model:
        pm.Normal("z", sigma, 1.0, observed=np.array([0.5]))  # a new observed variable
    assert equal_computations([model.datalogp], [model_logp_graphs(model)[1]])


def test_compiled_density_follows_a_changed_model():
    """compile_tempered_density on the grown model compiles its new graph, not the cached one."""
    cache.clear()
    model = lecture()
    with model:
        point = model.initial_point()
        small = compile_tempered_density(model, model.value_vars, point)
        pm.Potential("extra", -10.0 * model["mu"] ** 2)
        grown = compile_tempered_density(model, model.value_vars, point)
    x = np.array([[0.7]])
    assert grown is not small
    assert small.batch(x)[0] == grown.batch(x)[0]  # same prior
    np.testing.assert_allclose(grown.batch(x)[1] - small.batch(x)[1], -10.0 * 0.49)


def test_one_derivation_gives_pymcs_own_graphs():
    """model_logp_graphs derives every term once and sums them as PyMC does: the same graphs
    as ``model.varlogp`` and ``model.datalogp`` (equal computations and values) on a named
    model with a transformed variable, two observed variables and a Potential, and on models
    without observed variables or without free ones."""
    with pm.Model(name="m") as model:
        tau = pm.Gamma("tau", 2.0, 1.0)
        u = pm.Normal("u", 0.0, 1.0, shape=2)
        pm.Normal("y", u.sum(), 1.0 / tau, observed=np.array([0.3, -1.2, 0.5]))
        pm.Poisson("k", pm.math.exp(u[0]), observed=np.array([1, 0, 3]))
        pm.Potential("pull", -0.5 * tau**2)
    with pm.Model() as prior_only:
        pm.Normal("a", 0.0, 1.0)
    with pm.Model() as potential_only:
        a = pm.Normal("a", 0.0, 1.0)
        pm.Potential("p", -(a**2))
    point = {"m::tau_log__": np.array(0.4), "m::u": np.array([0.2, -0.7])}
    for m, at in ((model, point), (prior_only, {"a": 0.3}), (potential_only, {"a": 0.3})):
        ours = model_logp_graphs(m)
        assert equal_computations([m.varlogp, m.datalogp], list(ours))
        for mine, pymcs in zip(ours, (m.varlogp, m.datalogp), strict=True):
            assert mine.name == pymcs.name
            f = m.compile_fn([mine, pymcs], inputs=m.value_vars, on_unused_input="ignore")
            np.testing.assert_array_equal(*f(at))
