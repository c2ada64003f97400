"""The three rules of replica exchange, each written once as a small compiled function.

Every ExchangeMC sweep path (random walk and MALA, tuning or not) runs these through
:func:`pymc_tempering.kernels.fused.finish_sweep`; the NumPy functions
:func:`pymc_tempering.kernels.rwm.metropolis_accept` and
:func:`pymc_tempering.engine.swap.propose_swaps`
are their readable oracles, checked against them in ``tests/kernels/test_rules.py``.

Rung ``l`` targets ``logprior + betas[l] * loglik``; at ``beta = 0`` the rung is the prior
itself (``lik ** 0 = 1``), so there a state with ``loglik = -inf`` is admissible and the
likelihood never enters.
"""

import numba
import numpy as np

__all__ = [
    "BOTTOM",
    "TOP",
    "NONE",
    "log_accept_ratio",
    "log_swap_ratio",
    "update_round_trips",
    "round_trip_events",
]

# last end of the ladder a replica reached (round-trip recorder): none yet, the lowest rung, the top
NONE, BOTTOM, TOP = -1, 0, 1


@numba.njit(cache=True, nogil=True)
def log_accept_ratio(beta, logprior, loglik, prop_logprior, prop_loglik, log_q_ratio, exact):
    """Log Metropolis-Hastings ratio of one rung's proposal; ``-inf`` rejects.

    ``log_q_ratio`` is ``log q(x | x') - log q(x' | x)`` (0 for a symmetric proposal). A
    proposal that is not admissible (non-finite log prior; non-finite log-likelihood except
    ``-inf`` at ``beta = 0``) is rejected; an ``exact`` proposal (an independent draw from the
    rung's own target) is accepted whenever admissible; a ratio that is not finite (NaN from
    ``inf - inf``, an overflowed proposal density) rejects.
    """
    prior_rung = beta == 0.0
    ok_lik = np.isfinite(prop_loglik) or (prior_rung and prop_loglik == -np.inf)
    if not (np.isfinite(prop_logprior) and ok_lik):
        return -np.inf
    if exact:
        return 0.0
    ratio = prop_logprior - logprior
    if not prior_rung:
        ratio += beta * (prop_loglik - loglik)
    ratio += log_q_ratio
    if not np.isfinite(ratio):
        return -np.inf
    return ratio


@numba.njit(cache=True, nogil=True)
def log_swap_ratio(beta_lower, beta_upper, loglik_lower, loglik_upper):
    """Log acceptance ratio of exchanging the replicas of two neighbouring rungs.

    ``(beta_upper - beta_lower) * (loglik_lower - loglik_upper)`` (Hukushima & Nemoto 1996):
    the hotter replica moves up when it fits the data better. Two zero-likelihood replicas
    (``-inf - -inf``) never swap.
    """
    ratio = (beta_upper - beta_lower) * (loglik_lower - loglik_upper)
    if np.isnan(ratio):
        return -np.inf
    return ratio


@numba.njit(cache=True, nogil=True)
def update_round_trips(rung_replica, last_end):
    """Record which end of the ladder each replica last reached; return round trips completed.

    A round trip: a replica reaches the lowest rung after having reached the top rung after
    having been on the lowest rung. ``last_end`` (per replica id: ``NONE``, ``BOTTOM``, ``TOP``)
    is updated in place. :func:`pymc_tempering.diagnostics.round_trip_counts` applies the same
    rule to a recorded trace.
    """
    trips = 0
    bottom, top = rung_replica[0], rung_replica[rung_replica.size - 1]
    if last_end[bottom] == TOP:
        trips += 1
    last_end[bottom] = BOTTOM
    if last_end[top] == BOTTOM:
        last_end[top] = TOP
    return trips


@numba.njit(cache=True, nogil=True)
def round_trip_events(runs):
    """:func:`update_round_trips` replayed over recorded traces.

    ``runs`` is ``(n_runs, n_draws, n_rungs)`` int64, ``runs[k, t, l]`` the replica on rung
    ``l`` at draw ``t`` of run ``k``; returns a boolean array of the same shape, True where
    replica ``r`` completes a round trip at draw ``t``.
    """
    n_runs, n_draws, n_rungs = runs.shape
    events = np.zeros(runs.shape, dtype=np.bool_)
    for k in range(n_runs):
        last_end = np.full(n_rungs, NONE, dtype=np.int64)
        for t in range(n_draws):
            if update_round_trips(runs[k, t], last_end):
                events[k, t, runs[k, t, 0]] = True
    return events
