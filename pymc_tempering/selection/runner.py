"""Evidence of many models at once: :func:`compare_models`.

One call runs :func:`pymc_tempering.marginal_likelihood` on every model, in this process or on
any ``concurrent.futures.Executor`` (``dask.distributed``'s ``Client.get_executor()``,
``ProcessPoolExecutor``), keeps every finished model in a store as soon as it finishes, and
returns :func:`pymc_tempering.compare_evidence`'s table with per-model diagnostics. The numbers
depend on the models, their names, the settings and ``random_seed``, never on the executor, the
number of workers or the order in which models finish.
"""

import concurrent.futures as cf
import time
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd

from pymc_tempering.evidence.compare import compare_evidence
from pymc_tempering.evidence.methods import DEFAULT_METHOD, resolve_methods
from pymc_tempering.evidence.tempered import ESTIMATORS
from pymc_tempering.selection._progress import ModelProgress
from pymc_tempering.selection._store import ModelStore, model_key, settings_digest
from pymc_tempering.selection._worker import ModelTask, _build, model_seed, run_model

__all__ = ["compare_models"]

#: Columns added to compare_evidence's table, in order.
TABLE_COLUMNS = (
    "rank",
    "log_marginal_likelihood",
    "mcse",
    "log_bayes_factor",
    "log_bayes_factor_mcse",
    "model_probability",
    "model_probability_mcse",
    "method",
    "warning",
    "ess",
)
DIAGNOSTICS = ("ess", "min_swap_accept", "round_trips", "wall_time", "error", "from_store", "file")


def ranking_estimator(method, estimator, settings) -> str:
    """The full name of the estimator that ranks the models (``method``, or its former name
    ``estimator``; TI by default), added to ``marginal_likelihood``'s ``method`` in ``settings``
    when the defaults (TI and SS) do not compute it."""
    if method is not None and estimator is not None:
        raise ValueError("Pass `method` (or its former name `estimator`), not both.")
    name = method if method is not None else estimator
    argument = "method" if estimator is None else "estimator"
    if name is not None and not isinstance(name, str):
        raise ValueError(f"`{argument}` must name one estimator (e.g. 'bar'), got {name!r}.")
    (full,) = resolve_methods(DEFAULT_METHOD if name is None else name, argument)
    if "method" in settings:
        raise ValueError(
            "`method` names the estimator that ranks the models; compare_models computes it "
            "with TI and SS. Remove the second `method`."
        )
    if full not in ESTIMATORS:
        settings["method"] = (*ESTIMATORS, full)
    return full


def _check_arguments(models, executor, settings) -> int:
    """Refuse what cannot work; return ``cores`` for pm.sample."""
    if not isinstance(models, dict) or not models:
        raise ValueError(
            "`models` must be a non-empty dict {name: pm.Model or zero-argument function that "
            "builds one}."
        )
    bad = [name for name in models if not isinstance(name, str)]
    if bad:
        raise ValueError(f"`models` keys must be str names, got {bad!r}.")
    for arg in ("return_idata", "model", "random_seed", "progressbar"):
        if arg in settings:
            raise ValueError(f"`{arg}` is set by compare_models; remove it from the arguments.")
    cores = settings.pop("cores", 1)
    if executor is not None and cores != 1:
        raise ValueError(
            f"`cores={cores}` with an executor: every model runs its chains one after another "
            "in one worker (worker processes cannot start processes of their own); add workers "
            "to the executor instead."
        )
    if executor is not None and not isinstance(executor, cf.Executor):
        raise TypeError(
            f"`executor` must be a concurrent.futures.Executor (e.g. dask.distributed's "
            f"Client.get_executor() or ProcessPoolExecutor), got {type(executor).__name__}."
        )
    return cores


def _payload(name, model):
    """``model`` (a pm.Model or builder) as bytes for a worker process, or a clear error."""
    import cloudpickle

    try:
        return cloudpickle.dumps(model)
    except Exception as err:  # noqa: BLE001 pickling raises many types
        raise ValueError(
            f"Model {name!r} cannot be pickled to send it to a worker process "
            f"({type(err).__name__}: {err}). Pass a zero-argument function that builds it "
            f"instead, e.g. models={{{name!r}: build_model}} with `def build_model(): with "
            "pm.Model() as model: ...; return model`."
        ) from err


