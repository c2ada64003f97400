"""Where the rungs' densities are evaluated: the placement of a tempering run.

The engine evaluates its rungs through a *log potential*: an object with ``n_params``,
``batch(x) -> (logprior, loglik)`` and ``batch_grad(x) -> (logprior, loglik, grad_logprior,
grad_loglik)`` of an ``(n, n_params)`` array, ``ensure_gradient() -> bool`` (make
``batch_grad`` available; False where the model has no gradient), ``no_gradient``,
``can_sample_prior()``, ``sample_prior(n, rng)`` and ``to_point(x)``, as Pigeons.jl's targets
give a log potential (:class:`pymc_tempering.step_methods._compile.TemperedDensity` is the
compiled one). A *placement* turns the compiled potential of this process into the one the run
evaluates: :class:`Batched` keeps it (every rung in one batched call, the default), :class:`Rowwise`
evaluates each row alone, as a distributed placement does on its workers
(:class:`pymc_tempering.distributed.DaskPlacement`), so that a seed gives the same draws in one
process and on any number of workers.
"""

from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Placement", "Batched", "Rowwise", "RowwisePotential"]


@runtime_checkable
class Placement(Protocol):
    """Where a run evaluates its densities: ``place`` returns the log potential to evaluate,
    given the one compiled in this process."""

    def place(self, potential):
        """The log potential the run evaluates (see the module docstring)."""
        ...


class Batched:
    """The default placement: the compiled potential itself, all rungs in one batched call."""

    def place(self, potential):
        return potential

    def __repr__(self):
        return "Batched()"


class Rowwise:
    """Each row evaluated alone (a batch of one row), in this process: the arithmetic of a
    distributed run, whose rows are evaluated one at a time on its workers. A batched call
    may round differently from one row's (a BLAS product blocks by rows)."""

    def place(self, potential):
        return RowwisePotential(potential)

    def __repr__(self):
        return "Rowwise()"


class RowwisePotential:
    """``potential`` with ``batch`` and ``batch_grad`` evaluated one row at a time; every other
    attribute passed through."""

    def __init__(self, potential):
        self.base = potential

    def __getattr__(self, name):
        return getattr(self.base, name)

    def batch(self, x):
        return _rowwise(self.base.batch, x, 2)

    def batch_grad(self, x):
        return _rowwise(self.base.batch_grad, x, 4)

    def ensure_gradient(self) -> bool:
        return self.base.ensure_gradient()


def _rowwise(fn, x, n_out):
    x = np.ascontiguousarray(x, dtype=np.float64)
    rows = [fn(x[i : i + 1]) for i in range(x.shape[0])]
    if not rows:
        return fn(x)
    return tuple(np.concatenate([r[k] for r in rows]) for k in range(n_out))
