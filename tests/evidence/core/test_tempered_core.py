"""Pareto tail diagnostic of pymc_tempering.evidence.core.tempered: ArviZ's number, on tails
it must and must not flag, and the weight concentration that judges tied weights."""

from pathlib import Path

import numpy as np
import pytest
from arviz_stats.base import array_stats

from pymc_tempering.evidence.core.tempered import (
    MIN_TAIL_VALUES,
    pareto_khat,
    ti_rung_tails,
    weight_concentration,
)


def test_khat_is_the_number_arviz_reports():
    """log=True: az.loo's pareto_k (psislw) of these log weights; plain: pareto_khat's right
    tail. Bit for bit, column by column."""
    rng = np.random.default_rng(0)
    log_w = rng.standard_t(3, size=(3000, 4)) * np.array([0.1, 0.5, 1.0, 2.0])
    expected = [float(array_stats.psislw(-log_w[:, j], r_eff=1.0)[1]) for j in range(4)]
    np.testing.assert_array_equal(pareto_khat(log_w, axis=0, log=True), expected)
    plain = [
        float(array_stats.pareto_khat(log_w[:, j], chain_axis=None, r_eff=1.0, tail="right"))
        for j in range(4)
    ]
    np.testing.assert_array_equal(pareto_khat(log_w, axis=0), plain)


def test_khat_flags_heavy_tails_and_passes_light_ones():
    rng = np.random.default_rng(0)
    assert pareto_khat(rng.standard_normal(4000)) < 0.3
    assert pareto_khat(rng.standard_cauchy(4000)) > 0.7
    assert pareto_khat(rng.standard_normal(4000), log=True) < 0.3  # lognormal weights, sd 1
    assert pareto_khat(3 * rng.standard_normal(4000), log=True) > 0.7  # sd 3: heavy


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_khat_of_draws_with_few_values_is_never_heavy(seed):
    """The log-likelihood of a discrete model takes a few values: its tied tail is no heavy
    one (it used to read as degenerate, khat = inf, and raise a false alarm): unknown (NaN),
    no tail (-inf) or light, as plain values or as the log weights of a stone (a small
    beta gap times the values: weights within a few nats of each other)."""
    rng = np.random.default_rng(seed)
    draws = rng.choice([-3.0, -2.5, -1.0, 0.0], size=4000, p=[0.5, 0.3, 0.17, 0.03])
    squares = -0.5 * rng.poisson(3.0, size=4000) ** 2
    for tail in (draws, -draws, squares, -squares, np.round(rng.standard_normal(4000), 1)):
        for khat in (pareto_khat(tail), pareto_khat(0.05 * tail, log=True)):
            assert np.isnan(khat) or khat < 0.5, (tail[:5], khat)
    assert pareto_khat(np.zeros(100)) == -np.inf  # constant: no tail at all
    assert np.isnan(pareto_khat(np.zeros(20)))  # too few draws to fit a tail


def test_concentration_sees_a_weight_carried_by_one_draw():
    """Tied weights with one draw carrying them: no tail to fit (NaN), and the concentration
    is the log ratio's whole size, far above any error bar; equal weights give exactly
    -log(1 - 4 / n)."""
    log_w = np.concatenate([np.full(999, -800.0), [0.0]])
    assert np.isnan(pareto_khat(log_w, log=True))
    assert weight_concentration(log_w) > 700
    few = MIN_TAIL_VALUES - 1
    equal = weight_concentration(np.zeros((2, 1000)), axis=-1)
    np.testing.assert_allclose(equal, -np.log1p(-few / 1000), rtol=1e-12)


def test_rung_tails_read_each_chains_shape_not_a_mixture_of_chains():
    """The variational leg's rung draws of a real two-leg run (the lecture model, 4 chains of
    400 draws, each chain with its own fitted reference; tests/two_legs.py, seed 102): light
    tails within every chain, so no rung is heavy; pooled as one sample the chains' different
    laws fit Pareto k up to 3 (what the check read before)."""
    run = np.load(Path(__file__).parent / "data" / "variational_leg_rung_loglik.npz")
    khat, _ = ti_rung_tails(run["betas"], run["rung_loglik"])
    assert khat.shape == (2, run["betas"].size) and np.all(khat < 0.5), khat


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rung_tails_still_see_a_heavy_tail_in_every_chain(seed):
    """Cauchy draws (k = 1) are heavy in both tails, after each chain's own centring and
    scaling as before it."""
    rng = np.random.default_rng(seed)
    khat, influence = ti_rung_tails(np.array([0.0, 0.5, 1.0]), rng.standard_cauchy((4, 400, 3)))
    assert np.all(khat > 0.5) and np.all(influence > 0), khat