def _plan(models, executor, store, seed, user_seed, digest, settings):
    """Tasks to run, records of models found in the store, and models that failed to build."""
    tasks, done = [], {}
    for name, model in models.items():
        try:
            built = _build(model)
            key = model_key(built, name, digest, user_seed)
        except Exception as err:  # noqa: BLE001 a broken builder is one failed row
            done[name] = _failed(name, f"{type(err).__name__}: {err}")
            continue
        found = store.load(name, key) if store is not None else None
        if found is not None:
            result, record = found
            record |= {"error": "", "from_store": True, "file": str(store.file(name, key))}
            done[name] = {"result": result, "record": record}
            continue
        payload = built if executor is None else _payload(name, model)
        tasks.append(
            ModelTask(
                name,
                payload,
                key,
                model_seed(seed, name),
                settings,
                store=None if store is None else str(store.path),
                own_compiledir=executor is not None,
            )
        )
    return tasks, done


def _failed(name, error) -> dict:
    record = {"model_name": name, "error": error, "min_swap_accept": np.nan, "round_trips": -1}
    record |= {"wall_time": np.nan, "from_store": False, "file": "", "timings": {}}
    return {"result": None, "record": record}


def _running(pending, executor) -> int:
    states = [f.running() for f in pending]
    if any(states) or not hasattr(executor, "_client"):
        return int(sum(states))
    try:  # Dask's executor reports no running state: the in-flight models, up to its threads
        workers = executor._client.scheduler_info(n_workers=-1)["workers"].values()
        return min(len(pending), sum(w.get("nthreads", 1) for w in workers))
    except Exception:  # noqa: BLE001 a display detail: never fail the run over it
        return len(pending)


def _run_all(tasks, executor, progress) -> dict:
    """Run ``tasks``; records by name. Finished models are in the store before this returns or
    raises (KeyboardInterrupt cancels what has not started)."""
    outcomes = {}
    if executor is None:
        for task in tasks:
            progress.set_running(1)
            outcomes[task.name] = run_model(task)
            progress.finished(failed=bool(outcomes[task.name]["record"]["error"]), running=0)
        return outcomes
    futures = {
        executor.submit(run_model, replace(t, submitted_at=time.time())): t.name for t in tasks
    }
    pending = set(futures)
    try:
        while pending:
            finished, pending = cf.wait(pending, timeout=0.5, return_when=cf.FIRST_COMPLETED)
            for future in finished:
                name = futures[future]
                try:
                    outcomes[name] = future.result()
                except Exception as err:  # noqa: BLE001 the worker died, the pool broke, ...
                    outcomes[name] = _failed(name, f"worker lost: {type(err).__name__}: {err}")
                outcomes[name]["record"]["timings"]["received_at"] = time.time()
                progress.finished(failed=bool(outcomes[name]["record"]["error"]))
            progress.set_running(_running(pending, executor))
    except BaseException:
        for future in pending:
            future.cancel()
        raise
    return outcomes


def _combined(values):
    """The legs' combination of a two-leg result's ``values`` (``reference="variational"``),
    which compare_evidence ranks; ``values`` as they are otherwise."""
    return values.sel(leg="combined") if "leg" in values.dims else values


def _table(outcomes, model_prior, estimator) -> pd.DataFrame:
    """compare_evidence's table of the finished models (in name order, so that sums run in
    one order whatever the scheduling), with diagnostics, and failed models last."""
    names = sorted(outcomes)
    ok = {n: outcomes[n]["result"] for n in names if outcomes[n]["result"] is not None}
    failed = [n for n in names if outcomes[n]["result"] is None]
    if ok:
        prior = None if model_prior is None else {n: model_prior[n] for n in ok if n in model_prior}
        table = compare_evidence(ok, model_prior=prior, method=estimator)
        ess = {n: _combined(result["ess"]).sel(estimator=estimator) for n, result in ok.items()}
        table["ess"] = [float(ess[n]) for n in table.index]
    else:
        table = pd.DataFrame({c: pd.Series(dtype=float) for c in TABLE_COLUMNS})
    table = table.reindex(pd.Index([*table.index, *failed], name="model"))
    table["rank"] = table["rank"].astype("Int64")
    if failed:
        table.loc[failed, ["method", "warning"]] = ""
        warnings.warn(
            f"{len(failed)} of {len(names)} models failed (their `error` column says why): "
            f"{failed}. The others' model_probability is conditional on leaving them out.",
            UserWarning,
            stacklevel=3,
        )
    for column in DIAGNOSTICS[1:]:
        table[column] = [outcomes[n]["record"][column] for n in table.index]
    table["round_trips"] = table["round_trips"].astype("int64")
    return table


