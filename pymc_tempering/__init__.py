"""pymc_tempering: replica-exchange, Langevin and stochastic-gradient samplers for PyMC."""

from pymc_tempering._trace import tempering_dataset
from pymc_tempering.ladder import geometric_ladder, power_ladder
from pymc_tempering.step_methods.exchange import ExchangeMC

__all__ = ["ExchangeMC", "geometric_ladder", "power_ladder", "tempering_dataset"]
__version__ = "0.1.0"
