"""Hashes that tell models and data apart.

:func:`observed_fingerprint` / :func:`model_fingerprint`: a hash of a model's observed data, so
that evidence results fitted to different data are told apart. It depends on the values (to
float32 precision) and shapes only, not on the variables' names, order or dtypes: the same data
stored as int32 or float64, or cast to float32 for a float32 model, is the same data.

:func:`graph_digest` / :func:`model_graph_digests`: SHA-256 of log density graphs as PyTensor
prints them and the values that feed them, the rule that keys the model store
(:mod:`pymc_tempering.selection._store`) and that a continued run checks its model against
(:mod:`pymc_tempering.resume`). Python's ``hash()`` is salted per process; everything here goes
through :mod:`hashlib`, so digests agree across processes.

:func:`model_logp_graphs`: the model's ``varlogp`` and ``datalogp`` graphs, built once per model
(about 0.1 s each on a small regression) for everything that reads them before sampling: the
store key, the likelihood check, the compiled tempered density and the checkpoint digests.
"""

import hashlib
import operator
import weakref

import numpy as np
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import ancestors
from pytensor.printing import debugprint
from pytensor.tensor import as_tensor
from pytensor.tensor.math import variadic_add
from pytensor.tensor.sharedvar import SharedVariable

__all__ = [
    "observed_fingerprint",
    "model_fingerprint",
    "array_digest",
    "canonical",
    "graph_digest",
    "model_graph_digests",
    "model_logp_graphs",
    "changed_data",
    "other_data",
    "refuse_other_data",
]

_LOGP_GRAPHS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _structure(model) -> tuple:
    """What ``model.varlogp`` and ``model.datalogp`` are built from, compared by identity."""
    rvs = [*model.free_RVs, *model.observed_RVs]
    return (
        len(rvs),
        len(model.potentials),
        model.name,
        *rvs,
        *(model.rvs_to_values[rv] for rv in rvs),
        *(model.rvs_to_transforms.get(rv) for rv in rvs),
        *model.potentials,
    )


def model_logp_graphs(model) -> tuple:
    """``(model.varlogp, model.datalogp)``, the same graph objects on every call while the
    model's variables, values, transforms and Potentials are the same objects (a variable
    added to the model builds them again). PyMC builds them afresh on every access. The
    graphs are shared: never modify them in place (compiling and cloning do not)."""
    structure = _structure(model)
    entry = _LOGP_GRAPHS.get(model)
    if entry is not None:
        seen, graphs = entry
        if len(seen) == len(structure) and all(map(operator.is_, seen, structure)):
            return graphs
    graphs = _logp_graphs(model)
    _LOGP_GRAPHS[model] = (structure, graphs)
    return graphs


def _logp_graphs(model) -> tuple:
    """``model.varlogp`` and ``model.datalogp`` as PyMC writes them, from one derivation of the
    model's log density terms: PyMC derives every term (``transformed_conditional_logp`` over
    all value variables) for each of the two and keeps half (about 0.05 s each on a small
    regression, a cost per model in many-model runs)."""
    free, observed = list(model.free_RVs), list(model.observed_RVs)
    if not free or not observed:
        return model.varlogp, model.datalogp
    factors = model.logp(vars=[*free, *observed], sum=False)
    varlogp = _summed(model, factors[: len(free)])
    observedlogp = _summed(model, factors[len(free) :])
    return varlogp, observedlogp + model.potentiallogp


def _summed(model, factors):
    """The log density terms ``factors`` summed as ``pm.Model.logp(vars=...)`` sums them."""
    total = variadic_add(*(as_tensor(f, allow_xtensor_conversion=True).sum() for f in factors))
    total.name = f"__logp_{model.name}" if model.name else "__logp"
    return total


def _fingerprint(arrays) -> str | None:
    if not arrays:
        return None
    parts = []
    for array in arrays:
        values = np.ascontiguousarray(array, dtype=np.float32)
        digest = hashlib.sha1(str(values.shape).encode())
        digest.update(values.tobytes())
        parts.append(digest.hexdigest())
    return hashlib.sha1("".join(sorted(parts)).encode()).hexdigest()


def observed_fingerprint(data) -> str | None:
    """The hash of a DataTree's ``observed_data`` group; None where there is none."""
    try:
        observed = data["observed_data"]
    except (KeyError, TypeError):
        return None
    observed = observed.to_dataset() if hasattr(observed, "to_dataset") else observed
    return _fingerprint([observed[name].values for name in observed.data_vars])


def model_fingerprint(model) -> str | None:
    """The same hash as :func:`observed_fingerprint`, from a model's observed variables."""
    return _fingerprint([model.rvs_to_values[rv].eval() for rv in model.observed_RVs])


def array_digest(value) -> str:
    """SHA-256 of an array's dtype, shape and bytes (object arrays by their repr)."""
    array = np.ascontiguousarray(value)
    digest = hashlib.sha256(f"{array.dtype.str}{array.shape}".encode())
    if array.dtype.kind == "O":
        digest.update(repr(array.tolist()).encode())
    else:
        digest.update(array.tobytes())
    return digest.hexdigest()


def canonical(obj):
    """A JSON-able form of settings: arrays by digest, mappings with sorted keys."""
    if isinstance(obj, dict):
        return {str(k): canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, list | tuple):
        return [canonical(v) for v in obj]
    if isinstance(obj, np.ndarray | np.generic):
        return {"array": array_digest(obj)}
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    return {"repr": repr(obj)}


