"""The only package that compiles PyTensor, one module per concern.

Tempering needs the model's log density split as ``logprior + beta * loglik``. We take the split
PyMC's SMC uses: ``model.varlogp`` (free variables in their value space, Jacobians included) is
the log prior, ``model.datalogp`` (observed variables and Potentials) the log-likelihood.

- :mod:`.checks`: what a model must satisfy before compiling (all free variables,
  proper priors, likelihood terms, minibatched observations);
- :mod:`.discrete`: the discrete free variables' columns and supports;
- :mod:`.rewrites`: exact graph rewrites for batched densities;
- :mod:`.prior`: forward samplers of the prior in value space;
- :mod:`.tempered`: ExchangeMC's ``(logprior, loglik)`` batched over rungs, with gradients;
- :mod:`.gradients`: the tempered log density and gradient of the Langevin samplers, value and
  gradient for the optimisers, the Hessian for Laplace;
- :mod:`.minibatch`: SGLD's minibatch gradients;
- :mod:`.bridge`: the batched joint log density for bridge sampling;
- :mod:`.loglik`: the log-likelihood of a run's posterior draws (one-temperature WBIC, LLC);
- :mod:`.points`: flat vectors from named points;
- :mod:`.trace`: the point function of PyMC's trace, once per model;
- :mod:`.direct`: a compiled function's numba graph called directly, where it gives the same
  bits;
"""

from pymc_tempering.step_methods._compile.bridge import (
    compile_batched_logp,
    compile_value_transform,
)
from pymc_tempering.step_methods._compile.checks import (
    check_all_free,
    check_minibatch_model,
    check_observed_finite,
    has_likelihood,
    improper_priors,
    minibatched_observations,
    refuse_minibatch,
)
from pymc_tempering.step_methods._compile.discrete import (
    DiscreteVariable,
    compile_discrete_supports,
    discrete_variables,
)
from pymc_tempering.step_methods._compile.gradients import (
    compile_logp_hessian,
    compile_tempered_logp_dlogp,
    compile_value_and_grad,
    nonfinite_start_message,
)
from pymc_tempering.step_methods._compile.loglik import draws_loglik, flat_draws
from pymc_tempering.step_methods._compile.minibatch import (
    MinibatchGradients,
    compile_minibatch_gradients,
)
from pymc_tempering.step_methods._compile.points import flat_point_map
from pymc_tempering.step_methods._compile.prior import PRIOR_BLOCK
from pymc_tempering.step_methods._compile.tempered import (
    TemperedDensity,
    add_batched_gradient,
    compile_tempered_density,
)

__all__ = [
    "PRIOR_BLOCK",
    "MinibatchGradients",
    "TemperedDensity",
    "add_batched_gradient",
    "check_all_free",
    "check_observed_finite",
    "check_minibatch_model",
    "compile_batched_logp",
    "compile_logp_hessian",
    "compile_minibatch_gradients",
    "compile_tempered_density",
    "compile_tempered_logp_dlogp",
    "compile_value_and_grad",
    "compile_value_transform",
    "DiscreteVariable",
    "compile_discrete_supports",
    "discrete_variables",
    "draws_loglik",
    "flat_draws",
    "flat_point_map",
    "has_likelihood",
    "improper_priors",
    "minibatched_observations",
    "nonfinite_start_message",
    "refuse_minibatch",
]
