"""ULA and MALA: Langevin step methods for PyMC.

Both move by the h-form Langevin proposal :math:`x' = x + h M \\nabla \\log \\pi(x) +
\\sqrt{2 h M}\\,\\xi` on :math:`\\log \\pi = \\text{logprior} + \\beta\\,\\text{loglik}`; MALA
adds the Metropolis-Hastings correction, ULA does not. One idea per module: ``base`` (what both
share, and the argument checks), ``ula``, ``mala``, ``tuning`` (MALA's step-size and
preconditioner tuning); the maths is in :mod:`pymc_tempering.kernels.langevin`.
"""

from pymc_tempering.step_methods.langevin.mala import MALA, MALAState
from pymc_tempering.step_methods.langevin.ula import ULA, ULAState

__all__ = ["ULA", "MALA", "ULAState", "MALAState"]
