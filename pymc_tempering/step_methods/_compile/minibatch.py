"""SGLD's compiled gradients on minibatches: a fresh random minibatch per call, given rows,
per-datum scores and control variates."""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.pytensorf import compile, join_nonshared_inputs, make_shared_replacements, reseed_rngs
from pytensor.gradient import jacobian
from pytensor.graph.replace import graph_replace

from pymc_tempering.step_methods._compile.checks import (
    check_minibatch_model,
    is_scaled,
    minibatch_nodes,
    total_size,
)
from pymc_tempering.step_methods._compile.rewrites import with_switch_sinking

__all__ = ["MinibatchGradients", "compile_minibatch_gradients"]


@dataclass
class MinibatchGradients:
    """Compiled gradients for SGLD of a flat parameter vector.

    ``grads(x)`` returns ``(grad logprior, grad loglik)`` where the log-likelihood term is
    evaluated on a fresh random minibatch at every call (the ``pm.Minibatch`` RNG is updated)
    and is already multiplied by ``N / n`` through the observed variables' ``total_size``.
    For a model without ``pm.Minibatch`` it is the exact full-data gradient.
    ``logp_grads(x)`` returns ``(logp, grad logprior, grad loglik)`` from the same call, with
    ``logp`` the log prior plus the (rescaled) minibatch log-likelihood: the gradient-only
    sampler's cheap check that ``x`` lies where the density is positive and finite.

    ``indexed(x, idx)`` (minibatched models only) evaluates the same two gradients on the data
    rows ``idx``, ``batch_size`` of them (PyMC fixes the minibatch shape in the logp graph), and
    ``scores(x, idx)`` the per-datum gradients of the unscaled log-likelihood, shape
    ``(batch_size, n_params)``. Both leave the minibatch RNG alone.
    """

    grads_fn: object
    indexed_fn: object | None
    scores_fn: object | None
    cv_fn: object | None
    rngs: list
    point_map_info: tuple
    n_params: int
    minibatched: bool
    total_size: int
    batch_size: int
    n_rows: int
    shared: dict  # the shared variables standing for free variables SGLD does not sample
    dtype: str = "float64"  # the compiled functions' parameter dtype (floatX)

    def _flat(self, x):
        return np.ascontiguousarray(x, dtype=self.dtype)

    def grads(self, x: np.ndarray):
        return self.grads_fn(self._flat(x))[:2]

    def logp_grads(self, x: np.ndarray):
        grad_logprior, grad_loglik, logp = self.grads_fn(self._flat(x))
        return float(logp), grad_logprior, grad_loglik

    def indexed(self, x: np.ndarray, idx: np.ndarray):
        return self.indexed_fn(self._flat(x), np.asarray(idx, dtype=np.int64))

    def scores(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return self.scores_fn(self._flat(x), np.asarray(idx, dtype=np.int64))

    def control_variate_grads(self, x: np.ndarray, anchor: np.ndarray):
        """``(grad logprior(x), (N/n) sum_B [grad loglik_i(x) - grad loglik_i(anchor)])`` on one
        fresh random minibatch ``B`` (the SGLD-CV estimator's random part)."""
        return self.cv_fn(self._flat(x), self._flat(anchor))[:2]

    def control_variate_logp_grads(self, x: np.ndarray, anchor: np.ndarray):
        """``(logp(x), *control_variate_grads(x, anchor))`` from one call, ``logp`` as in
        ``logp_grads`` (on the same minibatch)."""
        grad_logprior, grad_diff, logp = self.cv_fn(self._flat(x), self._flat(anchor))
        return float(logp), grad_logprior, grad_diff

    def full_loglik_grad(self, x: np.ndarray) -> np.ndarray:
        """Exact full-data log-likelihood gradient, in ``ceil(N / batch_size)`` compiled calls."""
        if not self.minibatched:
            return self.grads(x)[1]
        n, rows = self.batch_size, self.n_rows
        total = np.zeros(self.n_params)
        for start in range(0, rows - rows % n, n):
            total += self.indexed(x, np.arange(start, start + n))[1] * (n / self.total_size)
        if rows % n:
            tail = np.arange(rows - n, rows)
            total += self.scores(x, tail)[n - rows % n :].sum(axis=0)
        # total_size may differ from the rows held (data sub-sampled on purpose): rescale
        return total * (self.total_size / rows)

    def reseed(self, rng: np.random.Generator) -> None:
        """Reseed the minibatch RNGs from ``rng`` (same seed, same sequence of minibatches)."""
        if self.rngs:
            reseed_rngs(self.rngs, rng.integers(2**63))

    def to_point(self, x: np.ndarray) -> dict:
        return DictToArrayBijection.rmap(RaveledVars(x, self.point_map_info))


def _merge_minibatch_copies(outputs) -> list:
    """``outputs`` with every copy of a ``pm.Minibatch`` node replaced by one node per call.

    One call owns one shared RNG, and its node can appear more than once: PyMC clones it, and
    its pre-gradient rewrites (``rewrite_pregrad``, run by NUTS, MALA, ``model.compile_dlogp``
    and the like) rewrite the inner graph of one copy in place, leaving a node with a new
    ``MinibatchOp`` and the same inputs. Two such nodes read one RNG, so PyMC finds no default
    update for it: the compiled gradient would score the same rows at every step. One node
    per RNG restores the update (and keeps the arrays of a call aligned, row for row).
    """
    first, replace = {}, {}
    for node in minibatch_nodes(outputs):
        kept = first.setdefault(node.inputs[-1], node)
        if kept is not node and list(kept.inputs) == list(node.inputs):
            replace.update(zip(node.outputs, kept.outputs, strict=True))
    return graph_replace(outputs, replace, strict=False) if replace else list(outputs)


def _rows_replacement(outputs, idx) -> dict:
    """Map the outputs of the (single) pm.Minibatch node in ``outputs`` to ``data[idx]``."""
    replace = {}
    for node in minibatch_nodes(outputs):
        *data, _ = node.inputs
        *mb_outputs, _ = node.outputs
        replace.update({out: tensor[idx] for out, tensor in zip(mb_outputs, data, strict=True)})
    return replace


class _Graphs(NamedTuple):
    """The symbolic pieces every SGLD gradient is compiled from."""

    flat: object  # the flat parameter vector
    logprior: object
    loglik: object  # on the model's pm.Minibatch rows, if any
    grad_logprior: object
    grad_loglik: object
    logp: object
    shared: dict


class _Minibatch(NamedTuple):
    """The model's one ``pm.Minibatch`` call."""

    n_rows: int
    batch_size: int
    total_size: int


def _graphs(model, vars, initial_point) -> _Graphs:
    shared = make_shared_replacements(initial_point, vars, model)
    (logprior, loglik), flat = join_nonshared_inputs(
        initial_point, [model.varlogp, model.datalogp], vars, shared
    )
    logprior, loglik = _merge_minibatch_copies([logprior, loglik])
    grad_logprior = pt.grad(logprior, flat, disconnected_inputs="ignore")
    grad_loglik = pt.grad(loglik, flat, disconnected_inputs="ignore")
    logp = (logprior + loglik).astype("float64")
    return _Graphs(flat, logprior, loglik, grad_logprior, grad_loglik, logp, shared)


def _full_data_rows(model) -> int:
    """Rows of the largest observed array (1 for scalar observations)."""
    return max(
        (
            int(np.shape(model.rvs_to_values[rv].eval())[0])
            for rv in model.observed_RVs
            if model.rvs_to_values[rv].ndim > 0
        ),
        default=1,
    )


def _minibatch(model, nodes) -> _Minibatch:
    """The sizes of the one ``pm.Minibatch`` call among ``nodes``; errors for several calls or
    several ``total_size`` values."""
    # one shared RNG per pm.Minibatch call; counting ops would count a call twice once PyMC's
    # pre-gradient rewrites have given one copy of its node a new op (_merge_minibatch_copies)
    n_calls = len({node.inputs[-1] for node in nodes})
    if n_calls > 1:
        raise ValueError(
            "SGLD supports one pm.Minibatch(...) call per model, found "
            f"{n_calls}. Pass all minibatched arrays to a single call, "
            "e.g. `X_mb, y_mb = pm.Minibatch(X, y, batch_size=100)`, so rows stay aligned."
        )
    *data, _ = nodes[0].inputs
    *mb_outputs, _ = nodes[0].outputs
    totals = {total_size(rv) for rv in model.observed_RVs if is_scaled(rv)}
    if len(totals) != 1:
        raise ValueError(
            f"The minibatched observed variables have different `total_size` values {totals}; "
            "SGLD needs one data set size N. Use the same `total_size=len(y)` for all of them."
        )
    n_rows, batch_size = int(data[0].shape[0].eval()), int(mb_outputs[0].shape[0].eval())
    return _Minibatch(n_rows, batch_size, totals.pop())


def _compile_indexed(g: _Graphs, idx, compile_kwargs):
    """The gradients on given rows ``idx``. PyMC bakes batch_size into the logp graph (sizes,
    total_size scaling), so the rows come in batches of exactly batch_size."""
    loglik_rows = graph_replace(g.loglik, _rows_replacement([g.loglik], idx), strict=False)
    grad_loglik_rows = pt.grad(loglik_rows, g.flat, disconnected_inputs="ignore")
    fn = compile(
        [g.flat, idx], [g.grad_logprior, grad_loglik_rows], random_seed=False, **compile_kwargs
    )
    fn.trust_input = True
    return fn


def _compile_scores(model, vars, initial_point, g: _Graphs, idx, mb: _Minibatch, kwargs):
    """Per-datum gradients of the minibatched observations' log-likelihood on rows ``idx``,
    summed over trailing axes, with the total_size scaling N / len(rows) undone."""
    scaled = [rv for rv in model.observed_RVs if is_scaled(rv)]
    per_row = 0
    for term in model.logp(vars=scaled, sum=False):
        per_row = per_row + (term.sum(axis=tuple(range(1, term.ndim))) if term.ndim > 1 else term)
    [per_row], flat = join_nonshared_inputs(initial_point, [per_row], vars, g.shared)
    per_row = graph_replace(per_row, _rows_replacement([per_row], idx), strict=False)
    per_row = per_row * (mb.batch_size / float(mb.total_size))
    fn = compile([flat, idx], jacobian(per_row, flat, vectorize=True), random_seed=False, **kwargs)
    fn.trust_input = True
    return fn


def _compile_control_variates(g: _Graphs, with_logp_kwargs):
    """The same minibatch at ``x`` and at an anchor point (the Minibatch node does not depend
    on the parameters, so the anchored copy of the graph shares its rows)."""
    anchor = g.flat.type("anchor")
    loglik_anchor = graph_replace(g.loglik, {g.flat: anchor}, strict=True)
    grad_anchor = pt.grad(loglik_anchor, anchor, disconnected_inputs="ignore")
    fn = compile(
        [g.flat, anchor],
        [g.grad_logprior, g.grad_loglik - grad_anchor, g.logp],
        random_seed=False,
        **with_logp_kwargs,
    )
    fn.trust_input = True
    return fn


def compile_minibatch_gradients(
    model, vars, initial_point, compile_kwargs=None
) -> MinibatchGradients:
    """Compile the SGLD gradients (random minibatch, given rows, per-datum scores, control
    variates); for a model without ``pm.Minibatch``, the full-data gradients only."""
    check_minibatch_model(model)
    compile_kwargs = dict(compile_kwargs or {})
    compile_kwargs.setdefault("on_unused_input", "ignore")
    g = _graphs(model, vars, initial_point)
    # the log density costs more than the gradients (a softplus per Bernoulli row against a
    # sigmoid); the exact rewrites of the batched densities cut that extra cost by half
    with_logp_kwargs = {**compile_kwargs, "mode": with_switch_sinking(compile_kwargs.get("mode"))}
    grads_fn, updates = compile(
        [g.flat],
        [g.grad_logprior, g.grad_loglik, g.logp],
        random_seed=False,
        return_updates=True,
        **with_logp_kwargs,
    )
    grads_fn.trust_input = True
    raveled = DictToArrayBijection.map({v.name: initial_point[v.name] for v in vars})
    common = dict(
        rngs=list(updates),
        point_map_info=raveled.point_map_info,
        n_params=int(raveled.data.size),
        shared=g.shared,
        dtype=g.flat.dtype,
    )

    nodes = minibatch_nodes([g.loglik])
    if not nodes:
        n_rows = _full_data_rows(model)
        scaled = [rv for rv in model.observed_RVs if is_scaled(rv)]
        return MinibatchGradients(
            grads_fn,
            None,
            None,
            None,
            minibatched=False,
            total_size=total_size(scaled[0]) if scaled else n_rows,
            batch_size=n_rows,
            n_rows=n_rows,
            **common,
        )
    mb = _minibatch(model, nodes)
    idx = pt.vector("rows", dtype="int64", shape=(mb.batch_size,))
    return MinibatchGradients(
        grads_fn,
        _compile_indexed(g, idx, compile_kwargs),
        _compile_scores(model, vars, initial_point, g, idx, mb, compile_kwargs),
        _compile_control_variates(g, with_logp_kwargs),
        minibatched=True,
        total_size=mb.total_size,
        batch_size=mb.batch_size,
        n_rows=mb.n_rows,
        **common,
    )
