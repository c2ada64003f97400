"""SGLD's argument checks (:mod:`pymc_tempering.step_methods.sgld.options`): each bad argument
refused with a message that names it and the fix."""

import numpy as np
import pymc as pm
import pytest
from helpers import FAST
from targets import (
    logistic_data,
)

from pymc_tempering.step_methods.sgld import SGLD


def test_minibatch_without_total_size_is_an_error():
    X, y = logistic_data(50)
    with pm.Model():
        X_mb, y_mb = pm.Minibatch(X, y, batch_size=10)
        beta = pm.Normal("beta", 0, 1, shape=3)
        pm.Bernoulli("y", logit_p=X_mb @ beta, observed=y_mb)
        with pytest.raises(ValueError, match=r"'y'.*no `total_size`.*total_size=len\(y\)"):
            SGLD(compile_kwargs=FAST)


def test_discrete_variables_are_an_error():
    with pm.Model():
        pm.Normal("mu", 0, 1)
        pm.Poisson("k", 3.0)
        with pytest.raises(ValueError, match=r"\['k'\] are discrete.*`vars=`"):
            SGLD(compile_kwargs=FAST)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"step_size": -1.0}, "`step_size` must be a positive"),
        ({"step_size": 0.0, "schedule": "constant"}, "`step_size` must be a positive"),
        ({"gamma": 0.4}, r"`gamma` must lie in \(0.5, 1\]"),
        ({"schedule": "cosine"}, "`schedule` must be"),
        ({"preconditioner": [1.0, -1.0]}, "`preconditioner` must hold positive"),
        ({"preconditioner": "adam"}, "`preconditioner` must be None"),
        ({"threshold_every": 0}, "`threshold_every` must be"),
    ],
)
def test_step_method_rejects_bad_arguments(kwargs, match):
    with pm.Model():
        mu = pm.Normal("mu", 0, 1, shape=2)
        pm.Normal("x", mu, 1, observed=np.zeros((5, 2)))
        with pytest.raises(ValueError, match=match):
            SGLD(compile_kwargs=FAST, **kwargs)
