"""The discrete free variables of a model: which flat columns hold them and each element's
support, read from the distribution (Bernoulli, Categorical, DiscreteUniform, Binomial,
BetaBinomial have finite supports fixed by constants; anything else, or a support that depends
on other free variables, is "unbounded" and gets integer Metropolis moves)."""

from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.discrete import DiscreteUniformRV
from pymc.vartypes import discrete_types
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.basic import BernoulliRV, BetaBinomialRV, BinomialRV, CategoricalRV

__all__ = ["DiscreteVariable", "compile_discrete_supports", "discrete_variables"]


class DiscreteVariable(NamedTuple):
    """One discrete free variable: its flat columns and each element's support bounds."""

    name: str
    columns: np.ndarray  # (size,) int: columns of the flat parameter vector
    lower: np.ndarray  # (size,) float: smallest value (-inf: not known)
    upper: np.ndarray  # (size,) float: largest value (inf: not known or unbounded)
    kind: str  # the distribution, for messages and docs


def _constant(model, value):
    """``value`` as a graph, or None if it depends on a free variable (a moving support)."""
    free = set(model.free_RVs) | set(model.value_vars)
    if any(node in free for node in ancestors([value])):
        return None
    return value


def _support(model, rv):
    """``(lower, upper)`` graphs of the variable's support, or None where unknown."""
    op, node = rv.owner.op, rv.owner
    params = op.dist_params(node)
    if isinstance(op, BernoulliRV):
        return pt.constant(0.0), pt.constant(1.0)
    if isinstance(op, CategoricalRV):  # the number of categories is fixed whatever p is
        return pt.constant(0.0), params[0].shape[-1] - 1
    if isinstance(op, DiscreteUniformRV):
        lower, upper = (_constant(model, v) for v in params[:2])
        return None if lower is None or upper is None else (lower, upper)
    if isinstance(op, BinomialRV | BetaBinomialRV):
        n = _constant(model, params[0])
        return None if n is None else (pt.constant(0.0), n)
    return None


def compile_discrete_supports(model, vars, point_map_info):
    """A function returning the discrete variables among ``vars`` (flat vector's order) with
    their supports as they are when it is called: the bounds are compiled once here, and
    ``pm.Data`` behind them (e.g. a Binomial ``n``) is read at each call.

    Raises if a discrete variable has a transform (its value would not be the integer itself).
    """
    by_name = {v.name: v for v in vars}
    layout, bounds, start = [], [], 0
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
            kind = type(rv.owner.op).__name__.removesuffix("RV")
            layout.append((rv.name, shape, np.arange(start, start + size), kind, bool(support)))
            bounds.extend(support or ())
        start += size
    if not layout:
        return lambda: []
    evaluate = None
    if bounds:
        bounds = model.replace_rvs_by_values([pt.as_tensor(b).astype("float64") for b in bounds])
        evaluate = model.compile_fn(
            bounds, inputs=model.value_vars, point_fn=True, on_unused_input="ignore"
        )
    point = model.initial_point()

    def read() -> list[DiscreteVariable]:
        values = iter(evaluate(point) if evaluate is not None else ())
        out = []
        for name, shape, columns, kind, known in layout:
            lower, upper = (next(values), next(values)) if known else (-np.inf, np.inf)
            lower = np.broadcast_to(lower, shape).astype(float).ravel()
            upper = np.broadcast_to(upper, shape).astype(float).ravel()
            out.append(DiscreteVariable(name, columns, lower, upper, kind))
        return out

    return read


def discrete_variables(model, vars, point_map_info) -> list[DiscreteVariable]:
    """The discrete variables among ``vars`` with their supports now (compiles once)."""
    return compile_discrete_supports(model, vars, point_map_info)()
