"""ExchangeMC: known targets with MCSE-scaled tolerances, broken variants that must fail,
the step-method contract, reproducibility and bad input."""

import arviz as az
import numpy as np
import pymc as pm
import pytest
from helpers import (
    SAMPLE_KWARGS,
    X_SEED_LECTURE,
    exact_tempered_moments,
    mode_weight_check,
    sample_bimodal,
    seed_lecture_model,
)

import pymc_tempering as pmt


def test_bimodal_weights_recovered_by_exchange_mc():
    ok, info = mode_weight_check(sample_bimodal(lambda: pmt.ExchangeMC(n_rungs=32)))
    assert ok, info


def test_bimodal_defeats_metropolis():
    ok, info = mode_weight_check(sample_bimodal(pm.Metropolis))
    assert not ok, info


# -- every rung samples its own tempered target --------------------------------------------------
@pytest.mark.parametrize("swap_scheme", ["deo", "seo"])
def test_every_rung_has_the_exact_mean_loglik(swap_scheme):
    with seed_lecture_model():
        idata = pm.sample(
            draws=1500,
            tune=1000,
            chains=2,
            cores=1,
            random_seed=5,
            step=pmt.ExchangeMC(
                explorer="rwm", n_rungs=12, ladder="power", swap_scheme=swap_scheme
            ),
            **SAMPLE_KWARGS,
        )
    ds = pmt.tempering_dataset(idata)
    for rung, beta in enumerate(ds.beta.values):
        trace = ds.rung_loglik.sel(rung=rung)
        est, mcse = float(trace.mean()), float(az.mcse(trace, method="mean"))
        truth = exact_tempered_moments(beta)[2]
        assert abs(est - truth) < 4 * mcse, (rung, beta, est, truth, mcse)
    # and the recorded chain is the beta = 1 posterior
    m, v, _ = exact_tempered_moments(1.0)
    mu = idata.posterior["mu"]
    assert abs(float(mu.mean()) - m) < 4 * float(az.mcse(mu, method="mean"))
    assert abs(float(mu.std()) - np.sqrt(v)) < 4 * float(az.mcse(mu, method="sd"))


def test_scales_differing_by_orders_of_magnitude_are_tuned():
    """Posterior sds 1e-3 and 1e2 in one model: both must mix after per-parameter tuning."""
    rng = np.random.default_rng(1)
    with pm.Model():
        a = pm.Normal("a", 0, 10)
        c = pm.Normal("c", 0, 1e4)
        pm.Normal("ya", a, 1e-2, observed=rng.normal(0.3, 1e-2, size=100))
        pm.Normal("yc", c, 1e3, observed=rng.normal(3000, 1e3, size=100))
        idata = pm.sample(
            draws=1000,
            tune=1500,
            chains=2,
            cores=1,
            random_seed=3,
            step=pmt.ExchangeMC(explorer="rwm", n_rungs=8),
            **SAMPLE_KWARGS,
        )
    ess = az.ess(idata)
    assert float(ess["a"]) > 100 and float(ess["c"]) > 100, ess
    assert float(idata.sample_stats.accept.mean()) > 0.15


# -- what lands in the DataTree -----------------------------------------------------------------
def test_stats_land_in_the_datatree_with_rung_shapes():
    with seed_lecture_model():
        idata = pm.sample(
            draws=50,
            tune=20,
            chains=2,
            cores=1,
            random_seed=1,
            step=pmt.ExchangeMC(explorer="rwm", n_rungs=6, sweeps_per_draw=3),
            **SAMPLE_KWARGS,
        )
    stats = idata.sample_stats
    for name in ("accept", "accepted", "scaling", "swap_rate", "round_trips"):
        assert stats[name].shape == (2, 50), name
    for name in ("betas", "rung_loglik", "rung_accept", "rung_scaling", "rung_replica"):
        assert stats[name].shape == (2, 50, 6), name
    for name in ("swap_accept", "swap_accepted"):
        assert stats[name].shape == (2, 50, 5), name
    assert stats.rung_replica.dtype.kind == "i"
    # each rung holds a different replica at every draw
    replicas = np.sort(stats.rung_replica.values, axis=-1)
    assert (replicas == np.arange(6)).all()
    # beta = 1 rung's loglik is the loglik of the recorded point
    ds = pmt.tempering_dataset(idata)
    assert ds.rung_loglik.dims == ("chain", "draw", "rung")
    assert ds.swap_accept.dims == ("chain", "draw", "rung_pair")
    np.testing.assert_array_equal(ds.beta, pmt.geometric_ladder(6))
    mu = idata.posterior["mu"].values
    x = X_SEED_LECTURE
    loglik = (-0.5 * np.log(2 * np.pi) - 0.5 * (x - mu[..., None]) ** 2).sum(-1)
    np.testing.assert_allclose(ds.rung_loglik.sel(rung=5).values, loglik)
    # with 3 sweeps per draw every pair is attempted each draw under DEO
    assert np.isfinite(ds.swap_accept.values).all()


