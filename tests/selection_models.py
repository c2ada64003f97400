"""Module-level model builders for tests/selection/test_runner.py, importable in worker processes.

The lecture model x_i ~ N(mu, 1), mu ~ N(0, b^2), with 20 fixed observations: its exact log Z
is ``pymc_tempering.exact.lecture_log_evidence(X_OBS, b)``.
"""

from functools import partial

import numpy as np
import pymc as pm
import pytensor.tensor as pt

X_OBS = np.random.default_rng(0).normal(0.5, 1.0, size=20)
PRIOR_SDS = (0.3, 1.0, 3.0)
#: Short runs: every test model compiles in ~1 s and samples in ~0.3 s.
SETTINGS = {"n_rungs": 16, "draws": 200, "tune": 200, "chains": 4}


def lecture_model(b, x=X_OBS):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, b)
        pm.Normal("x", mu, 1.0, observed=x)
    return model


def builders():
    """{name: zero-argument builder} for the three prior scales."""
    return {f"b={b}": partial(lecture_model, b) for b in PRIOR_SDS}


def flat_prior_model():
    """An improper prior: the beta = 0 rung cannot sample it, marginal_likelihood refuses."""
    with pm.Model() as model:
        mu = pm.Flat("mu")
        pm.Normal("x", mu, 1.0, observed=X_OBS)
    return model


def nonfinite_start_model():
    """A likelihood that is zero at the start point mu = 0."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Potential("cut", pt.switch(mu > 5.0, 0.0, -np.inf))
        pm.Normal("x", mu, 1.0, observed=X_OBS)
    return model


def missing_data_model():
    """One observation NaN: PyMC would impute it (a model of 19 observed points)."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("x", mu, 1.0, observed=np.r_[X_OBS[:-1], np.nan])
    return model
