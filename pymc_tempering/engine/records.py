"""The records of a leg's sampling state, one per concern, and the replicas a leg starts from.

- ``replicas`` (:class:`~pymc_tempering.kernels.fused.Replicas`): the replicas, their densities
  and which replica sits on each rung;
- ``prior_draws`` (:class:`PriorBuffer`) and ``random`` (explorer-specific, e.g.
  :class:`~pymc_tempering.engine.explorers.RandomBlock`): random numbers drawn ahead;
- ``scales`` (:class:`~pymc_tempering.engine.tuning.ScaleTuning`) and ``ladder_tuning``
  (:class:`~pymc_tempering.engine.tuning.LadderRound`, or None for a fixed ladder);
- ``recorder`` (:class:`RoundTripRecorder`) and ``swaps`` (:class:`SwapTally`): the counters
  behind the ``round_trips`` and ``swap_rate`` stats.

``prior_draws``, ``recorder`` and ``swaps`` change at every sweep; a leg keeps them as plain
attributes and builds the records only when they are read (:class:`SweepCounters`).
"""

from typing import NamedTuple

import numpy as np

from pymc_tempering.engine.swap import swap_pairs
from pymc_tempering.kernels.fused import Replicas, pair_index
from pymc_tempering.kernels.rules import NONE
from pymc_tempering.kernels.rwm import admissible

__all__ = [
    "PriorBuffer",
    "RoundTripRecorder",
    "SwapTally",
    "SweepCounters",
    "initial_replicas",
]


class PriorBuffer(NamedTuple):
    """Independent prior draws made in a block, and the next one to use."""

    draws: np.ndarray  # (size, n_params)
    pos: int


class RoundTripRecorder(NamedTuple):
    """Which end of the ladder each replica last reached, and the round trips completed.

    ``last_end`` is updated in place by :func:`pymc_tempering.kernels.rules.update_round_trips`.
    """

    last_end: np.ndarray  # (n_replicas,) int: NONE, BOTTOM or TOP
    count: int

    @classmethod
    def empty(cls, n_replicas: int) -> "RoundTripRecorder":
        return cls(np.full(n_replicas, NONE), 0)


class SwapTally(NamedTuple):
    """Sum of the swap acceptance probabilities of the pairs proposed, and how many."""

    accept_sum: float
    attempts: int

    def rate(self) -> float:
        return self.accept_sum / max(self.attempts, 1)


class SweepCounters:
    """What every sweep updates, as plain attributes of the sampler (building a record per
    sweep cost more than the sweep's own bookkeeping); the typed records of the sampling state
    are properties built from them when the state is read, and unpacked when it is set.

    ``_prior_block``, ``_prior_pos``: :class:`PriorBuffer`; ``_last_end``, ``_round_trips``:
    :class:`RoundTripRecorder`; ``_swap_sum``, ``_swap_attempts``: :class:`SwapTally`. Also
    the sweep's swap pairs (:meth:`_pairs`). Mixed into the sampler, whose ``density``, ``rng``,
    ``betas``, ``sweep`` and ``swap_scheme`` it reads.
    """

    @property
    def prior_draws(self) -> PriorBuffer:
        return PriorBuffer(self._prior_block, self._prior_pos)

    @prior_draws.setter
    def prior_draws(self, value: PriorBuffer):
        self._prior_block, self._prior_pos = value

    @property
    def recorder(self) -> RoundTripRecorder:
        return RoundTripRecorder(self._last_end, self._round_trips)

    @recorder.setter
    def recorder(self, value: RoundTripRecorder):
        self._last_end, self._round_trips = value

    @property
    def swaps(self) -> SwapTally:
        return SwapTally(self._swap_sum, self._swap_attempts)

    @swaps.setter
    def swaps(self, value: SwapTally):
        self._swap_sum, self._swap_attempts = value

    # 0, or 1 where this ladder's even/odd pairs are the odd/even ones of a joined ladder
    # (ExchangeMC's variational leg)
    _deo_offset = 0

    def _prior_draw(self) -> np.ndarray:
        """The next independent prior draw, from a block drawn at once (the potential's
        ``prior_draws_per_call``, one compiled call; 1 where it has none)."""
        pos = self._prior_pos
        if pos >= len(self._prior_block):
            n = _prior_block(self.density)
            self._prior_block, pos = self.density.sample_prior(n, self.rng), 0
        self._prior_pos = pos + 1
        return self._prior_block[pos]

    def _count_swaps(self, swap_prob: np.ndarray) -> None:
        self._swap_sum += swap_prob.sum()
        self._swap_attempts += swap_prob.size

    def _clear_counters(self, n_rungs: int) -> None:
        """No round trip begun or counted, no swap proposed."""
        self._last_end, self._round_trips = np.full(n_rungs, NONE), 0
        self._swap_sum, self._swap_attempts = 0.0, 0

    def _pairs(self):
        """This sweep's pairs to propose
        (:func:`pymc_tempering.engine.swap.swap_pairs`, the two "deo" sets made
        once per ladder, kept in ``_deo_pairs``); sets ``_pair_index``, which picks
        them out of a record's row (:func:`pymc_tempering.kernels.pair_index`)."""
        n_rungs = self.betas.size
        if self.swap_scheme != "deo":
            lower = swap_pairs(n_rungs, self.sweep, self.swap_scheme, self.rng)
            self._pair_index = pair_index(lower)
            return lower
        if self._deo_pairs is None or self._deo_pairs[0] != n_rungs:
            sets = [swap_pairs(n_rungs, parity, "deo", self.rng) for parity in (0, 1)]
            self._deo_pairs = (n_rungs, [(lower, pair_index(lower)) for lower in sets])
        lower, self._pair_index = self._deo_pairs[1][(self.sweep + self._deo_offset) % 2]
        return lower


def initial_replicas(q0, betas, density, explorer, init, rng, discrete_columns=()) -> Replicas:
    """Replicas to start from: the top rung at the start point ``q0``, the others independent
    prior draws (``init="prior"``) or ``q0`` plus U(-1, 1) jitter; any that is inadmissible on
    its rung (:func:`pymc_tempering.kernels.rwm.admissible`) starts at ``q0`` instead. Jittered
    ``discrete_columns`` are rounded to integers."""
    n_rungs, n_params = betas.size, density.n_params
    if init == "prior":
        x = density.sample_prior(n_rungs, rng)
    else:
        x = q0 + rng.uniform(-1, 1, size=(n_rungs, n_params))
        x[:, discrete_columns] = np.round(x[:, discrete_columns])
    x[-1] = q0
    logprior, loglik = density.batch(x)
    if not (np.isfinite(logprior[-1]) and np.isfinite(loglik[-1])):
        raise ValueError(
            "The start point has a non-finite log density (log prior "
            f"{logprior[-1]}, log-likelihood {loglik[-1]}) at "
            f"{density.to_point(q0)}. Pass `initvals=` to pm.sample with a valid point."
        )
    bad = ~admissible(logprior, loglik, betas)
    x[bad], logprior[bad], loglik[bad] = q0, logprior[-1], loglik[-1]
    return Replicas(x, explorer.init_aux(x), logprior, loglik, np.arange(n_rungs))


def _prior_block(density) -> int:
    return getattr(density, "prior_draws_per_call", 1)
