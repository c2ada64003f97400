"""ExchangeMC's bookkeeping: the swap stats read against a brute-force recount, and a planted
bug in the compiled swap rule. The step-method contract (save/restore, frozen tuning, stats,
seeds, competence) is checked for every sampler in test_contract.py."""

import warnings

import numba
import numpy as np
import pymc as pm
import pytest
from helpers import (
    SAMPLE_KWARGS,
    mode_weight_check,
    recompiled,
    sample_bimodal,
    seed_lecture_model,
)

import pymc_tempering as pmt
from pymc_tempering.engine.run import TemperingRun
from pymc_tempering.kernels import fused
from pymc_tempering.kernels.fused import SWAP


@numba.njit
def _flipped_swap_ratio(beta_lower, beta_upper, loglik_lower, loglik_upper):
    """The rule as misprinted in the issue: exp((b_{l+1} - b_l)(ll_{l+1} - ll_l))."""
    return (beta_upper - beta_lower) * (loglik_upper - loglik_lower)


def test_sign_flipped_swap_rule_in_the_compiled_sweep_fails_the_bimodal_test(monkeypatch):
    broken = recompiled(fused.sweep_kernel, log_swap_ratio=_flipped_swap_ratio)
    monkeypatch.setattr(fused, "sweep_kernel", broken)
    ok, info = mode_weight_check(sample_bimodal(lambda: pmt.ExchangeMC(explorer="rwm", n_rungs=32)))
    assert not ok, info


def _spied_run(monkeypatch, sweeps_per_draw, scheme="deo", draws=60):
    """Run ExchangeMC recording every sweep's record; return (idata, records)."""
    records = []
    sweep = TemperingRun._sweep

    def spy(self):
        record = sweep(self)
        records.append(record.copy())
        return record

    monkeypatch.setattr(TemperingRun, "_sweep", spy)
    with seed_lecture_model():
        idata = pm.sample(
            draws=draws,
            tune=0,
            chains=1,
            random_seed=4,
            step=pmt.ExchangeMC(
                explorer="rwm", n_rungs=6, sweeps_per_draw=sweeps_per_draw, swap_scheme=scheme
            ),
            **SAMPLE_KWARGS,
        )
    return idata, np.array(records)


@pytest.mark.parametrize("sweeps_per_draw, scheme", [(1, "deo"), (3, "deo"), (4, "random")])
def test_swap_stats_equal_a_recount_of_every_sweep(monkeypatch, sweeps_per_draw, scheme):
    """Per pair and draw, ``swap_accept`` is the mean acceptance probability over the sweeps
    of that draw that proposed the pair (not over all its sweeps); ``swap_rate`` is the running
    mean over every pair proposed, not over swap rounds."""
    idata, records = _spied_run(monkeypatch, sweeps_per_draw, scheme)
    per_draw = records.reshape(60, sweeps_per_draw, 4, 6)[:, :, SWAP, :5]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # pairs not proposed in a draw: NaN
        expected = np.nanmean(per_draw, axis=1)
    np.testing.assert_allclose(idata.sample_stats.swap_accept.values[0], expected, rtol=1e-12)
    flat = per_draw.reshape(-1, 5)
    running = np.cumsum(np.nansum(flat, axis=1)) / np.cumsum((~np.isnan(flat)).sum(axis=1))
    last_sweeps = running[sweeps_per_draw - 1 :: sweeps_per_draw]
    np.testing.assert_allclose(idata.sample_stats.swap_rate.values[0], last_sweeps, rtol=1e-12)
