"""Continue a finished or interrupted run from the state saved in its DataTree."""

from pymc_tempering.resume.checkpoint import STATE_STAT, Resumable
from pymc_tempering.resume.run import (
    chain_checkpoints,
    concatenate_draws,
    continue_sampling,
    resume_step,
)

__all__ = [
    "STATE_STAT",
    "Resumable",
    "chain_checkpoints",
    "concatenate_draws",
    "continue_sampling",
    "resume_step",
]
