"""SGLD's divergences (:mod:`pymc_tempering.step_methods.sgld.divergence`): non-finite states,
blow-ups and moves into zero density are discarded, flagged and warned once per chain."""

import numpy as np
import pymc as pm
import pytest
from helpers import FAST
from helpers import SAMPLE_KWARGS as SAMPLE
from targets import (
    gaussian_mean_data,
    gaussian_mean_model,
)

from pymc_tempering.step_methods.sgld import SGLD


def test_non_finite_state_is_flagged_and_trace_stays_finite():
    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("x", pm.math.exp(pm.math.exp(mu)), 1, observed=[0.0])
        step = SGLD(step_size=5.0, schedule="constant", compile_kwargs=FAST)
        with pytest.warns(UserWarning, match="SGLD"):
            idata = pm.sample(
                draws=50, tune=0, chains=1, step=step, random_seed=1, initvals={"mu": 2.0},
                **SAMPLE,
            )  # fmt: skip
    assert idata.sample_stats["diverging"].values.any()
    assert np.all(np.isfinite(idata.posterior["mu"].values))


def test_a_step_size_that_blows_up_is_flagged_and_warned():
    """step_size * P = 1000 on a Gaussian of precision P: |theta| would grow ~500-fold per step;
    the first move (the log density falls by far more than 1000 nats) and every later one are
    discarded and flagged, so the chain stays where it started."""
    x = gaussian_mean_data()
    with gaussian_mean_model(x):
        step = SGLD(step_size=10.0, schedule="constant", compile_kwargs=FAST)
        with pytest.warns(UserWarning, match=r"SGLD diverged.*Reduce `step_size`") as record:
            idata = pm.sample(draws=100, tune=0, chains=1, step=step, random_seed=1, **SAMPLE)
    assert sum("SGLD" in str(w.message) for w in record) == 1  # once per chain
    diverging = idata.sample_stats["diverging"].values[0]
    first = int(np.argmax(diverging))
    assert diverging[first:].all()
    theta = idata.posterior["theta"].values[0]
    assert np.all(np.isfinite(theta)) and np.all(theta[first:] == theta[first])
    assert np.abs(theta).max() < 100


def test_a_blow_up_that_the_schedule_would_undo_is_flagged():
    """The default schedule decays from step_size=10: unchecked, |theta| grew to 1e23 while the
    log density stayed finite, then came back, and nothing was flagged. A fall of the full-data
    log density by more than 1000 nats marks the move as diverging."""
    x = gaussian_mean_data()
    with gaussian_mean_model(x):
        step = SGLD(step_size=10.0, compile_kwargs=FAST)
        with pytest.warns(UserWarning, match=r"SGLD diverged.*Reduce `step_size`"):
            idata = pm.sample(draws=200, tune=0, chains=1, step=step, random_seed=1, **SAMPLE)
    assert idata.sample_stats["diverging"].values.any()
    assert np.abs(idata.posterior["theta"].values).max() < 100


# -- what a gradient-only sampler cannot see -------------------------------------------------------


Y_UNIFORM = np.linspace(-4.0, 4.75, 20)  # y ~ U(ub - 10, ub): every valid ub lies in [4.75, 6]


def test_moves_into_zero_density_are_discarded_flagged_and_warned(seed=1):
    """A hard constraint the gradient cannot see: the log density is -inf outside
    [max y, min y + 10]. Without the check, 73% of the draws fell outside, none flagged."""
    with pm.Model():
        ub = pm.Normal("ub", 0, 10)
        pm.Uniform("y", ub - 10, ub, observed=Y_UNIFORM)
        step = SGLD(step_size=0.02, schedule="constant", compile_kwargs=FAST)
        with pytest.warns(UserWarning, match="SGLD entered a region of zero density") as record:
            idata = pm.sample(
                draws=1000, tune=100, chains=2, cores=1, step=step, random_seed=seed,
                initvals={"ub": 5.5}, **SAMPLE,
            )  # fmt: skip
    messages = [str(w.message) for w in record if "zero density" in str(w.message)]
    assert len(messages) == 2  # once per chain
    assert "hard constraints" in messages[0] and "pmt.MALA or pmt.ExchangeMC" in messages[0]
    ub = idata.posterior["ub"].values
    assert np.all((ub >= Y_UNIFORM.max()) & (ub <= Y_UNIFORM.min() + 10))
    assert idata.sample_stats["diverging"].values.any()
