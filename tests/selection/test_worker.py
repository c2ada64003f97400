"""What a compare_models worker records (selection/_worker.py): its chains share one compiled
point function, and record what a plain run records, Deterministics of each model's own data
included."""

import warnings

import numpy as np
import pymc as pm

from pymc_tempering import marginal_likelihood
from pymc_tempering.evidence import EvidenceWarning
from pymc_tempering.selection._worker import ModelTask, run_model

SETTINGS = {"n_rungs": 6, "draws": 30, "tune": 30, "chains": 2}
RNG = np.random.default_rng(5)
X = RNG.normal(size=(25, 2))


def regression(X, y):
    with pm.Model() as model:
        tau = pm.Gamma("tau", 2.0, 2.0)
        u = pm.Normal("u", 0.0, 1.0, shape=2)
        fit = pm.Deterministic("fit", pm.math.dot(X, u))
        pm.Normal("y", fit, 1.0 / pm.math.sqrt(tau), observed=y)
    return model


def test_worker_records_what_a_plain_run_records(tmp_path):
    import xarray as xr

    from pymc_tempering.selection._store import ModelStore  # noqa: F401 (the store's backend)

    data = [(X + i, X @ np.array([1.0, -0.5]) + RNG.normal(size=25)) for i in range(2)]
    stored = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvidenceWarning)
        for i, (x, y) in enumerate(data):
            task = ModelTask(f"m{i}", lambda x=x, y=y: regression(x, y), f"k{i}", 7 + i, SETTINGS,
                             store=str(tmp_path))  # fmt: skip
            record = run_model(task)["record"]
            assert not record["error"], record["error"]
            stored.append(xr.open_datatree(record["file"]).load())
        for i, (x, y) in enumerate(data):
            _, idata = marginal_likelihood(
                regression(x, y), random_seed=7 + i, cores=1, return_idata=True, **SETTINGS
            )
            for name in ("tau", "u", "fit"):
                np.testing.assert_array_equal(stored[i].posterior[name], idata.posterior[name])
            # the Deterministic from this model's data: X @ u of its own draws
            u = idata.posterior["u"].values
            np.testing.assert_allclose(stored[i].posterior["fit"], u @ x.T, rtol=1e-12)
    assert not np.array_equal(stored[0].posterior.u, stored[1].posterior.u)
