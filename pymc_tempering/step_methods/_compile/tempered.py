"""The tempered density of ExchangeMC: ``(logprior, loglik)`` of flat parameter vectors,
batched over rungs (with gradients for gradient-based explorers), and prior draws."""

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pytensor.tensor as pt
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.pytensorf import compile, join_nonshared_inputs, make_shared_replacements, reseed_rngs
from pytensor.graph.replace import clone_replace, vectorize_graph

from pymc_tempering._util.fingerprint import model_logp_graphs
from pymc_tempering.step_methods._compile.cache import cached, compile_key
from pymc_tempering.step_methods._compile.direct import checked_call
from pymc_tempering.step_methods._compile.prior import (
    PRIOR_BLOCK,
    compile_prior_block,
    compile_prior_draw,
    lazy_prior_draw,
)
from pymc_tempering.step_methods._compile.rewrites import checks_to_switches, with_switch_sinking

__all__ = ["TemperedDensity", "compile_tempered_density", "add_batched_gradient"]


@dataclass
class TemperedDensity:
    """Compiled ``(logprior, loglik)`` of flat parameter vectors, batched and single.

    ``batch(x)`` takes an ``(n, n_params)`` float64 array and returns two ``(n,)`` arrays in one
    compiled call; ``point_map_info`` maps a flat vector back to named variables. Calling the
    density on one vector compiles the per-point function the first time only (the samplers
    never do; the LLC evaluates its centre with it).
    """

    single_graph: tuple  # (flat input, [logprior, loglik], compile kwargs) per point
    batched: object
    prior_draw: object | None
    prior_rngs: list
    point_map_info: tuple
    n_params: int
    batched_grad: object | None = None
    prior_block: object | None = None
    no_gradient: bool = False  # found by add_batched_gradient: the log density has none
    prior_draws_per_call: int = PRIOR_BLOCK  # what a sampler draws ahead (engine.records)

    # (function, what to call for it): the direct call of its numba graph where it gives the
    # same bits (_compile.direct), chosen at its first call; never pickled (see __getstate__)
    _batch_call: tuple = field(default=(None, None), init=False, repr=False, compare=False)
    _grad_call: tuple = field(default=(None, None), init=False, repr=False, compare=False)

    def batch(self, x: np.ndarray):
        x = np.ascontiguousarray(x, dtype=np.float64)
        fn, call = self._batch_call
        if fn is not self.batched:  # the first call, or a new function
            call, out = checked_call(self.batched, x, 2)
            self._batch_call = (self.batched, call)
            return out
        return call(x)

    def batch_grad(self, x: np.ndarray):
        """``(logprior, loglik, grad_logprior, grad_loglik)`` of an ``(n, n_params)`` batch."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        fn, call = self._grad_call
        if fn is not self.batched_grad:
            call, out = checked_call(self.batched_grad, x, 4)
            self._grad_call = (self.batched_grad, call)
            return out
        return call(x)

    def __getstate__(self):  # pickled for cores > 1 and Dask workers: found again there
        return self.__dict__ | {"_batch_call": (None, None), "_grad_call": (None, None)}

    @cached_property
    def single(self):
        flat, outputs, compile_kwargs = self.single_graph
        # built here, not with the batched function: a clone of the model's graphs (~0.07 s on
        # a small regression) that the samplers never need
        flat64 = pt.vector("flat64", dtype="float64")
        outputs = clone_replace(outputs, {flat: flat64.astype(flat.dtype)})
        inputs, outputs = [flat64], [v.astype("float64") for v in outputs]
        fn = compile(inputs, outputs, **compile_kwargs)
        fn.trust_input = True
        return fn

    def __call__(self, x: np.ndarray):
        return self.single(np.ascontiguousarray(x, dtype=np.float64))

    def ensure_gradient(self) -> bool:
        """Compile ``batch_grad`` where it is missing (:func:`add_batched_gradient`); False
        where the model's log density has no gradient."""
        return add_batched_gradient(self)

    def to_point(self, x: np.ndarray) -> dict:
        return DictToArrayBijection.rmap(RaveledVars(x, self.point_map_info))

    def can_sample_prior(self) -> bool:
        return self.prior_draw is not None or self.prior_block is not None

    def sample_prior(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` independent prior draws as flat value-space vectors (seeded from ``rng``)."""
        reseed_rngs(self.prior_rngs, rng.integers(2**63))
        if self.prior_block is not None:  # PRIOR_BLOCK draws per compiled call
            blocks = [self.prior_block() for _ in range(-(-n // PRIOR_BLOCK))]
            return np.concatenate(blocks)[:n].astype(np.float64)
        draws = [np.concatenate([np.ravel(v) for v in self.prior_draw()]) for _ in range(n)]
        return np.asarray(draws, dtype=np.float64).reshape(n, self.n_params)


def compile_tempered_density(
    model, vars, initial_point, compile_kwargs=None, gradient=False
) -> TemperedDensity:
    """Compile logprior and loglik of the flat parameter vector, per point and batched.

    The batched function comes from ``vectorize_graph`` on the per-point graph, so a whole
    ladder of replicas is evaluated in one call. With ``gradient=True`` a second batched
    function also returns both gradients, for gradient-based explorers. Compiled once per
    model per process (:mod:`.cache`): a second call on the same model, variables and options
    returns the same object.
    """
    graphs = list(model_logp_graphs(model))
    key = compile_key("tempered", vars, initial_point, compile_kwargs, gradient=gradient)
    if {v.name for v in vars} != {v.name for v in model.value_vars}:
        key = None  # the other variables become new shared inputs, the caller's own: compile
    return cached(
        model,
        key,
        graphs,
        lambda: _compile(model, vars, initial_point, graphs, compile_kwargs, gradient),
    )


def _compile(model, vars, initial_point, graphs, compile_kwargs, gradient):
    compile_kwargs = dict(compile_kwargs or {})
    compile_kwargs.setdefault("on_unused_input", "ignore")
    replacements = make_shared_replacements(initial_point, vars, model)
    (logprior, loglik), flat = join_nonshared_inputs(initial_point, graphs, vars, replacements)
    # the samplers keep their states in float64 whatever floatX is: inputs are cast to the
    # model's dtype inside the graph and outputs back to float64 (no-ops under float64)
    single = (flat, [logprior, loglik], compile_kwargs)
    batched, batched_grad = _compile_batched(flat, [logprior, loglik], compile_kwargs, gradient)

    point = {v.name: initial_point[v.name] for v in vars}
    point_map_info = DictToArrayBijection.map(point).point_map_info
    n_params = int(DictToArrayBijection.map(point).data.size)

    # the per-draw prior sampler is compiled only where the block sampler is impossible (else
    # on first use: the samplers never call it then)
    prior_block, prior_rngs = compile_prior_block(model, vars, n_params, compile_kwargs)
    if prior_block is not None:
        prior_draw = lazy_prior_draw(model, vars, compile_kwargs)
    else:
        prior_draw, prior_rngs = compile_prior_draw(model, vars, compile_kwargs)
    return TemperedDensity(
        single,
        batched,
        prior_draw,
        prior_rngs,
        point_map_info,
        n_params,
        batched_grad,
        prior_block,
    )


def _compile_batched(flat, outputs, compile_kwargs, gradient):
    """The batched ``(logprior, loglik)`` function of ``replicas`` and, with
    ``gradient``, the one that also returns both gradients (else None)."""
    replicas = pt.matrix("replicas", dtype="float64")
    point_flat, (point_logprior, point_loglik) = checks_to_switches(flat, outputs)
    batch_logprior, batch_loglik = vectorize_graph(
        [point_logprior, point_loglik], {point_flat: replicas.astype(flat.dtype)}
    )
    # a model term that does not depend on the parameters vectorises to a scalar
    batch_logprior = pt.broadcast_to(batch_logprior, (replicas.shape[0],)).astype("float64")
    batch_loglik = pt.broadcast_to(batch_loglik, (replicas.shape[0],)).astype("float64")
    batched_kwargs = {**compile_kwargs, "mode": with_switch_sinking(compile_kwargs.get("mode"))}
    inputs = [replicas]
    batched = compile(inputs, [batch_logprior, batch_loglik], **batched_kwargs)
    batched.trust_input = True

    batched_grad = None
    if gradient:
        batched_grad = _compile_gradient(
            replicas, flat, point_flat, [point_logprior, point_loglik], batched_kwargs
        )
    return batched, batched_grad


def _compile_gradient(replicas, flat, point_flat, point_outputs, batched_kwargs):
    """The batched ``(logprior, loglik, grad_logprior, grad_loglik)`` function."""
    point_logprior, point_loglik = point_outputs
    batch_logprior, batch_loglik = vectorize_graph(
        point_outputs, {point_flat: replicas.astype(flat.dtype)}
    )
    batch_logprior = pt.broadcast_to(batch_logprior, (replicas.shape[0],)).astype("float64")
    batch_loglik = pt.broadcast_to(batch_loglik, (replicas.shape[0],)).astype("float64")
    grads = [
        pt.grad(point_logprior, point_flat, disconnected_inputs="ignore"),
        pt.grad(point_loglik, point_flat, disconnected_inputs="ignore"),
    ]
    batch_grads = vectorize_graph(grads, {point_flat: replicas.astype(flat.dtype)})
    batch_grads = [pt.broadcast_to(g, replicas.shape).astype("float64") for g in batch_grads]
    batched_grad = compile(
        [replicas], [batch_logprior, batch_loglik, *batch_grads], **batched_kwargs
    )
    batched_grad.trust_input = True
    return batched_grad


def add_batched_gradient(density: TemperedDensity) -> bool:
    """Compile ``density``'s batched gradient where it has none yet (ExchangeMC's
    ``explorer="auto"`` when it switches to MALA while sampling), in place. False where the
    model's log density has no gradient (nothing compiled then; ``density.no_gradient`` set,
    so that later chains on the model skip the attempt)."""
    from pytensor.gradient import DisconnectedInputError, NullTypeGradError

    if density.batched_grad is not None:
        return True
    if density.no_gradient:
        return False
    flat, outputs, compile_kwargs = density.single_graph
    replicas = pt.matrix("replicas", dtype="float64")
    point_flat, point_outputs = checks_to_switches(flat, outputs)
    batched_kwargs = {**compile_kwargs, "mode": with_switch_sinking(compile_kwargs.get("mode"))}
    try:
        density.batched_grad = _compile_gradient(
            replicas, flat, point_flat, list(point_outputs), batched_kwargs
        )
    except (NotImplementedError, NullTypeGradError, DisconnectedInputError):
        density.no_gradient = True
        return False
    return True
