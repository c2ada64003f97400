"""ULA's and MALA's argument checks (:mod:`pymc_tempering.step_methods.langevin.options` and
``base``): each bad argument or model refused with a message that names it and the fix."""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from helpers import SAMPLE_KWARGS as SAMPLE

from pymc_tempering.step_methods.langevin import MALA, ULA


@pytest.mark.parametrize("bad", [0.0, -0.1, np.nan, np.inf, "big"])
def test_bad_step_size_is_refused(small_model, bad):
    with small_model:
        with pytest.raises(ValueError, match="`step_size` must be a positive finite number"):
            ULA(step_size=bad)
        with pytest.raises(ValueError, match="`step_size` must be a positive finite number"):
            MALA(step_size=bad)


def test_bad_schedule_value_is_refused_when_reached(small_model):
    with small_model:
        step = ULA(step_size=lambda i: 0.1 if i < 5 else -1.0)
        with pytest.raises(ValueError, match="schedule returned it at iteration 5"):
            pm.sample(step=step, draws=10, tune=0, chains=1, random_seed=0, **SAMPLE)


def test_other_bad_arguments(small_model):
    with small_model:
        with pytest.raises(ValueError, match="`beta`"):
            MALA(beta=1.5)
        with pytest.raises(ValueError, match="`scaling` of MALA"):
            MALA(scaling=[1.0, 2.0, 3.0])
        with pytest.raises(ValueError, match="`scaling` of ULA"):
            ULA(step_size=0.1, scaling=[1.0, -2.0])
        with pytest.raises(ValueError, match="`target_accept`"):
            MALA(target_accept=1.0)
        for bad in (0, 2.5, True):
            with pytest.raises(ValueError, match="`steps_per_draw` must be a positive integer"):
                MALA(steps_per_draw=bad)


def test_discrete_variables_have_no_gradient():
    with pm.Model() as model:
        pm.Normal("x")
        k = pm.Poisson("k", 2.0)
    with model:
        with pytest.raises(ValueError, match=r"discrete variables \['k'\]"):
            MALA(vars=[k])
        step = ULA(step_size=0.1)  # default vars: the continuous ones
    assert [v.name for v in step.vars] == ["x"]
    with pm.Model():
        pm.Poisson("k", 2.0)
        with pytest.raises(ValueError, match="this model has none"):
            MALA()


def test_a_term_without_gradient_is_refused():
    class NoGradExp(pytensor.graph.Op):
        itypes, otypes = [pt.dscalar], [pt.dscalar]

        def perform(self, node, inputs, outputs):
            outputs[0][0] = np.asarray(-np.exp(inputs[0]))

    with pm.Model():
        x = pm.Normal("x")
        pm.Potential("black_box", NoGradExp()(x))
        with pytest.raises(ValueError, match="could not build the gradient"):
            MALA()


def minibatch_model(total_size):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(50, 2)), rng.normal(size=50)
    with pm.Model() as model:
        w = pm.Normal("w", 0, 1, shape=2)
        X_mb, y_mb = pm.Minibatch(X, y, batch_size=10)
        pm.Normal("y_obs", X_mb @ w, 1.0, observed=y_mb, total_size=total_size)
    return model


def test_minibatch_models_are_refused_naming_the_observed_variable():
    # MALA's accept/reject step on a random, rescaled subset samples a wrong posterior
    with pytest.warns(UserWarning, match="total_size not provided"):  # PyMC's own warning
        unscaled = minibatch_model(total_size=None)
    for model in (minibatch_model(total_size=50), unscaled):
        with model:
            for make, name in [(lambda: MALA(), "MALA"), (lambda: ULA(step_size=0.1), "ULA")]:
                with pytest.raises(
                    ValueError, match=rf"{name} needs the full-data likelihood.*\['y_obs'\].*SGLD"
                ):
                    make()
    # total_size that rescales a full-data likelihood: refused as well
    with pm.Model():
        mu = pm.Normal("mu")
        pm.Normal("y_obs", mu, 1.0, observed=np.zeros(5), total_size=500)
        with pytest.raises(ValueError, match=r"MALA needs the full-data likelihood"):
            MALA()
