"""The only module that compiles PyTensor: prior/likelihood split, batched over rungs.

Tempering needs the model's log density split as ``logprior + beta * loglik``. We take the split
PyMC's SMC uses: ``model.varlogp`` (free variables in their value space, Jacobians included) is
the log prior, ``model.datalogp`` (observed variables and Potentials) the log-likelihood.
"""

import warnings
from dataclasses import dataclass

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.distributions.continuous import FlatRV, HalfFlatRV
from pymc.distributions.shape_utils import change_dist_size
from pymc.initial_point import make_initial_point_expression
from pymc.logprob.utils import local_check_parameter_to_ninf_switch
from pymc.pytensorf import compile, join_nonshared_inputs, make_shared_replacements, reseed_rngs
from pymc.vartypes import discrete_types
from pytensor.compile.builders import SymbolicOp
from pytensor.compile.mode import get_mode
from pytensor.compile.rewriting import inline_ofg_node
from pytensor.graph.basic import Constant
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.replace import clone_replace, vectorize_graph
from pytensor.graph.rewriting.basic import in2out, node_rewriter
from pytensor.graph.traversal import ancestors, graph_inputs
from pytensor.scalar.basic import Switch as ScalarSwitch
from pytensor.scalar.math import Sigmoid
from pytensor.tensor.basic import get_underlying_scalar_constant_value
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.exceptions import NotScalarConstantError

__all__ = ["TemperedDensity", "compile_tempered_density", "check_all_free_continuous"]

PRIOR_BLOCK = 64  # prior draws per compiled call, where the prior allows batching


def check_all_free_continuous(model, vars, sampler: str):
    """Raise unless ``vars`` are exactly the model's free variables, all continuous."""
    value_vars = list(model.value_vars)
    names = {v.name for v in vars}
    missing = [v.name for v in value_vars if v.name not in names]
    if missing:
        raise ValueError(
            f"{sampler} must be assigned to every free variable of the model, because each rung "
            f"needs the whole state to evaluate prior * likelihood**beta; it was not given "
            f"{missing}. Call {sampler}() without `vars`, or pass all of them."
        )
    discrete = [v.name for v in vars if v.dtype in discrete_types]
    if discrete:
        raise ValueError(
            f"{sampler} samples continuous variables only; {discrete} are discrete. "
            "Marginalise them out (e.g. pm.Mixture instead of a latent categorical)."
        )


