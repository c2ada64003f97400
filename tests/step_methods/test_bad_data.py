"""Non-finite observed data: every sampler names the observed variable and says to fix the data
(no start point can help, so the start-point advice would mislead)."""

import numpy as np
import pymc as pm
import pytest

import pymc_tempering as pmt

STEPS = {
    "exchange": lambda: pmt.ExchangeMC(n_rungs=4),
    "mala": lambda: pmt.MALA(),
    "ula": lambda: pmt.ULA(step_size=0.1),
}


@pytest.mark.parametrize("name", list(STEPS))
def test_inf_in_the_data_names_the_observed_variable(name):
    with pm.Model():
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu, 1, observed=np.array([1.0, np.inf, 2.0]))
        with pytest.raises(ValueError, match="observed data hold non-finite values") as info:
            pm.sample(step=STEPS[name](), draws=5, tune=5, chains=1, progressbar=False)
    assert "'y': 1" in str(info.value)
    assert "initvals" not in str(info.value)


def test_inf_in_pm_data_is_named_too():
    with pm.Model():
        data = pm.Data("data", np.array([1.0, 2.0, -np.inf]))
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu, 1, observed=data)
        with pytest.raises(ValueError, match="'y': 1"):
            pmt.ExchangeMC(n_rungs=4)
