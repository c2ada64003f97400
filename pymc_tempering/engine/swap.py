"""Replica swaps between neighbouring rungs. NumPy only.

Rung ``l`` targets ``prior * lik ** betas[l]``. Exchanging the replicas on rungs ``l`` and
``l + 1`` leaves the product of the rung targets invariant when accepted with probability
``min(1, exp((betas[l+1] - betas[l]) * (loglik[l] - loglik[l+1])))``, where ``loglik[l]`` is the
log-likelihood of the replica currently on rung ``l`` (Hukushima & Nemoto 1996; Nagata & Watanabe,
``exp(-Delta)`` with ``Delta = (t_{l+1} - t_l)(H(w_l) - H(w_{l+1}))`` and ``loglik = -H``).
The hotter replica moves up when it fits the data better.
"""

import numpy as np

__all__ = ["SWAP_SCHEMES", "log_swap_ratio", "swap_pairs", "propose_swaps"]

SWAP_SCHEMES = ("deo", "seo", "random")


def log_swap_ratio(betas, loglik, lower) -> np.ndarray:
    """Log acceptance ratio of swapping rungs ``lower`` and ``lower + 1`` (vectorised)."""
    betas = np.asarray(betas, dtype=float)
    loglik = np.asarray(loglik, dtype=float)
    lower = np.asarray(lower, dtype=int)
    gap = loglik[lower] - loglik[lower + 1]
    if np.isfinite(gap).all():
        return (betas[lower + 1] - betas[lower]) * gap
    with np.errstate(invalid="ignore"):
        log_r = (betas[lower + 1] - betas[lower]) * gap
    # -inf - -inf is nan: two replicas with zero likelihood swap freely at no cost
    return np.where(np.isnan(log_r), -np.inf, log_r)


def swap_pairs(n_rungs: int, sweep: int, scheme: str, rng: np.random.Generator) -> np.ndarray:
    """Lower rung index of each neighbouring pair proposed for swapping at this sweep.

    ``"deo"``: deterministic even/odd, the seed paper's scheme and non-reversible PT: pairs
    (0,1),(2,3),... when ``sweep`` is even, (1,2),(3,4),... when it is odd. ``"seo"``: the same
    two sets chosen at random each sweep (reversible PT). ``"random"``: a single neighbouring
    pair chosen uniformly.
    """
    if scheme == "deo":
        parity = sweep % 2
    elif scheme == "seo":
        parity = int(rng.integers(2))
    elif scheme == "random":
        return np.array([rng.integers(n_rungs - 1)])
    else:
        raise ValueError(f"`swap_scheme` must be one of {SWAP_SCHEMES}, got {scheme!r}.")
    return np.arange(parity, n_rungs - 1, 2)


def propose_swaps(betas, loglik, lower, rng: np.random.Generator | None, log_u=None):
    """Decide the swaps of disjoint pairs ``lower``; return ``(order, accept_prob, accepted)``.

    ``log_u`` (one per pair, log of U(0, 1) draws) decides; drawn from ``rng`` if not given.

    ``order`` is the permutation to apply to every per-rung array (``x = x[order]``) so that the
    accepted pairs trade places; ``accept_prob`` and ``accepted`` are per proposed pair.
    """
    log_r = log_swap_ratio(betas, loglik, lower)
    if log_u is None:
        log_u = np.log(rng.random(len(lower)))
    accepted = log_u < log_r
    order = np.arange(len(loglik))
    up = lower[accepted]
    order[up] += 1
    order[up + 1] -= 1
    return order, np.exp(np.minimum(log_r, 0.0)), accepted
