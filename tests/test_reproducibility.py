"""What the same ``random_seed`` promises across processes (docs/guide/reproducibility.md).

PyTensor compiles the models' densities with numba's fastmath flags, and a function's last
bits depend on whether its numba kernels were compiled in this process or loaded from the
on-disk cache (docs/decisions/101-reproducibility-and-fastmath.md). So the promise is:

- bit for bit between processes that find the kernels in the cache (any number of cores or
  Dask workers, any order), and for the same process;
- within a relative ``FIRST_RUN_RTOL`` between a first run that compiles into an empty cache
  and a later run that loads from it;
- bit for bit always with ``PYTENSOR_FLAGS=numba__fastmath=False``.

Each case runs in fresh processes that share a fresh cache, as a user's first and second run.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

FIRST_RUN_RTOL = 1e-12

SCRIPT = r"""
import json, sys, warnings
import numpy as np, pymc as pm
warnings.simplefilter("ignore")
import pymc_tempering as pmt
rng = np.random.default_rng(0)
X = rng.normal(size=(50, 2)); y = X @ np.array([0.5, -1.0]) + rng.normal(size=50)
with pm.Model():
    b = pm.Normal("b", 0, 2, shape=2); s = pm.HalfNormal("s", 1)
    pm.Normal("y", X @ b, s, observed=y)
    res, idata = pmt.marginal_likelihood(
        n_rungs=16, beta_min=2.0**-16, draws=100, tune=100, chains=2, cores=1,
        random_seed=5, progressbar=False, return_idata=True)
post, stats = idata.posterior, idata.sample_stats
np.save(sys.argv[1], np.concatenate([
    post["b"].values.ravel(), post["s"].values.ravel(),
    stats["rung_loglik"].values.ravel(), res["log_marginal_likelihood"].values.ravel()]))
"""


def _run(cache: Path, out: Path, flags: str = "") -> np.ndarray:
    env = dict(os.environ)
    env["PYTENSOR_FLAGS"] = ",".join(f for f in (f"base_compiledir={cache / 'pt'}", flags) if f)
    env["NUMBA_CACHE_DIR"] = str(cache / "nb")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    subprocess.run([sys.executable, "-c", SCRIPT, str(out)], check=True, env=env, timeout=600)
    return np.load(out)


def _relative_gap(a, b) -> float:
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-300)))


@pytest.mark.slow
def test_a_first_run_and_cached_runs_agree_as_promised(tmp_path):
    first = _run(tmp_path, tmp_path / "first.npy")
    second = _run(tmp_path, tmp_path / "second.npy")
    third = _run(tmp_path, tmp_path / "third.npy")
    np.testing.assert_array_equal(second, third)  # both loaded from the cache: bit for bit
    gap = _relative_gap(first, second)
    print(json.dumps({"first_vs_cached_max_relative_gap": gap}))
    assert gap <= FIRST_RUN_RTOL


@pytest.mark.slow
def test_without_fastmath_a_first_run_is_bit_for_bit(tmp_path):
    flags = "numba__fastmath=False"
    first = _run(tmp_path, tmp_path / "first.npy", flags)
    second = _run(tmp_path, tmp_path / "second.npy", flags)
    np.testing.assert_array_equal(first, second)
