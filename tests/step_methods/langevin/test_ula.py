"""ULA (:mod:`pymc_tempering.step_methods.langevin.ula`) against its known bias: the exact
stationary variance on a Gaussian and the bias shrinking with h, Student-t quantiles, and what a
gradient-only sampler cannot see (hard constraints, jumps, divergence on exp(-x^4))."""

import logging

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from helpers import FAST, z_score
from helpers import SAMPLE_KWARGS as SAMPLE
from scipy import stats
from targets import normal_sd_model, quartic_model

from pymc_tempering.step_methods.langevin import ULA

# -- ULA against its known bias --------------------------------------------------------------------


def ula_second_moment(h, s=2.0, dims=50, draws=5000, seed=0):
    """Per-draw mean of x_i^2 over ``dims`` iid coordinates of ULA on N(0, s^2), and its z."""
    with normal_sd_model(np.full(dims, s)):
        idata = pm.sample(
            step=ULA(step_size=h, compile_kwargs=FAST),
            draws=draws,
            tune=300,  # burn-in only: ULA does not tune
            chains=1,
            random_seed=seed,
            **SAMPLE,
        )
    sq = (idata["posterior"]["x"].values ** 2).mean(-1)  # (chain, draw); its MCSE covers dims
    return sq.mean(), float(az.mcse(sq))


def test_ula_gaussian_stationary_variance_and_shrinking_bias():
    s2 = 4.0
    results = {h: ula_second_moment(h) for h in (1.0, 0.25)}
    for h, (var, mcse) in results.items():
        exact = s2 / (1 - h / (2 * s2))  # h-form ULA on N(0, s^2): stable for h < 2 s^2
        assert abs(var - exact) < 4 * mcse, (h, var, exact, mcse)
    var_big, mcse_big = results[1.0]
    assert var_big - s2 > 8 * mcse_big  # the bias is real at h = 1 ...
    var_small, mcse_small = results[0.25]
    assert abs(var_small - s2) < abs(var_big - s2) / 2  # ... and shrinks with h (0.13 vs 0.57)


# -- the seed note's experiments -------------------------------------------------------------------


@pytest.mark.slow
def test_ula_on_cauchy_runs_and_matches_t_quantiles():
    with pm.Model():
        pm.StudentT("x", nu=1, mu=0, sigma=1)
        idata = pm.sample(
            step=ULA(step_size=0.2, compile_kwargs=FAST),
            draws=30_000,
            tune=500,
            chains=2,
            random_seed=3,
            **SAMPLE,
        )
    draws = idata["posterior"]["x"].values
    assert not idata["sample_stats"]["diverging"].values.any()
    for prob in (0.1, 0.25, 0.5, 0.75, 0.9):
        truth = stats.t(df=1).ppf(prob)
        est = np.quantile(draws, prob)
        mcse = float(az.mcse(draws, method="quantile", prob=prob))
        # ULA's law is not the t law: near 0 the target looks like N(0, 1/2) (curvature 2), where
        # ULA inflates the scale by 1/sqrt(1 - h) ~ 1 + h/2; the curvature, and with it the
        # relative bias, only falls further out. So allow |bias| <= (h/2)|q| on top of 4 MCSE.
        assert abs(est - truth) < 4 * mcse + 0.1 * abs(truth), (prob, est, truth, mcse)


# -- what a gradient-only sampler cannot see -------------------------------------------------------


Y_UNIFORM = np.linspace(-4.0, 4.75, 20)  # y ~ U(ub - 10, ub): every valid ub lies in [4.75, 6]


def hard_constraint_model():
    """The density is -inf for ub outside [max y, min y + 10], and its gradient there says
    nothing about it."""
    with pm.Model() as model:
        ub = pm.Normal("ub", 0, 10)
        pm.Uniform("y", ub - 10, ub, observed=Y_UNIFORM)
    return model


def test_ula_moves_into_zero_density_are_discarded_flagged_and_warned(seed=1):
    with hard_constraint_model():
        with pytest.warns(UserWarning, match="ULA entered a region of zero density") as record:
            idata = pm.sample(
                step=ULA(step_size=0.01, compile_kwargs=FAST),
                initvals={"ub": 5.5},
                draws=1000,
                tune=100,
                chains=2,
                cores=1,
                random_seed=seed,
                **SAMPLE,
            )
    messages = [str(w.message) for w in record if "zero density" in str(w.message)]
    assert len(messages) == 2  # once per chain
    assert "hard constraints" in messages[0] and "pmt.MALA or pmt.ExchangeMC" in messages[0]
    ub = idata["posterior"]["ub"].values
    assert np.all((ub >= Y_UNIFORM.max()) & (ub <= Y_UNIFORM.min() + 10))  # never recorded
    diverging = idata["sample_stats"]["diverging"].values
    assert diverging.any()
    assert idata["sample_stats"]["divergences"].values[:, -1].tolist() == diverging.sum(1).tolist()


def test_ula_does_not_see_a_jump_of_the_density(seed=4):
    """Documents the limitation stated in ULA's docstring: with a jump of +2 in the log density
    at x = 1 on N(0, 1), P(x > 1) = 0.58, and ULA samples its jump-free law, N(0, 1/(1 - h/2)),
    whose P(x > 1) is 0.16."""
    h = 0.05
    with pm.Model() as model:
        x = pm.Normal("x", 0, 1)
        pm.Potential("jump", pt.switch(x > 1, 2.0, 0.0))
    with model:
        idata = pm.sample(
            step=ULA(step_size=h, compile_kwargs=FAST),
            draws=5000,
            tune=100,
            chains=2,
            cores=1,
            random_seed=seed,
            **SAMPLE,
        )
    above = (idata["posterior"]["x"].values > 1).astype(float)
    jump_free = stats.norm.sf(1, scale=1 / np.sqrt(1 - h / 2))
    with_jump = np.e**2 * stats.norm.sf(1) / (np.e**2 * stats.norm.sf(1) + stats.norm.cdf(1))
    assert abs(z_score(above, jump_free)) < 4
    assert with_jump == pytest.approx(0.582, abs=1e-3) and above.mean() < 0.2


def test_ula_on_quartic_diverges_flagged_finite_and_warned(caplog):
    with quartic_model():
        with pytest.warns(RuntimeWarning, match="ULA diverged"):
            with caplog.at_level(logging.ERROR, logger="pymc"):
                idata = pm.sample(
                    step=ULA(step_size=0.2),
                    draws=3000,
                    tune=0,
                    chains=1,
                    random_seed=1,
                    progressbar=False,
                )
    diverging = idata["sample_stats"]["diverging"].values
    assert diverging.any()
    x = idata["posterior"]["x"].values
    assert np.all(np.isfinite(x))
    assert np.all(np.isfinite(idata["sample_stats"]["lp"].values))
    first = int(np.argmax(diverging[0]))
    # a divergent draw repeats the last finite state
    assert x[0, first] == x[0, first - 1]
    assert idata["sample_stats"]["divergences"].values[0, -1] == diverging.sum()
    assert "divergences after tuning" in caplog.text  # PyMC's end-of-run report
