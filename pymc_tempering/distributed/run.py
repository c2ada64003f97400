"""``sample_tempered``: one ExchangeMC-style run with its rungs split over Dask workers."""

import copy
import time
import warnings

import numpy as np
import pymc as pm
from pymc.model import modelcontext

from pymc_tempering._util.fingerprint import model_graph_digests
from pymc_tempering.distributed import checkpoint, cluster, coordinator, datatree, streams
from pymc_tempering.distributed.progress import SweepProgress
from pymc_tempering.ladder import make_ladder
from pymc_tempering.step_methods._compile import check_observed_finite, improper_priors
from pymc_tempering.step_methods.exchange.options import check_model

__all__ = [
    "sample_tempered",
    "run_on_cluster",
    "DistributedCostWarning",
    "WorkerLostError",
    "COST_CHECK_SWEEPS",
]

COST_CHECK_SWEEPS = 20  # sweeps measured before judging whether distribution pays


class DistributedCostWarning(UserWarning):
    """The run spends more time communicating than evaluating densities: run it locally."""


class WorkerLostError(RuntimeError):
    """A worker failed mid-run. ``idata`` holds the draws finished before it and a checkpoint:
    ``pmt.continue_sampling(err.idata, draws, client=...)`` continues the run."""

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
    progressbar: bool = True,
    checkpoint_every: int = 100,
):
    r"""Replica-exchange Monte Carlo with its rungs spread over the workers of a Dask cluster.

    The distributed ``pm.sample(step=pmt.ExchangeMC(...), chains=1)`` in Pigeons.jl's scheme
    (Surjanovic et al. 2023, arXiv:2308.09769): workers hold blocks of replicas, only
    log-likelihoods and rungs travel, a seed gives the same draws on any number of workers, and
    a ``DistributedCostWarning`` says when communication costs more than the densities. Guide,
    costs and what differs from ExchangeMC: ``docs/guide/distributed.md``.

    Parameters
    ----------
    model : pm.Model or callable, optional
        The model (default: the one in context), or a zero-argument function building it.
    client : dask.distributed.Client
        A running client (not closed); its workers hold the replicas (one thread each).
    draws, tune : int, default 1000
        Recorded sweeps, and tuning sweeps (one proposal scale per rung) before them.
    betas, n_rungs, ladder
        A fixed ladder, as ExchangeMC's (:func:`pymc_tempering.ladder.make_ladder`).
    random_seed : int, optional
        Derives each replica's stream (:mod:`pymc_tempering.distributed.streams`).
    init : {"prior", "jitter"}, default "prior"
        Starts: prior draws, or the initial point plus U(-1, 1).
    n_workers, compile_kwargs, progressbar, checkpoint_every
        The first ``n_workers`` workers by address (default all, at most one per rung); passed
        to each worker's compiler; PyMC's progress bar (default True); sweeps between the
        snapshots a lost worker falls back to (default 100).

    Returns
    -------
    DataTree
        As a one-chain ``pm.sample`` (``posterior`` at ``beta = 1``, ExchangeMC's
        ``sample_stats``), with a checkpoint: ``pmt.continue_sampling(idata, draws,
        client=...)`` continues it, equal bit for bit to a longer run.

    Raises
    ------
    WorkerLostError
        A worker died; its ``idata`` keeps the finished draws and a checkpoint to continue.
    ValueError, TypeError
        A closed client or one without workers, a model that cannot be pickled, bad
        arguments.
    """
    built, shipped = model_and_payload(model)
    betas = _ladder(built, betas, n_rungs, ladder)
    draws, tune = _count("draws", draws, 1), _count("tune", tune, 0)
    if init not in ("prior", "jitter"):
        raise ValueError(f"`init` must be 'prior' or 'jitter', got {init!r}.")
    seed = streams.root_seed(random_seed)
    n_params = sum(int(np.size(built.initial_point()[v.name])) for v in built.value_vars)
    settings = {
        "seed": seed,
        "betas": betas,
        "tune": tune,
        "init": init,
        "n_params": n_params,
        "model": model_graph_digests(built),
    }
    return run_on_cluster(
        built, shipped, client, settings, None, stop=tune + draws, record_from=tune,
        n_workers=n_workers, compile_kwargs=compile_kwargs, progressbar=progressbar,
        checkpoint_every=checkpoint_every, stacklevel=2,
    )  # fmt: skip


def run_on_cluster(
    built, shipped, client, settings, snapshot, *, stop, record_from, n_workers,
    compile_kwargs, progressbar, checkpoint_every, stacklevel,
):  # fmt: skip
    """Run a distributed run from ``snapshot`` (``None``: its start) to sweep ``stop``,
    recording the sweeps from ``record_from``; return their DataTree with the final checkpoint.

    ``settings``: the checkpoint's settings (:mod:`.checkpoint`). A lost worker raises
    :class:`WorkerLostError` whose ``idata`` holds the draws recorded here and the latest
    snapshot (``snapshot`` itself if none was taken). ``stacklevel``: frames from the caller
    of this function to the user's code, for the cost warning.
    """
    checkpoint_every = _count("checkpoint_every", checkpoint_every, 1)
    betas, seed, tune = settings["betas"], settings["seed"], settings["tune"]
    if snapshot is None:
        n_rungs = betas.size
        state = coordinator.SweepState.start(n_rungs, settings["n_params"], streams.swap_rng(seed))
        replicas = None
    else:
        state, replicas = copy.deepcopy(snapshot["coordinator"]), snapshot["replicas"]
    workers = cluster.worker_addresses(client, n_workers)[: betas.size]
    data = cluster.payload(shipped)

    started = time.perf_counter()
    actors, blocks, futures = cluster.start_blocks(
        client, workers, data, betas, seed, settings["init"], compile_kwargs, replicas
    )
    progress = SweepProgress(progressbar, tune=record_from - state.sweep, draws=stop - record_from)

    def on_sweep(sweep, timing, stats):
        _cost_check(timing, stacklevel + 4)
        progress.update(stats)

    try:
        with progress:
            record = coordinator.run_sweeps(
                actors, blocks, betas, state, tune=tune, stop=stop, record_from=record_from,
                n_params=settings["n_params"], on_sweep=on_sweep,
                checkpoint_every=checkpoint_every,
            )  # fmt: skip
    except coordinator.WorkerLost as err:
        record = err.record
        coordinator.complete_last_draw(record, record_from)
        kept = record.snapshot or snapshot
        idata = datatree.to_datatree(built, record, tune, time.perf_counter() - started)
        idata = checkpoint.attach(idata, checkpoint.encode(settings, kept))
        at = kept["coordinator"].sweep if kept else 0
        done = record_from - tune + record.n_draws
        raise WorkerLostError(
            f"{err} The {done} draws finished are kept in this error's `idata`, with a "
            f"checkpoint after sweep {at} (tuning included): continue the run on a new "
            f"cluster with pmt.continue_sampling(err.idata, draws={stop - tune - done}, "
            "client=new_client); the result equals an uninterrupted run bit for bit.",
            idata,
        ) from err
    finally:
        client.cancel(futures)
    attrs = {"n_workers": len(actors), **record.timing.per_sweep_ms()}
    idata = datatree.to_datatree(built, record, tune, time.perf_counter() - started, attrs)
    return checkpoint.attach(idata, checkpoint.encode(settings, record.snapshot))


def _cost_check(timing, stacklevel):
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
            stacklevel=stacklevel,
        )


def model_and_payload(model):
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
