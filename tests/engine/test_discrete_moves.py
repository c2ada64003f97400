"""ExchangeMC on discrete and mixed models: every rung's law against exact enumeration.

The pure-discrete model has a Gibbs-moved DiscreteUniform and Bernoulli vector and a Poisson
moved by integer Metropolis, so both move kinds and the swaps are checked on every rung."""

import numpy as np
import pymc as pm
import pytest
from helpers import SAMPLE_KWARGS
from scipy import stats

import pymc_tempering as pmt
from pymc_tempering.engine import discrete as discrete_module
from pymc_tempering.evidence.core.mcse import mean_mcse
from pymc_tempering.step_methods._compile import discrete_variables

Y = np.array([4.2, 6.1, 5.3])
SD = 1.0
K_MAX = 60  # Poisson(2) mass beyond 60 is below 1e-50


def discrete_model():
    with pm.Model() as model:
        s = pm.DiscreteUniform("s", 0, 5)
        g = pm.Bernoulli("g", 0.3, shape=2)
        k = pm.Poisson("k", 2.0)
        pm.Normal("y", s + g.sum() + k, SD, observed=Y)
    return model


def _states():
    s, g0, g1, k = np.meshgrid(np.arange(6), [0, 1], [0, 1], np.arange(K_MAX), indexing="ij")
    s, g0, g1, k = (a.ravel() for a in (s, g0, g1, k))
    logprior = (
        np.log(1 / 6) + stats.bernoulli.logpmf(g0, 0.3) + stats.bernoulli.logpmf(g1, 0.3)
        + stats.poisson.logpmf(k, 2.0)
    )  # fmt: skip
    mean = s + g0 + g1 + k
    loglik = stats.norm.logpdf(Y[None, :], mean[:, None], SD).sum(axis=1)
    return {"s": s, "g0": g0, "k": k}, logprior, loglik


def exact_tempered(beta):
    """E_beta[loglik] and the tempered law's means of s, g[0], k, by enumeration."""
    values, logprior, loglik = _states()
    w = np.exp(logprior + beta * loglik - np.logaddexp.reduce(logprior + beta * loglik))
    return w @ loglik, {name: w @ v for name, v in values.items()}


def exact_log_evidence():
    _, logprior, loglik = _states()
    return float(np.logaddexp.reduce(logprior + loglik))


def _run(seed, **step_kwargs):
    with discrete_model():
        step = pmt.ExchangeMC(**step_kwargs)
        idata = pm.sample(
            1500, tune=500, chains=2, cores=1, step=step, random_seed=seed, **SAMPLE_KWARGS
        )
    return idata


def _max_z(idata):
    """Largest |estimate - exact| / MCSE over every rung's mean loglik and the top rung's
    means of s, g[0] and k."""
    ds = pmt.tempering_dataset(idata)
    z = []
    for rung, beta in enumerate(ds.beta.values):
        trace = ds.rung_loglik.sel(rung=rung).values
        mcse = mean_mcse(trace)
        z.append(abs(trace.mean() - exact_tempered(beta)[0]) / mcse.mcse)
    _, means = exact_tempered(1.0)
    post = idata.posterior
    for name, trace in (("s", post.s), ("g0", post.g[..., 0]), ("k", post.k)):
        trace = np.asarray(trace, dtype=float)
        z.append(abs(trace.mean() - means[name]) / mean_mcse(trace).mcse)
    return max(z)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_rungs": 8},
        {"n_rungs": 8, "explorer": "mala"},
        {"betas": np.geomspace(0.01, 1.0, 6), "prior_rung": False},
    ],
    ids=["rwm-prior-rung", "mala", "no-zero-rung"],
)
def test_every_rung_has_its_exact_tempered_law(kwargs):
    idata = _run(3, **kwargs)
    assert idata.posterior.s.dtype.kind == "i"
    assert _max_z(idata) < 4


def test_gibbs_that_ignores_beta_fails_the_rung_test(monkeypatch):
    """A deliberately broken Gibbs move (every rung draws from the beta = 1 conditional) is
    caught by the rung test."""
    real = discrete_module.tempered_gibbs
    monkeypatch.setattr(
        discrete_module,
        "tempered_gibbs",
        lambda logprior, loglik, betas, u, n: real(logprior, loglik, np.ones_like(betas), u, n),
    )
    assert _max_z(_run(3, n_rungs=8)) > 4


def test_asymmetric_lattice_jump_fails_the_rung_test(monkeypatch):
    """Integer Metropolis with a jump biased upwards (no Hastings correction) is caught."""
    real = discrete_module.lattice_jump
    monkeypatch.setattr(
        discrete_module,
        "lattice_jump",
        lambda z, u_sign, step: real(z, np.minimum(u_sign + 0.2, 0.999), step),
    )
    assert _max_z(_run(3, n_rungs=8)) > 4


def test_evidence_of_a_discrete_model_matches_enumeration():
    idata = _run(5, n_rungs=16)
    for estimate in (pmt.thermodynamic_integration(idata), pmt.stepping_stone(idata)):
        z = abs(float(estimate.log_marginal_likelihood) - exact_log_evidence())
        assert z < 4 * float(estimate.mcse), (estimate, exact_log_evidence())


def test_each_discrete_kind_gets_its_move():
    with pm.Model():
        b = pm.Bernoulli("b", 0.5, shape=2)
        c = pm.Categorical("c", p=[0.2, 0.3, 0.5])
        u = pm.DiscreteUniform("u", -2, 3)
        n = pm.Binomial("n", 10, 0.4)
        big = pm.DiscreteUniform("big", 0, 1000)
        moving = pm.DiscreteUniform("moving", 0, big)  # support depends on another variable
        p = pm.Poisson("p", 3.0)
        total = b.sum() + c + u + n + moving + p
        pm.Normal("y", total, 1.0, observed=[0.0])
        step = pmt.ExchangeMC(n_rungs=4)
    moves = step.explorer.moves
    supports = {v.name: (v.lower.tolist(), v.upper.tolist(), v.kind) for v in moves.variables}
    assert supports["b"] == ([0.0, 0.0], [1.0, 1.0], "Bernoulli")
    assert supports["c"][:2] == ([0.0], [2.0])
    assert supports["u"][:2] == ([-2.0], [3.0])
    assert supports["n"][:2] == ([0.0], [10.0])
    assert supports["moving"][:2] == ([-np.inf], [np.inf])
    columns = {v.name: int(v.columns[0]) for v in moves.variables}
    gibbs = {c for c, _ in moves.gibbs}
    assert {columns[n] for n in ("b", "c", "u", "n")} <= gibbs
    assert set(moves.lattice) == {columns["big"], columns["moving"], columns["p"]}


def test_a_transformed_discrete_variable_is_refused():
    with pm.Model() as model:
        k = pm.Poisson("k", 3.0)
        pm.Normal("y", k, 1.0, observed=[1.0])
    model.rvs_to_transforms[k] = pm.distributions.transforms.log
    with pytest.raises(ValueError, match=r"'k'.*default_transform=None"):
        discrete_variables(model, model.value_vars, [("k", (), 1, np.int64)])
