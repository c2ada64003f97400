"""ExchangeMC's sampling state: small typed records, one per concern.

PyMC saves and restores a step method's state through a dataclass whose fields name the step's
attributes (``pymc.step_methods.state``): ``step.sampling_state`` deep-copies them,
assigning a state sets them back. ExchangeMC keeps each concern in its own record:

- ``replicas`` (:class:`~pymc_tempering.kernels.fused.Replicas`): the replicas, their densities
  and which replica sits on each rung;
- ``prior_draws`` (:class:`PriorBuffer`) and ``random`` (explorer-specific, e.g.
  :class:`~pymc_tempering.step_methods.explorers.RandomBlock`): random numbers drawn ahead;
- ``scales`` (:class:`~pymc_tempering.adaptation.ScaleTuning`) and ``ladder_tuning``
  (:class:`~pymc_tempering.adaptation.LadderRound`, or None for a fixed ladder);
- ``recorder`` (:class:`RoundTripRecorder`) and ``swaps`` (:class:`SwapTally`): the counters
  behind the ``round_trips`` and ``swap_rate`` stats.
"""

from dataclasses import field
from typing import Any, NamedTuple

import numpy as np
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import dataclass_state

from pymc_tempering.kernels.rules import NONE

__all__ = ["ExchangeMCState", "PriorBuffer", "RoundTripRecorder", "SwapTally"]


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


@dataclass_state
class ExchangeMCState(StepMethodState):
    tune: bool
    betas: np.ndarray
    replicas: Any
    prior_draws: PriorBuffer
    random: Any
    scales: Any
    ladder_tuning: Any
    recorder: RoundTripRecorder
    swaps: SwapTally
    sweep: int
    tune_sweeps: int
    barrier: float
    n_rungs_suggested: int
    sweeps_per_draw: int = field(metadata={"frozen": True})
    swap_scheme: str = field(metadata={"frozen": True})
