"""SGLD's stats (:mod:`pymc_tempering.step_methods.sgld.stats`): the sampling threshold's
cadence and the noise variances' values. Their dtypes and shapes are checked in
tests/step_methods/test_contract.py."""

import logging

import numpy as np
import pymc as pm
from helpers import FAST
from helpers import SAMPLE_KWARGS as SAMPLE
from targets import (
    logistic_data,
    logistic_model,
)

from pymc_tempering.step_methods.sgld import SGLD


def test_threshold_cadence_and_noise_stats(caplog):
    """Stat dtypes and shapes are in tests/step_methods/test_contract.py; here, their values."""
    X, y = logistic_data(200)
    with logistic_model(X, y, batch_size=20):
        step = SGLD(threshold_every=7, threshold=1e9, compile_kwargs=FAST)
        with caplog.at_level(logging.INFO, logger="pymc"):
            idata = pm.sample(draws=30, tune=5, chains=1, step=step, random_seed=3, **SAMPLE)
    ss = idata.sample_stats
    for name in ("grad_noise_var", "injected_noise_var"):  # one value per parameter
        assert ss[name].shape == (1, 30, 3), name
    alpha = ss["sampling_threshold"].values[0]
    steps = np.arange(5, 35)  # the chain's step counter includes the 5 tuning steps
    np.testing.assert_array_equal(np.isfinite(alpha), steps % 7 == 0)
    assert np.all(alpha[np.isfinite(alpha)] > 0)
    gnv = ss["grad_noise_var"].values[0]
    assert np.all(np.isfinite(gnv[steps % 7 == 0])) and np.all(np.isnan(gnv[steps % 7 != 0]))
    eps = ss["step_size"].values[0]
    np.testing.assert_allclose(ss["injected_noise_var"].values[0], eps[:, None] * np.ones(3))
    assert np.all(np.diff(eps) < 0)
    assert "sampling threshold fell" in caplog.text
    assert not ss["diverging"].values.any()
