"""Checks of a model before anything is compiled: a model given, all free variables given,
proper priors, finite observed data, likelihood terms, and which observations are minibatched
(``pm.Minibatch``, ``total_size``). Each error names the argument or the data and the fix."""

import numpy as np
from pymc.data import MinibatchOp
from pymc.distributions.continuous import FlatRV, HalfFlatRV
from pymc.model import Model, modelcontext
from pymc.variational.minibatch_rv import MinibatchRandomVariable
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import ancestors, applys_between, graph_inputs
from pytensor.scalar.basic import IsInf, IsNan
from pytensor.tensor.elemwise import Elemwise

from pymc_tempering._util.fingerprint import model_logp_graphs

__all__ = [
    "resolve_model",
    "check_observed_finite",
    "nonfinite_likelihood_data",
    "imputed_observations",
    "check_all_free",
    "improper_priors",
    "has_likelihood",
    "minibatch_nodes",
    "is_scaled",
    "total_size",
    "check_minibatch_model",
    "minibatched_observations",
    "refuse_minibatch",
]


def resolve_model(model, what: str) -> Model:
    """``model``, or the model on the context stack where it is None; a TypeError naming
    ``model=`` and the fix where there is neither, or ``model`` is not a ``pm.Model``, and a
    ValueError for a model without free variables (nothing to sample or integrate)."""
    if model is not None and not isinstance(model, Model):
        raise TypeError(
            f"{what}: `model` must be a pm.Model, got {type(model).__name__} {model!r:.60}. "
            f"Build the model in a `with pm.Model() as model:` block and pass it as "
            f"{what}(model) (or call {what} inside that block)."
        )
    try:
        model = modelcontext(model)
    except TypeError:
        raise TypeError(
            f"{what} needs the model: there is no model on the context stack. Pass it as "
            f"`model=` (e.g. a DataTree read back from a file has no model attached), or call "
            f"{what} inside `with model:`."
        ) from None
    if not model.free_RVs:
        raise ValueError(
            f"{what}: the model has no free variables (no prior to sample or integrate over). "
            "Add the parameters to the model (e.g. mu = pm.Normal('mu', 0, 1)) before calling it."
        )
    return model


def _observed_values(data):
    """The array behind observed data, read without compiling: a constant's value or a
    ``pm.Data``'s; None for a computed graph (e.g. a minibatch), which is not checked."""
    if isinstance(data, Constant):
        return np.asarray(data.data)
    if isinstance(data, SharedVariable):
        return np.asarray(data.get_value(borrow=True))
    return None


def check_observed_finite(model, what: str) -> None:
    """Raise a ValueError naming the observed variables whose data hold ``inf`` (or NaN left
    after PyMC's imputation, e.g. in ``pm.Data``), or the data containers (``pm.Data``, or
    arrays written into the model) that the likelihood reads and that hold ``inf`` or NaN, a
    predictor for instance: every log-likelihood would be ``-inf`` or NaN."""
    bad = {}
    for rv in model.observed_RVs:
        values = _observed_values(model.rvs_to_values[rv])
        if values is not None and values.dtype.kind in "fc":
            n_bad = int(np.count_nonzero(~np.isfinite(values)))
            if n_bad:
                bad[rv.name] = n_bad
    if bad:
        counts = ", ".join(f"{name!r}: {n}" for name, n in bad.items())
        raise ValueError(
            f"{what}: the observed data hold non-finite values (inf or NaN; count per observed "
            f"variable: {counts}), where the log-likelihood is -inf for every parameter value, "
            "so no starting point or sampler setting can help. Remove or fix those rows of the "
            "data (e.g. data[np.isfinite(data)]) and build the model again."
        )
    found = nonfinite_likelihood_data(model)
    if found:
        where = "; ".join(
            f"{label} holds {n} inf or NaN{_at(first)}, read by {', '.join(map(repr, users))}"
            for label, (n, first, users) in found.items()
        )
        raise ValueError(
            f"{what}: data that the likelihood reads, not observed themselves, hold inf or "
            f"NaN: {where}. The log-likelihood is then NaN or -inf for every parameter value, "
            "so no starting point (`initvals=`) or sampler setting can help. Fix those values "
            "(impute them, or drop those rows from the predictors and the observations alike; "
            "pm.set_data({name: values}) for a pm.Data) and sample again, or model the missing "
            "values (a distribution with `observed=` the data, NaN where missing, which PyMC "
            "imputes)."
        )


def nonfinite_likelihood_data(model) -> dict[str, tuple[int, tuple, list[str]]]:
    """The data containers the likelihood reads that hold ``inf`` or NaN, other than the
    observations themselves: ``{description: (count, index of the first, observed variables or
    Potentials that read it)}``. A ``pm.Data`` is described by its name, an array written
    into the model by its shape. The graphs are walked from each observed variable and
    Potential down to, not into, the free variables (a prior's parameters are not the
    likelihood's data); a container that the graph itself tests with ``isnan`` / ``isinf``
    is taken to be masked there and left out, and an unnamed scalar is a constant of the model
    (the ``-inf`` of a hard constraint), not data."""
    found: dict[str, tuple[int, tuple, list[str]]] = {}
    terms = [*model.observed_RVs, *model.potentials]
    masked = _tested_for_nonfinite(terms, model.free_RVs)
    names = {id(v): name for name, v in model.named_vars.items()}
    for term in terms:
        for var in ancestors([term], blockers=model.free_RVs):
            values = _observed_values(var)
            if values is None or values.dtype.kind not in "fc" or id(var) in masked:
                continue
            name = names.get(id(var))
            if not name and values.ndim == 0:  # a model's constant, e.g. the -inf of a hard
                continue  # constraint's pt.switch(mu > 0, 0.0, -np.inf), not data
            bad = ~np.isfinite(values)
            if not bad.any():
                continue
            label = (
                f"pm.Data {name!r}"
                if name
                else f"an array of shape {values.shape} written into the model"
            )
            first = tuple(int(i) for i in np.argwhere(bad)[0])
            entry = found.setdefault(label, (int(bad.sum()), first, []))
            entry[2].append(term.name or "a Potential")
    return found


