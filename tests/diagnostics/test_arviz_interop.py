"""ArviZ's own functions (summary, ess, rhat, plot_trace, compare) on every DataTree our
samplers return, and on the tree with the tempering group
(:func:`pymc_tempering.diagnostics.add_tempering_group`)."""

import warnings

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pymc as pm
import pytest
from helpers import SAMPLE_KWARGS, X_LECTURE, exchange_run
from targets import lecture_model

from pymc_tempering.diagnostics.tempering_group import add_tempering_group
from pymc_tempering.step_methods.langevin import MALA, ULA
from pymc_tempering.step_methods.sgld import SGLD


def check_arviz_functions(idata, model, var_name, n_obs, min_ess=10):
    """az.summary, ess, rhat, plot_trace and compare (after pm.compute_log_likelihood) run and
    give sane numbers."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # compare of a model with itself
        summary = az.summary(idata)
        assert var_name in summary.index and np.isfinite(float(summary.loc[var_name, "mean"]))
        assert float(az.ess(idata)[var_name].max()) > min_ess
        assert np.isfinite(float(az.rhat(idata)[var_name].max()))
        plot = az.plot_trace(idata, var_names=[var_name])
        assert plot is not None
        plt.close("all")
        pm.compute_log_likelihood(idata, model=model, progressbar=False)
        assert idata.log_likelihood[model.observed_RVs[0].name].shape[-1] == n_obs
        comparison = az.compare({"first": idata, "second": idata.copy()})
    assert np.all(np.isfinite(comparison["elpd"].astype(float)))
    return summary


def test_arviz_functions_on_exchange_mc_output():
    exchange_idata = exchange_run()
    idata = exchange_idata.copy()
    n_obs = len(X_LECTURE)
    summary = check_arviz_functions(idata, lecture_model(X_LECTURE), "mu", n_obs)
    posterior_mean = X_LECTURE.sum() / (len(X_LECTURE) + 1.0)  # N(0, 1) prior, unit noise
    assert abs(float(summary.loc["mu", "mean"]) - posterior_mean) < 0.1
    # also after adding the tempering group
    tree = add_tempering_group(exchange_idata)
    check_arviz_functions(tree, lecture_model(X_LECTURE), "mu", n_obs)


@pytest.mark.parametrize("step", [lambda: ULA(step_size=0.02), MALA], ids=["ULA", "MALA"])
def test_arviz_functions_on_langevin_output(step):
    with lecture_model(X_LECTURE) as model:
        idata = pm.sample(
            draws=300, tune=200, chains=2, cores=1, step=step(), random_seed=2, **SAMPLE_KWARGS
        )
    summary = check_arviz_functions(idata, model, "mu", len(X_LECTURE))
    posterior_mean = X_LECTURE.sum() / (len(X_LECTURE) + 1.0)
    assert abs(float(summary.loc["mu", "mean"]) - posterior_mean) < 0.1


def test_arviz_functions_on_sgld_output():
    rng = np.random.default_rng(1)
    n = 100
    x = rng.normal(size=n)
    y = 1.0 + 2.0 * x + rng.normal(size=n)
    with pm.Model():
        xb, yb = pm.Minibatch(x, y, batch_size=20)
        a = pm.Normal("a", 0, 5)
        b = pm.Normal("b", 0, 5)
        pm.Normal("y", a + b * xb, 1, observed=yb, total_size=n)
        idata = pm.sample(
            draws=200,
            tune=500,  # with 50 the chains had not arrived: b's mean ~1.65 on some seeds
            chains=2,
            cores=1,
            step=SGLD(threshold_every=25),
            random_seed=3,
            **SAMPLE_KWARGS,
        )
    # pm.compute_log_likelihood on the minibatch model would score a random minibatch per
    # draw; the full-data model with the same free variables gives the pointwise loglik.
    with pm.Model() as full:
        a = pm.Normal("a", 0, 5)
        b = pm.Normal("b", 0, 5)
        pm.Normal("y", a + b * x, 1, observed=y)
    # a decreasing step size mixes slowly: ESS is small but must be a finite positive number
    summary = check_arviz_functions(idata, full, "b", n, min_ess=1)
    assert abs(float(summary.loc["b", "mean"]) - 2.0) < 0.5
