"""Every sampler under ``floatX = float32``: the model's variables are float32, the samplers
keep their states in float64 and cast at the compiled functions' boundary."""

import arviz as az
import numpy as np
import pymc as pm
import pytensor
import pytest
from helpers import SAMPLE_KWARGS
from scipy import stats

import pymc_tempering as pmt

Y = np.array([0.5, 1.0, 1.5], dtype="float32")
# x ~ N(0, 1), y_i ~ N(x, 1): posterior N(sum y / 4, 1 / 4); y ~ N(0, I + 11')
POST_MEAN, POST_SD = float(Y.sum()) / 4, 0.5
LOG_Z = float(stats.multivariate_normal(np.zeros(3), np.eye(3) + 1.0).logpdf(Y))


def float32_model():
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0)
        pm.Normal("y", x, 1.0, observed=Y)
    return model


@pytest.mark.parametrize(
    "make_step",
    [
        lambda: pmt.ExchangeMC(n_rungs=6),
        lambda: pmt.ExchangeMC(n_rungs=6, explorer="mala"),
        lambda: pmt.MALA(),
        lambda: pmt.ULA(step_size=0.05),
    ],
    ids=["exchange-rwm", "exchange-mala", "mala", "ula"],
)
def test_samplers_run_under_float32(make_step):
    with pytensor.config.change_flags(floatX="float32"):
        with float32_model():
            idata = pm.sample(
                draws=3000, tune=1000, chains=1, random_seed=4, step=make_step(), **SAMPLE_KWARGS
            )
    x = idata.posterior["x"]
    assert x.dtype == np.float32
    # the mean of ULA's (biased-variance) stationary law is still exact on a Gaussian target
    mean, mcse = float(x.mean()), float(az.mcse(x, method="mean"))
    assert abs(mean - POST_MEAN) < 4 * mcse, (mean, mcse)
    if "rung_loglik" in idata.sample_stats:
        res = pmt.thermodynamic_integration(idata)
        err = float(res.log_marginal_likelihood) - LOG_Z
        # 6 power-free geometric rungs: allow the reported discretisation error too
        tol = 4 * float(res.mcse) + abs(float(res.discretisation_error))
        assert abs(err) < tol, (err, tol)


def test_sgld_runs_under_float32():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 2)).astype("float32")
    y = (rng.random(2000) < 1 / (1 + np.exp(-X @ np.array([1.0, -0.5])))).astype("float32")
    with pytensor.config.change_flags(floatX="float32"):
        with pm.Model():
            X_mb, y_mb = pm.Minibatch(X, y, batch_size=100)
            w = pm.Normal("w", 0, 1, shape=2)
            pm.Bernoulli("y", logit_p=X_mb @ w, observed=y_mb, total_size=len(y))
            idata = pm.sample(
                draws=1000, tune=500, chains=1, random_seed=2, step=pmt.SGLD(), **SAMPLE_KWARGS
            )
    w = idata.posterior["w"]
    assert w.dtype == np.float32 and np.isfinite(w.values).all()
    # the data were generated with w = (1, -0.5); 2000 rows pin it to about +-0.06
    np.testing.assert_allclose(w.mean(("chain", "draw")).values, [1.0, -0.5], atol=0.25)
