"""Forward samplers of the prior in value space: a block of draws per compiled call where the
prior allows it, else one point per call."""

import warnings

import pytensor.tensor as pt
from pymc.distributions.shape_utils import change_dist_size
from pymc.initial_point import make_initial_point_expression
from pymc.pytensorf import compile
from pytensor.graph.traversal import ancestors

from pymc_tempering.step_methods._compile.checks import improper_priors

__all__ = ["PRIOR_BLOCK", "compile_prior_block", "compile_prior_draw", "lazy_prior_draw"]

PRIOR_BLOCK = 64  # prior draws per compiled call, where the prior allows batching


def compile_prior_block(model, vars, n_params, compile_kwargs):
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
        # NumPy's generators through PyTensor's Python linker: no numba compilation (0.4 s for a
        # new model) for a call made once per PRIOR_BLOCK sweeps; the same draws as numba's
        kwargs.setdefault("mode", "FAST_COMPILE")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn, updates = compile([], flat, random_seed=False, return_updates=True, **kwargs)
        if fn().shape != (PRIOR_BLOCK, n_params):
            return None, []
    except Exception:  # noqa: BLE001 - any failure means "draw one point per call"
        return None, []
    return fn, list(updates)


def _prior_draw_outputs(model, vars):
    """The graphs of one forward draw of ``vars`` in value space."""
    order = {rv.name: i for i, rv in enumerate(model.free_RVs)}
    value_to_rv = {model.rvs_to_values[rv].name: rv for rv in model.free_RVs}
    exprs = make_initial_point_expression(
        free_rvs=model.free_RVs,
        rvs_to_transforms=model.rvs_to_transforms,
        initval_strategies={},
        default_strategy="prior",
        return_transformed=True,
    )
    return [exprs[order[value_to_rv[v.name].name]] for v in vars]


class LazyFunction:
    """A compiled function that is compiled at its first use (call or attribute)."""

    def __init__(self, outputs, compile_kwargs):
        self._outputs, self._compile_kwargs, self._fn = outputs, compile_kwargs, None

    def _get(self):
        if self._fn is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._fn = compile([], self._outputs, random_seed=False, **self._compile_kwargs)
        return self._fn

    def __call__(self, *args):
        return self._get()(*args)

    def __getattr__(self, name):
        if name.startswith("_"):  # pickling and the like look these up before __init__
            raise AttributeError(name)
        return getattr(self._get(), name)


def lazy_prior_draw(model, vars, compile_kwargs):
    """The per-draw sampler of :func:`compile_prior_draw`, compiled at its first use (for
    models whose prior :func:`compile_prior_block` samples: the samplers never call it)."""
    kwargs = {k: v for k, v in compile_kwargs.items() if k != "on_unused_input"}
    try:
        return LazyFunction(_prior_draw_outputs(model, vars), kwargs)
    except Exception:  # noqa: BLE001 - then only the block sampler draws the prior
        return None


def compile_prior_draw(model, vars, compile_kwargs):
    """Compile a forward sampler of the free variables in value space, or None if impossible."""
    if improper_priors(model):
        return None, []
    try:
        outputs = _prior_draw_outputs(model, vars)
        kwargs = {k: v for k, v in compile_kwargs.items() if k != "on_unused_input"}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn, updates = compile([], outputs, random_seed=False, return_updates=True, **kwargs)
        fn()  # fails here for distributions that cannot be forward-sampled
    except Exception:  # noqa: BLE001 - any failure means "cannot forward-sample"
        return None, []
    return fn, list(updates)
