"""Continue a finished or interrupted run from the state saved in its DataTree."""

from pymc_tempering._util.lazy import lazy_namespace

_NAMES = {
    "continue_sampling": "resume.run:continue_sampling",
    "concatenate_draws": "resume.run:concatenate_draws",
    "resume_step": "resume.run:resume_step",
    "chain_checkpoints": "resume.run:chain_checkpoints",
    "Resumable": "resume.checkpoint:Resumable",
    "STATE_STAT": "resume.checkpoint:STATE_STAT",
}

__getattr__, __dir__, __all__ = lazy_namespace(__name__, _NAMES)
