"""Read the checkpoints of a DataTree, build the step that continues it, sample and join."""

import numbers
import warnings

import numpy as np
import pymc as pm
import xarray as xr
from pymc.model import modelcontext

from pymc_tempering._util.fingerprint import (
    changed_data,
    changed_graph_parts,
    model_fingerprint,
    observed_fingerprint,
)
from pymc_tempering.resume import codec
from pymc_tempering.resume.layout import CHUNK_BYTES, HEADER, STATE_STAT

__all__ = [
    "chain_checkpoints",
    "saved_step",
    "resume_step",
    "continue_sampling",
    "concatenate_draws",
]


def _state_stat(idata) -> np.ndarray:
    if "sample_stats" not in getattr(idata, "children", {}):
        raise ValueError("Expected the DataTree returned by pm.sample; it has no sample_stats.")
    stats = idata["sample_stats"]
    if STATE_STAT not in stats.data_vars:
        raise ValueError(
            f"This DataTree has no `{STATE_STAT}` stat, so it cannot be continued: it was "
            "sampled by a step method that does not save its state (pmt.ExchangeMC, MALA, "
            "ULA and SGLD do), or the stat was dropped."
        )
    values = np.asarray(stats[STATE_STAT].transpose("chain", "draw", ...).values)
    if values.ndim != 3 or values.shape[2] != HEADER.size + CHUNK_BYTES:
        raise ValueError(f"`{STATE_STAT}` has shape {values.shape}: not written by this version.")
    return values.astype(np.uint8, copy=False)


def _latest_checkpoint(rows: np.ndarray, chain: int) -> dict:
    """The latest complete snapshot of one chain's ``(draw, bytes)`` rows, decoded, and the
    number of later draws to run again."""
    heads = np.frombuffer(np.ascontiguousarray(rows[:, : HEADER.size]).tobytes(), "<i8")
    heads = heads.reshape(len(rows), 4)
    last = len(rows) - 1
    done = np.flatnonzero((heads[:, 0] >= 0) & (heads[:, 1] == heads[:, 2] - 1))
    for end in done[::-1]:
        at, _, n_chunks, size = heads[end]
        if at != end - n_chunks + 1:
            raise ValueError(
                f"Chain {chain}: the checkpoint at draw {at} does not line up with the draws "
                "(was the DataTree thinned or sliced?); continue from the unsliced DataTree."
            )
        payload = rows[at : end + 1, HEADER.size :].reshape(-1)[:size].tobytes()
        record = codec.decode(payload)
        return {**record, "replay": int(last - at), "next_draw": int(last + 1)}
    raise ValueError(
        f"Chain {chain} has no complete checkpoint: the run stopped during tuning or within "
        "the first draws after it. Sample it again."
    )


def chain_checkpoints(idata) -> list[dict]:
    """Per chain, the latest complete checkpoint in ``idata``: a dict with the step
    (``"step"``: class and constructor arguments), its ``"state"``, the ``"point"`` it
    returned, and ``"replay"``, the draws recorded after the snapshot.

    Parameters
    ----------
    idata : xarray.DataTree
        A run of a pymc_tempering step method, with its ``sampling_state`` stat.
    """
    values = _state_stat(idata)
    return [_latest_checkpoint(values[c], c) for c in range(values.shape[0])]


def saved_step(data) -> dict | None:
    """The step method that sampled ``data`` (a DataTree, or its ``sample_stats``), as its
    first snapshot records it: ``{"class": "module:name", "kwargs": {...}}``, the constructor
    arguments passed, by name. Read from the first chunks of chain 0's ``sampling_state``, so
    a run of a few draws is enough. ``None`` where there is no such stat (another step method,
    or the stat was dropped) or the record was cut short."""
    stats = data["sample_stats"] if "sample_stats" in getattr(data, "children", {}) else data
    if STATE_STAT not in getattr(stats, "data_vars", {}):
        return None
    rows = np.asarray(stats[STATE_STAT].isel(chain=0).transpose("draw", ...).values)
    if rows.ndim != 2 or rows.shape[1] != HEADER.size + CHUNK_BYTES:
        return None
    rows = rows.astype(np.uint8, copy=False)
    heads = np.frombuffer(np.ascontiguousarray(rows[:, : HEADER.size]).tobytes(), "<i8")
    heads = heads.reshape(len(rows), 4)
    starts = np.flatnonzero((heads[:, 0] >= 0) & (heads[:, 1] == 0))
    if not starts.size:
        return None
    first = starts[0]
    at, _, n_chunks, size = heads[first]
    end, last = first + 1, min(len(rows), first + n_chunks)
    while end < last and heads[end, 0] == at and heads[end, 1] == end - first:
        end += 1
    payload = rows[first:end, HEADER.size :].reshape(-1)[:size].tobytes()
    try:
        return codec.decode_key(payload, "step")
    except (KeyError, ValueError):
        return None


