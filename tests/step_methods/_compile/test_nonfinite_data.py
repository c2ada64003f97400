"""Data the likelihood reads but does not observe (a predictor, in ``pm.Data`` or written
into the model) holding NaN or inf: refused before sampling, naming the container, where it
is and the fix, not ``initvals=`` (checks.check_observed_finite)."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_tempering as pmt
from pymc_tempering.step_methods._compile.checks import (
    check_observed_finite,
    nonfinite_likelihood_data,
)

RNG = np.random.default_rng(3)
X = RNG.normal(size=25)
Y = 1.3 * X + RNG.normal(size=25)


def _with_nan(values, at=(4, 17), value=np.nan):
    out = np.array(values, dtype=float)
    out[list(at)] = value
    return out


def regression(x=X, data=True, masked=False, prior_mean=0.0):
    """y ~ N(b * x, 1); ``x`` a pm.Data set to the given values (pm.Data refuses NaN when
    built, pm.set_data does not) or an array written into the model."""
    with pm.Model() as model:
        if data:
            container = pm.Data("x", X)
            pm.set_data({"x": x})
        else:
            container = x
        b = pm.Normal("b", prior_mean, 1.0)
        if masked:  # the model handles its NaN itself
            container = pt.switch(pt.isnan(container), 0.0, container)
        pm.Normal("y", b * container, 1.0, observed=Y)
    return model


def test_a_nan_in_a_pm_data_predictor_is_named_with_the_fix():
    with pytest.raises(ValueError) as error:
        check_observed_finite(regression(_with_nan(X)), "ExchangeMC")
    text = str(error.value)
    assert "pm.Data 'x' holds 2 inf or NaN (first at index 4), read by 'y'" in text
    assert "no starting point (`initvals=`)" in text  # what cannot help
    assert "pm.set_data" in text and "impute" in text  # what can


def test_an_inf_in_an_array_written_into_the_model_is_located():
    model = regression(_with_nan(X, at=(9,), value=np.inf), data=False)
    found = nonfinite_likelihood_data(model)
    assert found == {"an array of shape (25,) written into the model": (1, (9,), ["y"])}
    with pytest.raises(ValueError, match=r"first at index 9\), read by 'y'"):
        check_observed_finite(model, "marginal_likelihood")


def test_exchange_mc_refuses_it_before_compiling():
    with regression(_with_nan(X)), pytest.raises(ValueError, match="pm.Data 'x'") as error:
        pmt.ExchangeMC(n_rungs=4, explorer="rwm")
    assert str(error.value).startswith("ExchangeMC: ")
    assert "Pass `initvals=`" not in str(error.value)


@pytest.mark.parametrize(
    "model",
    [
        pytest.param(lambda: regression(X), id="finite pm.Data"),
        pytest.param(lambda: regression(X, data=False), id="finite array"),
        pytest.param(lambda: regression(_with_nan(X), masked=True), id="NaN masked by isnan"),
    ],
)
def test_finite_or_masked_data_pass(model):
    model = model()
    assert nonfinite_likelihood_data(model) == {}
    check_observed_finite(model, "ExchangeMC")


def test_a_potential_reading_a_nan_is_named():
    with pm.Model() as model:
        b = pm.Normal("b", 0.0, 1.0)
        pm.Potential("soft", -((b - _with_nan(X, at=(0,))) ** 2).sum())
    assert nonfinite_likelihood_data(model) == {
        "an array of shape (25,) written into the model": (1, (0,), ["soft"])
    }


def test_observed_data_keep_their_own_message():
    """NaN in the observations themselves are PyMC's to impute, inf named per variable."""
    with pm.Model() as model:
        b = pm.Normal("b", 0.0, 1.0)
        pm.Normal("y", b * X, 1.0, observed=_with_nan(Y, at=(2,), value=np.inf))
    with pytest.raises(ValueError, match=r"observed variable: 'y': 1"):
        check_observed_finite(model, "ExchangeMC")
    assert nonfinite_likelihood_data(model) == {}


def test_a_prior_parameter_is_not_the_likelihoods_data():
    """The walk stops at the free variables: a NaN in a prior's parameter is not reported
    as data the likelihood reads (it is the prior's, checked by PyMC's initial point)."""
    model = regression(X, prior_mean=np.array(np.nan))
    assert nonfinite_likelihood_data(model) == {}
    with pm.Model() as model:  # an array parameter: unnamed scalars are skipped as constants
        b = pm.Normal("b", np.array([np.nan, 0.0]), 1.0, shape=2)
        pm.Normal("y", b.sum() * X, 1.0, observed=Y)
    assert nonfinite_likelihood_data(model) == {}


def test_each_reader_of_a_container_is_named():
    x = _with_nan(X, at=(1,))
    with pm.Model() as model:
        b = pm.Normal("b", 0.0, 1.0)
        pm.Normal("y", b * x, 1.0, observed=Y)
        pm.Normal("z", b * x, 2.0, observed=Y)
    found = nonfinite_likelihood_data(model)
    assert found == {"an array of shape (25,) written into the model": (1, (1,), ["y", "z"])}


def test_a_hard_constraints_minus_inf_is_a_constant_not_data():
    """``pt.switch(b > 0, 0, -inf)``: the scalar ``-inf`` is the constraint, not a predictor;
    the model is sampled, not refused (its zero-density start is the sampler's to report)."""
    with pm.Model() as model:
        b = pm.Normal("b", 0.0, 1.0)
        pm.Potential("positive", pt.switch(b > 0, 0.0, -np.inf))
        pm.Normal("y", b * X, 1.0, observed=Y)
    assert nonfinite_likelihood_data(model) == {}
    check_observed_finite(model, "ExchangeMC")


def test_a_scalar_pm_data_is_data_not_a_constant():
    """Only unnamed scalars are the model's constants: a scalar pm.Data set to NaN is named."""
    with pm.Model() as model:
        scale = pm.Data("scale", 1.0)
        pm.set_data({"scale": np.nan})
        b = pm.Normal("b", 0.0, 1.0)
        pm.Normal("y", scale * b * X, 1.0, observed=Y)
    assert nonfinite_likelihood_data(model) == {"pm.Data 'scale'": (1, (), ["y"])}
