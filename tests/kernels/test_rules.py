"""The compiled accept / swap / round-trip rules against hand-derived numbers and against their
readable NumPy oracles (kernels.rwm.metropolis_accept, swap.log_swap_ratio,
diagnostics.round_trip_counts)."""

import numpy as np
import pytest

from pymc_tempering.diagnostics import round_trip_counts
from pymc_tempering.engine.swap import log_swap_ratio as numpy_log_swap_ratio
from pymc_tempering.kernels.rules import (
    BOTTOM,
    NONE,
    TOP,
    log_accept_ratio,
    log_swap_ratio,
    update_round_trips,
)
from pymc_tempering.kernels.rwm import metropolis_accept

INF = np.inf


def test_accept_ratio_by_hand():
    # logprior -1 -> -2, loglik -10 -> -8 at beta 0.5: -1 + 0.5 * 2 = 0; plus log q ratio 0.3
    assert log_accept_ratio(0.5, -1.0, -10.0, -2.0, -8.0, 0.3, False) == pytest.approx(0.3)
    # at beta = 0 the likelihood never enters, even -inf
    assert log_accept_ratio(0.0, -1.0, -10.0, -2.5, -INF, 0.0, False) == -1.5
    # an exact draw is accepted whenever admissible, whatever the densities
    assert log_accept_ratio(0.0, -1.0, -10.0, -50.0, -INF, 7.0, True) == 0.0
    assert log_accept_ratio(0.0, -1.0, -10.0, -INF, -1.0, 0.0, True) == -INF


@pytest.mark.parametrize(
    "prop_logprior, prop_loglik, log_q",
    [(np.nan, -1.0, 0.0), (-INF, -1.0, 0.0), (-1.0, np.nan, 0.0), (-1.0, -INF, 0.0),
     (-1.0, INF, 0.0), (-1.0, -2.0, np.nan), (-1.0, -2.0, INF)],
)  # fmt: skip
def test_inadmissible_or_non_finite_proposals_are_rejected(prop_logprior, prop_loglik, log_q):
    assert log_accept_ratio(0.5, -1.0, -2.0, prop_logprior, prop_loglik, log_q, False) == -INF


def test_accept_ratio_equals_the_numpy_oracle():
    rng = np.random.default_rng(0)
    n = 400
    betas = np.where(rng.random(n) < 0.2, 0.0, rng.random(n))
    logprior, loglik = rng.normal(size=n), rng.normal(size=n) * 5
    p_lp, p_ll = rng.normal(size=n), rng.normal(size=n) * 5
    p_ll[rng.random(n) < 0.1] = -INF  # zero likelihood: admissible only at beta = 0
    p_lp[rng.random(n) < 0.05] = np.nan
    log_q = rng.normal(size=n)
    log_q[rng.random(n) < 0.05] = np.nan
    exact = np.zeros(n, dtype=bool)
    log_u = np.log(rng.random(n))
    x = np.zeros((n, 1))
    *_, prob, accepted = metropolis_accept(
        x, logprior, loglik, x + 1, p_lp, p_ll, betas, None, log_q, exact, log_u
    )
    ratio = np.array([
        log_accept_ratio(betas[i], logprior[i], loglik[i], p_lp[i], p_ll[i], log_q[i], False)
        for i in range(n)
    ])  # fmt: skip
    np.testing.assert_array_equal(np.exp(np.minimum(ratio, 0.0)), prob)
    np.testing.assert_array_equal(log_u < ratio, accepted)


def test_swap_ratio_by_hand_and_against_the_oracle():
    # betas 0.25 -> 1, logliks -3 (lower rung) and -7: the hotter replica fits better
    assert log_swap_ratio(0.25, 1.0, -3.0, -7.0) == 0.75 * 4.0
    assert log_swap_ratio(0.0, 0.5, -INF, -INF) == -INF  # two zero-likelihood replicas
    assert log_swap_ratio(0.0, 0.5, -INF, -1.0) == -INF  # never move a zero-likelihood draw up
    rng = np.random.default_rng(1)
    betas = np.sort(rng.random(50))
    loglik = rng.normal(size=50) * 10
    loglik[::7] = -INF
    lower = np.arange(49)
    expected = numpy_log_swap_ratio(betas, loglik, lower)
    got = [log_swap_ratio(betas[i], betas[i + 1], loglik[i], loglik[i + 1]) for i in lower]
    np.testing.assert_array_equal(got, expected)


def test_round_trip_rule_equals_the_trace_counter():
    """The recorder's rule, applied draw by draw, counts what round_trip_counts counts."""
    rng = np.random.default_rng(2)
    n_rungs, n_draws = 4, 3000
    rung_replica, trace, trips = np.arange(n_rungs), [], 0
    last_end = np.full(n_rungs, NONE)
    for _ in range(n_draws):
        i = rng.integers(n_rungs - 1)  # a random neighbour swap
        rung_replica[[i, i + 1]] = rung_replica[[i + 1, i]]
        trips += update_round_trips(rung_replica, last_end)
        trace.append(rung_replica.copy())
    assert trips == round_trip_counts(np.array(trace)).sum() > 10
    # by hand: replica 0 goes bottom -> top -> bottom
    last_end = np.full(2, NONE)
    assert update_round_trips(np.array([0, 1]), last_end) == 0
    assert list(last_end) == [BOTTOM, NONE]  # replica 1 has not been at the bottom yet
    assert update_round_trips(np.array([1, 0]), last_end) == 0
    assert list(last_end) == [TOP, BOTTOM]
    assert update_round_trips(np.array([0, 1]), last_end) == 1
