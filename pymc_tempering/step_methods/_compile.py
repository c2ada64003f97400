"""The only module that compiles PyTensor: prior/likelihood split, batched over rungs.

Tempering needs the model's log density split as ``logprior + beta * loglik``. We take the split
PyMC's SMC uses: ``model.varlogp`` (free variables in their value space, Jacobians included) is
the log prior, ``model.datalogp`` (observed variables and Potentials) the log-likelihood.
"""

import warnings
from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.distributions.continuous import FlatRV, HalfFlatRV
from pymc.initial_point import make_initial_point_expression
from pymc.pytensorf import compile, join_nonshared_inputs, make_shared_replacements, reseed_rngs
from pymc.vartypes import discrete_types
from pytensor.graph.basic import Constant
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.traversal import graph_inputs

__all__ = ["TemperedDensity", "compile_tempered_density", "check_all_free_continuous"]


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

    def batch(self, x: np.ndarray):
        return self.batched(np.ascontiguousarray(x, dtype=np.float64))

    def __call__(self, x: np.ndarray):
        return self.single(np.ascontiguousarray(x, dtype=np.float64))

    def to_point(self, x: np.ndarray) -> dict:
        return DictToArrayBijection.rmap(RaveledVars(x, self.point_map_info))

    def can_sample_prior(self) -> bool:
        return self.prior_draw is not None

    def sample_prior(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` independent prior draws as flat value-space vectors (seeded from ``rng``)."""
        reseed_rngs(self.prior_rngs, rng.integers(2**63))
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


def compile_tempered_density(model, vars, initial_point, compile_kwargs=None) -> TemperedDensity:
    """Compile logprior and loglik of the flat parameter vector, per point and batched.

    The batched function comes from ``vectorize_graph`` on the per-point graph, so a whole
    ladder of replicas is evaluated in one call.
    """
    compile_kwargs = dict(compile_kwargs or {})
    compile_kwargs.setdefault("on_unused_input", "ignore")
    shared = make_shared_replacements(initial_point, vars, model)
    (logprior, loglik), flat = join_nonshared_inputs(
        initial_point, [model.varlogp, model.datalogp], vars, shared
    )
    single = compile([flat], [logprior, loglik], **compile_kwargs)
    single.trust_input = True

    replicas = pt.matrix("replicas", dtype=flat.dtype)
    batch_logprior, batch_loglik = vectorize_graph([logprior, loglik], {flat: replicas})
    # a model term that does not depend on the parameters vectorises to a scalar
    batch_logprior = pt.broadcast_to(batch_logprior, (replicas.shape[0],))
    batch_loglik = pt.broadcast_to(batch_loglik, (replicas.shape[0],))
    batched = compile([replicas], [batch_logprior, batch_loglik], **compile_kwargs)
    batched.trust_input = True

    point = {v.name: initial_point[v.name] for v in vars}
    point_map_info = DictToArrayBijection.map(point).point_map_info
    n_params = int(DictToArrayBijection.map(point).data.size)

    prior_draw, prior_rngs = _compile_prior_draw(model, vars, compile_kwargs)
    return TemperedDensity(single, batched, prior_draw, prior_rngs, point_map_info, n_params)


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


# --- Langevin (ULA / MALA): tempered logp and gradient --------------------------------------
# (section owned by the Langevin step methods)
# --- end Langevin ---------------------------------------------------------------------------


# --- SGLD: minibatch gradients --------------------------------------------------------------
# (section owned by the SGLD step method)
# --- end SGLD -------------------------------------------------------------------------------
