"""The discrete free variables of a model: which flat columns hold them and each element's
support, read from the distribution (Bernoulli, Categorical, DiscreteUniform, Binomial,
BetaBinomial have finite supports fixed by constants; anything else, or a support that depends
on other free variables, is "unbounded" and gets integer Metropolis moves)."""

from typing import NamedTuple

import numpy as np
from pymc.distributions.discrete import DiscreteUniformRV
from pymc.vartypes import discrete_types
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.basic import BernoulliRV, BetaBinomialRV, BinomialRV, CategoricalRV

__all__ = ["DiscreteVariable", "discrete_variables"]


class DiscreteVariable(NamedTuple):
    """One discrete free variable: its flat columns and each element's support bounds."""

    name: str
    columns: np.ndarray  # (size,) int: columns of the flat parameter vector
    lower: np.ndarray  # (size,) float: smallest value (-inf: not known)
    upper: np.ndarray  # (size,) float: largest value (inf: not known or unbounded)
    kind: str  # the distribution, for messages and docs


def _constant(model, value):
    """``value`` evaluated, or None if it depends on a free variable (a moving support)."""
    free = set(model.free_RVs) | set(model.value_vars)
    if any(node in free for node in ancestors([value])):
        return None
    return np.asarray(value.eval(), dtype=float)


def _support(model, rv):
    """``(lower, upper)`` arrays broadcast to the variable's shape, or None where unknown."""
    op, node = rv.owner.op, rv.owner
    params = op.dist_params(node)
    if isinstance(op, BernoulliRV):
        return 0.0, 1.0
    if isinstance(op, CategoricalRV):
        p = params[0]
        n_states = model.compile_fn(
            p.shape[-1], inputs=model.value_vars, point_fn=True, on_unused_input="ignore"
        )(model.initial_point())
        return 0.0, float(n_states) - 1.0
    if isinstance(op, DiscreteUniformRV):
        lower, upper = (_constant(model, v) for v in params[:2])
        return None if lower is None or upper is None else (lower, upper)
    if isinstance(op, BinomialRV | BetaBinomialRV):
        n = _constant(model, params[0])
        return None if n is None else (0.0, n)
    return None


def discrete_variables(model, vars, point_map_info) -> list[DiscreteVariable]:
    """The discrete variables among ``vars``, in the flat vector's order.

    Raises if a discrete variable has a transform (its value would not be the integer itself).
    """
    by_name = {v.name: v for v in vars}
    out, start = [], 0
    for name, shape, size, _ in point_map_info:
        value = by_name[name]
        if value.dtype in discrete_types:
            rv = model.values_to_rvs[value]
            if model.rvs_to_transforms.get(rv) is not None:
                raise ValueError(
                    f"The discrete variable {rv.name!r} has a transform "
                    f"({model.rvs_to_transforms[rv]}); ExchangeMC moves discrete variables "
                    f"on their integer values. Create {rv.name!r} with `default_transform=None`."
                )
            support = _support(model, rv)
            lower, upper = (-np.inf, np.inf) if support is None else support
            lower = np.broadcast_to(lower, shape).astype(float).ravel()
            upper = np.broadcast_to(upper, shape).astype(float).ravel()
            kind = type(rv.owner.op).__name__.removesuffix("RV")
            out.append(
                DiscreteVariable(rv.name, np.arange(start, start + size), lower, upper, kind)
            )
        start += size
    return out
