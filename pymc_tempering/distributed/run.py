"""``sample_tempered``: one ExchangeMC-style run with its rungs split over Dask workers."""

import time
import warnings

import numpy as np
import pymc as pm
from pymc.model import modelcontext

from pymc_tempering.distributed import cluster, coordinator, datatree, streams
from pymc_tempering.ladder import make_ladder
from pymc_tempering.step_methods._compile import check_observed_finite, improper_priors
from pymc_tempering.step_methods.exchange.options import check_model

__all__ = ["sample_tempered", "DistributedCostWarning", "WorkerLostError", "COST_CHECK_SWEEPS"]

COST_CHECK_SWEEPS = 20  # sweeps measured before judging whether distribution pays


class DistributedCostWarning(UserWarning):
    """The run spends more time communicating than evaluating densities: run it locally."""


class WorkerLostError(RuntimeError):
    """A worker failed mid-run. ``idata`` holds the draws finished before (None if none)."""

    def __init__(self, message, idata):
        super().__init__(message)
        self.idata = idata


def sample_tempered(
    model=None,
    *,
    client,
    draws: int = 1000,
    tune: int = 1000,
    betas=None,
    n_rungs: int | None = None,
    ladder: str = "geometric",
    random_seed: int | None = None,
    init: str = "prior",
    n_workers: int | None = None,
    compile_kwargs: dict | None = None,
):
    r"""Replica-exchange Monte Carlo with its rungs spread over the workers of a Dask cluster.

    The distributed counterpart of ``pm.sample(step=pmt.ExchangeMC(...), chains=1)``: one run,
    random-walk Metropolis on every rung, deterministic even/odd swaps. Each worker compiles
    the model once and holds a block of replicas; per sweep only log-likelihoods (one float
    per replica) and the new rung of each replica travel, and per draw the ``beta = 1`` point.

    Parameters
    ----------
    model : pm.Model or callable, optional
        The model (default: the one in context), or a zero-argument function that builds it
        (for models that cannot be pickled).
    client : dask.distributed.Client
        Its workers hold the replicas (``LocalCluster(processes=True, threads_per_worker=1)``
        on one machine; dask-jobqueue or Kubernetes clusters on many).
    draws, tune : int, default 1000
        Recorded sweeps, and tuning sweeps before them (proposal scales, per rung).
    betas, n_rungs, ladder
        The fixed ladder, as ExchangeMC's (:func:`pymc_tempering.ladder.make_ladder`; not
        ``"adaptive"``).
    random_seed : int, optional
        One seed: replica ``r``'s stream is derived from it and ``r``, so the draws are the
        same with any number of workers (:mod:`pymc_tempering.distributed.streams`).
    init : {"prior", "jitter"}, default "prior"
        Replica starts: prior draws where possible, else the initial point plus U(-1, 1).
    n_workers : int, optional
        Use the first ``n_workers`` workers (sorted by address); default all (at most one per
        rung).
    compile_kwargs : dict, optional
        Passed to the compiler on each worker.

    Returns
    -------
    DataTree
        As ``pm.sample`` returns with one chain: ``posterior`` (the ``beta = 1`` rung),
        ``sample_stats`` with ExchangeMC's stats (:data:`pymc_tempering.trace.EXCHANGE_STATS`),
        ``observed_data``; ``sample_stats.attrs`` add ``n_workers`` and the mean
        ``round_ms``, ``worker_compute_ms`` and ``coordinator_ms`` per sweep.

    Raises
    ------
    ValueError, TypeError
        A client with no workers, a model that cannot be pickled, bad arguments.
    WorkerLostError
        A worker died; its ``idata`` keeps the draws finished before.

    Warns
    -----
    DistributedCostWarning
        When, over the first sweeps, communication costs more than the densities: a local
        ``pm.sample(step=pmt.ExchangeMC())`` is then faster (``docs/guide/distributed.md``).

    Notes
    -----
    Unlike the local ExchangeMC, tuning adapts one proposal scale per rung (Robbins-Monro
    towards the random walk's optimal acceptance), not per-parameter scales or covariances,
    and rung 0 moves by random walk rather than exact prior draws.

    References
    ----------
    N. Surjanovic, M. Biron-Lattes, P. Tiede, S. Syed, T. Campbell and A. Bouchard-Cote (2023),
    Pigeons.jl: Distributed sampling from intractable distributions. arXiv:2308.09769.
    S. Syed, A. Bouchard-Cote, G. Deligiannidis and A. Doucet (2021), JRSS B 84(2).

    Examples
    --------
    >>> from distributed import Client, LocalCluster                 # doctest: +SKIP
    >>> client = Client(LocalCluster(n_workers=2, threads_per_worker=1))  # doctest: +SKIP
    >>> idata = pmt.distributed.sample_tempered(                      # doctest: +SKIP
    ...     model, client=client, random_seed=1
    ... )
    >>> pmt.evidence.thermodynamic_integration(idata)                 # doctest: +SKIP
    """
    built, shipped = _model(model)
    betas = _ladder(built, betas, n_rungs, ladder)
    draws, tune = _count("draws", draws, 1), _count("tune", tune, 0)
    if init not in ("prior", "jitter"):
        raise ValueError(f"`init` must be 'prior' or 'jitter', got {init!r}.")
    seed = streams.root_seed(random_seed)
    workers = cluster.worker_addresses(client, n_workers)[: betas.size]
    data = cluster.payload(shipped)
    n_params = sum(int(np.size(built.initial_point()[v.name])) for v in built.value_vars)

    started = time.perf_counter()
    actors, blocks, futures = cluster.start_blocks(
        client, workers, data, betas, seed, init, compile_kwargs
    )
    try:
        record = coordinator.run_sweeps(
            actors, blocks, betas, tune, draws, streams.swap_rng(seed), n_params, _cost_check
        )
    except coordinator.WorkerLost as err:
        record = err.record
        _trim(record)
        idata = None
        if record.n_draws:
            idata = datatree.to_datatree(built, record, tune, time.perf_counter() - started)
        raise WorkerLostError(str(err), idata) from err
    finally:
        client.cancel(futures)
    attrs = {"n_workers": len(actors), **record.timing.per_sweep_ms()}
    return datatree.to_datatree(built, record, tune, time.perf_counter() - started, attrs)


