"""The compiled sweep (accept every rung, swap the proposed pairs, count round trips) against
the NumPy oracles run on the same random numbers."""

import numpy as np
import pytest

from pymc_tempering.diagnostics import round_trip_counts
from pymc_tempering.engine.swap import propose_swaps, swap_pairs
from pymc_tempering.kernels.fused import (
    ACCEPT,
    ACCEPTED,
    SWAP,
    SWAPPED,
    Proposal,
    Replicas,
    SweepDraws,
    finish_sweep,
)
from pymc_tempering.kernels.rules import NONE
from pymc_tempering.kernels.rwm import metropolis_accept


def _random_sweep(rng, n_rungs, n_params, n_aux, exact_first, sweep, scheme):
    betas = np.concatenate([[0.0], np.sort(rng.random(n_rungs - 2)), [1.0]])
    loglik = rng.normal(size=n_rungs) * 3
    loglik[0] = -np.inf if rng.random() < 0.3 else loglik[0]  # admissible at beta = 0
    replicas = Replicas(rng.normal(size=(n_rungs, n_params)), rng.normal(size=(n_rungs, n_aux)),
                        rng.normal(size=n_rungs), loglik, rng.permutation(n_rungs))  # fmt: skip
    p_ll = rng.normal(size=n_rungs) * 3
    p_ll[rng.random(n_rungs) < 0.1] = -np.inf
    proposal = Proposal(rng.normal(size=(n_rungs, n_params)), rng.normal(size=(n_rungs, n_aux)),
                        rng.normal(size=n_rungs), p_ll, rng.normal(size=n_rungs) * 0.5,
                        exact_first)  # fmt: skip
    lower = swap_pairs(n_rungs, sweep, scheme, rng)
    draws = SweepDraws(np.log(rng.random(n_rungs)), lower, np.log(rng.random(n_rungs - 1)))
    return betas, replicas, proposal, draws


def _oracle(betas, r, p, d, last_end):
    """The same sweep with the NumPy oracles."""
    exact = np.zeros(betas.size, dtype=bool)
    exact[0] = p.exact_first
    state = np.hstack([r.x, r.aux])
    prop = np.hstack([p.x, p.aux])
    state, logprior, loglik, prob, accepted = metropolis_accept(
        state, r.logprior, r.loglik, prop, p.logprior, p.loglik, betas, None, p.log_q_ratio,
        exact, d.log_u_accept,
    )  # fmt: skip
    order, swap_prob, swapped = propose_swaps(betas, loglik, d.lower, None, d.log_u_swap[d.lower])
    rung_replica = r.rung_replica[order]
    trace = np.array([r.rung_replica, rung_replica])
    return (
        state[order],
        logprior[order],
        loglik[order],
        rung_replica,
        prob,
        accepted,
        (swap_prob, swapped, trace),
    )


@pytest.mark.parametrize("scheme", ["deo", "seo", "random"])
@pytest.mark.parametrize("exact_first", [False, True])
def test_compiled_sweep_equals_the_numpy_oracles(scheme, exact_first):
    rng = np.random.default_rng(3)
    for sweep in range(60):
        betas, r, p, d = _random_sweep(rng, 7, 3, 2 * (sweep % 2), exact_first, sweep, scheme)
        state, logprior, loglik, rung_replica, prob, accepted, swaps = _oracle(betas, r, p, d, None)
        record = np.empty((4, 7))
        last_end = np.full(7, NONE)
        update = finish_sweep(r, p, d, betas, last_end, record)
        np.testing.assert_array_equal(np.hstack([r.x, r.aux]), state)
        np.testing.assert_array_equal(r.logprior, logprior)
        np.testing.assert_array_equal(r.loglik, loglik)
        np.testing.assert_array_equal(r.rung_replica, rung_replica)
        np.testing.assert_array_equal(np.exp(np.minimum(record[ACCEPT], 0)), prob)
        np.testing.assert_array_equal(record[ACCEPTED], accepted)
        np.testing.assert_array_equal(np.exp(np.minimum(record[SWAP, d.lower], 0)), swaps[0])
        np.testing.assert_array_equal(record[SWAPPED, d.lower], swaps[1])
        unproposed = np.setdiff1d(np.arange(7), d.lower)
        assert np.isnan(record[SWAP, unproposed]).all()
        assert update == 0  # one sweep from no history completes no round trip
        assert round_trip_counts(swaps[2]).sum() == 0
