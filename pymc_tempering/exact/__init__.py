r"""Exact reference values to validate samplers and evidence estimates against.

Models whose marginal likelihood is known without sampling, one module per family:

* :mod:`~pymc_tempering.exact.singular`: the seed paper's singular model (Nagata & Watanabe
  2008), :math:`H(w) = \prod_j w_j^2`, prior :math:`N(0, I_d)`; its stochastic complexity
  :math:`F(n) = -\log Z(n)`, the paper's asymptotic eq. (4), the exact per-rung
  :math:`E_t[-nH]`; with the monomial models, WBIC and learning coefficients of
  :mod:`pymc_tempering.exact.monomial`;
* :mod:`~pymc_tempering.exact.conjugate`: the seed lecture on empirical Bayes,
  :math:`x_i \sim N(\mu, 1)`, :math:`\mu \sim N(0, b^2)`, and conjugate Normal-Gamma linear
  regression with the classic radiata pine benchmark (Williams 1959; Friel & Pettitt 2008);
* :mod:`~pymc_tempering.exact.two_mode`: a well-separated two-mode target in 2-D;
* :mod:`~pymc_tempering.exact.eight_schools`: the centred eight schools (Rubin 1981),
  :math:`\log Z_\beta` and :math:`E_\beta[\ell]` by 1-D quadrature over :math:`\tau`;
* :mod:`~pymc_tempering.exact.support`: two models whose :math:`E_0[\ell] = -\infty`, a uniform
  likelihood whose support depends on a parameter and a hard constraint written as a Potential;
* :mod:`~pymc_tempering.exact.egg_box`: the egg box of Feroz, Hobson & Bridges (2009), a 2-D
  likelihood with many sharp maxima;
* models with discrete parameters, exact by summing them out:
  :mod:`~pymc_tempering.exact.change_point` (the coal-mining switchpoint with Gamma rates),
  :mod:`~pymc_tempering.exact.variable_selection` (Bernoulli inclusion indicators, all
  :math:`2^k` subsets) and :mod:`~pymc_tempering.exact.mixture` (a two-component mixture with one
  allocation per observation, all :math:`2^n` allocations).

Every function is NumPy/SciPy only (no sampling); the few model builders import PyMC when called.
"""

from pymc_tempering.exact.change_point import (
    CHANGE_POINT_PRIOR,
    ChangePointPosterior,
    change_point_log_evidence,
    change_point_model,
    change_point_posterior,
    change_point_power_moments,
    no_change_log_evidence,
    no_change_model,
    no_change_power_moments,
)
from pymc_tempering.exact.conjugate import (
    RADIATA_PINE_PRIOR,
    lecture_log_evidence,
    normal_gamma_log_evidence,
    radiata_pine_log_evidence,
    read_radiata_pine,
)
from pymc_tempering.exact.egg_box import (
    EGG_BOX_SIDE,
    egg_box_log_evidence,
    egg_box_loglik,
    egg_box_model,
    egg_box_power_moments,
)
from pymc_tempering.exact.eight_schools import (
    EIGHT_SCHOOLS_PRIOR,
    EIGHT_SCHOOLS_SIGMA,
    EIGHT_SCHOOLS_Y,
    eight_schools_log_evidence,
    eight_schools_mean_loglik,
)
from pymc_tempering.exact.mixture import (
    MIXTURE_PRIOR,
    MixtureData,
    mixture_allocation_mean_loglik,
    mixture_allocation_model,
    mixture_data,
    mixture_log_evidence,
    mixture_marginal_log_evidence,
    mixture_marginal_model,
)
from pymc_tempering.exact.monomial import (
    exact_learning_coefficients,
    exact_wbic,
    monomial_free_energy,
    monomial_learning_coefficient,
    monomial_llc,
    monomial_power_moments,
    regular_power_moments,
)
from pymc_tempering.exact.singular import (
    SINGULAR_CONSTANT_D2,
    reduced_rank_learning_coefficient,
    singular_free_energy,
    singular_free_energy_asymptotic,
    singular_mean_loglik,
)
from pymc_tempering.exact.support import (
    constrained_log_evidence,
    constrained_mean_loglik,
    uniform_support_log_evidence,
    uniform_support_mean_loglik,
    uniform_support_prior_probability,
)
from pymc_tempering.exact.two_mode import (
    TWO_MODE_MEANS,
    TWO_MODE_WEIGHTS,
    two_mode_log_evidence,
    two_mode_model,
)
from pymc_tempering.exact.variable_selection import (
    VARIABLE_SELECTION_PRIOR,
    VariableSelectionData,
    VariableSelectionPosterior,
    variable_selection_data,
    variable_selection_log_evidence,
    variable_selection_mean_loglik,
    variable_selection_model,
    variable_selection_posterior,
)

__all__ = [
    "SINGULAR_CONSTANT_D2",
    "RADIATA_PINE_PRIOR",
    "reduced_rank_learning_coefficient",
    "singular_free_energy",
    "singular_free_energy_asymptotic",
    "singular_mean_loglik",
    "lecture_log_evidence",
    "normal_gamma_log_evidence",
    "radiata_pine_log_evidence",
    "read_radiata_pine",
    "TWO_MODE_WEIGHTS",
    "TWO_MODE_MEANS",
    "two_mode_model",
    "two_mode_log_evidence",
    "EIGHT_SCHOOLS_Y",
    "EIGHT_SCHOOLS_SIGMA",
    "EIGHT_SCHOOLS_PRIOR",
    "eight_schools_log_evidence",
    "eight_schools_mean_loglik",
    "uniform_support_log_evidence",
    "uniform_support_mean_loglik",
    "uniform_support_prior_probability",
    "constrained_log_evidence",
    "constrained_mean_loglik",
    "EGG_BOX_SIDE",
    "egg_box_loglik",
    "egg_box_log_evidence",
    "egg_box_model",
    "egg_box_power_moments",
    "monomial_power_moments",
    "monomial_free_energy",
    "monomial_learning_coefficient",
    "regular_power_moments",
    "exact_wbic",
    "exact_learning_coefficients",
    "monomial_llc",
    "CHANGE_POINT_PRIOR",
    "ChangePointPosterior",
    "change_point_model",
    "no_change_model",
    "change_point_log_evidence",
    "change_point_posterior",
    "change_point_power_moments",
    "no_change_log_evidence",
    "no_change_power_moments",
    "VARIABLE_SELECTION_PRIOR",
    "VariableSelectionData",
    "VariableSelectionPosterior",
    "variable_selection_data",
    "variable_selection_model",
    "variable_selection_log_evidence",
    "variable_selection_posterior",
    "variable_selection_mean_loglik",
    "MIXTURE_PRIOR",
    "MixtureData",
    "mixture_data",
    "mixture_allocation_model",
    "mixture_marginal_model",
    "mixture_log_evidence",
    "mixture_allocation_mean_loglik",
    "mixture_marginal_log_evidence",
]


def __dir__():
    """``dir(pmt.exact)``: the public names, and ``datasets`` (the data sets' loaders, e.g.
    ``pmt.exact.datasets.coal_mining_disasters()``), not the modules that define the names."""
    return sorted([*__all__, "datasets"])