def _cost_check(sweep, timing):
    """Warn once, after :data:`COST_CHECK_SWEEPS` sweeps, if communication outweighs compute."""
    if timing.sweeps != COST_CHECK_SWEEPS:
        return
    ms = timing.per_sweep_ms()
    overhead = ms["round_ms"] - ms["worker_compute_ms"] + ms["coordinator_ms"]
    if overhead > ms["worker_compute_ms"]:
        warnings.warn(
            f"Distribution does not pay for this model: each sweep spends "
            f"{ms['worker_compute_ms']:.2f} ms on the densities and {overhead:.2f} ms on "
            "communication and coordination. Run it locally, "
            "pm.sample(step=pmt.ExchangeMC(...)), which evaluates all rungs in one batched "
            "call; distribution pays when a density evaluation costs several times the "
            "per-sweep overhead (docs/guide/distributed.md).",
            DistributedCostWarning,
            stacklevel=4,
        )


def _trim(record):
    """Keep the draws whose point arrived (a failure can leave one more set of stats)."""
    for name, values in record.stats.items():
        record.stats[name] = values[: record.n_draws]


def _model(model):
    """``(the pm.Model, what to ship)``: the model itself, or the builder and its model."""
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


def _ladder(model, betas, n_rungs, ladder):
    check_model(model, model.value_vars)
    check_observed_finite(model, "sample_tempered")
    if model.discrete_value_vars:
        names = [v.name for v in model.discrete_value_vars]
        raise ValueError(
            f"sample_tempered moves every rung by a Gaussian random walk; {names} are "
            "discrete. Sample this model locally with pm.sample(step=pmt.ExchangeMC())."
        )
    if ladder == "adaptive":
        raise ValueError(
            "`ladder='adaptive'` is not available in a distributed run yet; pass "
            "ladder='geometric' or 'power', or `betas=` (e.g. a local run's tuned ladder)."
        )
    betas = make_ladder(betas, n_rungs, ladder)
    if betas.size < 2:
        raise ValueError(f"A tempered run needs at least 2 rungs, got {betas.size}.")
    improper = improper_priors(model)
    if betas[0] == 0 and improper:
        raise ValueError(
            f"The ladder starts at beta = 0, where a rung samples the prior, but {improper} "
            "have improper priors (Flat/HalfFlat). Give them proper priors, or pass `betas=` "
            "starting above 0."
        )
    return betas


def _count(name, value, minimum):
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"`{name}` must be an int >= {minimum}, got {value!r}.")
    return int(value)
