"""The discrete-move rules (pymc_tempering.kernels.discrete) against exact laws."""

import numpy as np
import pytest
from scipy import stats

from pymc_tempering.kernels.discrete import (
    gibbs_choice,
    lattice_jump,
    lattice_log_ratios,
    tempered_gibbs,
    tempered_logdensity,
)


def test_gibbs_choice_draws_the_softmax_law():
    rng = np.random.default_rng(2)
    log_weights = np.array([[0.0, np.log(3.0), -np.inf, np.log(6.0)], [5.0, 5.0, 5.0, np.nan]])
    n = 20_000
    rows = np.repeat(log_weights, n // 2, axis=0)
    choice = gibbs_choice(rows, rng.random(n))
    first = np.bincount(choice[: n // 2], minlength=4)
    second = np.bincount(choice[n // 2 :], minlength=4)
    assert first[2] == 0 and second[3] == 0  # -inf and NaN never chosen
    p1 = np.array([1.0, 3.0, 6.0]) / 10.0
    assert stats.chisquare(first[[0, 1, 3]], p1 * n / 2).pvalue > 1e-3
    assert stats.chisquare(second[:3], np.full(3, n / 6)).pvalue > 1e-3


def test_gibbs_choice_needs_a_finite_weight():
    with pytest.raises(ValueError, match="finite weight"):
        gibbs_choice(np.array([[-np.inf, -np.inf]]), np.array([0.5]))


def test_lattice_jump_is_symmetric_and_never_zero():
    rng = np.random.default_rng(1)
    n = 40_000
    d = lattice_jump(rng.standard_normal(n), rng.random(n), 2.5)
    assert np.all(d != 0) and np.all(d == np.round(d))
    values, counts = np.unique(d, return_counts=True)
    for v, c in zip(values, counts, strict=True):
        if v > 0 and c > 200:
            mirror = counts[values == -v][0]
            # the two counts are binomial halves of their sum
            assert abs(c - mirror) < 4 * np.sqrt(c + mirror)
    # |d| = ceil(|z| * 2.5): P(|d| = 1) = P(|z| <= 0.4)
    assert abs(np.mean(np.abs(d) == 1) - (2 * stats.norm.cdf(0.4) - 1)) < 4 * np.sqrt(0.25 / n)


def test_tempered_logdensity_at_the_prior_rung_ignores_the_likelihood():
    betas = np.array([0.0, 0.5, 1.0])
    logprior = np.array([-1.0, -1.0, -1.0])
    loglik = np.array([-np.inf, -4.0, np.nan])
    out = tempered_logdensity(betas, logprior, loglik)
    np.testing.assert_array_equal(out, [-1.0, -3.0, -np.inf])


def test_lattice_log_ratios_follow_the_accept_rule():
    betas = np.array([0.0, 0.5, 1.0])
    out = lattice_log_ratios(
        betas, np.zeros(3), np.array([-2.0, -2.0, -2.0]),
        np.array([-1.0, -1.0, -np.inf]), np.array([-np.inf, -4.0, -1.0]),
    )  # fmt: skip
    np.testing.assert_array_equal(out, [-1.0, -1.0 + 0.5 * -2.0, -np.inf])


def test_compiled_gibbs_draw_equals_its_numpy_oracle():
    """The sampler's compiled draw (tempered_gibbs) picks what gibbs_choice picks from
    tempered_logdensity's weights, for the same uniforms, on every rung kind."""
    rng = np.random.default_rng(3)
    n_rungs, n_states = 40, 5
    betas = np.concatenate([[0.0], rng.random(n_rungs - 2), [1.0]])
    logprior = rng.normal(size=n_rungs * n_states)
    loglik = 5 * rng.normal(size=n_rungs * n_states)
    loglik[::7] = -np.inf  # inadmissible except on the prior rung
    logprior[3::11] = -np.inf
    u = rng.random(n_rungs)
    weights = tempered_logdensity(np.repeat(betas, n_states), logprior, loglik)
    expected = gibbs_choice(weights.reshape(n_rungs, n_states), u)
    np.testing.assert_array_equal(tempered_gibbs(logprior, loglik, betas, u, n_states), expected)
