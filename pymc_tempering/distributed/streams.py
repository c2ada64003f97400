"""Random streams of a distributed run, derived from the seed and an index, never from layout.

Strong parallelism invariance (Surjanovic et al. 2023, Pigeons.jl): replica ``r`` draws its
proposals and accept decisions from ``SeedSequence(seed, spawn_key=(REPLICA, r))`` whatever
worker holds it, and the coordinator its swap decisions from ``(SWAP,)``, so a seed gives the
same draws with any number of workers.
"""

import numpy as np

__all__ = ["REPLICA", "SWAP", "replica_rng", "swap_rng", "root_seed"]

REPLICA, SWAP = 0, 1  # first word of each stream's spawn key


def root_seed(random_seed) -> int:
    """An int seed from the user's ``random_seed`` (None: fresh entropy, drawn once here)."""
    if random_seed is None:
        return int(np.random.SeedSequence().entropy)
    if isinstance(random_seed, (int, np.integer)) and not isinstance(random_seed, bool):
        if random_seed < 0:
            raise ValueError(f"`random_seed` must be a non-negative int, got {random_seed}.")
        return int(random_seed)
    raise TypeError(
        f"`random_seed` must be an int or None, got {type(random_seed).__name__}: one seed "
        "derives every replica's stream, so a sequence per chain has no meaning here."
    )


def replica_rng(seed: int, replica: int) -> np.random.Generator:
    """The generator of replica ``replica`` (its index on the initial ladder)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(REPLICA, replica)))


def swap_rng(seed: int) -> np.random.Generator:
    """The coordinator's generator: the uniforms of the swap decisions."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(SWAP,)))