def test_tempering_dataset_needs_tempering_traces():
    with seed_lecture_model():
        idata = pm.sample(draws=20, tune=10, chains=1, step=pm.Metropolis(), **SAMPLE_KWARGS)
    with pytest.raises(ValueError, match="ExchangeMC"):
        pmt.tempering_dataset(idata)


# -- rejection of invalid proposals (same seed, 1 or 2 cores: see test_contract.py) -------------
def test_invalid_proposals_are_rejected_never_recorded():
    """y ~ U(0, theta): theta below max(y) has zero likelihood; only the prior rung may hold it."""
    y = np.array([0.5, 1.7, 2.9])
    with pm.Model():
        theta = pm.Gamma("theta", 2, 0.5, initval=4.0)
        pm.Uniform("y", 0, theta, observed=y)
        idata = pm.sample(
            draws=300,
            tune=200,
            chains=1,
            random_seed=2,
            step=pmt.ExchangeMC(explorer="rwm", n_rungs=8),
            **SAMPLE_KWARGS,
        )
    assert (idata.posterior["theta"].values > y.max()).all()
    loglik = pmt.tempering_dataset(idata).rung_loglik
    assert np.isfinite(loglik.sel(rung=slice(1, None)).values).all()  # every rung with beta > 0
    # beta = 0 samples the prior, zero likelihood included: P(theta < 2.9) under Gamma(2, 0.5)
    assert (~np.isfinite(loglik.sel(rung=0).values)).any()


def test_round_trips_are_counted():
    with seed_lecture_model():
        idata = pm.sample(
            draws=500,
            tune=200,
            chains=1,
            random_seed=2,
            step=pmt.ExchangeMC(explorer="rwm", n_rungs=6),
            **SAMPLE_KWARGS,
        )
    trips = idata.sample_stats.round_trips.values[0]
    assert (np.diff(trips) >= 0).all() and trips[-1] > 5


# -- bad input ----------------------------------------------------------------------------------
def test_bad_ladder_arguments():
    with seed_lecture_model():
        with pytest.raises(ValueError, match="strictly increasing"):
            pmt.ExchangeMC(betas=[0, 0.5, 0.4, 1])
        with pytest.raises(ValueError, match="end at 1"):
            pmt.ExchangeMC(betas=[0, 0.5])
        with pytest.raises(ValueError, match="n_rungs"):
            pmt.ExchangeMC(n_rungs=1)
        with pytest.raises(ValueError, match="swap_scheme"):
            pmt.ExchangeMC(swap_scheme="sideways")
        with pytest.raises(ValueError, match="sweeps_per_draw"):
            pmt.ExchangeMC(sweeps_per_draw=0)
        with pytest.raises(ValueError, match="target_accept"):
            pmt.ExchangeMC(target_accept=1.5)


def test_improper_prior_with_a_prior_rung_is_refused():
    """A prior leg (reference='prior') cannot start at an improper prior; the default tempers
    from the variational reference alone (tests/step_methods/exchange/test_improper.py)."""
    with pm.Model():
        mu = pm.Flat("mu")
        pm.Normal("x", mu, 1, observed=[0.1, 0.2])
        with pytest.raises(ValueError, match=r"\['mu'\] have improper"):
            pmt.ExchangeMC(reference="prior")
        assert pmt.ExchangeMC().run.reference_only
        step = pmt.ExchangeMC(betas=[0.01, 0.1, 1.0])  # allowed: the ladder avoids the prior
        assert not step.run.reference_only


def test_model_without_likelihood_is_refused():
    with pm.Model():
        pm.Normal("mu", 0, 1)
        with pytest.raises(ValueError, match="likelihood"):
            pmt.ExchangeMC()


def test_partial_assignments_are_refused():
    with pm.Model():
        k = pm.Poisson("k", 3)
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("x", mu + k, 1, observed=[0.1, 0.2])
        with pytest.raises(ValueError, match=r"every free variable.*\['k'\]"):
            pmt.ExchangeMC([mu])
        pmt.ExchangeMC()  # discrete variables are moved by their own moves
        assert pmt.ExchangeMC.competence(k, False) == pm.step_methods.compound.Competence.COMPATIBLE


