"""One replica-exchange sweep's decisions in one compiled call: accept or reject every rung's
proposal, swap neighbouring pairs, record round trips.

Every ExchangeMC explorer (random walk, MALA) builds a :class:`Proposal` for all rungs with one
batched density call, then hands it here with the sweep's random numbers (:class:`SweepDraws`).
The rules themselves live in :mod:`pymc_tempering.kernels.rules`, once. The loop updates the
:class:`Replicas` record in place; on small models this replaces about twenty small NumPy
operations per sweep. ``exp`` of the log ratios is left to NumPy by the caller (numba's may
differ in the last bit, and tuning feeds on the probabilities).
"""

from typing import NamedTuple

import numba
import numpy as np

from pymc_tempering.kernels.rules import log_accept_ratio, log_swap_ratio, update_round_trips

__all__ = ["Replicas", "Proposal", "SweepDraws", "finish_sweep", "pair_index", "sweep_kernel"]

# rows of a sweep's record: per rung the log acceptance ratio then whether it accepted (1 / 0);
# per neighbouring pair (first n_rungs - 1 columns) the log swap ratio then whether it swapped
ACCEPT, SWAP, ACCEPTED, SWAPPED = 0, 1, 2, 3


class Replicas(NamedTuple):
    """The replicas on the ladder, row ``l`` on rung ``l``; updated in place by a sweep."""

    x: np.ndarray  # (n_rungs, n_params)
    aux: np.ndarray  # (n_rungs, k): values that travel with a replica (MALA's gradients; k = 0)
    logprior: np.ndarray  # (n_rungs,)
    loglik: np.ndarray  # (n_rungs,)
    rung_replica: np.ndarray  # (n_rungs,) int: id of the replica on each rung


class Proposal(NamedTuple):
    """One proposed move per rung and its densities."""

    x: np.ndarray
    aux: np.ndarray
    logprior: np.ndarray
    loglik: np.ndarray
    log_q_ratio: np.ndarray  # log q(x | x') - log q(x' | x) per rung, 0 for the random walk
    exact_first: bool  # rung 0's proposal is an independent prior draw (beta_0 = 0)


class SweepDraws(NamedTuple):
    """The random numbers that decide a sweep."""

    log_u_accept: np.ndarray  # (n_rungs,) log U(0, 1)
    lower: np.ndarray  # int: lower rung of each pair proposed for swapping (disjoint pairs)
    log_u_swap: np.ndarray  # (n_rungs - 1,) log U(0, 1), read at the proposed pairs


def pair_index(lower: np.ndarray):
    """An index that picks the pairs ``lower`` out of a record's row: the slice of every
    second rung from ``lower[0]`` where that is what ``lower`` holds (the even/odd sets of
    :func:`pymc_tempering.engine.swap.swap_pairs`, a single pair), else ``lower``
    itself. The same
    entries in the same order (so their sum is the same to the last bit), without the cost of
    fancy indexing on every sweep."""
    if lower.size == 0:
        return slice(0, 0)
    if lower.size > 1 and not np.all(np.diff(lower) == 2):
        return lower
    return slice(int(lower[0]), int(lower[-1]) + 1, 2)


@numba.njit(cache=True, nogil=True)
def _swap_rows(a, i):
    for j in range(a.shape[1]):
        a[i, j], a[i + 1, j] = a[i + 1, j], a[i, j]


def finish_sweep(
    replicas: Replicas, proposal: Proposal, draws: SweepDraws, betas, last_end, record
) -> int:
    """Accept/reject every rung's proposal, swap the pairs ``draws.lower``, count round trips.

    ``replicas`` and ``last_end`` (the round-trip recorder, per replica id) are updated in
    place. ``record`` (4, n_rungs) gets rows ``ACCEPT`` / ``ACCEPTED`` per rung and ``SWAP`` /
    ``SWAPPED`` per pair (NaN for pairs not proposed), as log ratios and 1.0 / 0.0. Returns the
    number of round trips completed. (The records are unpacked into arrays here: numba types
    a named tuple argument on every call, which costs more than the sweep.)
    """
    return sweep_kernel(*replicas, *proposal, *draws, betas, last_end, record)


@numba.njit(cache=True, nogil=True)
def sweep_kernel(
    x,
    aux,
    logprior,
    loglik,
    rung_replica,
    prop_x,
    prop_aux,
    prop_logprior,
    prop_loglik,
    log_q_ratio,
    exact_first,
    log_u_accept,
    lower,
    log_u_swap,
    betas,
    last_end,
    record,
):
    """:func:`finish_sweep` on the records' fields, in their order.

    Element loops, not slice assignments (``x[rung, :] = ...``): numba lowers those to generic
    broadcasting code, which made this kernel's first compilation take about 4 s instead of
    under 1 s (paid once, before the kernel is cached on disk)."""
    n_rungs = x.shape[0]
    for rung in range(n_rungs):
        ratio = log_accept_ratio(
            betas[rung],
            logprior[rung],
            loglik[rung],
            prop_logprior[rung],
            prop_loglik[rung],
            log_q_ratio[rung],
            rung == 0 and exact_first,
        )
        record[ACCEPT, rung] = ratio
        accepted = log_u_accept[rung] < ratio
        record[ACCEPTED, rung] = 1.0 if accepted else 0.0
        if accepted:
            for j in range(x.shape[1]):
                x[rung, j] = prop_x[rung, j]
            for j in range(aux.shape[1]):
                aux[rung, j] = prop_aux[rung, j]
            logprior[rung] = prop_logprior[rung]
            loglik[rung] = prop_loglik[rung]
    for rung in range(n_rungs):
        record[SWAP, rung] = np.nan
        record[SWAPPED, rung] = np.nan
    for k in range(lower.size):
        i = lower[k]
        ratio = log_swap_ratio(betas[i], betas[i + 1], loglik[i], loglik[i + 1])
        record[SWAP, i] = ratio
        swapped = log_u_swap[i] < ratio
        record[SWAPPED, i] = 1.0 if swapped else 0.0
        if swapped:
            _swap_rows(x, i)
            _swap_rows(aux, i)
            logprior[i], logprior[i + 1] = logprior[i + 1], logprior[i]
            loglik[i], loglik[i + 1] = loglik[i + 1], loglik[i]
            rung_replica[i], rung_replica[i + 1] = rung_replica[i + 1], rung_replica[i]
    return update_round_trips(rung_replica, last_end)
