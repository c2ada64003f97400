"""continue_sampling after pm.set_data: refused, naming the pm.Data that changed and how to
set them back (resume.run._check_data)."""

import functools

import numpy as np
import pymc as pm
import pytest

import pymc_tempering as pmt

RNG = np.random.default_rng(5)
X = RNG.normal(size=20)
Y = 0.8 * X + RNG.normal(size=20)


def _model():
    with pm.Model() as model:
        x = pm.Data("x", X)
        y = pm.Data("y_data", Y)
        b = pm.Normal("b", 0.0, 1.0)
        pm.Normal("y", b * x, 1.0, observed=y)
    return model


@functools.cache
def _run():
    model = _model()
    with model:
        idata = pm.sample(
            draws=10, tune=10, chains=1, step=pmt.MALA(), random_seed=2, progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
    return idata


@pytest.mark.parametrize(("name", "values"), [("x", 2 * X), ("y_data", Y + 1.0)])
def test_a_set_predictor_or_observation_is_named_with_the_way_back(name, values):
    idata, model = _run(), _model()
    with model:
        pm.set_data({name: values})
    with pytest.raises(ValueError) as error:
        pmt.continue_sampling(idata, 5, model=model, progressbar=False)
    text = str(error.value)
    assert f"The values of pm.Data [{name!r}] differ from those this run sampled" in text
    assert "set the data back first: pm.set_data({name: idata.constant_data[name].values}" in text
    assert "run pm.sample afresh" in text  # or sample the new data
    assert "prior changed" not in text


def test_the_data_set_back_continues():
    idata, model = _run(), _model()
    with model:
        pm.set_data({"x": 2 * X})
        pm.set_data({"x": idata.constant_data["x"].values})
    more = pmt.continue_sampling(idata, 3, model=model, progressbar=False)
    assert more["posterior"].sizes["draw"] == 13
