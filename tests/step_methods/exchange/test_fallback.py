"""``explorer="auto"``'s fallback from dense MALA to the random walk
(:mod:`pymc_tempering.step_methods.exchange.fallback`): the mismatch statistic on exact draws,
the switch firing on a ridge (the singular model) and not on a correlated Gaussian, the
switched chain's law within 4 MCSE of the exact one, and its state restored bit for bit
(docs/decisions/110-exchange-defaults.md)."""

import copy

import numpy as np
import pymc as pm
import pytest
from helpers import SAMPLE_KWARGS, gaussian_tempered_law, run_steps, z_score
from targets import singular_model

from pymc_tempering.kernels.moments import Moments
from pymc_tempering.step_methods.exchange import fallback
from pymc_tempering.step_methods.exchange.sampler import ExchangeMC
from pymc_tempering.trace import LOCAL_MOVES

D = 4
S0 = 100.0 * np.eye(D)
S_LIK = 0.95 + 0.05 * np.eye(D)  # posterior correlations near 0.95
Y = np.random.default_rng(2).multivariate_normal(np.linspace(-1, 1, D), S_LIK, size=2)


def correlated_gaussian():
    with pm.Model() as model:
        theta = pm.MvNormal("theta", np.zeros(D), cov=S0)
        pm.MvNormal("y", theta, cov=S_LIK, observed=Y)
    return model


def window(x, g):
    """Running moments of draws ``x`` and gradients ``g`` (n, d) as one rung's window."""

    def moments(v):
        dev = v - v.mean(axis=0)
        return Moments(len(v), v.mean(axis=0)[None], (dev.T @ dev)[None])

    return moments(x), moments(g)


def test_the_mismatch_is_one_for_a_gaussian_and_large_on_a_ridge():
    rng = np.random.default_rng(0)
    cov = np.array([[1.0, 0.9], [0.9, 1.0]])
    x = rng.multivariate_normal([0, 0], cov, size=20_000)
    gaussian = fallback.fisher_mismatch(*window(x, -x @ np.linalg.inv(cov)))
    assert abs(gaussian - 1.0) < 0.05  # tr((S^-1 S_x)^2) / d: 1 + O(d / n)
    # a ridge: w_2 ~ N(0, 1), w_1 | w_2 ~ N(0, 1 / (1 + n w_2^2)), the density exp(-n w1^2 w2^2)
    # times the N(0, I) prior; its gradient -w - 2 n w1 w2 (w2, w1)
    n = 1e3
    w2 = rng.normal(size=20_000)
    w1 = rng.normal(size=20_000) / np.sqrt(1 + 2 * n * w2**2)
    w = np.stack([w1, w2], axis=1)
    g = -w - 2 * n * (w1 * w2)[:, None] * w[:, ::-1]
    assert fallback.fisher_mismatch(*window(w, g)) > 10 * fallback.MISMATCH_LIMIT


def run(build, seed, tune=300, draws=200, n_rungs=8):
    with build():
        return pm.sample(
            draws=draws,
            tune=tune,
            chains=2,
            cores=1,
            step=ExchangeMC(explorer="auto", n_rungs=n_rungs),
            random_seed=seed,
            discard_tuned_samples=False,
            **SAMPLE_KWARGS,
        )


def moves(idata, group="sample_stats"):
    return {LOCAL_MOVES[int(c)] for c in np.ravel(idata[group]["explorer"].values)}


@pytest.mark.parametrize("seed", [1, 2])
def test_the_fallback_fires_on_a_ridge_and_not_on_a_gaussian(seed):
    ridge = run(lambda: singular_model(10_000), seed, draws=20)
    assert moves(ridge) == {"rwm+diag"}  # every chain switched, and stayed switched
    assert moves(ridge, "warmup_sample_stats") == {"mala+dense", "rwm+diag"}  # it began MALA
    gaussian = run(correlated_gaussian, seed, draws=20)
    assert moves(gaussian) == moves(gaussian, "warmup_sample_stats") == {"mala+dense"}


def test_short_tuning_keeps_mala():
    """Without the decision window in the first 80% of tuning (150 / 0.8 = 188 sweeps)."""
    assert moves(run(lambda: singular_model(10_000), 1, tune=180, draws=10)) == {"mala+dense"}


@pytest.mark.parametrize("seed", [4, 5])
def test_the_switched_chain_samples_the_exact_law(seed, monkeypatch):
    """A fallback forced on a Gaussian target (limit 0): means and variances at beta = 1
    within 4 MCSE of the exact ones."""
    monkeypatch.setattr(fallback, "MISMATCH_LIMIT", 0.0)
    mean, cov, _ = gaussian_tempered_law(1.0, Y, S0, S_LIK)
    idata = run(correlated_gaussian, seed, tune=400, draws=2000)
    assert moves(idata) == {"rwm+diag"}
    theta = idata.posterior["theta"].values
    z_mean = [z_score(theta[..., i], mean[i]) for i in range(D)]
    z_var = [z_score((theta[..., i] - mean[i]) ** 2, cov[i, i]) for i in range(D)]
    assert max(np.abs(z_mean)) < 4 and max(np.abs(z_var)) < 4, (z_mean, z_var)


def test_a_restored_state_repeats_the_switched_chain_bit_for_bit():
    """State saved after the switch (diagonal scales, no gradients) and after a new chain's
    reset (MALA again): restoring it repeats the next draws exactly."""
    with singular_model(10_000) as model:
        step = ExchangeMC(explorer="auto", n_rungs=8)
        step.setup_chain(np.random.default_rng(3), tune=300, draws=50)
        point = model.initial_point()
        after = run_steps(step, point, 200)[-1][0]  # past sweep 150: switched
        assert step.scales.chol is None and step.replicas.aux.shape[1] == 0
        state = copy.deepcopy(step.sampling_state)
        first = run_steps(step, after, 20)
        step.sampling_state = state
        again = run_steps(step, after, 20)
        for (p, s), (q, t) in zip(first, again, strict=True):
            assert all(np.array_equal(p[k], q[k]) for k in p)
            assert s[0]["explorer"] == t[0]["explorer"] == LOCAL_MOVES.index("rwm+diag")
        step.setup_chain(np.random.default_rng(4), tune=300, draws=50)  # a new chain
        assert step.scales.chol is not None and run_steps(step, point, 1)[0][1][0][
            "explorer"
        ] == LOCAL_MOVES.index("mala+dense")
