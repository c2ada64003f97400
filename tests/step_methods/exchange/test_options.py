"""ExchangeMC's `compile_kwargs`: NumPy backends run, the others are refused by name with the
fix, before anything is compiled."""

import numpy as np
import pymc as pm
import pytest
from helpers import SAMPLE_KWARGS

from pymc_tempering.step_methods.exchange.sampler import ExchangeMC


def _model():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu, 1, observed=[0.1, 0.3])
    return model


@pytest.mark.parametrize("mode", ["JAX", "PYTORCH", "MLX", "DebugMode", "no-such-mode"])
def test_a_mode_the_batched_density_cannot_use_is_refused_by_name(mode):
    match = r"`compile_kwargs` has mode=.*Pass compile_kwargs="
    with _model(), pytest.raises(ValueError, match=match):
        ExchangeMC(n_rungs=4, compile_kwargs={"mode": mode})


@pytest.mark.parametrize("mode", ["C"])  # NUMBA: every other test
def test_numpy_backends_sample(mode):
    with _model():
        step = ExchangeMC(explorer="rwm", n_rungs=4, compile_kwargs={"mode": mode})
        idata = pm.sample(draws=20, tune=20, chains=1, step=step, random_seed=1, **SAMPLE_KWARGS)
    assert np.all(np.isfinite(idata.posterior["mu"].values))