def _model(model, what: str):
    """``model``, or the one in context; an error naming ``model=`` where there is none."""
    if model is not None and not isinstance(model, pm.Model):
        raise TypeError(f"{what}: `model` must be a pm.Model, got {type(model).__name__}.")
    try:
        return modelcontext(model)
    except TypeError:
        raise TypeError(
            f"{what} needs the model that was sampled: there is no model on the context stack "
            "(a DataTree read back from a file carries no model). Pass it as `model=` (built "
            f"by the same code, with the same data), or call {what} inside `with model:`."
        ) from None


def resume_step(idata, *, model=None, step=None, step_class=None, **kwargs):
    """The step method that continues ``idata``'s chains (sample it with ``tune=0``).

    Parameters
    ----------
    idata : xarray.DataTree
        The run to continue, as for :func:`continue_sampling`.
    model : pymc.Model, optional
        The model sampled; default the one in context. Other observed data or another graph
        are refused (``ValueError``).
    step : step method, optional
        A step built by the user with the arguments of the saved run (needed when one could
        not be saved, e.g. a step-size function); it receives the saved state. Default
        ``None``: rebuilt from the saved class and arguments.
    step_class : type, optional
        The class to rebuild instead of the saved one; default ``None``: the saved class.
    **kwargs
        Constructor arguments that replace the saved ones.
    """
    model = _model(model, "resume_step")
    records = chain_checkpoints(idata)
    saved = records[0]["step"]
    _check_data(idata, model)
    sampled, given = observed_fingerprint(idata), model_fingerprint(model)
    if sampled is not None and sampled != given:
        raise ValueError(
            "The model's observed data differ from the run's `observed_data`: the saved state "
            "(densities, gradients, tuning) belongs to the model that was sampled. Pass that "
            "model (with the same data) as `model=`, or start a new run for the new data."
        )
    _check_model_graph(saved.get("model"), model)
    if step is None:
        cls = step_class or codec._lookup_class(saved["class"])
        args = {**saved["kwargs"], **kwargs}
        unsaved = [k for k, v in args.items() if isinstance(v, str) and v.startswith("<unsaved")]
        if unsaved:
            raise ValueError(
                f"The run's {cls.__name__} argument(s) {unsaved} could not be saved in the "
                f"DataTree; pass the step again: continue_sampling(idata, draws, "
                f"step={cls.__name__}(...)) with the arguments of the first run."
            )
        if "vars" in args:
            values = {v.name: v for v in model.value_vars}
            missing = [name for name in args["vars"] if name not in values]
            if missing:
                raise ValueError(f"The model has no variables {missing}; pass the model sampled.")
            args["vars"] = [values[name] for name in args["vars"]]
        with model:
            step = cls(**args, model=model)
    if f"{type(step).__module__}:{type(step).__qualname__}" != codec.current_name(saved["class"]):
        raise ValueError(
            f"The run was sampled by {saved['class']}; got a {type(step).__name__} step."
        )
    step.arm_resume(records)
    return step


def _check_data(idata, model) -> None:
    """Refuse a model whose ``pm.Data`` differ from those the run recorded (``pm.set_data``
    since the run), naming them: the saved state belongs to the posterior of the data
    sampled."""
    names = changed_data(idata, model)
    if names:
        raise ValueError(
            f"The values of pm.Data {names} differ from those this run sampled (its "
            f"`constant_data` group), e.g. after pm.set_data. The saved state (the chains' "
            "positions, densities, gradients and tuning) belongs to the posterior of the data "
            "sampled, and continuing it would silently join draws of two posteriors. To "
            "continue this run, set the data back first: pm.set_data({name: "
            "idata.constant_data[name].values}, model=model) for each; to sample the new data, "
            "run pm.sample afresh (pm.sample_posterior_predictive, not a continuation, predicts "
            "at new predictor values)."
        )


def _check_model_graph(saved: dict | None, model) -> None:
    """Refuse a model whose prior, likelihood or deterministics differ from the run's (by
    :func:`~pymc_tempering._util.fingerprint.model_graph_digests`); runs saved before the digests
    were kept are not checked."""
    if not saved:
        return
    names = changed_graph_parts(saved, model)
    if names:
        raise ValueError(
            f"The model differs from the one this run sampled in its {names}: e.g. a prior "
            "changed from N(0, 1) to N(0, 10). The saved state (the chains' positions, "
            "densities, gradients and tuning) belongs to the model sampled, and continuing it "
            "on another model would silently join draws of two posteriors. Sample the new model "
            "afresh with pm.sample, or continue with the model that was sampled (`model=`; "
            "built by the same code: a constant written 1.0 where it was 1 counts as a change)."
        )