@dataclass
class TemperedDensity:
    """Compiled ``(logprior, loglik)`` of flat parameter vectors, single and batched.

    ``batch(x)`` takes an ``(n, n_params)`` float64 array and returns two ``(n,)`` arrays in one
    compiled call; ``point_map_info`` maps a flat vector back to named variables.
    """

    single: object
    batched: object
    prior_draw: object | None
    prior_rngs: list
    point_map_info: tuple
    n_params: int
    batched_grad: object | None = None
    prior_block: object | None = None

    def batch(self, x: np.ndarray):
        return self.batched(np.ascontiguousarray(x, dtype=np.float64))

    def batch_grad(self, x: np.ndarray):
        """``(logprior, loglik, grad_logprior, grad_loglik)`` of an ``(n, n_params)`` batch."""
        return self.batched_grad(np.ascontiguousarray(x, dtype=np.float64))

    def __call__(self, x: np.ndarray):
        return self.single(np.ascontiguousarray(x, dtype=np.float64))

    def to_point(self, x: np.ndarray) -> dict:
        return DictToArrayBijection.rmap(RaveledVars(x, self.point_map_info))

    def can_sample_prior(self) -> bool:
        return self.prior_draw is not None

    def sample_prior(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` independent prior draws as flat value-space vectors (seeded from ``rng``)."""
        reseed_rngs(self.prior_rngs, rng.integers(2**63))
        if self.prior_block is not None:  # PRIOR_BLOCK draws per compiled call
            blocks = [self.prior_block() for _ in range(-(-n // PRIOR_BLOCK))]
            return np.concatenate(blocks)[:n].astype(np.float64)
        draws = [np.concatenate([np.ravel(v) for v in self.prior_draw()]) for _ in range(n)]
        return np.asarray(draws, dtype=np.float64).reshape(n, self.n_params)


def _is_improper(rv) -> bool:
    return isinstance(rv.owner.op, FlatRV | HalfFlatRV)


def improper_priors(model) -> list[str]:
    """Names of free variables with an improper (Flat / HalfFlat) prior."""
    return [rv.name for rv in model.free_RVs if _is_improper(rv)]


def has_likelihood(model) -> bool:
    """Whether ``model.datalogp`` depends on the free variables (observed data or Potentials)."""
    if not (model.observed_RVs or model.potentials):
        return False
    inputs = {i for i in graph_inputs([model.datalogp]) if not isinstance(i, Constant)}
    return any(v in inputs for v in model.value_vars)


def compile_tempered_density(
    model, vars, initial_point, compile_kwargs=None, gradient=False
) -> TemperedDensity:
    """Compile logprior and loglik of the flat parameter vector, per point and batched.

    The batched function comes from ``vectorize_graph`` on the per-point graph, so a whole
    ladder of replicas is evaluated in one call. With ``gradient=True`` a second batched
    function also returns both gradients, for gradient-based explorers.
    """
    compile_kwargs = dict(compile_kwargs or {})
    compile_kwargs.setdefault("on_unused_input", "ignore")
    shared = make_shared_replacements(initial_point, vars, model)
    (logprior, loglik), flat = join_nonshared_inputs(
        initial_point, [model.varlogp, model.datalogp], vars, shared
    )
    # the samplers keep their states in float64 whatever floatX is: inputs are cast to the
    # model's dtype inside the graph and outputs back to float64 (no-ops under float64)
    flat64 = pt.vector("flat64", dtype="float64")
    outputs = clone_replace([logprior, loglik], {flat: flat64.astype(flat.dtype)})
    single = compile([flat64], [v.astype("float64") for v in outputs], **compile_kwargs)
    single.trust_input = True

    replicas = pt.matrix("replicas", dtype="float64")
    point_flat, (point_logprior, point_loglik) = _checks_to_switches(flat, [logprior, loglik])
    batch_logprior, batch_loglik = vectorize_graph(
        [point_logprior, point_loglik], {point_flat: replicas.astype(flat.dtype)}
    )
    # a model term that does not depend on the parameters vectorises to a scalar
    batch_logprior = pt.broadcast_to(batch_logprior, (replicas.shape[0],)).astype("float64")
    batch_loglik = pt.broadcast_to(batch_loglik, (replicas.shape[0],)).astype("float64")
    batched_kwargs = {**compile_kwargs, "mode": _with_switch_sinking(compile_kwargs.get("mode"))}
    batched = compile([replicas], [batch_logprior, batch_loglik], **batched_kwargs)
    batched.trust_input = True

    batched_grad = None
    if gradient:
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

    point = {v.name: initial_point[v.name] for v in vars}
    point_map_info = DictToArrayBijection.map(point).point_map_info
    n_params = int(DictToArrayBijection.map(point).data.size)

    prior_draw, prior_rngs = _compile_prior_draw(model, vars, compile_kwargs)
    prior_block, block_rngs = _compile_prior_block(model, vars, n_params, compile_kwargs)
    if prior_block is not None:
        prior_rngs = block_rngs
    return TemperedDensity(
        single, batched, prior_draw, prior_rngs, point_map_info, n_params, batched_grad,
        prior_block,
    )  # fmt: skip


@node_rewriter([Elemwise])
def local_switch_of_same_unary(fgraph, node):
    """``switch(c, f(a), f(b)) -> f(switch(c, a, b))`` for one elementwise unary ``f``.

    Exact for elementwise ``f``; it evaluates ``f`` once per element instead of twice. PyMC's
    Bernoulli-logit log-likelihood is ``switch(y, -softplus(-eta), -softplus(eta))``, which this
    turns into one softplus per observation, and a batch of replicas multiplies that saving.
    """
    if not isinstance(node.op.scalar_op, ScalarSwitch):
        return None
    cond, left, right = node.inputs
    if left.owner is None or right.owner is None:
        return None
    op = left.owner.op
    if not (isinstance(op, Elemwise) and op == right.owner.op and len(left.owner.inputs) == 1):
        return None
    if len(fgraph.clients[left]) > 1 or len(fgraph.clients[right]) > 1:
        return None
    new = op(pt.switch(cond, left.owner.inputs[0], right.owner.inputs[0]))
    if new.type != node.outputs[0].type:
        return None
    return [new]


@node_rewriter([Elemwise])
def local_sigmoid_bounds_hold(fgraph, node):
    """``sigmoid(x) >= c`` for ``c <= 0`` and ``sigmoid(x) <= c`` for ``c >= 1`` are True.

    PyMC checks ``0 <= p <= 1`` on a Bernoulli's ``p = sigmoid(logit_p)``; the check can never
    fail there, yet costs an ``exp`` and two comparisons per observation and replica. (A NaN
    logit still gives a NaN log-likelihood, which the samplers reject.)
    """
    scalar_op = node.op.scalar_op
    if not isinstance(scalar_op, ps.GE | ps.LE):
        return None
    value, bound = node.inputs
    if not (value.owner and isinstance(value.owner.op, Elemwise)):
        return None
    if not isinstance(value.owner.op.scalar_op, Sigmoid):
        return None
    try:
        bound = float(get_underlying_scalar_constant_value(bound))
    except NotScalarConstantError:
        return None
    holds = bound <= 0 if isinstance(scalar_op, ps.GE) else bound >= 1
    if not holds:
        return None
    out = node.outputs[0]
    return [pt.ones_like(out, dtype=out.dtype)]


def _with_switch_sinking(mode):
    """``mode`` plus the exact rewrites above, run after PyTensor's ``stabilize``
    phase (1.5), which must first turn e.g. ``log(sigmoid(x))`` into ``-softplus(-x)``: sinking
    a switch earlier would hide that pattern and lose precision for large logits."""
    rewrites = in2out(local_switch_of_same_unary, local_sigmoid_bounds_hold)
    return get_mode(mode).register((rewrites, 1.75))


def _checks_to_switches(flat, outputs):
    """Copy of the per-point graph whose parameter checks are ``switch(cond, logp, -inf)``.

    Vectorising a CheckParameterValue directly reduces its condition over the whole batch, so
    one invalid replica would make every rung's density -inf. Rewriting the checks per point
    first keeps each replica's density its own.
    """
    new_flat = flat.type(name="point")
    cloned = clone_replace(outputs, {flat: new_flat})
    # every root of the graph is an input here: pm.Data, coords' dim lengths and the like are
    # shared variables the checks may read
    inputs = [v for v in graph_inputs(cloned) if not isinstance(v, Constant)]
    fgraph = FunctionGraph(inputs, cloned, clone=False)
    in2out(local_check_parameter_to_ninf_switch, local_inline_symbolic_op).rewrite(fgraph)
    return new_flat, fgraph.outputs


@node_rewriter([SymbolicOp])
def local_inline_symbolic_op(fgraph, node):
    """Replace a symbolic op (``logsumexp``, ``softmax``, ``xlogy``, ...) by its inner graph.

    ``vectorize_graph`` has no batched form for these ops and wraps them in a ``Blockwise``,
    which the compiled function runs as a Python-level loop over replicas with the op's body
    compiled on its own. Inlined, they vectorise as ordinary elementwise ops and reductions.
    (A two-component mixture's batched density over 32 replicas: about 4x faster.)
    """
    return inline_ofg_node(node)


def _compile_prior_block(model, vars, n_params, compile_kwargs):
    """One compiled call that returns ``PRIOR_BLOCK`` prior draws as an (n, n_params) array.

    Possible when no free variable's prior depends on another free variable: then each one can
    be resized with a leading batch dimension and mapped to its value space independently.
    Returns ``(None, [])`` otherwise, and the caller draws one point per call.
    """
    if improper_priors(model):
        return None, []
    free = set(model.free_RVs)
    value_to_rv = {model.rvs_to_values[rv].name: rv for rv in model.free_RVs}
    try:
        outputs = []
        for v in vars:
            rv = value_to_rv[v.name]
            if free & set(ancestors(rv.owner.inputs)):
                return None, []
            batched = change_dist_size(rv, (PRIOR_BLOCK,), expand=True)
            transform = model.rvs_to_transforms.get(rv)
            if transform is not None:
                batched = transform.forward(batched, *batched.owner.inputs)
            outputs.append(pt.reshape(batched, (PRIOR_BLOCK, -1)))
        flat = pt.concatenate(outputs, axis=1) if len(outputs) > 1 else outputs[0]
        kwargs = {k: v for k, v in compile_kwargs.items() if k != "on_unused_input"}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn, updates = compile([], flat, random_seed=False, return_updates=True, **kwargs)
        if fn().shape != (PRIOR_BLOCK, n_params):
            return None, []
    except Exception:  # noqa: BLE001 - any failure means "draw one point per call"
        return None, []
    return fn, list(updates)


def _compile_prior_draw(model, vars, compile_kwargs):
    """Compile a forward sampler of the free variables in value space, or None if impossible."""
    if improper_priors(model):
        return None, []
    order = {rv.name: i for i, rv in enumerate(model.free_RVs)}
    value_to_rv = {model.rvs_to_values[rv].name: rv for rv in model.free_RVs}
    try:
        exprs = make_initial_point_expression(
            free_rvs=model.free_RVs,
            rvs_to_transforms=model.rvs_to_transforms,
            initval_strategies={},
            default_strategy="prior",
            return_transformed=True,
        )
        outputs = [exprs[order[value_to_rv[v.name].name]] for v in vars]
        kwargs = {k: v for k, v in compile_kwargs.items() if k != "on_unused_input"}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn, updates = compile([], outputs, random_seed=False, return_updates=True, **kwargs)
        fn()  # fails here for distributions that cannot be forward-sampled
    except Exception:  # noqa: BLE001 - any failure means "cannot forward-sample"
        return None, []
    return fn, list(updates)


def compile_value_and_grad(model, output):
    """``f(x) -> (output, d output / dx)`` of the flat vector of all the model's value
    variables (for the optimisers behind the Laplace and BIC approximations)."""
    (out,), flat = join_nonshared_inputs(model.initial_point(), [output], model.value_vars)
    return compile([flat], [out, pt.grad(out, flat)], on_unused_input="ignore")


# --- Langevin (ULA / MALA): tempered logp and gradient --------------------------------------
# (section owned by the Langevin step methods)
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


# --- end Langevin ---------------------------------------------------------------------------


# --- SGLD: minibatch gradients --------------------------------------------------------------
# (section owned by the SGLD step method)
from pymc.data import MinibatchOp  # noqa: E402
from pymc.variational.minibatch_rv import MinibatchRandomVariable  # noqa: E402
from pytensor.gradient import jacobian  # noqa: E402
from pytensor.graph.replace import graph_replace  # noqa: E402
from pytensor.graph.traversal import applys_between  # noqa: E402


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


def _minibatch_nodes(outputs) -> list:
    return [node for node in applys_between([], outputs) if isinstance(node.op, MinibatchOp)]


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
    for node in _minibatch_nodes(outputs):
        kept = first.setdefault(node.inputs[-1], node)
        if kept is not node and list(kept.inputs) == list(node.inputs):
            replace.update(zip(node.outputs, kept.outputs, strict=True))
    return graph_replace(outputs, replace, strict=False) if replace else list(outputs)


def _rows_replacement(outputs, idx) -> dict:
    """Map the outputs of the (single) pm.Minibatch node in ``outputs`` to ``data[idx]``."""
    replace = {}
    for node in _minibatch_nodes(outputs):
        *data, _ = node.inputs
        *mb_outputs, _ = node.outputs
        replace.update({out: tensor[idx] for out, tensor in zip(mb_outputs, data, strict=True)})
    return replace


def _is_scaled(rv) -> bool:
    return isinstance(rv.owner.op, MinibatchRandomVariable)


def check_minibatch_model(model) -> None:
    """Raise if an observed variable uses ``pm.Minibatch`` data without ``total_size``."""
    for rv in model.observed_RVs:
        if _is_scaled(rv):
            continue
        if _minibatch_nodes([rv, model.rvs_to_values[rv]]):
            raise ValueError(
                f"The observed variable {rv.name!r} uses pm.Minibatch data but has no "
                "`total_size`, so its log-likelihood would not be scaled by N / batch_size and "
                "SGLD would sample the wrong posterior. Pass `total_size=len(y)` (the full "
                f"number of rows) when creating {rv.name!r}."
            )


def _total_size(rv) -> int:
    size = rv.owner.inputs[1]
    value = size.data if isinstance(size, Constant) else size.eval()
    return int(value)


def compile_minibatch_gradients(
    model, vars, initial_point, compile_kwargs=None
) -> MinibatchGradients:
    """Compile the SGLD gradients (random minibatch, given rows, per-datum scores)."""
    check_minibatch_model(model)
    compile_kwargs = dict(compile_kwargs or {})
    compile_kwargs.setdefault("on_unused_input", "ignore")
    shared = make_shared_replacements(initial_point, vars, model)
    (logprior, loglik), flat = join_nonshared_inputs(
        initial_point, [model.varlogp, model.datalogp], vars, shared
    )
    logprior, loglik = _merge_minibatch_copies([logprior, loglik])
    grad_logprior = pt.grad(logprior, flat, disconnected_inputs="ignore")
    grad_loglik = pt.grad(loglik, flat, disconnected_inputs="ignore")
    logp = (logprior + loglik).astype("float64")
    # the log density costs more than the gradients (a softplus per Bernoulli row against a
    # sigmoid); the exact rewrites of the batched densities cut that extra cost by half
    with_logp_kwargs = {**compile_kwargs, "mode": _with_switch_sinking(compile_kwargs.get("mode"))}
    grads_fn, updates = compile(
        [flat],
        [grad_logprior, grad_loglik, logp],
        random_seed=False,
        return_updates=True,
        **with_logp_kwargs,
    )
    grads_fn.trust_input = True

    point = {v.name: initial_point[v.name] for v in vars}
    raveled = DictToArrayBijection.map(point)
    n_params = int(raveled.data.size)

    nodes = _minibatch_nodes([loglik])
    scaled = [rv for rv in model.observed_RVs if _is_scaled(rv)]
    if not nodes:
        n_rows = max(
            (
                int(np.shape(model.rvs_to_values[rv].eval())[0])
                for rv in model.observed_RVs
                if model.rvs_to_values[rv].ndim > 0
            ),
            default=1,
        )
        total = _total_size(scaled[0]) if scaled else n_rows
        return MinibatchGradients(
            grads_fn,
            None,
            None,
            None,
            list(updates),
            raveled.point_map_info,
            n_params,
            minibatched=False,
            total_size=total,
            batch_size=n_rows,
            n_rows=n_rows,
            shared=shared,
            dtype=flat.dtype,
        )
    # one shared RNG per pm.Minibatch call; counting ops would count a call twice once PyMC's
    # pre-gradient rewrites have given one copy of its node a new op (_merge_minibatch_copies)
    n_calls = len({node.inputs[-1] for node in nodes})
    if n_calls > 1:
        raise ValueError(
            "SGLD supports one pm.Minibatch(...) call per model, found "
            f"{n_calls}. Pass all minibatched arrays to a single call, "
            "e.g. `X_mb, y_mb = pm.Minibatch(X, y, batch_size=100)`, so rows stay aligned."
        )
    node = nodes[0]
    *data, _ = node.inputs
    *mb_outputs, _ = node.outputs
    n_rows = int(data[0].shape[0].eval())
    batch_size = int(mb_outputs[0].shape[0].eval())
    totals = {_total_size(rv) for rv in scaled}
    if len(totals) != 1:
        raise ValueError(
            f"The minibatched observed variables have different `total_size` values {totals}; "
            "SGLD needs one data set size N. Use the same `total_size=len(y)` for all of them."
        )

    # the same graphs on given rows; PyMC bakes batch_size into the logp graph (sizes, total_size
    # scaling), so the rows come in batches of exactly batch_size
    idx = pt.vector("rows", dtype="int64", shape=(batch_size,))
    loglik_rows = graph_replace(loglik, _rows_replacement([loglik], idx), strict=False)
    grad_loglik_rows = pt.grad(loglik_rows, flat, disconnected_inputs="ignore")
    indexed_fn = compile(
        [flat, idx], [grad_logprior, grad_loglik_rows], random_seed=False, **compile_kwargs
    )
    indexed_fn.trust_input = True

    # per-datum log-likelihood of the minibatched observations, summed over trailing axes,
    # with the total_size scaling N / len(rows) undone
    terms = model.logp(vars=scaled, sum=False)
    per_row = 0
    for term in terms:
        per_row = per_row + (term.sum(axis=tuple(range(1, term.ndim))) if term.ndim > 1 else term)
    [per_row], flat2 = join_nonshared_inputs(initial_point, [per_row], vars, shared)
    per_row = graph_replace(per_row, _rows_replacement([per_row], idx), strict=False)
    total = totals.pop()
    per_row = per_row * (batch_size / float(total))
    scores = jacobian(per_row, flat2, vectorize=True)
    scores_fn = compile([flat2, idx], scores, random_seed=False, **compile_kwargs)
    scores_fn.trust_input = True

    # control variates: the same minibatch at x and at an anchor point (the Minibatch node does
    # not depend on the parameters, so the anchored copy of the graph shares its rows)
    anchor = flat.type("anchor")
    loglik_anchor = graph_replace(loglik, {flat: anchor}, strict=True)
    grad_anchor = pt.grad(loglik_anchor, anchor, disconnected_inputs="ignore")
    cv_fn = compile(
        [flat, anchor],
        [grad_logprior, grad_loglik - grad_anchor, logp],
        random_seed=False,
        **with_logp_kwargs,
    )
    cv_fn.trust_input = True
    return MinibatchGradients(
        grads_fn,
        indexed_fn,
        scores_fn,
        cv_fn,
        list(updates),
        raveled.point_map_info,
        n_params,
        minibatched=True,
        total_size=total,
        batch_size=batch_size,
        n_rows=n_rows,
        shared=shared,
        dtype=flat.dtype,
    )


# --- end SGLD -------------------------------------------------------------------------------


def minibatched_observations(model) -> list[str]:
    """Names of the observed variables whose log-likelihood is not the full data's.

    That is every observed variable whose graph holds a ``pm.Minibatch`` call, or whose
    ``total_size`` rescales its log-likelihood (``total_size`` different from the rows held).
    """
    names = []
    for rv in model.observed_RVs:
        value = model.rvs_to_values[rv]
        if _minibatch_nodes([rv, value]):
            names.append(rv.name)
        elif _is_scaled(rv):
            rows = int(np.shape(value.eval())[0]) if value.ndim > 0 else 1
            if _total_size(rv) != rows:
                names.append(rv.name)
    return names


def refuse_minibatch(model, what: str) -> None:
    """Raise a ValueError naming the minibatched observations, for exact samplers and evidence.

    Exact samplers (MALA, ULA, ExchangeMC) and evidence estimators need the full-data
    likelihood; a ``pm.Minibatch`` model gives them a random, rescaled one instead.
    """
    names = minibatched_observations(model)
    if names:
        raise ValueError(
            f"{what} needs the full-data likelihood, but the observed variables {names} use "
            "pm.Minibatch data or a `total_size` that rescales their log-likelihood, so every "
            "evaluation would score a different random subset. Build the model on the full "
            "data (no pm.Minibatch, no total_size) for this, or sample the minibatched model "
            "with pmt.SGLD()."
        )


# --- bridge sampling: the joint log density of many value-space points ----------------------
def compile_batched_logp(model, jacobian=True):
    """``f(x) -> log p(y, x)`` of an ``(n, n_params)`` float64 batch of flat value vectors.

    The joint density ``model.logp(jacobian=jacobian)`` (prior, Jacobians of the value
    transforms, observed variables and Potentials) in one vectorised call; the flat vector
    holds ``model.value_vars`` in order, each raveled (as ``DictToArrayBijection``). Parameter
    checks become per-row ``-inf``, so one invalid row does not spoil the batch. Bridge
    sampling needs the Jacobians: ``jacobian=False`` is the density of the constrained
    variables evaluated at transformed values, which is not a density in the value space.
    """
    vars = list(model.value_vars)
    (logp,), flat = join_nonshared_inputs(
        model.initial_point(), [model.logp(jacobian=jacobian)], vars
    )
    point_flat, (point_logp,) = _checks_to_switches(flat, [logp])
    rows = pt.matrix("rows", dtype="float64")
    batch = vectorize_graph(point_logp, {point_flat: rows.astype(flat.dtype)})
    batch = pt.broadcast_to(batch, (rows.shape[0],)).astype("float64")
    fn = compile([rows], batch, mode=_with_switch_sinking(None), on_unused_input="ignore")
    fn.trust_input = True
    return fn


def compile_value_transform(model):
    """``f(*draws) -> (n, n_params)`` flat value vectors from draws of the free variables.

    ``draws`` holds one array per ``model.free_RVs`` entry, in that order, each with a leading
    axis of ``n`` draws in the constrained space (as ``pm.sample`` stores them); each is mapped
    by its value transform's ``forward`` (with its parameters, e.g. bounds that depend on other
    free variables, taken from the same draw) and the results are flattened and joined in
    ``model.value_vars`` order, as :func:`compile_batched_logp` wants them.
    """
    free = list(model.free_RVs)
    inputs = [rv.type(name=f"{rv.name}_draw") for rv in free]
    outputs = {}
    for rv, inp in zip(free, inputs, strict=True):
        transform = model.rvs_to_transforms.get(rv)
        value = inp if transform is None else transform.forward(inp, *rv.owner.inputs)
        outputs[model.rvs_to_values[rv].name] = pt.flatten(value).astype("float64")
    flat = pt.concatenate([outputs[v.name] for v in model.value_vars])
    [flat] = clone_replace([flat], dict(zip(free, inputs, strict=True)))
    batch_inputs = [pt.tensor(dtype=i.dtype, shape=(None, *i.type.shape)) for i in inputs]
    batch = vectorize_graph(flat, dict(zip(inputs, batch_inputs, strict=True)))
    return compile(batch_inputs, batch, on_unused_input="ignore")


# --- the LLC's localisation centre -----------------------------------------------------------
def flat_point_map(vars, n_params):
    """``f(point) -> flat float64 vector`` of the variables ``vars`` (value space, raveled as
    the samplers' states), with an error naming what is missing or misshapen."""
    names = [v.name for v in vars]

    def to_flat(point):
        if not isinstance(point, dict):
            raise ValueError(
                f"`localization_center` must be a dict {{value variable name: array}} for "
                f"{names}, got {type(point).__name__}."
            )
        missing = [name for name in names if name not in point]
        if missing:
            raise ValueError(f"`localization_center` lacks {missing} (value-space names).")
        flat = DictToArrayBijection.map(
            {name: np.asarray(point[name], dtype=np.float64) for name in names}
        ).data
        if flat.size != n_params:
            raise ValueError(
                f"`localization_center` has {flat.size} numbers, the sampled variables "
                f"{names} {n_params}."
            )
        return flat

    return to_flat