def compare_models(
    models,
    *,
    executor=None,
    store=None,
    random_seed=None,
    progressbar=True,
    model_prior=None,
    method=None,
    estimator=None,
    **marginal_likelihood_kwargs,
):
    r"""Estimate the evidence of many models and rank them: one call, any executor, resumable.

    The promise: every model runs :func:`pymc_tempering.marginal_likelihood` (``cores=1``, a
    seed from ``random_seed`` and its name) and the table is
    :func:`pymc_tempering.compare_evidence`'s, the same on any executor, number of workers or
    order of ``models``. A model that fails (or whose data PyMC would impute) is a row with
    its ``error``, never a crash.

    Parameters
    ----------
    models : dict of {str: pm.Model or callable}
        Per name, a model or a zero-argument builder (pickled with cloudpickle for an
        executor; a model that cannot be is refused, naming it: pass a builder).
    executor : concurrent.futures.Executor, optional
        Dask's ``Client.get_executor()``, ``ProcessPoolExecutor`` ("spawn"), ...; default this
        process. Each worker process compiles into a directory of its own.
    store : str or Path, optional
        A directory where each finished model is written at once, keyed by its graph, data,
        name, the settings, ``random_seed`` and the versions; a rerun loads what it finds
        and runs the rest. On a cluster every worker must see it.
    random_seed : int, optional
        ``None`` draws one; ``table.attrs["random_seed"]`` says which.
    progressbar : bool, default True
        Show one progress bar over the models.
    model_prior : dict of {str: float}, optional
        Prior model probabilities, as in :func:`compare_evidence`.
    method : {"ti", "ss", "bar", "mbar"}, optional
        The estimate that ranks the models, added to ``marginal_likelihood``'s ``method`` when
        missing there; default ``None``: ``"ti"``.
    estimator : {"ti", "ss", "bar", "mbar"}, optional
        The former name of ``method``, kept working; give one of the two.
    **marginal_likelihood_kwargs
        The same :func:`marginal_likelihood` arguments for every model.

    Returns
    -------
    pandas.DataFrame
        :func:`compare_evidence`'s columns, then ``ess``, ``min_swap_accept``,
        ``round_trips``, ``wall_time``, ``error``, ``from_store`` and ``file``; failed models
        last (NaN estimates, NA rank). ``attrs``: ``random_seed``, ``timings``, ``workers``.
    """
    settings = dict(marginal_likelihood_kwargs)
    estimator = ranking_estimator(method, estimator, settings)
    cores = _check_arguments(models, executor, settings)
    seed = int(np.random.SeedSequence().entropy) if random_seed is None else int(random_seed)
    store = None if store is None else ModelStore(store)
    tasks, outcomes = _plan(
        models, executor, store, seed, random_seed, settings_digest(settings), settings
    )
    if executor is None and cores != 1:
        tasks = [replace(t, settings={**t.settings, "cores": cores}) for t in tasks]
    with ModelProgress(len(models), enabled=progressbar) as progress:
        for outcome in outcomes.values():
            progress.finished(failed=outcome["result"] is None, stored=True)
        outcomes |= _run_all(tasks, executor, progress)
    table = _table(outcomes, model_prior, estimator)
    records = {name: outcome["record"] for name, outcome in outcomes.items()}
    table.attrs = {
        "random_seed": seed,
        "timings": {name: record.get("timings", {}) for name, record in records.items()},
        "workers": {
            name: {k: record.get(k, "") for k in ("pid", "host", "compiledir")}
            for name, record in records.items()
        },
    }
    return table
