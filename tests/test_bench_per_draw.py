"""benchmarks/bench_per_draw.py's row "same work, one function" (decision 153): its one
function gives ``pmt.ExchangeMC()``'s draws and stats bit for bit, and the check it runs
before timing fails on a difference of one part in 10^15."""

import os
import sys
from pathlib import Path

import numpy as np
import pymc as pm
import pytest

import pymc_tempering as pmt
from pymc_tempering.exact import two_mode_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
_blas = os.environ.get("OPENBLAS_NUM_THREADS")
bench = pytest.importorskip("bench_per_draw")
if _blas is None:  # the script sets it for its own runs: not for the tests' other processes
    os.environ.pop("OPENBLAS_NUM_THREADS", None)


@pytest.fixture(scope="module")
def model():
    return two_mode_model(means=[[-5.0, 0.0, 0.0], [5.0, 0.0, 0.0]], prior_sd=20.0)


def _pair(model):
    with model:
        real, flat = pmt.ExchangeMC(), pmt.ExchangeMC()
    flat.step = bench.flat_step(flat)
    return real, flat


def test_one_function_gives_the_steps_draws_and_stats_bit_for_bit(model):
    # 400 draws: the random block (32 sweeps) and the prior block (64 draws) are drawn anew
    # several times, and snapshots start at draws 0, 100 and 200 (the checkpoint rows)
    real, flat = _pair(model)
    bench.check_flat_step(model, real, flat, draws=400)


def test_the_check_fails_on_one_stat_off_in_the_last_bits(model):
    real, flat = _pair(model)
    one_draw = flat.step

    def off(point):
        point, stats = one_draw(point)
        stats[0]["swap_rate"] = stats[0]["swap_rate"] * (1 + 1e-15)
        return point, stats

    flat.step = off
    with pytest.raises(AssertionError, match="swap_rate"):
        bench.check_flat_step(model, real, flat, draws=50)


def test_a_tuned_chain_leaves_the_tuning_draws_to_the_step(model):
    real, flat = _pair(model)
    kw = dict(draws=30, tune=40, chains=1, cores=1, random_seed=5, progressbar=False,
              compute_convergence_checks=False)  # fmt: skip
    with model:
        a, b = pm.sample(step=real, **kw), pm.sample(step=flat, **kw)
    np.testing.assert_array_equal(a.posterior["x"].values, b.posterior["x"].values)
