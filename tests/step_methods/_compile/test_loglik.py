"""The log-likelihood of a run's posterior draws (_compile.loglik), against PyMC's own
compiled ``model.datalogp`` at each draw, and the value-space mapping of the draws."""

import numpy as np
import pymc as pm
import xarray as xr

from pymc_tempering.step_methods._compile.loglik import draws_loglik, flat_draws


def _model():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=np.array([0.3, -0.1, 1.2, 0.8]))
        pm.Potential("extra", -0.5 * mu**2)
    return model


def _posterior(n_chains=2, n_draws=300, seed=0):
    rng = np.random.default_rng(seed)
    shape = (n_chains, n_draws)
    posterior = xr.Dataset(
        {
            "mu": (("chain", "draw"), rng.normal(0.5, 0.3, shape)),
            "sigma": (("chain", "draw"), rng.uniform(0.2, 2.0, shape)),
        }
    )
    return xr.DataTree.from_dict({"posterior": posterior})


def test_draws_loglik_equals_datalogp_at_every_draw():
    """Exact reference: PyMC's compiled datalogp (observed + Potential) at each point, over
    more draws than one batch (300 > CHUNK = 256), the sigma draws log-transformed."""
    model, idata = _model(), _posterior()
    flat = flat_draws(model, idata)
    assert flat.shape == (2, 300, 2)
    got = draws_loglik(model, flat)
    assert got.shape == (2, 300)
    reference = model.compile_fn(model.datalogp, inputs=model.value_vars, on_unused_input="ignore")
    mu, sigma = (idata.posterior[name].values for name in ("mu", "sigma"))
    expected = [
        [reference({"mu": mu[c, d], "sigma_log__": np.log(sigma[c, d])}) for d in range(300)]
        for c in range(2)
    ]
    np.testing.assert_allclose(got, np.asarray(expected, dtype=float), rtol=1e-12)
