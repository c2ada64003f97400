"""The random-walk sweep's bookkeeping in one compiled call.

The same maths as :func:`pymc_tempering.kernels.rwm.metropolis_accept`,
:func:`pymc_tempering.swap.propose_swaps` and ExchangeMC's round-trip counter, done in place
by a numba-compiled loop (numba is already a dependency of PyTensor 3). On small models the
NumPy versions spend most of a sweep in about twenty small array operations; this does the same
work in one call. It takes the random numbers from its caller, drawn in the same order as the
NumPy path, so both paths give bit-identical traces (tested).
"""

import numba
import numpy as np

__all__ = ["finish_rwm_sweep"]

_BOTTOM, _TOP = 0, 1


@numba.njit(cache=True, nogil=True)
def finish_rwm_sweep(x, logprior, loglik, proposal, prop_logprior, prop_loglik, betas,
                     log_u_accept, exact_first, lower, log_u_swap, rung_replica, last_end,
                     log_alpha, accepted, log_r, swapped):  # fmt: skip
    """Accept/reject every rung's proposal, then swap the pairs ``lower``; all in place.

    ``x``, ``logprior``, ``loglik``, ``rung_replica`` and ``last_end`` are updated in place;
    ``log_alpha``/``accepted`` (per rung) and ``log_r``/``swapped`` (per proposed pair) are
    filled with the log acceptance ratios and decisions (the caller takes ``exp`` in NumPy, so
    probabilities match the NumPy path to the last bit). ``exact_first`` accepts rung 0's
    proposal whenever finite (an exact prior draw). Returns the round trips completed.
    """
    n_rungs, n_params = x.shape
    for rung in range(n_rungs):
        ratio = -np.inf
        if np.isfinite(prop_logprior[rung]) and np.isfinite(prop_loglik[rung]):
            if rung == 0 and exact_first:
                ratio = 0.0
            else:
                ratio = (prop_logprior[rung] - logprior[rung]) + betas[rung] * (
                    prop_loglik[rung] - loglik[rung]
                )
                if np.isnan(ratio):
                    ratio = -np.inf
        log_alpha[rung] = ratio
        accepted[rung] = log_u_accept[rung] < ratio
        if accepted[rung]:
            for j in range(n_params):
                x[rung, j] = proposal[rung, j]
            logprior[rung] = prop_logprior[rung]
            loglik[rung] = prop_loglik[rung]

    for k in range(lower.size):
        i = lower[k]
        gap = loglik[i] - loglik[i + 1]
        ratio = (betas[i + 1] - betas[i]) * gap
        if np.isnan(ratio):
            ratio = -np.inf
        log_r[k] = ratio
        swapped[k] = log_u_swap[k] < ratio
        if swapped[k]:
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