def test_non_finite_start_point_names_the_variable():
    with seed_lecture_model():
        with pytest.raises(Exception, match="mu"):
            pm.sample(
                draws=10,
                tune=0,
                chains=1,
                step=pmt.ExchangeMC(explorer="rwm", n_rungs=4),
                initvals={"mu": np.nan},
                **SAMPLE_KWARGS,
            )


def test_models_with_data_containers_and_coords():
    """pm.Data and dims make shared variables in the logp graph; set_data must take effect."""
    with pm.Model(coords={"c": [0, 1]}) as model:
        b = pm.Data("b", 1.0)
        pm.Normal("u", 0, b, dims="c")
        pm.Normal("y", model["u"].sum(), 10, observed=[0.0])
        pm.set_data({"b": 0.1})
        idata = pm.sample(
            draws=1000, tune=500, chains=2, cores=1, random_seed=1,
            step=pmt.ExchangeMC(n_rungs=4, explorer="mala"), **SAMPLE_KWARGS,
        )  # fmt: skip
    u = idata.posterior["u"]
    assert u.dims == ("chain", "draw", "c")
    # posterior sd of each u is ~0.1 (prior 0.1, likelihood sd 10 barely informative)
    sd = float(u.std())
    assert abs(sd - 0.0999) < 4 * float(az.mcse(u.isel(c=0), method="sd")), sd


@pytest.mark.parametrize("scale", [0.3, 30.0, 300.0])
def test_batched_density_equals_per_point_density(scale):
    """The batched graph gets extra exact rewrites (one softplus per Bernoulli observation, no
    tautological sigmoid bound check); it must agree with the per-point graph, also where the
    logits are huge and a naive log(1 - sigmoid) would give -inf."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = rng.binomial(1, 0.5, size=200)
    with pm.Model():
        w = pm.Normal("w", 0, 1, shape=3)
        pm.Bernoulli("y", logit_p=pm.math.dot(X, w), observed=y)
        step = pmt.ExchangeMC(explorer="rwm", n_rungs=4)
    x = rng.normal(size=(16, 3)) * scale
    logprior, loglik = step.density.batch(x)
    single = np.array([step.density(xi) for xi in x])
    assert np.isfinite(loglik).all()
    np.testing.assert_allclose(logprior, single[:, 0], rtol=1e-12)
    np.testing.assert_allclose(loglik, single[:, 1], rtol=1e-12)
    assert _scalar_op_counts(step.density.batched) == {"Softplus": 1, "Sigmoid": 0}


def test_mixture_density_is_batched_without_a_per_replica_loop():
    """logsumexp is a symbolic op that vectorize_graph would wrap in a Blockwise (a loop over
    replicas); it is inlined first. The batched mixture density must equal the per-point one,
    also where a component's log density underflows exp."""
    with pm.Model():
        x = pm.Normal("x", 0, 20, shape=2)
        comps = [np.log(0.3) - 0.5 * ((x - 5.0) ** 2).sum(), np.log(0.7) - 0.5 * (x**2).sum()]
        pm.Potential("mixture", pm.math.logsumexp(pm.math.stack(comps)))
        pm.NormalMixture("y", w=[0.3, 0.7], mu=x, sigma=1.0, observed=[-4.0, 5.0, 6.0])
        step = pmt.ExchangeMC(explorer="rwm", n_rungs=4)
    rng = np.random.default_rng(1)
    x = np.vstack([rng.normal(size=(15, 2)) * 10, [[300.0, -300.0]]])
    logprior, loglik = step.density.batch(x)
    single = np.array([step.density(xi) for xi in x])
    np.testing.assert_allclose(logprior, single[:, 0], rtol=1e-12)
    np.testing.assert_allclose(loglik, single[:, 1], rtol=1e-12)
    assert np.isfinite(loglik).all()
    ops = [str(node.op) for node in step.density.batched.maker.fgraph.apply_nodes]
    assert not [op for op in ops if "Blockwise" in op], ops


def _scalar_op_counts(fn):
    """How many Softplus and Sigmoid scalar ops the compiled function evaluates per element,
    looking inside fused elementwise graphs and composites."""
    from pytensor.scalar.math import Sigmoid, Softplus

    counts = {"Softplus": 0, "Sigmoid": 0}

    def walk(nodes):
        for node in nodes:
            op = getattr(node.op, "scalar_op", node.op)
            counts["Softplus"] += isinstance(op, Softplus)
            counts["Sigmoid"] += isinstance(op, Sigmoid)
            for holder in (node.op,) if op is node.op else (node.op, op):
                inner = getattr(holder, "fgraph", None)
                if inner is not None:
                    walk(inner.apply_nodes)

    walk(fn.maker.fgraph.apply_nodes)
    return counts
