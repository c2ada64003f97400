"""ExchangeMC's options on a mixed model, as a user would combine them (issue 14).

The model mixes a continuous mean with a Gibbs-moved DiscreteUniform and Bernoulli vector, a
Poisson moved by integer Metropolis and a Potential on the discrete variables (tempered with
the likelihood). Its tempered laws are exact: enumeration over the discrete states and a fine
quadrature over the mean. The other tests check that seeds, processes and saved states give the
same draws, and that the supports are read from batched, dims-labelled and pm.Data parameters.
"""

import numpy as np
import pymc as pm
import pytest
from helpers import SAMPLE_KWARGS
from scipy import special, stats

import pymc_tempering as pmt
from pymc_tempering.evidence.core.mcse import mean_mcse

Y = np.array([4.2, 6.1, 5.3])
PENALTY = -0.7  # Potential per included g
K_MAX = 40  # Poisson(1.5) mass beyond 40 is below 1e-40


def mixed_model():
    with pm.Model() as model:
        s = pm.DiscreteUniform("s", 0, 4)
        g = pm.Bernoulli("g", 0.3, shape=2)
        k = pm.Poisson("k", 1.5)
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Potential("penalty", PENALTY * g.sum())
        pm.Normal("y", mu + s + g.sum() + k, 1.0, observed=Y)
    return model


def _grid():
    """Every discrete state times a quadrature grid over mu: values, log prior (with the
    grid's weight), loglik (the Potential included)."""
    s, g0, g1, k = np.meshgrid(np.arange(5), [0, 1], [0, 1], np.arange(K_MAX), indexing="ij")
    s, g0, g1, k = (a.ravel()[:, None] for a in (s, g0, g1, k))
    mu, dmu = np.linspace(-9.0, 9.0, 1201, retstep=True)
    logprior = (
        np.log(0.2) + stats.bernoulli.logpmf(g0, 0.3) + stats.bernoulli.logpmf(g1, 0.3)
        + stats.poisson.logpmf(k, 1.5) + stats.norm.logpdf(mu) + np.log(dmu)
    )  # fmt: skip
    mean = s + g0 + g1 + k + mu
    loglik = stats.norm.logpdf(Y[:, None, None], mean, 1.0).sum(axis=0) + PENALTY * (g0 + g1)
    zero = 0.0 * mean
    values = {"s": s + zero, "g0": g0 + zero, "k": k + zero, "mu": mu + zero}
    return values, logprior, loglik


VALUES, LOGPRIOR, LOGLIK = _grid()


def exact_tempered(beta):
    """E_beta[loglik] and the tempered law's means of s, g[0], k and mu."""
    log_w = LOGPRIOR + beta * LOGLIK
    w = np.exp(log_w - special.logsumexp(log_w))
    return float((w * LOGLIK).sum()), {name: float((w * v).sum()) for name, v in VALUES.items()}


def test_exact_reference_at_the_prior_and_a_hand_check():
    loglik_0, means_0 = exact_tempered(0.0)
    assert means_0["s"] == pytest.approx(2.0) and means_0["k"] == pytest.approx(1.5)
    assert means_0["g0"] == pytest.approx(0.3) and means_0["mu"] == pytest.approx(0.0, abs=1e-9)
    # E_prior[loglik] by hand: E(y_i - mean)^2 = (y_i - E mean)^2 + Var(mean) under the prior
    var_mean = 1.0 + 2 * 0.21 + 2.0 + 1.5  # mu, g, s (uniform on 0..4), k
    m = Y - (2.0 + 0.6 + 1.5)
    by_hand = (-0.5 * np.log(2 * np.pi) - 0.5 * (m**2 + var_mean)).sum() + PENALTY * 0.6
    assert loglik_0 == pytest.approx(by_hand, rel=1e-6)


def _run(seed, draws=1000, tune=500, chains=2, cores=1, **step_kwargs):
    with mixed_model():
        return pm.sample(
            draws, tune=tune, chains=chains, cores=cores, step=pmt.ExchangeMC(**step_kwargs),
            random_seed=seed, **SAMPLE_KWARGS,
        )  # fmt: skip


def _max_z(idata):
    """Largest |estimate - exact| / MCSE over every rung of every chain's mean loglik (the
    chains' ladders may differ after adaptation) and the top rung's means of s, g[0], k, mu."""
    ds = pmt.tempering_dataset(idata)
    loglik = ds.rung_loglik.values  # (chain, draw, rung)
    betas = np.broadcast_to(ds.beta.values, (loglik.shape[0], loglik.shape[2]))
    z = []
    for chain, rung in zip(*np.nonzero(np.isfinite(betas)), strict=True):
        trace = loglik[chain, :, rung][None]
        exact = exact_tempered(betas[chain, rung])[0]
        z.append(abs(trace.mean() - exact) / mean_mcse(trace).mcse)
    _, means = exact_tempered(1.0)
    post = idata.posterior
    for name, trace in (("s", post.s), ("g0", post.g[..., 0]), ("k", post.k), ("mu", post.mu)):
        trace = np.asarray(trace, dtype=float)
        z.append(abs(trace.mean() - means[name]) / mean_mcse(trace).mcse)
    return max(z)