def graph_digest(graphs, initial_values=None) -> str:
    """SHA-256 of ``graphs`` as PyTensor prints them (types included), of every constant's
    bytes and every shared variable's name and value in them, then of ``initial_values``
    (``{rv: initval}``, e.g. ``model.rvs_to_initial_values``) where given."""
    digest = hashlib.sha256()
    digest.update(debugprint(graphs, file="str", print_type=True, id_type="CHAR").encode())
    for var in ancestors(graphs):  # a deterministic traversal order
        if isinstance(var, Constant):
            digest.update(array_digest(var.data).encode())
        elif isinstance(var, SharedVariable):
            value = var.get_value(borrow=True)
            kind = array_digest(value) if isinstance(value, np.ndarray) else type(value).__name__
            digest.update(f"{var.name}:{kind}".encode())
    for rv, initval in (initial_values or {}).items():
        digest.update(f"{rv.name}={canonical(initval)}".encode())
    return digest.hexdigest()


#: The parts of a model :func:`model_graph_digests` hashes apart, and how a message names them.
GRAPH_PARTS = {
    "prior": "prior (the free variables' distributions, parameters or transforms)",
    "likelihood": "likelihood (the observed variables' distributions, or the Potentials)",
    "deterministics": "deterministics",
}


def changed_graph_parts(saved: dict, model, data=None) -> str:
    """The parts of ``model`` whose :func:`model_graph_digests` differ from the ``saved`` ones
    (parts not saved are not compared), named for a message (``""`` if none): the one rule of
    every continuation's "another model" check. With ``data`` (the run's DataTree), the
    ``pm.Data`` containers whose values differ from those it recorded (:func:`changed_data`)
    are named too, as the cause of the change."""
    given = model_graph_digests(model)
    changed = [part for part in GRAPH_PARTS if part in saved and saved[part] != given[part]]
    names = " and the ".join(GRAPH_PARTS[part] for part in changed)
    containers = changed_data(data, model) if data is not None and changed else []
    if containers:
        names += f", through the values of pm.Data {containers} (changed since the run)"
    return names


def changed_data(data, model) -> list[str]:
    """Names of ``model``'s ``pm.Data`` containers whose values differ from those the DataTree
    ``data`` recorded (its ``constant_data`` group, where ``pm.sample`` keeps every
    ``pm.Data``), e.g. after ``pm.set_data``: shapes, then values, exactly (NaN equal to NaN;
    the same numbers in another dtype are the same data). Containers the DataTree did not
    record are not compared."""
    try:
        recorded = data["constant_data"]
    except (KeyError, TypeError):
        return []
    recorded = recorded.to_dataset() if hasattr(recorded, "to_dataset") else recorded
    changed = []
    for container in model.data_vars:
        name = container.name
        if name not in recorded.data_vars:
            continue
        before = np.asarray(recorded[name].values)
        now = np.asarray(container.get_value(borrow=True))
        if not _same_values(before, now):
            changed.append(name)
    return changed


def other_data(data, model) -> str:
    """What of ``model``'s data differs from what the DataTree ``data`` was sampled with, in
    words (``""`` where nothing does): its observed data (:func:`observed_fingerprint`) and the
    values of its ``pm.Data`` containers (:func:`changed_data`: a predictor changed by
    ``pm.set_data`` changes the posterior as much as the observations do). Groups ``data`` did
    not record are not compared. The one check of every reader that evaluates the model's
    density at a run's draws (bridge sampling, WBIC from a model)."""
    parts = []
    recorded = observed_fingerprint(data)
    if recorded is not None and recorded != model_fingerprint(model):
        parts.append("observed data")
    changed = changed_data(data, model)
    if changed:
        parts.append(f"pm.Data {changed}")
    return " and ".join(parts)


def refuse_other_data(data, model, reader: str) -> None:
    """Raise a ValueError, naming :func:`other_data`'s difference, where ``model``'s data are
    not those ``data``'s draws were sampled with: ``reader`` (e.g. ``"bridge_sampling"``)
    evaluates the model at those draws, and no estimate from another posterior's draws holds."""
    what = other_data(data, model)
    if what:
        raise ValueError(
            f"{reader}: the DataTree's draws were sampled with other data than the model's "
            f"{what} (its observed_data / constant_data groups; e.g. pm.set_data was called "
            "after sampling), so they are not from this model's posterior. Sample the model "
            "again with its current data, or set the data back first (pm.set_data({name: "
            "idata.constant_data[name].values}) for each pm.Data), or pass the model with the "
            "data that produced the draws as `model=`."
        )


def _same_values(before: np.ndarray, now: np.ndarray) -> bool:
    if before.shape != now.shape:
        return False
    numeric = before.dtype.kind in "biufc" and now.dtype.kind in "biufc"
    return bool(np.array_equal(before, now, equal_nan=numeric))


def model_graph_digests(model) -> dict[str, str]:
    """:func:`graph_digest` of a model's prior (``model.varlogp``), likelihood
    (``model.datalogp``) and deterministics apart, so that a difference can be named. Initial
    values are left out: they do not change the posterior."""
    varlogp, datalogp = model_logp_graphs(model)
    parts = {
        "prior": [varlogp],
        "likelihood": [datalogp],
        "deterministics": list(model.deterministics),
    }
    return {name: graph_digest(graphs) for name, graphs in parts.items()}
