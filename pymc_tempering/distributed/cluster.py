"""The cluster side of a distributed run: which workers, the model as bytes, the actors.

Replicas are split into contiguous blocks, one per worker; each block is a Dask actor
(:class:`pymc_tempering.distributed.worker.ReplicaBlock`) pinned to its worker, so its states
never move and each call costs one message each way
(``docs/decisions/120-distributed-rungs-on-dask-actors.md``).
"""

import numpy as np

from pymc_tempering.distributed.worker import ReplicaBlock

__all__ = ["worker_addresses", "payload", "start_blocks"]


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
        if not isinstance(n_workers, (int, np.integer)) or n_workers < 1:
            raise ValueError(f"`n_workers` must be a positive int or None, got {n_workers!r}.")
        if n_workers > len(workers):
            raise ValueError(
                f"`n_workers={n_workers}` but `client` has {len(workers)} workers; pass at most "
                f"{len(workers)} or add workers (client.wait_for_workers({n_workers}))."
            )
        workers = workers[:n_workers]
    return workers


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


def start_blocks(client, workers, data, betas, seed, init, compile_kwargs, replicas=None):
    """One :class:`ReplicaBlock` actor per worker over contiguous blocks of replicas; returns
    ``(actors, blocks, futures)``: ``blocks[k]`` the replica indices of actor ``k``; the
    actors live while ``futures`` do (cancel them to free the workers). ``replicas``: every
    replica's state from a checkpoint (rows in replica order), or None to draw starts."""
    blocks = [b for b in np.array_split(np.arange(betas.size), len(workers)) if b.size]
    restore = [None] * len(blocks)
    if replicas is not None:
        restore = [
            {
                "x": replicas["x"][b],
                "logprior": replicas["logprior"][b],
                "loglik": replicas["loglik"][b],
                "rngs": [replicas["rngs"][r] for r in b],
            }
            for b in blocks
        ]
    futures = [
        client.submit(
            ReplicaBlock,
            data,
            block,
            betas,
            seed,
            init,
            compile_kwargs,
            state,
            actor=True,
            workers=[address],
            allow_other_workers=False,
            pure=False,
        )  # fmt: skip
        for block, address, state in zip(blocks, workers, restore, strict=False)
    ]
    return [f.result() for f in futures], blocks, futures