def concatenate_draws(first, second) -> xr.DataTree:
    """``first`` followed by ``second`` along ``draw``, for every group with chain and draw
    dims in both (posterior, sample_stats, log_likelihood, ...); other groups from ``first``.
    A ``first`` group with draws that ``second`` lacks is dropped with a warning.

    Parameters
    ----------
    first : xarray.DataTree
        The earlier draws.
    second : xarray.DataTree
        The draws that continue them, with the same chains.
    """
    n_first = first["posterior"].sizes["draw"]
    groups = {}
    for name, node in first.children.items():
        ds = node.to_dataset()
        if "draw" not in ds.dims or name.startswith("warmup"):
            groups[name] = ds
            continue
        if name not in second.children:
            warnings.warn(
                f"Group `{name}` was dropped: the continued draws do not have it (recompute "
                "it on the joined DataTree, e.g. pm.compute_log_likelihood).",
                UserWarning,
                stacklevel=3,
            )
            continue
        more = second[name].to_dataset()
        more = more.assign_coords(draw=more["draw"].values + n_first)
        joined = xr.concat(
            [ds, more],
            dim="draw",
            data_vars="minimal",
            coords="minimal",
            compat="override",
            join="override",
        )
        joined.attrs = {**ds.attrs, **_joined_attrs(ds.attrs, more.attrs)}
        groups[name] = joined
    return xr.DataTree.from_dict(groups)


def _joined_attrs(a: dict, b: dict) -> dict:
    out = {}
    for key in ("sampling_time",):
        if key in a and key in b:
            out[key] = float(a[key]) + float(b[key])
    return out


def continue_sampling(
    idata,
    draws: int,
    *,
    model=None,
    step=None,
    cores=None,
    random_seed=None,
    client=None,
    **sample_kwargs,
):
    """Continue every chain of ``idata`` by ``draws`` draws and return the joined DataTree.

    Each chain restarts from the state saved in ``idata`` (replica states on every rung,
    proposal scales, ladder, preconditioner, random-number state; no tuning), so with the
    same ``random_seed`` as the first run, ``n + m`` draws equal one run of ``n + m`` draws
    bit for bit. Works on a run that was interrupted (the draws after its last checkpoint are
    run again to reach its last draw) and on a DataTree read from a file.

    Parameters
    ----------
    idata : xarray.DataTree
        The result of ``pm.sample(step=...)`` with a pymc_tempering step (ExchangeMC, MALA,
        ULA, SGLD), or of an earlier ``continue_sampling``.
    draws : int
        Draws to add to each chain.
    model : pymc.Model, optional
        The model sampled (default: the one in context).
    step : step method, optional
        The step to continue with, built with the first run's arguments; needed only when an
        argument could not be saved (e.g. a step-size function).
    cores : int, optional
        Passed to ``pm.sample``; default ``None``: PyMC's choice.
    random_seed : int, optional
        Passed to ``pm.sample``; it does not change the draws: each chain continues its saved
        random-number stream.
    **sample_kwargs
        Further ``pm.sample`` arguments (``tune=0`` and ``chains`` are set here).
    client : dask.distributed.Client, optional
        Continue an ExchangeMC run (e.g. of :func:`pymc_tempering.distributed.sample_tempered`)
        with its densities on this cluster's workers; ``model`` may then be the function
        that built it, and ``**sample_kwargs`` take ``n_workers``, ``worker_timeout`` and
        ``progressbar``.

    Returns
    -------
    xarray.DataTree
        ``idata``'s groups with the new draws appended along ``draw``.

    Raises
    ------
    ValueError
        Where ``model`` is not the model sampled: other observed data, or another prior,
        likelihood or deterministics (the run keeps digests of its model's graphs,
        :func:`pymc_tempering._util.fingerprint.model_graph_digests`). The saved state belongs to
        the model sampled; sample a changed model afresh.
    """
    if isinstance(draws, bool) or not isinstance(draws, numbers.Integral) or draws < 1:
        raise ValueError(
            f"continue_sampling: `draws` (the draws to add to each chain) must be a whole "
            f"number >= 1, got {draws!r}; e.g. continue_sampling(idata, draws=1000)."
        )
    old = _OLD_DISTRIBUTED_GROUP in getattr(idata, "children", {})
    if client is not None or old or (step is None and _sampled_on_dask(idata)):
        return _continue_distributed(idata, draws, client, model, step, cores, sample_kwargs)
    model = _model(model, "continue_sampling")
    step = resume_step(idata, model=model, step=step)
    for name in ("tune", "chains", "step"):
        if name in sample_kwargs:
            raise ValueError(f"continue_sampling sets `{name}`; do not pass it.")
    more = pm.sample(
        draws=draws,
        tune=0,
        step=step,
        chains=len(step._resume_records),
        cores=cores,
        random_seed=random_seed,
        model=model,
        **sample_kwargs,
    )
    return concatenate_draws(idata, more)