@pytest.mark.parametrize(
    "kwargs",
    [
        # the ladder is re-spaced and resized (16 -> a few rungs) during tuning
        {"n_rungs": 16, "ladder": "adaptive", "adapt_n_rungs": True, "tune": 1000},
        {"n_rungs": 3, "sweeps_per_draw": 3, "init": "jitter", "draws": 600},
        {"n_rungs": 6, "explorer": "mala", "prior_rung": False},
    ],
    ids=["adaptive-resized", "three-rungs-sweeps-jitter", "mala-no-prior-rung"],
)
def test_options_keep_every_rung_exact(kwargs):
    idata = _run(1, **kwargs)
    if kwargs.get("adapt_n_rungs"):
        n_used = np.isfinite(np.atleast_2d(pmt.tempering_dataset(idata).beta.values)).sum(-1)
        assert np.all(n_used < 16), n_used  # the resize happened
    assert _max_z(idata) < 4


def test_one_or_two_processes_give_the_same_draws():
    single, parallel = (_run(7, draws=100, tune=100, n_rungs=4, cores=c) for c in (1, 2))
    for name in ("s", "g", "k", "mu"):
        np.testing.assert_array_equal(single.posterior[name], parallel.posterior[name])
    np.testing.assert_array_equal(
        single.sample_stats.rung_loglik, parallel.sample_stats.rung_loglik
    )


@pytest.mark.parametrize("explorer", ["rwm", "mala"])
def test_a_restored_sampling_state_repeats_the_discrete_moves(explorer):
    with mixed_model() as model:
        step = pmt.ExchangeMC(n_rungs=4, explorer=explorer, rng=np.random.default_rng(2))
    point = model.initial_point()
    for _ in range(20):
        point, _ = step.step(point)
    state = step.sampling_state
    first = [step.step(point)[0] for _ in range(10)]
    step.sampling_state = state
    again = [step.step(point)[0] for _ in range(10)]
    for a, b in zip(first, again, strict=True):
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])
    assert len({int(p["s"]) for p in first}) > 1  # the discrete moves did move


def test_supports_from_batched_dims_data_and_a_dirichlet():
    coords = {"group": ["a", "b"], "item": [0, 1, 2]}
    with pm.Model(coords=coords):
        low, high = pm.Data("low", np.array([2, 3], dtype="int32")), pm.Data("high", 6)
        n = pm.Data("n", np.array([[3] * 3, [30] * 3], dtype="int32"))
        u = pm.DiscreteUniform("u", [0, 1, 2], [3, 4, 20], dims=("group", "item"))
        b = pm.Binomial("b", n, [0.2, 0.4, 0.6], dims=("group", "item"))
        d = pm.DiscreteUniform("d", low, high)
        w = pm.Dirichlet("w", np.ones(4))
        z = pm.Categorical("z", p=w, shape=2)
        pm.Normal("y", u.sum() + b.sum() + d.sum() + z.sum() + w[0], 3.0, observed=[20.0])
        step = pmt.ExchangeMC(n_rungs=3)
    moves = step.explorer.moves
    support = {v.name: (v.lower.tolist(), v.upper.tolist()) for v in moves.variables}
    assert support["u"] == ([0, 1, 2] * 2, [3, 4, 20] * 2)
    assert support["b"] == ([0] * 6, [3] * 3 + [30] * 3)
    assert support["d"] == ([2, 3], [6, 6])
    assert support["z"] == ([0, 0], [3, 3])
    columns = {v.name: v.columns for v in moves.variables}
    lattice = set(moves.lattice)  # more than 16 values: integer Metropolis
    assert lattice == {columns["u"][2], columns["u"][5], *columns["b"][3:]}
    gibbs = {column: values.tolist() for column, values in moves.gibbs}
    assert gibbs[columns["d"][1]] == [3, 4, 5, 6]


def _binomial_data_model(n):
    with pm.Model() as model:
        trials = pm.Data("trials", n)
        p = pm.Beta("p", 2.0, 2.0)
        k = pm.Binomial("k", trials, p)
        pm.Normal("y", k, 1.0, observed=[9.0])
    return model


def _binomial_exact_mean(n):
    k = np.arange(n + 1)
    log_w = stats.betabinom.logpmf(k, n, 2, 2) + stats.norm.logpdf(9.0, k, 1.0)
    return float(np.exp(log_w - special.logsumexp(log_w)) @ k)


def test_a_step_built_before_set_data_samples_the_new_support():
    with _binomial_data_model(6) as model:
        step = pmt.ExchangeMC(n_rungs=4)
        pm.set_data({"trials": 14}, model=model)
        idata = pm.sample(
            500, tune=300, chains=2, cores=1, step=step, random_seed=3, **SAMPLE_KWARGS
        )
    k = np.asarray(idata.posterior.k, dtype=float)
    assert abs(k.mean() - _binomial_exact_mean(14)) < 4 * mean_mcse(k).mcse
