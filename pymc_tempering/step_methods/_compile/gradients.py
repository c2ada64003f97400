"""Gradients: the tempered log density and its gradient for the Langevin samplers, the value
and gradient of any model term for the optimisers (Laplace, BIC), the Hessian at the mode
(Laplace), and the message naming what is not finite at a start point."""

import warnings

import numpy as np
import pytensor.tensor as pt
from pymc.pytensorf import compile, join_nonshared_inputs
from pymc.vartypes import discrete_types

__all__ = [
    "compile_value_and_grad",
    "compile_logp_hessian",
    "compile_tempered_logp_dlogp",
    "nonfinite_start_message",
]


def compile_value_and_grad(model, output):
    """``f(x) -> (output, d output / dx)`` of the flat vector of all the model's value
    variables (for the optimisers behind the Laplace and BIC approximations)."""
    (out,), flat = join_nonshared_inputs(model.initial_point(), [output], model.value_vars)
    return compile([flat], [out, pt.grad(out, flat)], on_unused_input="ignore")


def compile_logp_hessian(model):
    """``f(point) -> d2 logp / dx2`` of the model's joint log density, Jacobians included,
    on a point dict of value variables (PyMC's ``model.compile_d2logp``, not negated)."""
    return model.compile_d2logp(jacobian=True, negate_output=False)


def compile_tempered_logp_dlogp(model, vars, initial_point, beta, compile_kwargs=None, sampler=""):
    """Compile ``logprior + beta * loglik`` and its gradient of the flat vector of ``vars``.

    One compiled call returns ``(logp, grad)``; it is PyMC's ``model.logp_dlogp_function``
    with ``tempered=True`` and the likelihood weight set to ``beta``. Free variables not in
    ``vars`` become shared inputs, set by ``ArrayStepShared.step`` from the current point.
    Raises ``ValueError`` naming the variables when the log density has no gradient.
    """
    from pytensor.gradient import DisconnectedInputError, NullTypeGradError

    discrete = [v.name for v in vars if v.dtype in discrete_types]
    if discrete:
        raise ValueError(
            f"{sampler} needs the gradient of the log density, which discrete variables "
            f"{discrete} do not have. Let PyMC assign them another step method: call "
            f"{sampler}(vars=[...]) with the continuous variables only."
        )
    try:
        fn = model.logp_dlogp_function(
            vars,
            tempered=True,
            ravel_inputs=True,
            initial_point=initial_point,
            **dict(compile_kwargs or {}),
        )
    except (NotImplementedError, NullTypeGradError, DisconnectedInputError, TypeError) as err:
        raise ValueError(
            f"{sampler} could not build the gradient of the model's log density with respect "
            f"to {[v.name for v in vars]} ({type(err).__name__}: {err}). A term without a "
            "gradient (a black-box Op, a discrete or non-differentiable operation) cannot be "
            "sampled with Langevin moves: give it a gradient or use pm.Metropolis / pm.Slice."
        ) from err
    fn.set_weights(np.array([beta], dtype=fn.dtype))
    fn.trust_input = True
    return fn


def nonfinite_start_message(model, point, vars) -> str:
    """Name the variables and log-density terms that are not finite at ``point``."""
    bad_values = [
        v.name for v in vars if not np.all(np.isfinite(np.asarray(point[v.name], dtype=float)))
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logps = model.point_logps(point, round_vals=4)
    bad_terms = {k: float(v) for k, v in logps.items() if not np.isfinite(v)}
    parts = []
    if bad_values:
        parts.append(f"values of {bad_values} are not finite")
    if bad_terms:
        parts.append(f"log density terms {bad_terms} are not finite")
    if not parts:
        parts.append("the gradient of the log density is not finite")
    return "; ".join(parts)
