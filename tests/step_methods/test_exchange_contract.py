"""ExchangeMC's step-method contract and its bookkeeping: state save/restore, frozen tuning,
the swap stats read against a brute-force recount, and a planted bug in the compiled rule."""

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
from pymc_tempering.kernels import fused
from pymc_tempering.kernels.fused import SWAP


@numba.njit
def _flipped_swap_ratio(beta_lower, beta_upper, loglik_lower, loglik_upper):
    """The rule as misprinted in the issue: exp((b_{l+1} - b_l)(ll_{l+1} - ll_l))."""
    return (beta_upper - beta_lower) * (loglik_upper - loglik_lower)


def test_sign_flipped_swap_rule_in_the_compiled_sweep_fails_the_bimodal_test(monkeypatch):
    broken = recompiled(fused.sweep_kernel, log_swap_ratio=_flipped_swap_ratio)
    monkeypatch.setattr(fused, "sweep_kernel", broken)
    ok, info = mode_weight_check(sample_bimodal(lambda: pmt.ExchangeMC(n_rungs=32)))
    assert not ok, info


def _stepped(explorer, ladder, tune):
    with seed_lecture_model() as model:
        step = pmt.ExchangeMC(n_rungs=5, explorer=explorer, ladder=ladder)
        point = model.initial_point()
    step.setup_chain(np.random.default_rng(0), tune=40, draws=10)
    for _ in range(35):  # past the first ladder round (32 sweeps)
        point, _ = step.step(point)
    if not tune:
        step.stop_tuning()
    return step, point


@pytest.mark.parametrize("explorer", ["rwm", "mala"])
@pytest.mark.parametrize("ladder", ["geometric", "adaptive"])
@pytest.mark.parametrize("tune", [True, False])
def test_sampling_state_restores_a_step_bit_for_bit(explorer, ladder, tune):
    step, point = _stepped(explorer, ladder, tune)
    state = step.sampling_state
    p1, s1 = step.step(point)
    # run a different state in between (other proposal scales), then restore the first
    other = step.sampling_state
    other.scales = other.scales._replace(log_scaling=other.scales.log_scaling + 0.5)
    step.sampling_state = other
    step.step(point)
    step.sampling_state = state
    p2, s2 = step.step(point)
    np.testing.assert_array_equal(p1["mu"], p2["mu"])
    for name, value in s1[0].items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(s2[0][name]), err_msg=name)


def test_cached_proposal_scale_follows_a_restored_state():
    step, point = _stepped("rwm", "geometric", tune=False)
    state = step.sampling_state
    state.scales = state.scales._replace(
        log_scaling=state.scales.log_scaling + 0.5, param_scale=state.scales.param_scale * 2.0
    )
    step.sampling_state = state
    expected = np.exp(step.scales.log_scaling)[:, None] * step.scales.param_scale
    np.testing.assert_array_equal(step.explorer._step_scale(step.scales), expected)


@pytest.mark.parametrize("explorer", ["rwm", "mala"])
def test_scales_and_ladder_freeze_when_tuning_ends(explorer):
    with seed_lecture_model():
        idata = pm.sample(
            draws=100,
            tune=150,
            chains=1,
            random_seed=3,
            discard_tuned_samples=False,
            step=pmt.ExchangeMC(n_rungs=6, ladder="adaptive", explorer=explorer),
            **SAMPLE_KWARGS,
        )
    stats = idata.warmup_sample_stats
    post = idata.sample_stats
    for name in ("rung_scaling", "betas"):
        values = np.asarray(post[name].values[0], dtype=float)
        np.testing.assert_array_equal(values, values[:1].repeat(len(values), 0), err_msg=name)
    # they did move during tuning, and the first recorded draw uses the last tuned values
    assert not np.allclose(
        stats.rung_scaling.values[0, 0], stats.rung_scaling.values[0, -1], equal_nan=True
    )
    np.testing.assert_array_equal(stats.rung_scaling.values[0, -1], post.rung_scaling.values[0, 0])


def _spied_run(monkeypatch, sweeps_per_draw, scheme="deo", draws=60):
    """Run ExchangeMC recording every sweep's record; return (idata, records)."""
    records = []
    sweep = pmt.ExchangeMC._sweep

    def spy(self):
        record = sweep(self)
        records.append(record.copy())
        return record

    monkeypatch.setattr(pmt.ExchangeMC, "_sweep", spy)
    with seed_lecture_model():
        idata = pm.sample(
            draws=draws,
            tune=0,
            chains=1,
            random_seed=4,
            step=pmt.ExchangeMC(n_rungs=6, sweeps_per_draw=sweeps_per_draw, swap_scheme=scheme),
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
