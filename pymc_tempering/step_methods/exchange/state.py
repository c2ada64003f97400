"""ExchangeMC's sampling state: PyMC's dataclass of the engine's records.

PyMC saves and restores a step method's state through a dataclass whose fields name the step's
attributes (``pymc.step_methods.state``): ``step.sampling_state`` deep-copies them, assigning a
state sets them back. ExchangeMC's fields are the records of its run's fixed leg
(:mod:`pymc_tempering.engine.records`, read and set through :func:`delegate`), the variational
leg's own state (:class:`LegState`) and the reference's fit. The field names and record classes
are those of the checkpoints already written, so those continue.
"""

from dataclasses import field
from typing import Any

import numpy as np
from pymc.step_methods.compound import StepMethodState
from pymc.step_methods.state import WithSamplingState, dataclass_state

# the records, where checkpoints written before the engine left ExchangeMC name them
from pymc_tempering.engine.records import PriorBuffer, RoundTripRecorder, SwapTally

__all__ = [
    "ExchangeMCState",
    "LegState",
    "PriorBuffer",
    "RoundTripRecorder",
    "SwapTally",
    "delegate",
]


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
    # reference="variational": the variational leg's own state and the reference's fit
    variational: Any = None
    reference_fit: Any = None


def delegate(name: str, owner: str = "fixed"):
    """A property reading and setting ``name`` of the step's run (``owner="run"``) or of its
    fixed leg."""

    def holder(step):
        return step.run if owner == "run" else step.run.fixed

    def get(step):
        return getattr(holder(step), name)

    def set_(step, value):
        setattr(holder(step), name, value)

    return property(get, set_, doc=f"The engine's ``{name}`` ({owner}).")


class LegState(WithSamplingState):
    """The variational leg seen as PyMC sees a step's state: :class:`ExchangeMCState`'s fields
    read from and set on the leg; its stream is the run's (set with the fixed leg's), and it
    has no leg or fit of its own."""

    _state_class = ExchangeMCState
    _OWN = {"variational": None, "reference_fit": None}

    def __init__(self, leg, step):
        self.__dict__.update(leg=leg, vars=step.vars)

    def __getattr__(self, name):
        if name in self._OWN:
            return self._OWN[name]
        return getattr(self.__dict__["leg"], name)

    def __setattr__(self, name, value):
        if name == "sampling_state":  # the property's setter, which sets the fields below
            object.__setattr__(self, name, value)
        elif name not in self._OWN and name != "rng":  # rng: the run's, set with the step's
            setattr(self.leg, name, value)
