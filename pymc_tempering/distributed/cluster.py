"""The cluster side of a distributed run: which workers, the model as bytes, the evaluators.

One :class:`pymc_tempering.distributed.evaluator.RowEvaluator` actor per worker, pinned to it,
so the compiled density stays where it was compiled and each evaluation costs one message each
way (``docs/decisions/140-distributed-placement.md``).
"""

import numpy as np
import pymc as pm
from pymc.model import modelcontext

from pymc_tempering.distributed.evaluator import RowEvaluator

__all__ = ["worker_addresses", "payload", "model_and_payload", "shippable", "start_evaluators"]


def worker_addresses(client, n_workers=None) -> list[str]:
    """The addresses of the workers a run uses (sorted; the first ``n_workers``), or an error
    saying what to do: ``client`` not a Client (TypeError), closed or without workers, too few
    workers for ``n_workers`` (ValueError)."""
    try:
        from distributed import Client
    except ImportError as err:  # pragma: no cover - dask is a dependency of compare_models
        message = "A distributed run needs dask.distributed: pip install distributed"
        raise ImportError(message) from err
    if not isinstance(client, Client):
        raise TypeError(
            f"`client` must be a dask.distributed.Client (e.g. Client(LocalCluster(...))), got "
            f"{type(client).__name__}."
        )
    if client.status != "running":
        raise ValueError(
            f"`client` is not running (its status is {client.status!r}): it was closed, by "
            "client.close() or at the end of its `with Client(...)` block, or its scheduler is "
            "gone, so no worker can be reached. Pass a running client, e.g. call the sampler "
            "inside `with LocalCluster(n_workers=4, threads_per_worker=1) as cluster, "
            "Client(cluster) as client:`, or connect a new one with Client(scheduler_address)."
        )
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    if not workers:
        raise ValueError(
            "`client` has no workers: start some (LocalCluster(n_workers=2), cluster.scale(n)) "
            "or wait for them with client.wait_for_workers(n) before sampling."
        )
    if n_workers is not None:
        check_n_workers(n_workers)
        if n_workers > len(workers):
            raise ValueError(
                f"`n_workers={n_workers}` but `client` has {len(workers)} workers; pass at most "
                f"{len(workers)} or add workers (client.wait_for_workers({n_workers}))."
            )
        workers = workers[:n_workers]
    return workers


def check_n_workers(n_workers) -> None:
    """A ValueError unless ``n_workers`` is None or a positive int."""
    if n_workers is None:
        return
    if isinstance(n_workers, bool) or not isinstance(n_workers, (int, np.integer)) or n_workers < 1:
        raise ValueError(f"`n_workers` must be a positive int or None, got {n_workers!r}.")


def payload(model) -> bytes:
    """``model`` (a pm.Model or a zero-argument builder) cloudpickled, or a ValueError."""
    import cloudpickle

    try:
        return cloudpickle.dumps(model)
    except Exception as err:  # noqa: BLE001 pickling raises many types
        raise ValueError(
            f"The model cannot be pickled to send it to the workers ({type(err).__name__}: "
            f"{err}). Pass a zero-argument function that builds the model instead "
            "(sample_tempered(build_model, client=...)), defined at module level."
        ) from err


def model_and_payload(model):
    """``(the pm.Model, what to ship)``: the model itself (default: the one in context), or a
    zero-argument builder and the model it builds."""
    if model is None or isinstance(model, pm.Model):
        model = modelcontext(model)
        return model, model
    if callable(model):
        built = model()
        if not isinstance(built, pm.Model):
            raise TypeError(f"The model builder returned {type(built).__name__}, not a pm.Model.")
        return built, model
    raise TypeError(
        f"`model` must be a pm.Model or a zero-argument function building one, got "
        f"{type(model).__name__}."
    )


def shippable(model):
    """What the workers build the model from: ``model`` (a pm.Model or a zero-argument builder,
    not called here: a builder called inside a model's context would add to that model), or
    the model in context for None."""
    if model is None or isinstance(model, pm.Model):
        return modelcontext(model)
    if callable(model):
        return model
    raise TypeError(
        f"`model` must be a pm.Model or a zero-argument function building one, got "
        f"{type(model).__name__}."
    )


def start_evaluators(client, workers, data, compile_kwargs, gradient):
    """One :class:`RowEvaluator` actor per address in ``workers``, compiled from the model bytes
    ``data``; returns ``(address, actor, future)`` for each, in ``workers``' order (the actor
    lives while its future does: cancel it to free the worker)."""
    futures = [
        client.submit(
            RowEvaluator,
            data,
            compile_kwargs,
            gradient,
            actor=True,
            workers=[address],
            allow_other_workers=False,
            pure=False,
        )
        for address in workers
    ]
    return [(a, f.result(), f) for a, f in zip(workers, futures, strict=True)]
