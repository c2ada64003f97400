"""The actor of a distributed run: a worker's copy of the model's tempered density.

:class:`RowEvaluator` unpickles the model, compiles its tempered density once
(:func:`pymc_tempering.step_methods._compile.compile_tempered_density`) and evaluates the rows
it is sent, each alone (a batch of one row): a batched call could round differently with the
batch's size (a BLAS product blocks by rows), and a seed must give the same draws with any
number of workers and in one process (:class:`pymc_tempering.engine.placement.Rowwise`). It
holds no state of the run: a lost evaluator loses nothing
(``docs/decisions/140-distributed-placement.md``).
"""

import hashlib
import os
import time

import numpy as np

__all__ = ["RowEvaluator", "compiled_density"]

_COMPILED = {}  # this worker's densities, by model bytes and compile options


def compiled_density(payload, compile_kwargs=None, gradient=False):
    """The tempered density of the cloudpickled model ``payload``, compiled once per worker
    process for given bytes and options (a continuation, or another run of the same model,
    reuses it); with ``gradient`` the batched gradient too."""
    import cloudpickle
    import pymc as pm

    from pymc_tempering.step_methods._compile import compile_tempered_density

    try:
        key = hashlib.sha256(payload + cloudpickle.dumps(compile_kwargs)).hexdigest()
    except Exception:  # noqa: BLE001 options that do not pickle: compile without caching
        key = None
    density = _COMPILED.get(key)
    if density is None:
        model = cloudpickle.loads(payload)
        if not isinstance(model, pm.Model):
            model = model()
        density = compile_tempered_density(
            model, model.value_vars, model.initial_point(), compile_kwargs
        )
        if key is not None:
            _COMPILED[key] = density
    if gradient:
        density.ensure_gradient()
    return density


class RowEvaluator:
    """The tempered density of the cloudpickled model ``payload`` (a pm.Model or a
    zero-argument builder of one), compiled with ``compile_kwargs``; with ``gradient`` the
    batched gradient too. ``layout()`` says which flat vector it reads."""

    def __init__(self, payload, compile_kwargs=None, gradient=False):
        self.density = compiled_density(payload, compile_kwargs, gradient)
        self._sleep, self._exit = 0.0, False

    def layout(self):
        """``(n_params, point_map_info)`` of the flat vectors this evaluator reads."""
        return self.density.n_params, self.density.point_map_info

    def ensure_gradient(self) -> bool:
        """Compile the batched gradient here; False where the model has none."""
        return self.density.ensure_gradient()

    def batch(self, x):
        """``(logprior, loglik, compute seconds)`` of the rows ``x``, each evaluated alone."""
        return self._rows(self.density.batch, x, 2)

    def batch_grad(self, x):
        """``(logprior, loglik, grad_logprior, grad_loglik, compute seconds)`` of ``x``."""
        return self._rows(self.density.batch_grad, x, 4)

    def _rows(self, fn, x, n_out):
        started = time.perf_counter()
        self._fault()
        x = np.ascontiguousarray(x, dtype=np.float64)
        rows = [fn(x[i : i + 1]) for i in range(x.shape[0])]
        out = tuple(np.concatenate([r[k] for r in rows]) for k in range(n_out)) if rows else fn(x)
        return (*out, time.perf_counter() - started)

    # -- test hooks: a worker that hangs or dies inside an evaluation --------------------------
    def sleep_next(self, seconds: float) -> None:
        """The next evaluation first sleeps ``seconds`` (a worker alive but not answering)."""
        self._sleep = float(seconds)

    def exit_next(self) -> None:
        """The next evaluation ends this worker's process (a worker lost mid-run)."""
        self._exit = True

    def _fault(self):
        if self._exit:
            os._exit(1)
        if self._sleep:
            seconds, self._sleep = self._sleep, 0.0
            time.sleep(seconds)