def _at(index: tuple) -> str:
    """`` (first at index 3)`` / `` (first at index (3, 1))``; ``""`` for a scalar."""
    if not index:
        return ""
    return f" (first at index {index[0] if len(index) == 1 else index})"


def _tested_for_nonfinite(terms, free) -> set[int]:
    """``id`` of every variable the graphs of ``terms`` pass to ``isnan`` or ``isinf``."""
    tested = set()
    for var in ancestors(terms, blockers=free):
        node = var.owner
        if node is not None and isinstance(node.op, Elemwise):
            if isinstance(node.op.scalar_op, IsNan | IsInf):
                tested.update(id(v) for v in node.inputs)
    return tested


def imputed_observations(model) -> dict[str, int]:
    """Per observed variable whose data held missing values (NaN, masked), the number that
    PyMC imputes: it splits ``y`` into ``y_observed``, a free ``y_unobserved`` and a
    Deterministic ``y`` (``pm.Model.make_obs_var``), so the likelihood covers fewer points."""
    free = {rv.name: rv for rv in model.free_RVs}
    deterministics = {rv.name for rv in model.deterministics}
    out = {}
    for rv in model.observed_RVs:
        base = rv.name.removesuffix("_observed")
        missing = free.get(f"{base}_unobserved")
        if base != rv.name and missing is not None and base in deterministics:
            out[base] = int(np.prod(missing.shape.eval()))
    return out


def check_all_free(model, vars, sampler: str):
    """Raise unless ``vars`` are exactly the model's free variables."""
    value_vars = list(model.value_vars)
    names = {v.name for v in vars}
    missing = [v.name for v in value_vars if v.name not in names]
    if missing:
        raise ValueError(
            f"{sampler} must be assigned to every free variable of the model, because each rung "
            f"needs the whole state to evaluate prior * likelihood**beta; it was not given "
            f"{missing}. Call {sampler}() without `vars`, or pass all of them."
        )


def _is_improper(rv) -> bool:
    return isinstance(rv.owner.op, FlatRV | HalfFlatRV)


def improper_priors(model) -> list[str]:
    """Names of free variables with an improper (Flat / HalfFlat) prior."""
    return [rv.name for rv in model.free_RVs if _is_improper(rv)]


def has_likelihood(model) -> bool:
    """Whether ``model.datalogp`` depends on the free variables (observed data or Potentials)."""
    if not (model.observed_RVs or model.potentials):
        return False
    datalogp = model_logp_graphs(model)[1]
    inputs = {i for i in graph_inputs([datalogp]) if not isinstance(i, Constant)}
    return any(v in inputs for v in model.value_vars)


def minibatch_nodes(outputs) -> list:
    """The ``pm.Minibatch`` nodes in the graphs of ``outputs``."""
    return [node for node in applys_between([], outputs) if isinstance(node.op, MinibatchOp)]


def is_scaled(rv) -> bool:
    """Whether observed variable ``rv`` has a ``total_size`` (its log-likelihood rescaled)."""
    return isinstance(rv.owner.op, MinibatchRandomVariable)


def total_size(rv) -> int:
    """The ``total_size`` of a scaled observed variable."""
    size = rv.owner.inputs[1]
    value = size.data if isinstance(size, Constant) else size.eval()
    return int(value)


def check_minibatch_model(model) -> None:
    """Raise if an observed variable uses ``pm.Minibatch`` data without ``total_size``."""
    for rv in model.observed_RVs:
        if is_scaled(rv):
            continue
        if minibatch_nodes([rv, model.rvs_to_values[rv]]):
            raise ValueError(
                f"The observed variable {rv.name!r} uses pm.Minibatch data but has no "
                "`total_size`, so its log-likelihood would not be scaled by N / batch_size and "
                "SGLD would sample the wrong posterior. Pass `total_size=len(y)` (the full "
                f"number of rows) when creating {rv.name!r}."
            )


def minibatched_observations(model) -> list[str]:
    """Names of the observed variables whose log-likelihood is not the full data's.

    That is every observed variable whose graph holds a ``pm.Minibatch`` call, or whose
    ``total_size`` rescales its log-likelihood (``total_size`` different from the rows held).
    """
    names = []
    for rv in model.observed_RVs:
        value = model.rvs_to_values[rv]
        if minibatch_nodes([rv, value]):
            names.append(rv.name)
        elif is_scaled(rv):
            rows = int(np.shape(value.eval())[0]) if value.ndim > 0 else 1
            if total_size(rv) != rows:
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