_OLD_DISTRIBUTED_GROUP = "tempering_checkpoint"  # the checkpoint of the removed distributed loop
_DISTRIBUTED_KWARGS = ("n_workers", "worker_timeout", "progressbar")


def _continue_distributed(idata, draws, client, model, step, cores, sample_kwargs):
    """:func:`continue_sampling` with a ``client``: checks, then
    :func:`_continue_on_cluster`."""
    if _OLD_DISTRIBUTED_GROUP in getattr(idata, "children", {}):
        raise ValueError(
            "This DataTree comes from the distributed loop of pymc_tempering before the "
            "distributed run became ExchangeMC on Dask (its group `tempering_checkpoint`); its "
            "checkpoint cannot be continued. Its draws stay valid: sample the model again with "
            "pmt.distributed.sample_tempered(model, client=client, ...), which keeps "
            "ExchangeMC's checkpoints, and continue that run."
        )
    if client is None:
        raise ValueError(
            "This run was sampled on a Dask cluster (ExchangeMC with a DaskPlacement): pass "
            "the cluster to continue it on, continue_sampling(idata, draws, client=client) "
            "(any number of workers gives the same draws), or continue it in this process with "
            "step=pmt.ExchangeMC(<the run's options>, placement=pmt.engine.placement.Rowwise())."
        )
    given = {"step": step, "cores": cores}
    unused = [name for name, value in given.items() if value is not None]
    unused += [name for name in sample_kwargs if name not in _DISTRIBUTED_KWARGS]
    if unused:
        raise ValueError(
            f"continue_sampling on a cluster does not take {unused}: it continues the run's own "
            f"sampler and takes only model, client and {list(_DISTRIBUTED_KWARGS)}."
        )
    return _continue_on_cluster(idata, draws, client=client, model=model, **sample_kwargs)


def _sampled_on_dask(idata) -> bool:
    """Whether ``idata``'s ExchangeMC had a DaskPlacement (saved as unsaved: it holds a
    client)."""
    saved = saved_step(idata) if "sample_stats" in getattr(idata, "children", {}) else None
    return bool(saved) and saved["kwargs"].get("placement") == "<unsaved DaskPlacement>"


def _continue_on_cluster(
    idata, draws, *, client, model=None, n_workers=None, worker_timeout=None, progressbar=True
):
    """``idata`` (a :func:`sample_tempered` run, or an ``ExchangeMC`` one) and ``draws`` more
    draws per chain, continued on ``client``'s workers through the checkpoints ExchangeMC keeps
    (:func:`pymc_tempering.resume.resume_step`), joined: bit for bit the draws of one longer
    run, with any number of workers. ``model``: the model sampled (default: the one in
    context) or the function that built it. Called by :func:`continue_sampling` with a
    ``client``."""
    from pymc_tempering.distributed import cluster
    from pymc_tempering.distributed.placement import DaskPlacement, with_run_attrs

    if isinstance(draws, bool) or not isinstance(draws, numbers.Integral) or draws < 1:
        raise ValueError(
            f"continue_sampling: `draws` (the draws to add) must be a whole number >= 1, got "
            f"{draws!r}; e.g. continue_sampling(idata, draws=1000, client=client)."
        )
    saved = saved_step(idata)
    if saved is not None and not saved["class"].endswith(":ExchangeMC"):
        raise ValueError(
            f"continue_sampling(client=...) continues ExchangeMC runs on a cluster; this run was "
            f"sampled by {saved['class']}. Continue it without `client`."
        )
    if model is None:
        try:
            model = pm.modelcontext(None)
        except TypeError:
            raise TypeError(
                "continue_sampling needs the model that was sampled: there is no model on the "
                "context stack. Pass it as `model=` (the pm.Model, or the function that built "
                "it), or call continue_sampling inside `with model:`."
            ) from None
    built, shipped = cluster.model_and_payload(model)
    placement = DaskPlacement(
        client, n_workers=n_workers, worker_timeout=worker_timeout, model=shipped
    )
    try:
        with built:
            step = resume_step(idata, model=built, placement=placement)
            more = pm.sample(
                draws=int(draws),
                tune=0,
                chains=len(step._resume_records),
                cores=1,
                step=step,
                progressbar=progressbar,
                compute_convergence_checks=False,
            )
    finally:
        placement.close()
    # the joined groups keep the first run's attrs (sampling_time summed): the continuation's
    # cluster replaces the distributed ones
    return with_run_attrs(concatenate_draws(idata, more), placement)
