"""pymc_tempering: replica-exchange, Langevin and stochastic-gradient samplers for PyMC.

Step methods for ``pm.sample(step=...)``: :class:`ExchangeMC` (parallel tempering),
:class:`ULA`, :class:`MALA`, :class:`SGLD`. Analysis functions take the DataTree that
``pm.sample`` returns: evidence (thermodynamic integration, stepping stone, bridge sampling,
Bayes factors), tempering diagnostics and plots. Exact reference values live in
:mod:`pymc_tempering.exact`.
"""

from pymc_tempering import datasets, exact
from pymc_tempering._trace import tempering_dataset
from pymc_tempering.acceptance_ratio import bar, mbar
from pymc_tempering.approximations import bic, laplace_evidence, learning_coefficient_evidence
from pymc_tempering.bridge import bridge_sampling
from pymc_tempering.comparison import compare_evidence
from pymc_tempering.diagnostics import (
    add_tempering_group,
    global_barrier,
    round_trips,
    swap_rates,
    tempering_summary,
)
from pymc_tempering.evidence import (
    EvidenceWarning,
    evidence_ladder,
    marginal_likelihood,
    stepping_stone,
    thermodynamic_integration,
)
from pymc_tempering.ladder import geometric_ladder, power_ladder, wbic_beta, wbic_ladder
from pymc_tempering.llc import local_learning_coefficient
from pymc_tempering.plots import (
    plot_learning_coefficient,
    plot_replica_trajectories,
    plot_sgld_noise,
    plot_swap_rates,
    plot_ti_curve,
)
from pymc_tempering.selection import compare_models
from pymc_tempering.sgld_analysis import sampling_threshold_crossing, step_size_weighted_mean
from pymc_tempering.slt import learning_coefficient, wbic
from pymc_tempering.step_methods.exchange import ExchangeMC
from pymc_tempering.step_methods.langevin import MALA, ULA
from pymc_tempering.step_methods.sgld import SGLD

__all__ = [
    "ExchangeMC",
    "ULA",
    "MALA",
    "SGLD",
    "thermodynamic_integration",
    "stepping_stone",
    "bar",
    "mbar",
    "marginal_likelihood",
    "compare_evidence",
    "compare_models",
    "laplace_evidence",
    "bic",
    "learning_coefficient_evidence",
    "bridge_sampling",
    "evidence_ladder",
    "EvidenceWarning",
    "tempering_dataset",
    "tempering_summary",
    "swap_rates",
    "round_trips",
    "global_barrier",
    "add_tempering_group",
    "plot_ti_curve",
    "plot_swap_rates",
    "plot_replica_trajectories",
    "plot_sgld_noise",
    "step_size_weighted_mean",
    "sampling_threshold_crossing",
    "geometric_ladder",
    "power_ladder",
    "wbic",
    "learning_coefficient",
    "local_learning_coefficient",
    "wbic_beta",
    "wbic_ladder",
    "plot_learning_coefficient",
    "datasets",
    "exact",
]
__version__ = "0.1.0"
