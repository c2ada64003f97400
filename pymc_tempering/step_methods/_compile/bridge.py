"""For bridge sampling: the joint log density of many value-space points in one call, and the
map from constrained draws to flat value vectors."""

import pytensor.tensor as pt
from pymc.pytensorf import compile, join_nonshared_inputs
from pytensor.graph.replace import clone_replace, vectorize_graph

from pymc_tempering.step_methods._compile.rewrites import checks_to_switches, with_switch_sinking

__all__ = ["compile_batched_logp", "compile_value_transform"]


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
    point_flat, (point_logp,) = checks_to_switches(flat, [logp])
    rows = pt.matrix("rows", dtype="float64")
    batch = vectorize_graph(point_logp, {point_flat: rows.astype(flat.dtype)})
    batch = pt.broadcast_to(batch, (rows.shape[0],)).astype("float64")
    fn = compile([rows], batch, mode=with_switch_sinking(None), on_unused_input="ignore")
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
