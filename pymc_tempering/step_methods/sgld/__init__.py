"""SGLD: minibatch stochastic-gradient Langevin dynamics (Welling & Teh 2011) as a PyMC step
method, optionally preconditioned (pSGLD) or with control variates (SGLD-CV).

One idea per module: ``sampler`` (the step method), ``options`` (argument checks and defaults),
``stats`` (sampler stats and the sampling threshold), ``divergence`` (which moves are refused,
and the messages); the maths is in :mod:`pymc_tempering.kernels.sgld`.
"""

from pymc_tempering.step_methods.sgld.divergence import BLOWUP_NATS
from pymc_tempering.step_methods.sgld.sampler import SGLD, SGLDState

__all__ = ["SGLD", "SGLDState", "BLOWUP_NATS"]
