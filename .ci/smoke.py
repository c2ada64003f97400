"""Smoke test of an installed pymc_tempering (run by .ci/wheel_check from outside the checkout).

    python smoke.py [CHECKOUT [VENV]]   the import must not come from CHECKOUT, and must come
                                        from the environment VENV where the wheel was installed

It checks what a user does first: the import comes from the installed wheel, not a source tree;
a short ExchangeMC run through pm.sample; marginal_likelihood on a conjugate model whose log Z
is closed-form; the run saved as a DataTree and reopened. Small runs: this is a packaging check
(the files and dependencies are there), the statistics are tested by the test suite.
"""

import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pymc as pm
import xarray as xr
from scipy import stats

import pymc_tempering as pmt

T0 = time.perf_counter()
CHECKOUT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else None
VENV = Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else None
here = Path(pmt.__file__).resolve()
assert "site-packages" in here.parts, f"pymc_tempering imported from {here}, not an installed copy"
if CHECKOUT is not None:
    assert CHECKOUT not in here.parents, f"pymc_tempering imported from the checkout: {here}"
if VENV is not None:
    assert VENV in here.parents, f"pymc_tempering imported from {here}, not from {VENV}"
assert pmt.__version__, "pymc_tempering.__version__ is empty"
print(f"pymc_tempering {pmt.__version__} from {here.parent}")

# y_i ~ N(mu, 1), mu ~ N(0, 1): y ~ N(0, I + 1 1^T), so log Z is exact
y = np.array([0.3, -1.2, 0.8, 1.9, 0.1])
exact = stats.multivariate_normal(np.zeros(y.size), np.eye(y.size) + 1.0).logpdf(y)
with pm.Model() as model:
    mu = pm.Normal("mu", 0.0, 1.0)
    pm.Normal("y", mu, 1.0, observed=y)

with model:
    idata = pm.sample(
        draws=100, tune=100, chains=2, cores=1, random_seed=1, progressbar=False,
        step=pmt.ExchangeMC(n_rungs=4, explorer="rwm"), compute_convergence_checks=False,
    )  # fmt: skip
post = idata.posterior["mu"]
assert post.shape == (2, 100) and np.isfinite(post).all(), post.shape
summary = pmt.tempering_summary(idata)
print(f"ExchangeMC: posterior mean {float(post.mean()):.3f} (exact {y.sum() / (y.size + 1):.3f})")

with warnings.catch_warnings():
    warnings.simplefilter("ignore", pmt.EvidenceWarning)  # a tiny run may be warned; fine here
    res = pmt.marginal_likelihood(
        model, n_rungs=8, draws=200, tune=100, chains=2, cores=1, random_seed=2, progressbar=False,
        method=("ti", "ss"),
    )  # fmt: skip
est = res["log_marginal_likelihood"].values
mcse = res["mcse"].values
print(f"marginal_likelihood: {np.round(est, 3)} +- {np.round(mcse, 3)}, exact {exact:.3f}")
# a loose bound: the point is that the installed estimators run end to end
assert np.all(np.abs(est - exact) < 0.5), (est, exact)

with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "run.nc"
    idata.to_netcdf(path)
    back = xr.open_datatree(path)
    np.testing.assert_array_equal(back.posterior["mu"].values, post.values)
    assert "sample_stats" in back.children
    back.close()
print(f"smoke test passed in {time.perf_counter() - T0:.1f} s")
