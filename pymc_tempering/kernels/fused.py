"""The random-walk sweep's bookkeeping in one compiled call.

The same maths as :func:`pymc_tempering.kernels.rwm.metropolis_accept` (with its
:func:`~pymc_tempering.kernels.rwm.admissible` states and ``0 * loglik = 0`` at ``beta = 0``),
:func:`pymc_tempering.swap.propose_swaps` and ExchangeMC's round-trip counter, done in place
by a numba-compiled loop (numba is already a dependency of PyTensor 3). On small models the
NumPy versions spend most of a sweep in about twenty small array operations; this does the same
work in one call. It takes its random numbers from the caller, the same ones the NumPy path
uses, and leaves ``exp`` of the log acceptance ratios to NumPy (numba's may differ in the last
bit, and tuning feeds on the probabilities), so both paths give identical traces (tested).
"""

import numba
import numpy as np

__all__ = ["finish_rwm_sweep"]

_BOTTOM, _TOP = 0, 1


@numba.njit(cache=True, nogil=True)
def finish_rwm_sweep(x, logprior, loglik, proposal, prop_logprior, prop_loglik, betas,
                     log_u_accept, exact_first, lower, log_u_swap, rung_replica, last_end,
                     record):  # fmt: skip
    """Accept/reject every rung's proposal, then swap the pairs ``lower``; all in place.

    ``x``, ``logprior``, ``loglik``, ``rung_replica`` and ``last_end`` are updated in place.
    ``log_u_accept`` holds one log-uniform per rung, ``log_u_swap`` one per neighbouring pair
    (indexed by the pair's lower rung). ``exact_first`` accepts rung 0's proposal whenever
    admissible (an exact prior draw). ``record`` (4, n_rungs) gets, in rows 0 and 2, each rung's
    log acceptance ratio and whether it accepted (1.0 / 0.0), and in rows 1 and 3 (first
    n_rungs - 1 columns) each pair's log swap ratio and whether it swapped, NaN for pairs not
    proposed. Returns the number of round trips completed.
    """
    n_rungs, n_params = x.shape
    for rung in range(n_rungs):
        ratio = -np.inf
        prior_rung = betas[rung] == 0.0  # lik ** 0 = 1: loglik = -inf is admissible there
        ok_lik = np.isfinite(prop_loglik[rung]) or (prior_rung and prop_loglik[rung] == -np.inf)
        if np.isfinite(prop_logprior[rung]) and ok_lik:
            if rung == 0 and exact_first:
                ratio = 0.0
            else:
                ratio = prop_logprior[rung] - logprior[rung]
                if not prior_rung:
                    ratio += betas[rung] * (prop_loglik[rung] - loglik[rung])
                if np.isnan(ratio):
                    ratio = -np.inf
        record[0, rung] = ratio
        accepted = log_u_accept[rung] < ratio
        record[2, rung] = 1.0 if accepted else 0.0
        if accepted:
            for j in range(n_params):
                x[rung, j] = proposal[rung, j]
            logprior[rung] = prop_logprior[rung]
            loglik[rung] = prop_loglik[rung]

    record[1, :] = np.nan
    record[3, :] = np.nan
    for k in range(lower.size):
        i = lower[k]
        gap = loglik[i] - loglik[i + 1]
        ratio = (betas[i + 1] - betas[i]) * gap
        if np.isnan(ratio):
            ratio = -np.inf
        record[1, i] = ratio
        swapped = log_u_swap[i] < ratio
        record[3, i] = 1.0 if swapped else 0.0
        if swapped:
            for j in range(n_params):
                x[i, j], x[i + 1, j] = x[i + 1, j], x[i, j]
            logprior[i], logprior[i + 1] = logprior[i + 1], logprior[i]
            loglik[i], loglik[i + 1] = loglik[i + 1], loglik[i]
            rung_replica[i], rung_replica[i + 1] = rung_replica[i + 1], rung_replica[i]

    trips = 0
    bottom, top = rung_replica[0], rung_replica[n_rungs - 1]
    if last_end[bottom] == _TOP:
        trips += 1
    last_end[bottom] = _BOTTOM
    if last_end[top] == _BOTTOM:
        last_end[top] = _TOP
    return trips
